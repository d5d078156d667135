"""A delaying Ethernet bridge between two interfaces, for rampart's live-capture test.

Usage: delay.py IFACE_A IFACE_B HALF_RTT_MS SECONDS

Every frame read on one interface is sent out of the other HALF_RTT_MS later, so a round trip
through the bridge takes twice that. Runs for SECONDS, then exits. Frames the kernel sent out of
an interface (PACKET_OUTGOING) are our own and are not read back.
"""
import heapq
import select
import socket
import sys
import time

ETH_P_ALL = 3
PACKET_OUTGOING = 4

a, b, half, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3]) / 1000.0, float(sys.argv[4])
socks = []
for name in (a, b):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((name, 0))
    s.setblocking(False)
    socks.append(s)
other = {socks[0].fileno(): socks[1], socks[1].fileno(): socks[0]}
pending = []  # (due, seq, out socket, frame)
seq = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    now = time.monotonic()
    while pending and pending[0][0] <= now:
        _, _, out, frame = heapq.heappop(pending)
        try:
            out.send(frame)
        except OSError:
            pass
    wait = max(0.0, min(end - now, (pending[0][0] - now) if pending else 0.05))
    ready, _, _ = select.select(socks, [], [], wait)
    for s in ready:
        while True:
            try:
                frame, addr = s.recvfrom(65535)
            except BlockingIOError:
                break
            if addr[2] == PACKET_OUTGOING:
                continue
            seq += 1
            heapq.heappush(pending, (time.monotonic() + half, seq, other[s.fileno()], frame))
