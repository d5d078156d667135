#!/usr/bin/env python3
"""Per-conversation, per-direction counts of tshark's TCP analysis flags.

Usage: scripts/tshark-tcp-analysis.py CAPTURE > FIXTURE.tsv

This makes the expected tables that the TCP health counters of `rampart flows` are tested
against (crates/cli/tests/tcpstate.rs). tshark's sequence analysis runs independently of
rampart; this script only counts the frames carrying each flag, grouped by TCP address and
port pair (endpoint A being the lower (address, port)), for A->B then B->A:
  retrans   tcp.analysis.retransmission || fast_retransmission || spurious_retransmission
  ooo       tcp.analysis.out_of_order
  lost      tcp.analysis.lost_segment
  zero_win  tcp.analysis.zero_window
Conversations without any flag are not listed. IP reassembly is off, as for the flow fixtures; frames with
more than one IP header (tunnels) are left out, since rampart keys them by the outer header.
Columns: a_addr a_port b_addr b_port, then retrans ooo lost zero_win A->B, then the same B->A.
"""
import ipaddress
import subprocess
import sys
from collections import defaultdict

FLAGS = [
    ("retrans", "tcp.analysis.retransmission || tcp.analysis.fast_retransmission"
                " || tcp.analysis.spurious_retransmission"),
    ("ooo", "tcp.analysis.out_of_order"),
    ("lost", "tcp.analysis.lost_segment"),
    ("zero_win", "tcp.analysis.zero_window"),
]
FIELDS = ["frame.protocols", "ip.src", "ipv6.src", "tcp.srcport", "ip.dst", "ipv6.dst", "tcp.dstport"]


def main(path):
    convs = defaultdict(lambda: [0] * 8)
    for i, (_, filt) in enumerate(FLAGS):
        cmd = ["tshark", "-n", "-r", path, "-o", "ip.defragment:FALSE",
               "-o", "ipv6.defragment:FALSE", "-Y", filt, "-T", "fields",
               "-E", "separator=\t", "-E", "occurrence=f"]
        for f in FIELDS:
            cmd += ["-e", f]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            v = dict(zip(FIELDS, line.split("\t")))
            src = v["ip.src"] or v["ipv6.src"]
            dst = v["ip.dst"] or v["ipv6.dst"]
            layers = v["frame.protocols"].split(":")
            # Only TCP right over the outer IP header: rampart does not look inside tunnels.
            outer = [i for i, p in enumerate(layers) if p in ("ip", "ipv6")]
            if not src or not v["tcp.srcport"] or len(outer) != 1 or "tcp" not in layers[outer[0]:]:
                continue
            s = (ipaddress.ip_address(src), int(v["tcp.srcport"]))
            d = (ipaddress.ip_address(dst), int(v["tcp.dstport"]))
            a, b = sorted([s, d], key=lambda e: (e[0].version, e[0].packed, e[1]))
            off = 0 if s == a else 4
            convs[(a, b)][off + i] += 1
    for (a, b), c in sorted(convs.items(), key=lambda kv: (str(kv[0][0]), kv[0][0][1], str(kv[0][1]), kv[0][1][1])):
        print("\t".join([str(a[0]), str(a[1]), str(b[0]), str(b[1])] + [str(x) for x in c]))


if __name__ == "__main__":
    main(sys.argv[1])
