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
        Side::A => ([k.port_a, k.port_b], &k.addr_b),
        Side::B => ([k.port_b, k.port_a], &k.addr_a),
    };
    FlowInfo { l4: k.proto, ports, family: k.family, responder }
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

    fn memory_bytes(&self) -> usize {
        DpiTable::memory_bytes(self)
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
    }
}
