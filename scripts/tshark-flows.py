#!/usr/bin/env python3
"""Per-conversation, per-direction frame and byte counts from tshark's dissection.

Usage: scripts/tshark-flows.py CAPTURE > FIXTURE.tsv

This makes the expected tables that `rampart flows` is tested against. tshark dissects each
frame independently of rampart; this script only groups its fields:
  - TCP and UDP by address and port pair,
  - ICMP and ICMPv6 echo by address pair and identifier,
  - everything else by address pair and protocol.
Bytes are frame.len (the length on the wire). The transport is the first protocol after the
outer IP header (and its IPv6 extension headers) in frame.protocols, so headers quoted inside
ICMP errors or carried in tunnels do not count. IP reassembly is off: each fragment counts
where its own headers put it (later fragments carry no ports). Each output row is one conversation, endpoint A
being the lower (address, port); counts are A->B then B->A.
"""
import ipaddress
import subprocess
import sys
from collections import defaultdict

FIELDS = [
    "frame.len", "frame.protocols", "ip.src", "ip.dst", "ip.proto", "ipv6.src", "ipv6.dst", "ipv6.nxt",
    "tcp.srcport", "tcp.dstport", "udp.srcport", "udp.dstport",
    "icmp.type", "icmp.ident", "icmpv6.type", "icmpv6.echo.identifier",
    "ipv6.hopopts.nxt", "ipv6.routing.nxt", "ipv6.fraghdr.nxt", "ipv6.dstopts.nxt",
]


IPV6_EXT = {"ipv6.hopopts", "ipv6.routing", "ipv6.fraghdr", "ipv6.dstopts"}


def transport(protocols):
    """The first protocol after the outer IP header, skipping IPv6 extension headers, and the
    last extension header before it."""
    layers = protocols.split(":")
    for i, p in enumerate(layers):
        if p in ("ip", "ipv6"):
            ext = ""
            for q in layers[i + 1:]:
                if q not in IPV6_EXT:
                    return q, ext
                ext = q
            return "", ext
    return "", ""


def main(path):
    cmd = ["tshark", "-n", "-r", path, "-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE",
           "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    convs = defaultdict(lambda: [0, 0, 0, 0])
    for line in out.splitlines():
        v = dict(zip(FIELDS, line.split("\t")))
        if v["ip.src"]:
            src, dst, proto = v["ip.src"], v["ip.dst"], v["ip.proto"]
        elif v["ipv6.src"]:
            src, dst, proto = v["ipv6.src"], v["ipv6.dst"], v["ipv6.nxt"]
            ext = transport(v["frame.protocols"])[1]
            if ext:
                proto = v[ext + ".nxt"]
        else:
            continue
        sp = dp = 0
        layer = transport(v["frame.protocols"])[0]
        if layer == "tcp" and v["tcp.srcport"]:
            name, sp, dp = "tcp", int(v["tcp.srcport"]), int(v["tcp.dstport"])
        elif layer == "udp" and v["udp.srcport"]:
            name, sp, dp = "udp", int(v["udp.srcport"]), int(v["udp.dstport"])
        elif layer == "icmp" and v["icmp.type"] in ("0", "8") and v["icmp.ident"]:
            name, sp = "icmp-echo", int(v["icmp.ident"], 0)
            dp = sp
        elif layer == "icmpv6" and v["icmpv6.type"] in ("128", "129") and v["icmpv6.echo.identifier"]:
            name, sp = "icmp6-echo", int(v["icmpv6.echo.identifier"], 0)
            dp = sp
        else:
            name = "ip-" + proto
        a = (ipaddress.ip_address(src).packed, sp, src)
        b = (ipaddress.ip_address(dst).packed, dp, dst)
        fwd = a[:2] <= b[:2]
        lo, hi = (a, b) if fwd else (b, a)
        c = convs[(name, lo[2], lo[1], hi[2], hi[1])]
        i = 0 if fwd else 2
        c[i] += 1
        c[i + 1] += int(v["frame.len"])
    print("# proto\taddr_a\tport_a\taddr_b\tport_b\tpackets_ab\tbytes_ab\tpackets_ba\tbytes_ba")
    ver = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout
    print("# from: " + ver.splitlines()[0])
    for k in sorted(convs, key=lambda k: (k[0], ipaddress.ip_address(k[1]).packed, k[2],
                                          ipaddress.ip_address(k[3]).packed, k[4])):
        print("\t".join(map(str, k + tuple(convs[k]))))


if __name__ == "__main__":
    main(sys.argv[1])
