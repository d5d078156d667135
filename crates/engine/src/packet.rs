//! Parsing: each frame once into a [`Packet`], the owned summary every later step works from.

use std::net::IpAddr;

use rampart_capture::Frame;
use rampart_flow::{FlowKey, PacketInfo};
use rampart_rtt::RttInput;
use rampart_wire::{IpFamily, PacketMeta, Status, Timestamp};

use crate::Summary;

/// Where a packet's transport payload lies. The parser says where it is in the frame; a step
/// that moves packets to another thread says where the owner will find it instead. Each place
/// is read from its own buffer ([`PayloadSource`]), so an offset can never be read against the
/// wrong one. (Sixteen bytes: the place's tag beside one 64-bit position.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Payload {
    /// The position: the frame's index in its batch in the high 32 bits and the offset in
    /// the frame in the low ones (in a frame), else the offset in the shared input or in the
    /// copy.
    at: u64,
    len: u32,
    place: Place,
}

/// The buffer a [`Payload`] lies in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Place {
    /// Nowhere: identification is off, the packet has none, or it is a later fragment.
    #[default]
    None,
    /// In a frame of the batch the packet was parsed from.
    Frame,
    /// In the shared input (a mapped file every worker reads).
    Shared,
    /// In the copy that travels with the packet (a stream's buffer is reused, so the reading
    /// thread copies payloads out for the worker that owns the flow).
    Copied,
}

impl Payload {
    /// `len` bytes at `at` in frame `frame` of the packet's batch.
    pub fn in_frame(frame: u32, at: u32, len: u32) -> Self {
        Self { at: u64::from(frame) << 32 | u64::from(at), len, place: Place::Frame }
    }

    /// `len` bytes at `at` in the copy that travels with the packet.
    pub fn copied(at: u32, len: u32) -> Self {
        Self { at: u64::from(at), len, place: Place::Copied }
    }

    /// Where it lies.
    pub fn place(&self) -> Place {
        self.place
    }

    /// Captured payload bytes.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// No payload.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The same bytes located in the shared input, for a frame that starts at `frame_start`
    /// in it.
    pub fn in_shared(self, frame_start: u64) -> Self {
        match self.place {
            Place::Frame => Self {
                at: frame_start + (self.at & 0xffff_ffff),
                len: self.len,
                place: Place::Shared,
            },
            _ => self,
        }
    }
}

/// The buffers a batch's payloads can lie in.
#[derive(Clone, Copy, Debug, Default)]
pub struct PayloadSource<'a> {
    /// The batch's frames.
    pub frames: &'a [Frame<'a>],
    /// The shared input.
    pub shared: &'a [u8],
    /// The copies made for this batch.
    pub copied: &'a [u8],
}

impl<'a> PayloadSource<'a> {
    /// The payload's bytes (empty if they are not all where it says).
    #[inline]
    pub fn get(&self, p: Payload) -> &'a [u8] {
        match p.place {
            Place::None => &[],
            Place::Frame => match self.frames.get((p.at >> 32) as usize) {
                Some(f) => span(f.data, p.at & 0xffff_ffff, p.len),
                None => &[],
            },
            Place::Shared => span(self.shared, p.at, p.len),
            Place::Copied => span(self.copied, p.at, p.len),
        }
    }
}

/// `len` bytes of `b` from `at`, or nothing if they are not all there.
#[inline]
fn span(b: &[u8], at: u64, len: u32) -> &[u8] {
    usize::try_from(at).ok().and_then(|at| b.get(at..at.checked_add(len as usize)?)).unwrap_or(&[])
}

/// One parsed packet: what the flow table, the policy and the side stages need, owned, and
/// where its payload lies (not the bytes).
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// Key, direction, time, length and flags (the table hash is filled in by the pipeline).
    pub info: PacketInfo,
    /// What RTT matching and the TCP health counters need, for a TCP packet when either is
    /// on.
    pub tcp: Option<RttInput>,
    /// Position in the run's output order (its batch's frame index on one thread, its place
    /// in the job with workers).
    pub pos: u32,
    /// Where its transport payload lies.
    pub payload: Payload,
}

/// The parsing step: each frame parsed once into a [`Packet`].
#[derive(Clone, Debug)]
pub struct Parser {
    rtt: bool,
    payloads: bool,
    tcp_only: bool,
    tunnels: bool,
    local: Vec<(IpFamily, [u8; 16])>,
    now: Timestamp,
}

impl Parser {
    /// A parser; `rtt` keeps the TCP facts RTT matching and the TCP health counters need, and packets to `local` addresses are
    /// marked so they are not timestamped.
    pub fn new(rtt: bool, local: &[IpAddr]) -> Self {
        let local = local
            .iter()
            .map(|a| match a {
                IpAddr::V4(v) => {
                    let mut s = [0; 16];
                    s[..4].copy_from_slice(&v.octets());
                    (IpFamily::V4, s)
                }
                IpAddr::V6(v) => (IpFamily::V6, v.octets()),
            })
            .collect();
        Self { rtt, payloads: false, tcp_only: false, tunnels: false, local, now: Timestamp::EPOCH }
    }

    /// Keeps TCP packets only; other IP packets are counted in [`Summary::not_tcp`].
    pub fn tcp_only(mut self, on: bool) -> Self {
        self.tcp_only = on;
        self
    }

    /// Keys and describes packets inside tunnels by the inner packet
    /// ([`PacketMeta::decapsulate`]).
    pub fn tunnels(mut self, on: bool) -> Self {
        self.tunnels = on;
        self
    }

    /// Also notes where each packet's payload lies ([`Packet::payload`]), for application
    /// identification.
    pub fn with_payloads(mut self, on: bool) -> Self {
        self.payloads = on;
        self
    }

    /// Parses frame `index` of its batch, counting it into `s`; `None` when it has no flow
    /// (not IP).
    #[inline]
    pub fn prepare(
        &mut self,
        frame: &Frame<'_>,
        index: u32,
        pos: u32,
        s: &mut Summary,
    ) -> Option<Packet> {
        s.count(frame);
        self.prepare_if(frame, index, pos, s, |_| true, true)
    }

    /// [`Parser::prepare`] onto the end of `out` (nothing when the frame has no flow). The
    /// packet is written where it stays: returned through memory and then moved, it would be
    /// copied with wide loads right after the narrow stores that built it, which stall on store
    /// forwarding (measured: most of the batch loop's own time).
    #[inline]
    pub fn prepare_onto(
        &mut self,
        frame: &Frame<'_>,
        index: u32,
        pos: u32,
        s: &mut Summary,
        out: &mut Vec<Packet>,
    ) {
        s.count(frame);
        self.prepare_with(frame, index, pos, s, |_| true, true, |p| out.push(p));
    }

    /// Parses frame `index` of its batch, counted elsewhere, and keeps it only if `keep`
    /// accepts its flow key. Capture time follows every frame, kept or not. Parse problems are
    /// counted for kept frames, and for frames without a flow when `unkeyed` (so that one
    /// worker counts those).
    #[inline]
    pub fn prepare_if(
        &mut self,
        frame: &Frame<'_>,
        index: u32,
        pos: u32,
        s: &mut Summary,
        keep: impl FnOnce(&FlowKey) -> bool,
        unkeyed: bool,
    ) -> Option<Packet> {
        let mut out = None;
        self.prepare_with(frame, index, pos, s, keep, unkeyed, |p| out = Some(p));
        out
    }

    /// Parses a frame that starts at `start` in the shared input (counted elsewhere) onto the
    /// end of the list `pick` chooses by its flow key (nothing when it has no flow), its
    /// payload located in the shared input ([`Payload::in_shared`]). As with
    /// [`Parser::prepare_onto`], the packet is built in its list rather than returned and
    /// moved: a worker that parses for several owners picks each packet's owner before the
    /// packet exists.
    #[inline]
    pub fn prepare_to<'v>(
        &mut self,
        frame: &Frame<'_>,
        start: u64,
        pos: u32,
        s: &mut Summary,
        pick: impl FnOnce(&FlowKey) -> &'v mut Vec<Packet>,
    ) {
        let mut meta = PacketMeta::default();
        self.parse_headers(frame, &mut meta);
        if let Some(info) = self.keyed(frame, &meta, s, |_| true, true) {
            let list = pick(&info.key);
            list.push(self.complete(info, frame, &meta, 0, pos, Some(start)));
        }
    }

    /// [`Parser::prepare_if`], handing the packet to `put`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn prepare_with(
        &mut self,
        frame: &Frame<'_>,
        index: u32,
        pos: u32,
        s: &mut Summary,
        keep: impl FnOnce(&FlowKey) -> bool,
        unkeyed: bool,
        put: impl FnOnce(Packet),
    ) {
        // Parsed where it stays, for the same reason as the packet (see `prepare_onto`).
        let mut meta = PacketMeta::default();
        self.parse_headers(frame, &mut meta);
        if let Some(info) = self.keyed(frame, &meta, s, keep, unkeyed) {
            put(self.complete(info, frame, &meta, index, pos, None));
        }
    }

    /// Parses `frame`'s headers into `meta` (inside a tunnel when asked to); capture time
    /// follows it.
    #[inline(always)]
    fn parse_headers(&mut self, frame: &Frame<'_>, meta: &mut PacketMeta) {
        self.now = frame.ts;
        meta.parse_into(frame.link, frame.data);
        if self.tunnels {
            meta.decapsulate(frame.data);
        }
    }

    /// The first half of [`Parser::prepare_if`] after parsing: the frame's flow key and what
    /// the flow table needs, counted into `s` (`None`: no flow, or not kept).
    #[inline]
    pub fn keyed(
        &mut self,
        frame: &Frame<'_>,
        meta: &PacketMeta,
        s: &mut Summary,
        keep: impl FnOnce(&FlowKey) -> bool,
        unkeyed: bool,
    ) -> Option<PacketInfo> {
        self.now = frame.ts;
        let Some((key, side)) = FlowKey::from_meta(meta) else {
            if unkeyed {
                s.problem(meta);
                if meta.status == Status::NotIp {
                    s.non_ip += 1;
                }
            }
            return None;
        };
        if !keep(&key) {
            return None;
        }
        s.problem(meta);
        if self.tcp_only && key.proto() != rampart_wire::proto::TCP {
            s.not_tcp += 1;
            return None;
        }
        s.tracked += 1;
        Some(PacketInfo {
            key,
            side,
            hash: 0,
            ts: frame.ts,
            wire_len: frame.origlen,
            tcp_flags: meta.tcp.flags,
        })
    }

    /// The second half of [`Parser::prepare_if`]: what the side stages read of the packet (RTT's
    /// input, where the payload lies) added to `info`. With `shared`, the frame starts there in
    /// the shared input and the payload is located in it ([`Payload::in_shared`]); else in
    /// frame `index` of its batch.
    #[inline]
    pub fn complete(
        &self,
        info: PacketInfo,
        frame: &Frame<'_>,
        meta: &PacketMeta,
        index: u32,
        pos: u32,
        shared: Option<u64>,
    ) -> Packet {
        let mut tcp = None;
        if self.rtt {
            tcp = RttInput::from_meta(meta, frame.origlen);
            if let Some(i) = &mut tcp
                && !self.local.is_empty()
            {
                let fam = info.key.family();
                i.to_local = self.local.iter().any(|(f, a)| *f == fam && *a == meta.dst);
            }
        }
        let mut payload = Payload::default();
        if self.payloads && !meta.is_later_fragment() {
            let at = usize::from(meta.payload_offset);
            let captured = frame.data.len().saturating_sub(at);
            let len = (meta.payload_wire_len as usize).min(captured) as u32;
            if len > 0 {
                payload = Payload::in_frame(index, at as u32, len);
                if let Some(start) = shared {
                    payload = payload.in_shared(start);
                }
            }
        }
        Packet { info, tcp, pos, payload }
    }

    /// Capture time: the timestamp of the last frame parsed (it follows the capture when its
    /// time steps back, see [`rampart_flow::FlowTable::advance`]).
    pub fn now(&self) -> Timestamp {
        self.now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_is_read_only_from_its_own_buffer() {
        let frame = Frame {
            ts: rampart_capture::Timestamp::from_nanos(0),
            origlen: 8,
            link: rampart_wire::LinkType::Raw,
            interface: 0,
            offset: 0,
            data: b"abcdefgh",
        };
        let frames = [frame];
        let src = PayloadSource { frames: &frames, shared: b"0123456789", copied: b"xyz" };
        let in_frame = Payload::in_frame(0, 2, 3);
        assert_eq!(src.get(in_frame), b"cde");
        let shared = in_frame.in_shared(0);
        assert_eq!((shared.place(), src.get(shared)), (Place::Shared, &b"234"[..]));
        assert_eq!(src.get(Payload::copied(1, 2)), b"yz");
        assert_eq!(std::mem::size_of::<Payload>(), 16);
        // Out of range, or a frame the batch does not have: nothing, never a panic.
        assert_eq!(src.get(Payload::in_frame(1, 0, 1)), b"");
        assert_eq!(src.get(Payload::copied(2, 2)), b"");
        assert_eq!(src.get(Payload::in_frame(0, 7, 2).in_shared(u64::MAX - 8)), b"");
        assert_eq!(src.get(Payload::default()), b"");
    }
}
