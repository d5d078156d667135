//! The nftables reader never panics; an error names the file, a line and a column of the
//! input; every base chain of an accepted rule set lowers, and the lowered chain decides
//! packets drawn from the input without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rampart_classify::firewall::{Firewall, Packet};
use rampart_classify::iptables::CtState;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let rs = match rampart_classify::nft::parse("fuzz", text) {
        Ok(rs) => rs,
        Err(e) => {
            assert!(e.to_string().starts_with("fuzz:"));
            assert!(e.line >= 1 && e.line <= text.split('\n').count() + 1, "{e}");
            return;
        }
    };
    let states = [None, Some(CtState::New), Some(CtState::Established), Some(CtState::Invalid)];
    for b in &rs.base {
        let Ok(fw) = Firewall::from_iptables(&rs.rules, &b.chain, &rs.sets) else { continue };
        for (i, w) in data.chunks(8).take(16).enumerate() {
            let mut x = [0u8; 8];
            x[..w.len()].copy_from_slice(w);
            let v6 = x[0] & 1 == 1;
            let (src, dst) = if v6 {
                let a = u128::from(u32::from_be_bytes([x[0], x[1], x[2], x[3]]));
                (std::net::IpAddr::from((a << 96).to_be_bytes()), std::net::IpAddr::from(a.to_be_bytes()))
            } else {
                (std::net::IpAddr::from([x[0], x[1], x[2], x[3]]), std::net::IpAddr::from([10, 0, 0, x[4]]))
            };
            let p = Packet {
                src,
                dst,
                sport: u16::from_be_bytes([x[4], x[5]]),
                dport: u16::from_be_bytes([x[6], x[7]]),
                proto: [6, 17, 1, 58][usize::from(x[5] & 3)],
                iif: ["", "eth0", "lan1", "wan"][usize::from(x[6] & 3)],
                oif: ["", "eth1", "lan0", "wan"][usize::from(x[7] & 3)],
                ct: states[i % 4],
                tcp_flags: x[3],
                app: &[],
                time: 0,
            };
            let d = fw.evaluate(&p);
            assert!(d.entry < fw.entries().len());
        }
    }
});
