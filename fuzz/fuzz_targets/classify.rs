//! Rule and set parsers, the decompressing reader and format detection never panic; rules the ClassBench parser accepts compile, and the compiled
//! classifier agrees with the linear scan on headers drawn from the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rampart_classify::classbench::parse_rules;
use rampart_classify::linear::first_match;
use rampart_classify::{Compiled, Header};

fuzz_target!(|data: &[u8]| {
    // Compressed or not, any bytes give text or an error naming the file.
    if let Err(e) = rampart_classify::source::decode("fuzz", data.to_vec()) {
        assert!(e.to_string().starts_with("fuzz: "));
    }
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = rampart_classify::source::detect(text);
    if let Ok(rs) = rampart_classify::iptables::parse("fuzz", text) {
        for c in &rs.chains {
            let _ = rs.reachable(&c.name);
            let _ = rampart_classify::firewall::Firewall::from_iptables(&rs, &c.name, &Default::default());
        }
    }
    let _ = rampart_classify::ipset::parse_ipset_save("fuzz", text);
    if let Ok((rs, sets)) = rampart_classify::syntax::parse("fuzz", text) {
        for c in &rs.chains {
            let _ = rampart_classify::firewall::Firewall::from_iptables(&rs, &c.name, &sets);
        }
    }
    let Ok(rules) = parse_rules("fuzz", text) else { return };
    if rules.is_empty() {
        return;
    }
    let c = Compiled::new(&rules);
    for (i, w) in data.chunks(20).enumerate() {
        let mut f = [0u32; 5];
        for (k, b) in w.iter().enumerate() {
            f[k % 5] = f[k % 5].rotate_left(8) ^ u32::from(*b) ^ i as u32;
        }
        let h = Header([f[0], f[1], f[2] & 0xffff, f[3] & 0xffff, f[4] & 0xff]);
        assert_eq!(c.classify(&h), first_match(&rules, &h));
    }
});
