//! QUIC Initial packets (v1, v2 and draft-29): the client's Initial is protected with keys
//! anyone can derive from its destination connection ID (RFC 9001 §5.2, RFC 9369 §3.3), so
//! it is decrypted here to read the ClientHello's server name and ALPN, gathered from
//! CRYPTO frames across as many Initial packets as the hello takes.
//!
//! The cryptography is RustCrypto's (`aes`, `aes-gcm`, `hkdf`, `sha2`).

use aes::Aes128;
use aes::cipher::{BlockEncrypt, KeyInit, generic_array::GenericArray};
use aes_gcm::Aes128Gcm;
use aes_gcm::aead::{Aead, Payload};
use hkdf::Hkdf;
use sha2::Sha256;

use crate::{Label, Meta, Packet, Proto, Seen, be32};

/// Bytes of ClientHello gathered at most.
const MAX_HELLO: usize = 16 * 1024;

/// A flow's QUIC state: the key material and the CRYPTO stream so far.
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    /// The first Initial's destination connection ID (the keys come from it).
    dcid: Vec<u8>,
    /// CRYPTO bytes from offset 0, contiguous.
    stream: Vec<u8>,
    /// Pieces that arrived ahead of the stream: (offset, bytes).
    ahead: Vec<(u64, Vec<u8>)>,
}

impl State {
    /// Heap bytes held, the state itself included.
    pub(crate) fn heap_bytes(&self) -> usize {
        let ahead: usize = self.ahead.iter().map(|(_, b)| b.capacity()).sum();
        std::mem::size_of::<Self>()
            + self.dcid.capacity()
            + self.stream.capacity()
            + self.ahead.capacity() * std::mem::size_of::<(u64, Vec<u8>)>()
            + ahead
    }
}

struct Version {
    salt: [u8; 20],
    /// Label prefix for the key, IV and header-protection secrets.
    labels: [&'static [u8]; 3],
    /// The long-header type bits of an Initial packet.
    initial_type: u8,
}

fn version(v: u32) -> Option<Version> {
    const V1: [&[u8]; 3] = [b"quic key", b"quic iv", b"quic hp"];
    match v {
        1 => Some(Version {
            salt: hex20("38762cf7f55934b34d179ae6a4c80cadccbb7f0a"),
            labels: V1,
            initial_type: 0,
        }),
        0x6b33_43cf => Some(Version {
            salt: hex20("0dede3def700a6db819381be6e269dcbf9bd2ed9"),
            labels: [b"quicv2 key", b"quicv2 iv", b"quicv2 hp"],
            initial_type: 1,
        }),
        0xff00_001d => Some(Version {
            salt: hex20("afbfec289993d24c9e9786f19c6111e04390a899"),
            labels: V1,
            initial_type: 0,
        }),
        _ => None,
    }
}

fn hex20(s: &str) -> [u8; 20] {
    let mut out = [0u8; 20];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or(0);
    }
    out
}

/// TLS 1.3's HKDF-Expand-Label with an empty context.
fn expand_label(secret: &[u8], label: &[u8], out: &mut [u8]) -> Option<()> {
    let hk = Hkdf::<Sha256>::from_prk(secret).ok()?;
    let mut info = Vec::with_capacity(4 + 6 + label.len());
    info.extend_from_slice(&(out.len() as u16).to_be_bytes());
    info.push((6 + label.len()) as u8);
    info.extend_from_slice(b"tls13 ");
    info.extend_from_slice(label);
    info.push(0);
    hk.expand(&info, out).ok()
}

/// The client's Initial key, IV and header-protection key.
fn client_keys(v: &Version, dcid: &[u8]) -> Option<([u8; 16], [u8; 12], [u8; 16])> {
    let (prk, _) = Hkdf::<Sha256>::extract(Some(&v.salt), dcid);
    let mut client = [0u8; 32];
    expand_label(&prk, b"client in", &mut client)?;
    let (mut key, mut iv, mut hp) = ([0u8; 16], [0u8; 12], [0u8; 16]);
    expand_label(&client, v.labels[0], &mut key)?;
    expand_label(&client, v.labels[1], &mut iv)?;
    expand_label(&client, v.labels[2], &mut hp)?;
    Some((key, iv, hp))
}

/// A variable-length integer at `at`: (value, bytes).
fn varint(b: &[u8], at: usize) -> Option<(u64, usize)> {
    let first = *b.get(at)?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(at..at + len)?;
    let mut v = u64::from(first & 0x3f);
    for &x in &bytes[1..] {
        v = v << 8 | u64::from(x);
    }
    Some((v, len))
}

/// Decrypts a client Initial packet at the start of `b`; the plaintext frames.
fn open(b: &[u8], state: &mut State) -> Option<Vec<u8>> {
    if b.len() < 7 || b[0] & 0x80 == 0 {
        return None;
    }
    let v = version(be32(b, 1)?)?;
    if (b[0] >> 4) & 3 != v.initial_type {
        return None;
    }
    let dcid_len = usize::from(b[5]);
    let dcid = b.get(6..6 + dcid_len)?;
    let mut at = 6 + dcid_len;
    let scid_len = usize::from(*b.get(at)?);
    at += 1 + scid_len;
    let (token_len, n) = varint(b, at)?;
    at += n + usize::try_from(token_len).ok()?;
    let (length, n) = varint(b, at)?;
    at += n;
    let pn_offset = at;
    let end = pn_offset.checked_add(usize::try_from(length).ok()?)?;
    if end > b.len() || length < 20 {
        return None;
    }
    if state.dcid.is_empty() {
        state.dcid = dcid.to_vec();
    }
    let (key, iv, hp) = client_keys(&v, &state.dcid)?;
    // Header protection: a mask from the sample 4 bytes past the packet number's start.
    let sample = b.get(pn_offset + 4..pn_offset + 20)?;
    let mut mask = GenericArray::clone_from_slice(sample);
    Aes128::new(&GenericArray::from(hp)).encrypt_block(&mut mask);
    let first = b[0] ^ (mask[0] & 0x0f);
    let pn_len = usize::from(first & 3) + 1;
    let mut header = b[..pn_offset + pn_len].to_vec();
    header[0] = first;
    let mut pn = 0u64;
    for i in 0..pn_len {
        header[pn_offset + i] ^= mask[1 + i];
        pn = pn << 8 | u64::from(header[pn_offset + i]);
    }
    let mut nonce = iv;
    for (i, byte) in pn.to_be_bytes().iter().enumerate() {
        nonce[4 + i] ^= byte;
    }
    let cipher = Aes128Gcm::new(&GenericArray::from(key));
    let msg = &b[pn_offset + pn_len..end];
    cipher.decrypt(GenericArray::from_slice(&nonce), Payload { msg, aad: &header }).ok()
}

/// Adds the CRYPTO frames of a decrypted Initial to the stream.
fn crypto_frames(frames: &[u8], state: &mut State) {
    let mut at = 0;
    while at < frames.len() {
        let Some((kind, n)) = varint(frames, at) else { return };
        at += n;
        match kind {
            0x00 | 0x01 => {}
            0x02 | 0x03 => {
                // ACK: largest, delay, range count, first range, then (gap, range) pairs.
                let mut count = 0;
                for i in 0..4 {
                    let Some((v, n)) = varint(frames, at) else { return };
                    at += n;
                    if i == 2 {
                        count = v.min(1024);
                    }
                }
                for _ in 0..count * 2 {
                    let Some((_, n)) = varint(frames, at) else { return };
                    at += n;
                }
                if kind == 0x03 {
                    for _ in 0..3 {
                        let Some((_, n)) = varint(frames, at) else { return };
                        at += n;
                    }
                }
            }
            0x06 => {
                let Some((offset, n)) = varint(frames, at) else { return };
                at += n;
                let Some((len, n)) = varint(frames, at) else { return };
                at += n;
                let Some(data) = usize::try_from(len).ok().and_then(|l| frames.get(at..at + l))
                else {
                    return;
                };
                at += data.len();
                if offset.saturating_add(len) <= MAX_HELLO as u64 {
                    state.ahead.push((offset, data.to_vec()));
                }
            }
            _ => return,
        }
    }
    // Join what now continues the stream.
    loop {
        let have = state.stream.len() as u64;
        let Some(k) = state.ahead.iter().position(|(o, d)| *o <= have && o + d.len() as u64 > have)
        else {
            break;
        };
        let (o, d) = state.ahead.swap_remove(k);
        state.stream.extend_from_slice(&d[(have - o) as usize..]);
    }
    state.ahead.retain(|(o, d)| o + d.len() as u64 > state.stream.len() as u64);
}

/// A client Initial: `Is(QUIC)` once the ClientHello is whole (with its server name in
/// `meta`), `More` while it is not, `No` if this is not a client Initial this code opens.
pub(crate) fn initial(p: &Packet<'_>, state: &mut Option<Box<State>>, meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 1200 && state.is_none() {
        // Clients pad their first Initial to 1200 bytes.
        return Seen::No;
    }
    let st = state.get_or_insert_with(Default::default);
    let Some(frames) = open(b, st) else {
        return Seen::No;
    };
    crypto_frames(&frames, st);
    let s = &st.stream;
    if s.len() >= 4 && s[0] == 1 {
        let len = usize::from(s[1]) << 16 | usize::from(s[2]) << 8 | usize::from(s[3]);
        if s.len() >= 4 + len {
            crate::tls::client_hello(&s[4..4 + len], meta);
            return Seen::Is(Label::of(Proto::Quic));
        }
    }
    Seen::More
}

/// Google QUIC (Q0xx): the client hello (`CHLO`) travels in the clear, as tag/offset pairs
/// followed by the values; `SNI` is the server name. True if a `CHLO` was found.
pub(crate) fn gquic_hello(b: &[u8], meta: &mut Meta) -> bool {
    let window = &b[..b.len().min(96)];
    let Some(at) = window.windows(4).position(|w| w == b"CHLO") else { return false };
    let Some(n) = b.get(at + 4..at + 6).map(|s| usize::from(u16::from_le_bytes([s[0], s[1]])))
    else {
        return true;
    };
    let tags = at + 8;
    let values = tags + 8 * n.min(128);
    let mut start = 0usize;
    for i in 0..n.min(128) {
        let Some(e) = b.get(tags + 8 * i..tags + 8 * i + 8) else { break };
        let end = u32::from_le_bytes([e[4], e[5], e[6], e[7]]) as usize;
        if &e[..4] == b"SNI\0" {
            if let Some(v) = b.get(values + start..values + end) {
                meta.sni = Some(crate::text_of(v));
            }
            break;
        }
        start = end;
    }
    true
}

/// Google QUIC's server rejection (`REJ`), which a capture may hold without the client's
/// hello: a public header without the version flag (a server's) and with the 8-byte
/// connection id, then within the first bytes a STREAM frame for the crypto stream (id 1)
/// with a data length that fits, carrying the message tag `REJ` and a tag count of 1-64.
pub(crate) fn gquic_reject(b: &[u8]) -> bool {
    if b.len() < 40 || b[0] & 0x81 != 0 || b[0] & 0x08 == 0 {
        return false;
    }
    let window = &b[..b.len().min(64)];
    let Some(at) = window.windows(4).position(|w| w == b"REJ\0") else { return false };
    if at < 13 {
        return false;
    }
    let (frame, stream) = (b[at - 4], b[at - 3]);
    let len =
        [u16::from_be_bytes([b[at - 2], b[at - 1]]), u16::from_le_bytes([b[at - 2], b[at - 1]])];
    let tags = b.get(at + 4..at + 6).map(|s| u16::from_le_bytes([s[0], s[1]]));
    frame & 0xe0 == 0xa0
        && stream == 1
        && len.iter().any(|&l| usize::from(l) >= 8 && usize::from(l) <= b.len() - at)
        && tags.is_some_and(|n| (1..=64).contains(&n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gquic_server_reject() {
        let mut d = vec![0x08, 0x25, 0x42, 0xda, 0xab, 0xb0, 0x35, 0x31, 0x7b, 0x01];
        d.extend_from_slice(&[0x6b; 12]);
        d.extend_from_slice(&[
            0x40, 0x01, 0x03, 0xa5, 0x01, 0x00, 0x06, 0x00, 0xa0, 0x01, 0x02, 0x5b,
        ]);
        d.extend_from_slice(b"REJ\0\x06\x00\x00\x00STK\0");
        d.resize(1350, 0);
        assert!(gquic_reject(&d));
        let mut client = d.clone();
        client[0] |= 0x01;
        assert!(!gquic_reject(&client));
        let mut stream = d.clone();
        stream[31] = 3;
        assert!(!gquic_reject(&stream));
        for cut in 0..60 {
            let _ = gquic_reject(&d[..cut]);
        }
    }

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn rfc9001_appendix_a_keys() {
        let v = version(1).unwrap();
        let (key, iv, hp) = client_keys(&v, &unhex("8394c8f03e515708")).unwrap();
        assert_eq!(key.to_vec(), unhex("1f369613dd76d5467730efcbe3b1a22d"));
        assert_eq!(iv.to_vec(), unhex("fa044b2f42a3fd3b46fb255c"));
        assert_eq!(hp.to_vec(), unhex("9f50449e04a0e810283a1e9933adedd2"));
    }

    #[test]
    fn rfc9001_appendix_a_client_initial() {
        let hex = include_str!("../tests/fixtures/rfc9001-a2-client-initial.hex").trim();
        let pkt = unhex(hex);
        let mut state = None;
        let mut meta = Meta::default();
        let p = Packet { payload: &pkt, from_initiator: true, ports: [50000, 443], index: 0 };
        assert_eq!(initial(&p, &mut state, &mut meta), Seen::Is(Label::of(Proto::Quic)));
        assert_eq!(meta.sni.as_deref(), Some("example.com"));
        // Any bit changed: the packet does not open.
        for bit in [0usize, 8 * 30, 8 * 600 + 3, 8 * 1199 + 7] {
            let mut bad = pkt.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let mut state = None;
            let p = Packet { payload: &bad, from_initiator: true, ports: [50000, 443], index: 0 };
            assert_ne!(
                initial(&p, &mut state, &mut Meta::default()),
                Seen::Is(Label::of(Proto::Quic))
            );
        }
        // Cut anywhere: no panic.
        for cut in (0..pkt.len()).step_by(7) {
            let mut state = None;
            let p = Packet {
                payload: &pkt[..cut],
                from_initiator: true,
                ports: [50000, 443],
                index: 0,
            };
            let _ = initial(&p, &mut state, &mut Meta::default());
        }
    }
}
