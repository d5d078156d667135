//! The shared Linux router oracle (`shared/data/conntrack`, see its README): its port
//! addresses and the formats of its ground-truth files, read the one way the conntrack,
//! engine and command-line tests all compare against.

use std::collections::{HashMap, VecDeque};

/// The router's client-facing port (r0): the destination MAC of the client's frames in
/// `invalid-log.txt` (`MAC=dst:src:type`). Frames from it are the router's own.
pub const R0_MAC: [u8; 6] = [0x9a, 0xc0, 0xd6, 0x7f, 0x03, 0x86];
/// The server-facing port (r1).
pub const R1_MAC: [u8; 6] = [0xd2, 0x62, 0x18, 0xba, 0x51, 0x94];

/// Epoch seconds with a decimal fraction (the TSV files' times) as nanoseconds.
pub fn epoch_ns(s: &str) -> u64 {
    let (a, b) = s.split_once('.').unwrap_or((s, ""));
    let frac = format!("{b:0<9}");
    a.parse::<u64>().unwrap() * 1_000_000_000 + frac[..9].parse::<u64>().unwrap()
}

/// Nanoseconds as the TSV files write a time: epoch seconds with microseconds.
pub fn micros(ts: u64) -> String {
    format!("{}.{:06}", ts / 1_000_000_000, ts % 1_000_000_000 / 1_000)
}

/// The time `timeline.tsv` gives an event (its second column, exactly), as written.
pub fn timeline_at<'a>(timeline: &'a str, event: &str) -> &'a str {
    timeline
        .lines()
        .find_map(|l| l.split_once('\t').filter(|(_, e)| *e == event).map(|(t, _)| t))
        .unwrap_or_else(|| panic!("no event {event:?} in timeline.tsv"))
}

/// [`timeline_at`] as nanoseconds.
pub fn timeline_ns(timeline: &str, event: &str) -> u64 {
    epoch_ns(timeline_at(timeline, event))
}

/// A packet as `packets.tsv` names it: time (as [`micros`] writes it), whether it came in
/// from the client, source and destination address.
pub type PacketId = (String, bool, String, String);

/// `packets.tsv`: each packet's fate (`forwarded`, `dropped`, `to-router`, ...), in file order
/// for packets that share a name.
pub fn verdicts(packets_tsv: &str) -> HashMap<PacketId, VecDeque<String>> {
    let mut truth: HashMap<PacketId, VecDeque<String>> = HashMap::new();
    for line in packets_tsv.lines().skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        let key = (c[0].to_string(), c[1] == "client->", c[2].to_string(), c[3].to_string());
        truth.entry(key).or_default().push_back(c[8].to_string());
    }
    truth
}

/// `invalid-log.txt`: the kernel's reason for each logged packet, by its tag (IPv4 ID or
/// IPv6 flow label).
pub fn invalid_reasons(log: &str) -> HashMap<u32, String> {
    let mut out = HashMap::new();
    for line in log.lines() {
        let msg = line.split(": ").nth(1).unwrap().split(" IN=").next().unwrap().to_string();
        let id = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("ID=").or_else(|| w.strip_prefix("FLOWLBL=")))
            .unwrap();
        out.insert(id.parse().unwrap(), msg);
    }
    out
}

/// The tag a crafted packet carries: the IPv4 ID, or the IPv6 flow label, of the IP header
/// at `l3` of `frame`.
pub fn tag(frame: &[u8], l3: usize) -> u32 {
    match frame.get(l3).map(|b| b >> 4) {
        Some(4) => u32::from(u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]])),
        Some(6) => {
            u32::from_be_bytes([frame[l3], frame[l3 + 1], frame[l3 + 2], frame[l3 + 3]]) & 0xf_ffff
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_and_write_as_the_files_do() {
        assert_eq!(epoch_ns("1795395502.899122192"), 1_795_395_502_899_122_192);
        assert_eq!(epoch_ns("12.5"), 12_500_000_000);
        assert_eq!(micros(1_795_395_502_899_122_192), "1795395502.899122");
        let timeline = "epoch\tevent\n1.5\treload ruleset A (identical)\n2.25\tload ruleset A\n";
        assert_eq!(timeline_ns(timeline, "load ruleset A"), 2_250_000_000);
    }

    #[test]
    fn tags_are_the_ipv4_id_or_the_ipv6_flow_label() {
        let mut v4 = [0u8; 34];
        v4[14] = 0x45;
        v4[18..20].copy_from_slice(&0xc0d1u16.to_be_bytes());
        assert_eq!(tag(&v4, 14), 0xc0d1);
        let mut v6 = [0u8; 54];
        v6[14..18].copy_from_slice(&[0x60, 0x00, 0xc0, 0xd2]);
        assert_eq!(tag(&v6, 14), 0xc0d2);
    }
}
