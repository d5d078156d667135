#!/usr/bin/env python3
"""tshark's `tcp.analysis.ack_rtt` for every ACK frame that acknowledges a segment exactly.

Usage: scripts/tshark-ack-rtt.py CAPTURE > FIXTURE.tsv

This makes the expected tables that the SEQ/ACK samples of `rampart rtt --mode seq` are tested
against (crates/cli/tests/ack_rtt.rs). Wireshark pairs an ACK with the unacknowledged segment
that ends exactly at its ACK number and gives the time since that segment was sent; tshark runs
independently of rampart, this script only lists its results. IP reassembly is off, as for the
other fixtures. Addresses are the innermost IP header's: in a tunnel (GTP-U, GRE, IP in IP,
...) the TCP connection is the inner packets', as rampart keys it.
Frames are those with `tcp.analysis.acks_frame`; Wireshark leaves `ack_rtt` out when it is
zero (the ACK has the same timestamp as the segment), and this script writes 0 for it.
Columns: frame time (epoch, 9 decimals), source address, port, destination address, port (of
the ACK frame), ack_rtt in seconds.
"""
import subprocess
import sys

FIELDS = ["frame.time_epoch", "frame.protocols", "ip.src", "ipv6.src", "tcp.srcport", "ip.dst",
          "ipv6.dst", "tcp.dstport", "tcp.analysis.acks_frame", "tcp.analysis.ack_rtt"]


def main(path):
    cmd = ["tshark", "-n", "-r", path, "-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE",
           "-Y", "tcp.analysis.acks_frame", "-T", "fields", "-E", "separator=\t",
           "-E", "occurrence=l"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        v = dict(zip(FIELDS, line.split("\t")))
        layers = [p for p in v["frame.protocols"].split(":") if p in ("ip", "ipv6")]
        # The innermost header's addresses, of its family.
        inner_v6 = bool(layers) and layers[-1] == "ipv6"
        src = v["ipv6.src"] if inner_v6 else v["ip.src"]
        dst = v["ipv6.dst"] if inner_v6 else v["ip.dst"]
        if not src:
            continue
        print("\t".join([v["frame.time_epoch"], src, v["tcp.srcport"], dst, v["tcp.dstport"],
                         v["tcp.analysis.ack_rtt"] or "0"]))


if __name__ == "__main__":
    main(sys.argv[1])
