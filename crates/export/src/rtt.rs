//! RTT samples and per-flow RTT summaries out.
//!
//! Sample formats:
//!
//! * [`RttFormat::Text`], pping's default: `HH:MM:SS rtt min_rtt src:sport+dst:dport`, the clock
//!   in the local time zone (`TZ`), times scaled to µs/ms/s as pping's `fmtTimeDiff` does.
//! * [`RttFormat::Machine`], pping's `-m`:
//!   `epoch.usec rtt min_rtt fBytes dBytes pBytes src:sport+dst:dport`, times in seconds.
//! * [`RttFormat::Json`]: one object per sample with `time` (epoch seconds), `rtt` and `min_rtt`
//!   (seconds, 9 decimals), `proto`, `src`, `sport`, `dst`, `dport` and `method` (`ts`/`seq`).
//!
//! In every format the flow is that of the packet carrying the echo (or ACK): the RTT runs from
//! the capture point to `src` and back.
//!
//! Aggregated rows ([`RttWriter::write_interval`], `rampart rtt --aggregate`): one JSON object
//! per prefix and interval of capture time, with the count, min, mean, median, 95th
//! percentile and max of its samples and their histogram.
//!
//! Summaries ([`RttWriter::write_summary`]) give, per flow, the count, min, median and max of
//! the samples towards each end: `rtt_src_*` (capture point to the initiator) and `rtt_dst_*`
//! (capture point to the responder).

use std::io::{self, Write};

use rampart_flow::{Flow, FlowKey, Side};
use rampart_rtt::aggregate::{IntervalRow, bin_range};
use rampart_rtt::compat::CompatCounters;
use rampart_rtt::{CompatSample, DirSummary, RttSummary, Sample};

use crate::num::{fixed, int, padded, secs_frac, slot_addr, time_diff, uint};

/// Output format of RTT samples and summaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RttFormat {
    /// pping's default human format.
    Text,
    /// pping's `-m` machine format.
    Machine,
    /// JSON lines.
    Json,
}

/// Local wall-clock `HH:MM:SS` of epoch seconds, as `strftime("%T", localtime(t))`, cached per
/// second.
pub struct LocalClock {
    tz: jiff::tz::TimeZone,
    last: Option<i64>,
    text: [u8; 8],
}

impl Default for LocalClock {
    fn default() -> Self {
        Self::new()
    }
}

impl LocalClock {
    /// The system time zone (`TZ`, else `/etc/localtime`, else UTC).
    pub fn new() -> Self {
        Self { tz: jiff::tz::TimeZone::system(), last: None, text: *b"00:00:00" }
    }

    /// `HH:MM:SS` of `secs`.
    pub fn hms(&mut self, secs: i64) -> &[u8; 8] {
        if self.last != Some(secs) {
            self.last = Some(secs);
            let t = jiff::Timestamp::from_second(secs).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
            let dt = self.tz.to_datetime(t);
            let parts = [dt.hour() as u8, dt.minute() as u8, dt.second() as u8];
            for (i, v) in parts.into_iter().enumerate() {
                self.text[i * 3] = b'0' + v / 10;
                self.text[i * 3 + 1] = b'0' + v % 10;
            }
        }
        &self.text
    }

    /// C's `asctime(localtime(t))` without the newline: `Thu Nov 23 10:00:00 2026`.
    pub fn asctime(&self, secs: i64) -> String {
        let t = jiff::Timestamp::from_second(secs).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        self.tz.to_datetime(t).strftime("%a %b %e %H:%M:%S %Y").to_string()
    }
}

/// Writes RTT samples or summaries to `W` (buffer it: one line is one `write_all`).
pub struct RttWriter<W: Write> {
    out: W,
    line: Vec<u8>,
    /// The format, clock and flow names its sample lines (and the others) are written with.
    lines: SampleLines,
}

/// Sample lines of the default mode appended to a buffer, as [`RttWriter::write_sample`]
/// writes them: what a thread that makes samples uses to write their lines itself, so that the
/// thread that orders the output only copies them. Each has its own cache of flow names and
/// its own clock, so several write alike.
pub struct SampleLines {
    format: RttFormat,
    clock: LocalClock,
    names: Names,
}

impl SampleLines {
    /// Lines in `format`.
    pub fn new(format: RttFormat) -> Self {
        Self { format, clock: LocalClock::new(), names: Names::new() }
    }

    /// Appends the line of `s`, newline included.
    pub fn line(&mut self, l: &mut Vec<u8>, s: &Sample) {
        match self.format {
            RttFormat::Machine => {
                secs_frac(l, s.ts.as_nanos(), 6);
                l.push(b' ');
                secs_frac(l, s.rtt.as_nanos(), 6);
                l.push(b' ');
                secs_frac(l, s.min.as_nanos(), 6);
                for v in [s.fbytes, s.dbytes, s.pbytes] {
                    l.push(b' ');
                    uint(l, v);
                }
                l.push(b' ');
                self.names.write(l, &s.key, s.side);
            }
            RttFormat::Text => {
                l.extend_from_slice(self.clock.hms(s.ts.secs() as i64));
                l.push(b' ');
                time_diff(l, s.rtt.as_nanos() as f64 * 1e-9);
                l.push(b' ');
                time_diff(l, s.min.as_nanos() as f64 * 1e-9);
                l.push(b' ');
                self.names.write(l, &s.key, s.side);
            }
            RttFormat::Json => {
                l.extend_from_slice(b"{\"time\":");
                secs_frac(l, s.ts.as_nanos(), 6);
                l.extend_from_slice(b",\"rtt\":");
                secs_frac(l, s.rtt.as_nanos(), 9);
                l.extend_from_slice(b",\"min_rtt\":");
                secs_frac(l, s.min.as_nanos(), 9);
                l.extend_from_slice(b",\"proto\":\"tcp\"");
                endpoints_json(l, &s.key, s.side);
                l.extend_from_slice(b",\"method\":\"");
                l.extend_from_slice(s.method.name().as_bytes());
                l.extend_from_slice(b"\"}");
            }
        }
        l.push(b'\n');
    }
}

impl rampart_engine::SampleText for SampleLines {
    fn line(&mut self, out: &mut Vec<u8>, s: &Sample) {
        SampleLines::line(self, out, s);
    }
}

/// Slots of [`Names`]: a power of two.
const NAME_SLOTS: usize = 64;
/// The longest name: two IPv6 addresses (39 bytes each), two ports (5), `:`, `+`, `:`.
const NAME_MAX: usize = 96;

/// Flow names (`src:sport+dst:dport`) written lately, by key and side, in a direct-mapped
/// cache: a flow's samples repeat its name, and copying it costs less than writing two
/// addresses and two ports again (most of a sample line's cost otherwise).
struct Names {
    slots: Box<[NameSlot]>,
}

#[derive(Clone, Copy)]
struct NameSlot {
    key: FlowKey,
    side: Side,
    /// Bytes of `text` in use; 0 for an empty slot (a name is never empty).
    len: u8,
    text: [u8; NAME_MAX],
}

impl Names {
    fn new() -> Self {
        let empty =
            NameSlot { key: FlowKey::default(), side: Side::A, len: 0, text: [0; NAME_MAX] };
        Self { slots: vec![empty; NAME_SLOTS].into_boxed_slice() }
    }

    /// Appends the name of a packet sent by `side` of `key`, as [`flow_name`] writes it.
    #[inline]
    fn write(&mut self, l: &mut Vec<u8>, key: &FlowKey, side: Side) {
        let folded = key.words().iter().fold(side as u64, |h, w| (h ^ w).rotate_left(23));
        let i = (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize % NAME_SLOTS;
        let slot = &mut self.slots[i];
        if slot.len != 0 && slot.side == side && slot.key == *key {
            crate::num::short(l, &slot.text, slot.len as usize);
            return;
        }
        let at = l.len();
        flow_name(l, key, side);
        let name = &l[at..];
        if name.len() <= NAME_MAX {
            (slot.key, slot.side, slot.len) = (*key, side, name.len() as u8);
            slot.text[..name.len()].copy_from_slice(name);
        }
    }
}

/// Source address and port, then destination, of a packet sent by `side` of `key`.
fn ends(key: &FlowKey, side: Side) -> (&[u8; 16], u16, &[u8; 16], u16) {
    match side {
        Side::A => (key.addr_a_bytes(), key.port_a(), key.addr_b_bytes(), key.port_b()),
        Side::B => (key.addr_b_bytes(), key.port_b(), key.addr_a_bytes(), key.port_a()),
    }
}

/// `src:sport+dst:dport` for a packet sent by `side` of `key`.
fn flow_name(l: &mut Vec<u8>, key: &FlowKey, side: Side) {
    let (s, sp, d, dp) = ends(key, side);
    slot_addr(l, key.family(), s);
    l.push(b':');
    int(l, sp);
    l.push(b'+');
    slot_addr(l, key.family(), d);
    l.push(b':');
    int(l, dp);
}

/// Nanoseconds as milliseconds with 6 decimals (exact).
fn millis(l: &mut Vec<u8>, ns: u64) {
    int(l, ns / 1_000_000);
    l.push(b'.');
    padded(l, ns % 1_000_000, 6);
}

impl<W: Write> RttWriter<W> {
    /// A writer of `format` lines to `out`.
    pub fn new(out: W, format: RttFormat) -> Self {
        Self { out, line: Vec::with_capacity(256), lines: SampleLines::new(format) }
    }

    /// The format it writes.
    pub fn format(&self) -> RttFormat {
        self.lines.format
    }

    /// The writer's clock (for pping's "First packet at" line).
    pub fn clock(&self) -> &LocalClock {
        &self.lines.clock
    }

    /// The underlying writer.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// One sample from `--compat pping`, printed with pping's own arithmetic.
    pub fn write_compat(&mut self, s: &CompatSample) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        match self.lines.format {
            RttFormat::Machine => {
                int(l, (s.cap_tm + s.off_tm as f64) as i64);
                l.push(b'.');
                let us = ((s.cap_tm - s.cap_tm.floor()) * 1e6) as i32;
                padded(l, u64::from(us.max(0) as u32), 6);
                for (v, prec) in
                    [(s.rtt, 6), (s.min, 6), (s.fbytes, 0), (s.dbytes, 0), (s.pbytes, 0)]
                {
                    l.push(b' ');
                    fixed(l, v, prec);
                }
            }
            RttFormat::Text | RttFormat::Json => {
                l.extend_from_slice(self.lines.clock.hms(s.secs));
                l.push(b' ');
                time_diff(l, s.rtt);
                l.push(b' ');
                time_diff(l, s.min);
            }
        }
        l.push(b' ');
        self.lines.names.write(l, &s.key, s.side);
        l.push(b'\n');
        self.out.write_all(&self.line)
    }

    /// One sample from the default mode.
    pub fn write_sample(&mut self, s: &Sample) -> io::Result<()> {
        self.line.clear();
        self.lines.line(&mut self.line, s);
        self.out.write_all(&self.line)
    }

    /// One flow's RTT summary (flows without samples are skipped by the caller or printed with
    /// zero counts). JSON: an object with the flow's endpoints, `first`, `last` and the
    /// `rtt_src_*`/`rtt_dst_*` fields; text: `src:sport+dst:dport` then `src n=… min=… med=…
    /// max=…` and the same for `dst`; machine: `first last flow` then count, min, median, max
    /// in seconds for src and for dst.
    pub fn write_summary(&mut self, f: &Flow, r: &RttSummary) -> io::Result<()> {
        let (src, dst) = r.toward_src_dst();
        let l = &mut self.line;
        l.clear();
        match self.lines.format {
            RttFormat::Json => {
                l.extend_from_slice(b"{\"proto\":\"tcp\"");
                endpoints_json(l, &f.key, f.initiator);
                l.extend_from_slice(b",\"first\":");
                secs_frac(l, f.first.as_nanos(), 6);
                l.extend_from_slice(b",\"last\":");
                secs_frac(l, f.last.as_nanos(), 6);
                summary_json(l, src, dst);
                l.push(b'}');
            }
            RttFormat::Text => {
                flow_name(l, &f.key, f.initiator);
                for (name, d) in [(&b" src"[..], src), (b" dst", dst)] {
                    l.extend_from_slice(name);
                    l.extend_from_slice(b" n=");
                    int(l, d.count);
                    if d.count > 0 {
                        for (k, v) in
                            [(&b" min="[..], d.min), (b" med=", d.median), (b" max=", d.max)]
                        {
                            l.extend_from_slice(k);
                            let at = l.len();
                            time_diff(l, v.as_nanos() as f64 * 1e-9);
                            // Drop the leading space pping's format puts before 3-digit values.
                            if l.get(at) == Some(&b' ') {
                                l.remove(at);
                            }
                        }
                    }
                }
            }
            RttFormat::Machine => {
                secs_frac(l, f.first.as_nanos(), 6);
                l.push(b' ');
                secs_frac(l, f.last.as_nanos(), 6);
                l.push(b' ');
                flow_name(l, &f.key, f.initiator);
                for d in [src, dst] {
                    l.push(b' ');
                    int(l, d.count);
                    for v in [d.min, d.median, d.max] {
                        l.push(b' ');
                        secs_frac(l, v.as_nanos(), 6);
                    }
                }
            }
        }
        l.push(b'\n');
        self.out.write_all(&self.line)
    }

    /// One row of `rampart rtt --aggregate` (always JSON): `start` and `end` of the interval
    /// (epoch seconds), `prefix` (`10.1.2.0/24`, `2001:db8::/48`, or `other` for the samples
    /// of prefixes beyond the cap), `by` (which address of the samples was aggregated: `src`
    /// or `dst`, as the sample lines name them), `count`, `min_ms`, `mean_ms`, `median_ms`,
    /// `p95_ms`, `max_ms` (milliseconds, 6 decimals), and `bins_ns`: the non-empty histogram
    /// bins as `[lower, upper, count]`, bounds in nanoseconds (lower inclusive, upper
    /// exclusive, `null` for the overflow bin), in the layout of
    /// [`rampart_rtt::aggregate`].
    pub fn write_interval(&mut self, r: &IntervalRow<'_>, by: &str) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(b"{\"start\":");
        secs_frac(l, r.start.as_nanos(), 6);
        l.extend_from_slice(b",\"end\":");
        secs_frac(l, r.end.as_nanos(), 6);
        l.extend_from_slice(b",\"prefix\":\"");
        match r.prefix {
            Some(p) => {
                slot_addr(l, p.family, &p.addr);
                l.push(b'/');
                int(l, p.len);
            }
            None => l.extend_from_slice(b"other"),
        }
        l.extend_from_slice(b"\",\"by\":\"");
        l.extend_from_slice(by.as_bytes());
        l.extend_from_slice(b"\",\"count\":");
        int(l, r.count);
        let mean = r.mean.round().clamp(0.0, u64::MAX as f64) as u64;
        for (k, v) in [
            (&b",\"min_ms\":"[..], r.min.as_nanos()),
            (b",\"mean_ms\":", mean),
            (b",\"median_ms\":", r.median.as_nanos()),
            (b",\"p95_ms\":", r.p95.as_nanos()),
            (b",\"max_ms\":", r.max.as_nanos()),
        ] {
            l.extend_from_slice(k);
            millis(l, v);
        }
        l.extend_from_slice(b",\"bins_ns\":[");
        for (i, &(b, n)) in r.bins.iter().enumerate() {
            if i > 0 {
                l.push(b',');
            }
            let (lo, hi) = bin_range(b);
            l.push(b'[');
            int(l, lo);
            l.push(b',');
            match hi {
                Some(h) => int(l, h),
                None => l.extend_from_slice(b"null"),
            }
            l.push(b',');
            int(l, n);
            l.push(b']');
        }
        l.extend_from_slice(b"]}\n");
        self.out.write_all(&self.line)
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

fn endpoints_json(l: &mut Vec<u8>, key: &FlowKey, side: Side) {
    let (s, sp, d, dp) = ends(key, side);
    l.extend_from_slice(b",\"src\":\"");
    slot_addr(l, key.family(), s);
    l.extend_from_slice(b"\",\"sport\":");
    int(l, sp);
    l.extend_from_slice(b",\"dst\":\"");
    slot_addr(l, key.family(), d);
    l.extend_from_slice(b"\",\"dport\":");
    int(l, dp);
}

/// `,"rtt_src_count":n,"rtt_src_min":s,...` for both ends; min/median/max only with samples.
pub(crate) fn summary_json(l: &mut Vec<u8>, src: DirSummary, dst: DirSummary) {
    for (name, d) in [(&b"src"[..], src), (b"dst", dst)] {
        l.extend_from_slice(b",\"rtt_");
        l.extend_from_slice(name);
        l.extend_from_slice(b"_count\":");
        int(l, d.count);
        if d.count > 0 {
            for (k, v) in [(&b"_min\":"[..], d.min), (b"_median\":", d.median), (b"_max\":", d.max)]
            {
                l.extend_from_slice(b",\"rtt_");
                l.extend_from_slice(name);
                l.extend_from_slice(k);
                secs_frac(l, v.as_nanos(), 9);
            }
        }
    }
}

/// pping's summary line (printed every `--sumInt` and at the end): `N flows, M packets, `
/// then the non-zero counters, each followed by `, `, and a newline.
pub fn pping_summary(c: &CompatCounters) -> String {
    let mut s = format!("{} flows, {} packets, ", c.flows, c.packets);
    for (v, name) in
        [(c.no_ts, " no TS opt, "), (c.uni_dir, " uni-directional, "), (c.not_tcp, " not TCP, ")]
    {
        if v > 0 {
            s.push_str(&format!("{v}{name}"));
        }
    }
    s.push('\n');
    s
}

/// pping's last line: `Captured N packets in S seconds` (S as C++ streams print a double).
pub fn pping_captured(packets: u64, secs: f64) -> String {
    format!("Captured {packets} packets in {} seconds\n", shortest_g(secs))
}

/// A double as C++ streams print it by default (`%g`, six significant digits): scientific
/// when the exponent, after rounding to six digits, is below -4 or at least 6; trailing zeros
/// dropped.
pub fn shortest_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let sci = format!("{v:.5e}");
    let (m, e) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = e.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let m = m.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_format_like_cxx_streams() {
        assert_eq!(shortest_g(4.999999), "5");
        assert_eq!(shortest_g(5.123456), "5.12346");
        assert_eq!(shortest_g(74.0), "74");
        assert_eq!(shortest_g(0.000123), "0.000123");
        assert_eq!(shortest_g(1234567.0), "1.23457e+06");
        // The exponent is taken after rounding, and -5 is already scientific.
        assert_eq!(shortest_g(5.5e-5), "5.5e-05");
        assert_eq!(shortest_g(0.0001), "0.0001");
        assert_eq!(shortest_g(0.00001), "1e-05");
        assert_eq!(shortest_g(999_999.5), "1e+06");
        assert_eq!(shortest_g(0.000_099_999_99), "0.0001");
        assert_eq!(shortest_g(0.012153), "0.012153");
    }

    #[test]
    fn pping_summary_lists_non_zero_counters() {
        let c = CompatCounters { flows: 3, packets: 10, no_ts: 0, uni_dir: 2, not_tcp: 1 };
        assert_eq!(pping_summary(&c), "3 flows, 10 packets, 2 uni-directional, 1 not TCP, \n");
        assert_eq!(pping_captured(10, 74.0), "Captured 10 packets in 74 seconds\n");
    }
    use rampart_flow::{IpFamily, KeyKind};

    fn key() -> (FlowKey, Side) {
        FlowKey::new(
            [10, 77, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            5201,
            [10, 77, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            41466,
            6,
            IpFamily::V4,
            KeyKind::Ports,
        )
    }

    fn compat(format: RttFormat) -> String {
        let (key, side) = key();
        let s = CompatSample {
            cap_tm: 0.635544,
            off_tm: 1795392285,
            secs: 1795392285,
            rtt: 0.020480,
            min: 0.020480,
            fbytes: 66.0,
            dbytes: 0.0,
            pbytes: 140.0,
            key,
            side,
        };
        let mut w = RttWriter::new(Vec::new(), format);
        w.write_compat(&s).unwrap();
        String::from_utf8(w.out).unwrap()
    }

    #[test]
    fn compat_lines_look_like_pping() {
        assert_eq!(
            compat(RttFormat::Machine),
            "1795392285.635544 0.020480 0.020480 66 0 140 10.77.0.2:5201+10.77.0.1:41466\n"
        );
        let text = compat(RttFormat::Text);
        assert!(text.ends_with(" 20.5ms 20.5ms 10.77.0.2:5201+10.77.0.1:41466\n"), "{text}");
    }

    #[test]
    fn an_interval_row_has_the_named_fields() {
        use rampart_rtt::aggregate::{Prefix, bin};
        use rampart_wire::Span;
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&[10, 77, 0, 9]);
        let bins =
            [(bin(5_000_000), 2), (bin(20_480_123), 1), (rampart_rtt::aggregate::OVERFLOW_BIN, 1)];
        let r = IntervalRow {
            start: rampart_wire::Timestamp::from_nanos(1_795_392_310_000_000_000),
            end: rampart_wire::Timestamp::from_nanos(1_795_392_320_000_000_000),
            prefix: Some(Prefix::new(IpFamily::V4, &a, 24)),
            count: 4,
            min: Span::from_nanos(5_000_000),
            sum: 4_938_270,
            mean: 1_234_567.6,
            median: Span::from_nanos(5_001_234),
            p95: Span::from_nanos(200_000_000_000),
            max: Span::from_nanos(200_000_000_000),
            bins: &bins,
            coarse: &[],
        };
        let mut w = RttWriter::new(Vec::new(), RttFormat::Json);
        w.write_interval(&r, "src").unwrap();
        w.write_interval(&IntervalRow { prefix: None, bins: &[], ..r }, "dst").unwrap();
        assert_eq!(
            String::from_utf8(w.out).unwrap(),
            "{\"start\":1795392310.000000,\"end\":1795392320.000000,\"prefix\":\"10.77.0.0/24\",\
             \"by\":\"src\",\"count\":4,\"min_ms\":5.000000,\"mean_ms\":1.234568,\
             \"median_ms\":5.001234,\"p95_ms\":200000.000000,\"max_ms\":200000.000000,\
             \"bins_ns\":[[4980736,5046272,2],[20447232,20709376,1],[137438953472,null,1]]}\n\
             {\"start\":1795392310.000000,\"end\":1795392320.000000,\"prefix\":\"other\",\
             \"by\":\"dst\",\"count\":4,\"min_ms\":5.000000,\"mean_ms\":1.234568,\
             \"median_ms\":5.001234,\"p95_ms\":200000.000000,\"max_ms\":200000.000000,\
             \"bins_ns\":[]}\n"
        );
    }

    #[test]
    fn json_sample_has_the_named_fields() {
        let (key, side) = key();
        let s = Sample {
            ts: rampart_wire::Timestamp::from_nanos(1_795_392_285_635_544_000),
            rtt: rampart_wire::Span::from_nanos(20_480_123),
            min: rampart_wire::Span::from_nanos(20_000_000),
            method: rampart_rtt::Method::Seq,
            id: rampart_flow::FlowId(0),
            key,
            side,
            dir: rampart_flow::Dir::Original,
            fbytes: 0,
            dbytes: 0,
            pbytes: 0,
        };
        let mut w = RttWriter::new(Vec::new(), RttFormat::Json);
        w.write_sample(&s).unwrap();
        assert_eq!(
            String::from_utf8(w.out).unwrap(),
            "{\"time\":1795392285.635544,\"rtt\":0.020480123,\"min_rtt\":0.020000000,\
             \"proto\":\"tcp\",\"src\":\"10.77.0.2\",\"sport\":5201,\"dst\":\"10.77.0.1\",\
             \"dport\":41466,\"method\":\"seq\"}\n"
        );
    }

    /// Lines written apart ([`SampleLines`]) are the writer's lines, in every format.
    #[test]
    fn sample_lines_are_the_writers_lines() {
        let (key, side) = key();
        let samples: Vec<Sample> = (0..5u64)
            .map(|i| Sample {
                ts: rampart_wire::Timestamp::from_nanos(
                    1_795_392_285_635_544_000 + i * 999_999_937,
                ),
                rtt: rampart_wire::Span::from_nanos(20_480_123 + i * 1_000_003),
                min: rampart_wire::Span::from_nanos(20_000_000),
                method: rampart_rtt::Method::Ts,
                id: rampart_flow::FlowId(0),
                key,
                side: if i % 2 == 0 {
                    side
                } else if side == Side::A {
                    Side::B
                } else {
                    Side::A
                },
                dir: rampart_flow::Dir::Original,
                fbytes: 66 * i,
                dbytes: 1_000_000 + i,
                pbytes: i,
            })
            .collect();
        for format in [RttFormat::Text, RttFormat::Machine, RttFormat::Json] {
            let mut w = RttWriter::new(Vec::new(), format);
            let mut lines = SampleLines::new(format);
            let mut got = b"before\n".to_vec();
            for s in &samples {
                w.write_sample(s).unwrap();
                lines.line(&mut got, s);
            }
            assert_eq!(&got[7..], &w.out[..], "{format:?}");
            assert_eq!(got.iter().filter(|&&b| b == b'\n').count(), 6);
        }
    }

    proptest::proptest! {
        /// Names from the cache are the names written out, whatever the keys, sides and
        /// their order (few keys of both families, so slots are hit, shared and replaced).
        #[test]
        fn cached_names_are_the_names(picks in proptest::collection::vec((0usize..24, proptest::bool::ANY), 1..400)) {
            let keys: Vec<FlowKey> = (0..24u8)
                .map(|i| {
                    let mut a = [0u8; 16];
                    let mut b = [0u8; 16];
                    let family = if i % 3 == 0 { IpFamily::V6 } else { IpFamily::V4 };
                    if family == IpFamily::V6 {
                        a = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xcd, 0, i];
                        b = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, i];
                    } else {
                        a[..4].copy_from_slice(&[10, 0, i / 4, i]);
                        b[..4].copy_from_slice(&[192, 168, 200 + i % 2, 255]);
                    }
                    FlowKey::new(a, 1000 + u16::from(i) * 977, b, 443, 6, family, KeyKind::Ports).0
                })
                .collect();
            let mut names = Names::new();
            for (k, b) in picks {
                let side = if b { Side::A } else { Side::B };
                let (mut got, mut want) = (b"x ".to_vec(), b"x ".to_vec());
                names.write(&mut got, &keys[k], side);
                flow_name(&mut want, &keys[k], side);
                proptest::prop_assert_eq!(got, want);
            }
        }
    }
}
