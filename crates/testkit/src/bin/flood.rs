//! `flood KIND FLOWS OUT.pcap [GAP_US]`: writes a capture of FLOWS new flows of KIND (`udp`,
//! `syn`, `tls`, `syn-sessions`: a SYN flood through which 16 connections keep talking, or
//! `tcp`: short conversations with TCP timestamps, side by side),
//! one every GAP_US microseconds (default 1), for memory and flood
//! measurements.

use std::io::BufWriter;

use rampart_testkit::flood::{Kind, write};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: flood udp|syn|tls|syn-sessions|tcp FLOWS OUT.pcap [GAP_US]";
    let (Some(kind), Some(flows), Some(out)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let kind = match kind.as_str() {
        "udp" => Kind::Udp,
        "syn" => Kind::Syn,
        "tls" => Kind::Tls,
        "syn-sessions" => Kind::SynWithSessions,
        "tcp" => Kind::Conversations,
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let flows: u32 = flows.parse().map_err(|_| std::io::Error::other(usage))?;
    let gap: u64 =
        args.get(4).map_or(Ok(1), |g| g.parse()).map_err(|_| std::io::Error::other(usage))?;
    let mut w = BufWriter::new(std::fs::File::create(out)?);
    write(&mut w, kind, flows, gap)?;
    std::io::Write::flush(&mut w)
}
