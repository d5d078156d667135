//! How a NIC's RSS would spread a capture over its queues (`rampart rss balance`).

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

use rampart_capture::{Capture, Frame};
use rampart_flow::FlowKey;
use rampart_rss::{Reta, Toeplitz};
use rampart_wire::{Family, PacketMeta, proto};

use crate::driver::{Consumer, Limits, read_batches};
use crate::{RunError, Summary};

/// The hash a NIC computes for a packet, by Microsoft's hash-type rules: TCP and UDP (not
/// fragments) on addresses and ports, every other IP packet and every fragment (the first one
/// too) on addresses alone; `None` for a packet that is not IP (it takes the default queue).
#[inline]
pub fn nic_hash(t: &Toeplitz, meta: &PacketMeta) -> Option<u32> {
    let ports =
        meta.has_ports() && !meta.is_fragment() && matches!(meta.proto, proto::TCP | proto::UDP);
    match meta.family {
        Family::None => None,
        Family::V4 => {
            let (s, d) = (v4(&meta.src), v4(&meta.dst));
            Some(if ports { t.hash_v4(s, d, meta.sport, meta.dport) } else { t.hash_v4_l3(s, d) })
        }
        Family::V6 => Some(if ports {
            t.hash_v6(meta.src, meta.dst, meta.sport, meta.dport)
        } else {
            t.hash_v6_l3(meta.src, meta.dst)
        }),
    }
}

fn v4(a: &[u8; 16]) -> [u8; 4] {
    [a[0], a[1], a[2], a[3]]
}

/// One queue's share.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueLoad {
    /// Packets hashed to the queue.
    pub packets: u64,
    /// Bytes on the wire of those packets.
    pub bytes: u64,
    /// Flows (both directions together) whose first packet went to the queue.
    pub flows: u64,
}

/// What [`balance`] found.
#[derive(Clone, Debug, Default)]
pub struct Balance {
    /// Per queue.
    pub queues: Vec<QueueLoad>,
    /// Frames read.
    pub packets: u64,
    /// Frames that were not IP (a NIC sends them to its default queue unhashed).
    pub unhashed: u64,
    /// Flows seen.
    pub flows: u64,
    /// Flows whose packets reached more than one queue (the two directions of a flow under a
    /// key that is not symmetric, or fragments hashed on addresses alone).
    pub split: u64,
}

struct Balancing<'t> {
    t: &'t Toeplitz,
    reta: &'t Reta,
    b: Balance,
    /// Per flow: the queue of its first packet, and whether a later packet went elsewhere.
    flows: HashMap<FlowKey, (u32, bool)>,
}

impl Consumer for Balancing<'_> {
    fn batch(&mut self, frames: &[Frame<'_>], _s: &mut Summary) -> std::io::Result<()> {
        let b = &mut self.b;
        for frame in frames {
            b.packets += 1;
            let meta = PacketMeta::parse(frame.link, frame.data);
            let Some(h) = nic_hash(self.t, &meta) else {
                b.unhashed += 1;
                continue;
            };
            let q = self.reta.queue(h);
            b.queues[q].packets += 1;
            b.queues[q].bytes += u64::from(frame.origlen);
            if let Some((key, _)) = FlowKey::from_meta(&meta) {
                let e = self.flows.entry(key).or_insert_with(|| {
                    b.queues[q].flows += 1;
                    (q as u32, false)
                });
                e.1 |= e.0 != q as u32;
            }
        }
        Ok(())
    }
}

/// Hashes every packet of `capture` with `t` and maps it through `reta`.
pub fn balance(
    capture: &mut Capture,
    t: &Toeplitz,
    reta: &Reta,
    stop: &AtomicBool,
) -> (Balance, Option<RunError>) {
    let b = Balance { queues: vec![QueueLoad::default(); reta.queues()], ..Balance::default() };
    let mut run = Balancing { t, reta, b, flows: HashMap::new() };
    let mut s = Summary::default();
    // The consumer never fails (it writes nothing), so the only error is the capture's.
    let error =
        read_batches(capture, &Limits::none(256), None, stop, &mut s, &mut run, &mut |_| {})
            .ok()
            .flatten();
    let mut b = run.b;
    b.flows = run.flows.len() as u64;
    b.split = run.flows.values().filter(|(_, split)| *split).count() as u64;
    (b, error)
}
