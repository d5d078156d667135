//! Git's native protocol (port 9418): a pkt-line (four hex digits of length) carrying
//! `git-upload-pack`, `git-receive-pack` or `git-upload-archive` and a path.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Git";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(b"0"),
    evidence: "a pkt-line whose four hex digits give its length, carrying a `git-upload-pack`, \
               `git-receive-pack` or `git-upload-archive` request",
    source: "Git documentation, gitprotocol-pack(5) and gitprotocol-common(5)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let Some(hex) = b.get(..4).and_then(|h| std::str::from_utf8(h).ok()) else {
        return Seen::No;
    };
    let Ok(len) = usize::from_str_radix(hex, 16) else { return Seen::No };
    let line = &b[4..];
    let cmd = [&b"git-upload-pack "[..], b"git-receive-pack ", b"git-upload-archive "]
        .iter()
        .any(|c| line.starts_with(c));
    if cmd && len <= b.len() && len > 4 { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn upload_pack_request() {
        let m = b"0032git-upload-pack /project.git\0host=example.com\0";
        assert!(matches!(run(detect, m, [40000, 9418]), Seen::Is(_)));
        assert_eq!(run(detect, b"00zzgit-upload-pack /x\0", [40000, 9418]), Seen::No);
        robust(detect, m, [1, 9418]);
    }
}
