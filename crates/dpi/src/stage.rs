//! [`DpiTable`] as one of the flow table's side stages ([`rampart_flow::SideStage`]): fed the
//! payload of each packet of a flow until the flow is decided, and asked for the flow's
//! application when it ends.

use rampart_flow::{Dir, Flow, FlowCtx, FlowId, Side, SideStage};

use crate::{App, DpiStats, DpiTable, FlowInfo};

/// What identification needs of a flow's record.
#[inline]
pub fn flow_info(f: &Flow) -> FlowInfo<'_> {
    let k = &f.key;
    let (ports, responder) = match f.initiator {
        Side::A => ([k.port_a(), k.port_b()], k.addr_b_bytes()),
        Side::B => ([k.port_b(), k.port_a()], k.addr_a_bytes()),
    };
    FlowInfo { l4: k.proto(), ports, family: k.family(), responder }
}

impl SideStage for DpiTable {
    /// The packet's captured transport payload.
    type Input<'a> = &'a [u8];
    type Output = ();
    type Summary = App;
    type Stats = DpiStats;

    /// Feeds the payload while the flow is undecided; a decided flow costs one 4-byte test.
    #[inline]
    fn observe(&mut self, f: &FlowCtx<'_>, payload: &[u8]) -> Option<()> {
        if !payload.is_empty() && self.wants(f.id.0) {
            self.feed(f.id.0, &flow_info(f.flow), f.dir == Dir::Original, payload);
        }
        None
    }

    fn retire(&mut self, id: FlowId, flow: &Flow) -> App {
        DpiTable::retire(self, id.0, &flow_info(flow))
    }

    fn stats(&self) -> DpiStats {
        DpiTable::stats(self)
    }

    /// The high-water mark: the peak of what inspection buffered counts, not only what is
    /// left.
    fn memory_bytes(&self) -> usize {
        DpiTable::peak_bytes(self)
    }

    fn reserve(&mut self, flows: usize) {
        DpiTable::reserve(self, flows);
    }
}

impl std::ops::AddAssign for DpiStats {
    /// Adds another table's counters (peaks too: the sum bounds the true peak from above).
    fn add_assign(&mut self, o: Self) {
        self.inspected += o.inspected;
        self.by_dpi += o.by_dpi;
        self.by_port += o.by_port;
        self.by_address += o.by_address;
        self.unknown += o.unknown;
        self.packets += o.packets;
        self.peak_inspecting += o.peak_inspecting;
        self.memory_capped += o.memory_capped;
        self.peak_held += o.peak_held;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    /// A TLS record header claiming 16 KB of handshake, then filler: a detector keeps asking
    /// for more, so the flow buffers.
    fn hello_start() -> Vec<u8> {
        let mut p = vec![0x42u8; 1400];
        p[..9].copy_from_slice(&[0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0x00, 0x3f, 0xfc]);
        p
    }

    #[test]
    fn buffering_for_all_flows_stops_at_the_table_budget() {
        let cfg = Config { max_total_bytes: 64 << 10, ..Config::default() };
        let mut t = DpiTable::new(cfg);
        let responder = [192, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let info = FlowInfo {
            l4: 6,
            ports: [40000, 443],
            family: rampart_flow::IpFamily::V4,
            responder: &responder,
        };
        let filler = vec![0x42u8; 1400];
        for round in 0..4 {
            for slot in 0..200u32 {
                let p = if round == 0 { hello_start() } else { filler.clone() };
                if t.wants(slot) {
                    t.feed(slot, &info, true, &p);
                }
            }
        }
        let s = t.stats();
        assert!(s.memory_capped > 0, "{s:?}");
        // The budget holds, give or take the one flow's buffer that crossed it.
        assert!(s.peak_held as usize <= (64 << 10) + 16 * 1024 + 4096, "{s:?}");
        assert!(t.peak_bytes() >= t.memory_bytes());
        // Every flow still gets a label when it ends, and nothing is left held.
        for slot in 0..200u32 {
            let flow = Flow::default();
            let _ = SideStage::retire(&mut t, FlowId(slot), &flow);
        }
        assert_eq!(t.inspecting(), 0);
        assert_eq!(t.memory_bytes(), t.peak_bytes() - s.peak_held as usize);
    }
}
