//! The verifier's packet and constraint readers never panic; a packet they accept prints
//! back to itself, and a constraint they accept gives a set whose witnesses meet it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rampart_policy::questions::{Packet, constraint, free_values};
use rampart_policy::rules::{self, Layout};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(p) = Packet::parse(text) {
        assert_eq!(Packet::parse(&p.to_string()).as_ref(), Ok(&p));
    }
    for layout in [Layout::ClassBench, Layout::Firewall] {
        let mut m = rules::manager(layout);
        let model = match layout {
            Layout::ClassBench => rules::classbench(&mut m, &[]),
            Layout::Firewall => empty_firewall(&mut m),
        };
        if let Ok(set) = constraint(&mut m, &model, text)
            && let Some(w) = m.witness(set, &|v| v == 1, &free_values(layout))
        {
            assert_eq!(m.eval(set, &w), 1);
        }
    }
});

/// An empty firewall model (policy accept) to read constraints against.
fn empty_firewall(m: &mut rampart_policy::dd::Manager) -> rules::Model {
    let (rs, sets) = rampart_classify::syntax::parse("fuzz", "table t {\n  default accept\n}\n")
        .expect("a fixed rule set");
    let fw = rampart_classify::firewall::Firewall::from_iptables(&rs, "t", &sets)
        .expect("a fixed rule set");
    rules::firewall(m, &fw, &mut Vec::new())
}
