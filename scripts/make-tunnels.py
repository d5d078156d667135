#!/usr/bin/env python3
"""Writes tests/fixtures/tunnels.pcap: one DNS query (10.9.0.N:40000 -> 10.9.1.1:53, N the
tunnel's number) inside each tunnel rampart decapsulates, between 192.0.2.1 and 192.0.2.2:
IPv4 in IPv4, GRE with a key, GRE carrying Ethernet, VXLAN, GTP-U, CAPWAP data carrying
Ethernet; then the same query outside any tunnel.

Usage: scripts/make-tunnels.py OUT.pcap
"""
import struct
import sys


def udp(sport, dport, body):
    return struct.pack("!HHHH", sport, dport, 8 + len(body), 0) + body


def ipv4(src, dst, proto, body):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 1, 0, 64, proto, 0,
                    bytes(src), bytes(dst))
    return h + body


def ether(et, body):
    return b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01" + struct.pack("!H", et) + body


def query(n):
    dns = struct.pack("!HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + b"\x07example\x03com\x00\x00\x01\x00\x01"
    return ipv4([10, 9, 0, n], [10, 9, 1, 1], 17, udp(40000, 53, dns))


def outer_ip(proto, body):
    return ether(0x0800, ipv4([192, 0, 2, 1], [192, 0, 2, 2], proto, body))


def outer_udp(sport, dport, body):
    return outer_ip(17, udp(sport, dport, body))


def main(path):
    frames = [
        outer_ip(4, query(1)),
        outer_ip(47, b"\x20\x00\x08\x00" + b"\0\0\0\x07" + query(2)),
        outer_ip(47, b"\x00\x00\x65\x58" + ether(0x0800, query(3))),
        outer_udp(50000, 4789, b"\x08\0\0\0\0\0\x2a\0" + ether(0x0800, query(4))),
        outer_udp(2152, 2152, b"\x30\xff" + struct.pack("!H", len(query(5))) + b"\0\0\0\x01" + query(5)),
        outer_udp(12222, 5247, b"\x00\x10\x02\x00\0\0\0\0" + ether(0x0800, query(6))),
        ether(0x0800, query(7)),
    ]
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, b in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000 + i, 0, len(b), len(b)) + b)


if __name__ == "__main__":
    main(sys.argv[1])
