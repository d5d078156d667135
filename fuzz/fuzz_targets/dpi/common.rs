//! Shared by the DPI targets: the input is a run of packets, each a direction-and-length
//! header (high bit: from the responder; 15 bits: length) and that many bytes, fed to one
//! flow. Checks: no panic; a finished flow stays finished with its label; metadata is
//! bounded text.

use rampart_dpi::{Config, FlowDpi};

pub fn run(data: &[u8], l4: u8, ports: [u16; 2]) {
    let cfg = Config::default();
    let mut f = FlowDpi::new(l4);
    let mut rest = data;
    let mut done_with = None;
    while rest.len() >= 2 {
        let h = u16::from_be_bytes([rest[0], rest[1]]);
        let len = usize::from(h & 0x7fff).min(rest.len() - 2);
        let payload = &rest[2..2 + len];
        rest = &rest[2 + len..];
        let done = f.feed(&cfg, h & 0x8000 == 0, ports, payload);
        if let Some(label) = done_with {
            assert!(done && f.label() == label, "a finished flow changed");
        } else if done {
            done_with = Some(f.label());
        }
    }
    f.give_up(ports);
    assert!(f.is_done());
    let _ = f.label().to_string();
    let m = f.meta();
    for s in [&m.sni, &m.alpn, &m.http_host, &m.user_agent, &m.dns_query, &m.ssh_banner].into_iter().flatten() {
        assert!(s.len() <= 4 * 255 && !s.chars().any(char::is_control));
    }
}
