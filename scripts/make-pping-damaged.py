#!/usr/bin/env python3
"""Writes tests/fixtures/pping/damaged.pcap: TCP connections with timestamps, each with one
kind of damage on the packets that carry its echoes, to compare `rampart rtt --compat pping`
with upstream pping on packets libtins is lax about (or strict about).

Usage: scripts/make-pping-damaged.py OUT.pcap

Every connection is a handshake and two request/reply exchanges between 10.0.0.1 and
10.0.0.2 (client port 40000 + n, server port 80), replies 20 ms after requests. Connection n
gets damage n on the server's two replies (which carry the echoes pping times):
  0 none; 1 IPv4 version nibble 5; 2 version nibble 6 under EtherType IPv4; 3 an EOL option
  before the timestamps option; 4 IPv4 total length 10; 5 total length 0 (TSO); 6 timestamps
  option of length 8; 7 MSS option of length 3 before a good timestamps option; 8 IP options
  ending in END followed by NOP; 9 IHL 4; 10 a malformed option (kind 5, length 1) after EOL;
  11 MF set (a fragment); 12 cut right after the IP header; 13 IP options with END as the last
  byte; 14 IPv6 (2001:db8::1 and ::2) with version nibble 4 under EtherType IPv6.
The capture starts with two packets 55 us apart (pping prints the time `-c 2` took with C++'s
default `%g`-like format: 5.5e-05).
"""
import struct
import sys

DAMAGES = 15


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def tcp(sport, dport, seq, ack, flags, tsval, tsecr, payload=b"", opts=None):
    if opts is None:
        opts = b"\x01\x01\x08\x0a" + struct.pack("!II", tsval, tsecr)
    while len(opts) % 4:
        opts += b"\0"
    off = (20 + len(opts)) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, off << 4, flags, 65535, 0, 0) + opts + payload


def ipv4(src, dst, seg, version=4, ihl=5, total=None, frag=0, opts=b""):
    hl = ihl * 4
    total = 20 + len(opts) + len(seg) if total is None else total
    h = struct.pack("!BBHHHBBH4s4s", (version << 4) | ihl, 0, total, 1, frag, 64, 6, 0,
                    bytes(src), bytes(dst)) + opts
    h = h[:10] + struct.pack("!H", csum(h[:max(hl, 20)])) + h[12:]
    return 0x0800, h + seg


def ipv6(src, dst, seg, version=6):
    h = struct.pack("!IHBB16s16s", version << 28, len(seg), 6, 64, bytes(src), bytes(dst))
    return 0x86DD, h + seg


def frame(et_ip):
    et, ip = et_ip
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + struct.pack("!H", et) + ip


SYN, ACK, PSH = 0x02, 0x10, 0x08


def connection(n, t0):
    """Frames (time, bytes) of connection n."""
    c, s = [10, 0, 0, 1], [10, 0, 0, 2]
    if n == 14:
        c = [0x20, 0x01, 0x0D, 0xB8] + [0] * 11 + [1]
        s = [0x20, 0x01, 0x0D, 0xB8] + [0] * 11 + [2]
    cp, sp = 40000 + n, 80
    out = []

    def ip(src, dst, seg, damaged=False):
        if n == 14:
            return ipv6(src, dst, seg, version=4 if damaged else 6)
        if not damaged:
            return ipv4(src, dst, seg)
        if n == 1:
            return ipv4(src, dst, seg, version=5)
        if n == 2:
            return ipv4(src, dst, seg, version=6)
        if n == 4:
            return ipv4(src, dst, seg, total=10)
        if n == 5:
            return ipv4(src, dst, seg, total=0)
        if n == 8:
            return ipv4(src, dst, seg, ihl=6, opts=b"\x00\x01\x01\x01")
        if n == 9:
            return ipv4(src, dst, seg, ihl=4)
        if n == 11:
            return ipv4(src, dst, seg, frag=0x2000)
        if n == 12:
            et, b = ipv4(src, dst, seg)
            return et, b[:20]
        if n == 13:
            return ipv4(src, dst, seg, ihl=6, opts=b"\x01\x01\x01\x00")
        return ipv4(src, dst, seg)

    def reply_opts(tsval, tsecr):
        ts = struct.pack("!II", tsval, tsecr)
        return {
            3: b"\x00\x01\x08\x0a" + ts,
            6: b"\x08\x08" + ts[:6],
            7: b"\x02\x03\x05\x08\x0a" + ts,
            10: b"\x00\x05\x01\x01\x08\x0a" + ts,
        }.get(n)

    t = t0
    cts, sts = 1000 + n * 100, 9000 + n * 100
    cseq, sseq = 1, 50001
    out.append((t, frame(ip(c, s, tcp(cp, sp, cseq, 0, SYN, cts, 0)))))
    out.append((t + 0.02, frame(ip(s, c, tcp(sp, cp, sseq, cseq + 1, SYN | ACK, sts, cts)))))
    out.append((t + 0.03, frame(ip(c, s, tcp(cp, sp, cseq + 1, sseq + 1, ACK, cts + 1, sts)))))
    cseq, sseq = cseq + 1, sseq + 1
    t += 0.1
    for k in range(2):
        cts += 10
        sts += 10
        out.append((t, frame(ip(c, s, tcp(cp, sp, cseq, sseq, PSH | ACK, cts, sts - 10, b"GET / HTTP/1.0\r\n\r\n")))))
        seg = tcp(sp, cp, sseq, cseq + 18, PSH | ACK, sts, cts, b"HTTP/1.0 200 OK\r\n\r\n",
                  opts=reply_opts(sts, cts))
        out.append((t + 0.02, frame(ip(s, c, seg, damaged=True))))
        out.append((t + 0.03, frame(ip(c, s, tcp(cp, sp, cseq + 18, sseq + 19, ACK, cts + 1, sts)))))
        cseq += 18
        sseq += 19
        t += 0.1
    return out


def main(path):
    frames = []
    t0 = 1700000000.0
    # Two packets 55 us apart first: `-c 2` stops after 5.5e-05 seconds.
    for i in range(2):
        frames.append((t0 - 1 + i * 55e-6, frame(ipv4([10, 0, 0, 3], [10, 0, 0, 4],
                                                     tcp(50000, 443, 1 + i, 1, ACK, 7 + i, 3)))))
    for n in range(DAMAGES):
        frames += connection(n, t0 + n)
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for t, b in frames:
            sec = int(t)
            usec = int(round((t - sec) * 1e6))
            f.write(struct.pack("<IIII", sec, usec, len(b), len(b)) + b)


if __name__ == "__main__":
    main(sys.argv[1])
