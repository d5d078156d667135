//! Automatic tank gauges' serial command protocol (Veeder-Root TLS-3xx/4xx, on TCP port
//! 10001 when bridged to the network): a command is the control character SOH (0x01), a
//! function code (`I` for inquiries, `S` for settings, upper case for display format, lower
//! case for computer format), three digits and a two-digit tank or station number, and a
//! line end.
//!
//! Sources: Veeder-Root's serial interface manual (command format: SOH, function code, tank
//! number); nDPI's `atg.c`.

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen};

const NAME: &str = "ATG";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x01]),
    evidence: "commands of SOH, a function code (I, i, S or s and five digits), printable data \
               and CR LF; three of them",
    source: "Veeder-Root serial interface manual (command format); nDPI's atg.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let Some(body) = b.strip_prefix(b"\x01").and_then(|r| r.strip_suffix(b"\r\n")) else {
        return Seen::No;
    };
    if body.len() < 6
        || !b"IiSs".contains(&body[0])
        || !body[1..6].iter().all(u8::is_ascii_digit)
        || !body[6..].iter().all(|c| (0x20..0x7f).contains(c))
    {
        return Seen::No;
    }
    Seen::Maybe(Label { master: Proto::Other(&NAME), app: None }, 0, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn inventory_command() {
        let cmd = b"\x01I20100\r\n";
        assert!(matches!(run(detect, cmd, [3134, 10001]), Seen::Maybe(..)));
        robust(detect, cmd, [3134, 10001]);
        assert_eq!(run(detect, b"\x01X20100\r\n", [3134, 10001]), Seen::No);
        assert_eq!(run(detect, b"\x01I2010\r\n", [3134, 10001]), Seen::No);
        assert_eq!(run(detect, b"\x01I20100", [3134, 10001]), Seen::No);
    }
}
