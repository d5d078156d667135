"""Counts the crafted TCP segments (source ports 61000-61099) that reach an interface, for
SECONDS, then writes `port<TAB>count` lines to OUT. Usage: inline_sniff.py IFACE OUT SECONDS."""
import socket
import struct
import sys
import time

iface, out, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
s.bind((iface, 0))
s.settimeout(0.2)
seen = {}
end = time.time() + secs
while time.time() < end:
    try:
        f, addr = s.recvfrom(65535)
    except socket.timeout:
        continue
    if addr[2] == socket.PACKET_OUTGOING or len(f) < 14 + 20 + 4:
        continue
    if struct.unpack("!H", f[12:14])[0] != 0x0800 or f[23] != 6:
        continue
    ihl = (f[14] & 15) * 4
    sport = struct.unpack("!H", f[14 + ihl:16 + ihl])[0]
    if 61000 <= sport < 61100:
        seen[sport] = seen.get(sport, 0) + 1
with open(out, "w") as o:
    for p in range(61001, 61007):
        o.write(f"{p}\t{seen.get(p, 0)}\n")
