"""The traffic of the inline oracle test, from one side: each step's outcome as a line
`step<TAB>outcome` appended to a file. Run in the client namespace (`client`) or the
server's (`server`). Addresses: 10.77.0.1 and 10.77.0.2, fd77::1 and fd77::2."""
import socket
import struct
import subprocess
import sys
import time
import urllib.request

SIDE, OUT = sys.argv[1], sys.argv[2]
results = []


def step(name, outcome):
    results.append((name, outcome))


def ping(addr):
    r = subprocess.run(["ping", "-c", "3", "-i", "0.2", "-W", "2", addr],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return "ok" if r.returncode == 0 else "fail"


def http(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return "ok" if r.status == 200 else f"status {r.status}"
    except Exception as e:  # noqa: BLE001 - the kind of failure is the outcome
        return outcome_of(e)


def outcome_of(e):
    s = str(e)
    if isinstance(e, ConnectionRefusedError) or "refused" in s.lower():
        return "refused"
    if isinstance(e, (socket.timeout, TimeoutError)) or "timed out" in s.lower():
        return "timeout"
    if "unreachable" in s.lower():
        return "unreachable"
    return "error"


def tcp(addr, port, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(1.5)
    try:
        s.connect((addr, port))
        return "connected"
    except Exception as e:  # noqa: BLE001
        return outcome_of(e)
    finally:
        s.close()


def udp(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    try:
        s.connect((addr, port))
        s.send(b"hello")
        s.recv(100)
        return "answered"
    except Exception as e:  # noqa: BLE001
        return outcome_of(e)
    finally:
        s.close()


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def crafted(sport, flags, seq=1000, ack=0, good_checksum=True):
    """A TCP segment from 10.77.0.1:sport to 10.77.0.2:80, sent raw."""
    src, dst = socket.inet_aton("10.77.0.1"), socket.inet_aton("10.77.0.2")
    tcp = struct.pack("!HHIIBBHHH", sport, 80, seq, ack, 5 << 4, flags, 64240, 0, 0)
    c = csum(src + dst + struct.pack("!BBH", 0, 6, len(tcp)) + tcp)
    if not good_checksum:
        c ^= 0x5A5A
    tcp = tcp[:16] + struct.pack("!H", c) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), sport, 0, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    s.sendto(ip + tcp, ("10.77.0.2", 0))
    s.close()


if SIDE == "client":
    step("ping", ping("10.77.0.2"))
    step("ping6", ping("fd77::2"))
    step("http", http("http://10.77.0.2/"))
    step("http-again", http("http://10.77.0.2/"))
    step("tcp-reject-reset", tcp("10.77.0.2", 9999))
    step("tcp-policy-drop", tcp("10.77.0.2", 23))
    step("tcp6-policy-drop", tcp("fd77::2", 23, socket.AF_INET6))
    step("udp-closed-port-related-icmp", udp("10.77.0.2", 7777))
    step("udp-policy-drop", udp("10.77.0.2", 7778))
    # Crafted segments (the server's sniffer counts which arrive, by source port).
    crafted(61001, 0x03)  # SYN+FIN: not a valid flag combination
    crafted(61002, 0x12, ack=5)  # SYN/ACK with no SYN before
    crafted(61003, 0x02, good_checksum=False)  # SYN with a bad checksum
    crafted(61004, 0x10, ack=77)  # ACK with no connection (picked up by tcp_loose)
    crafted(61005, 0x04)  # RST with no connection
    crafted(61006, 0x02)  # a plain SYN
    time.sleep(0.5)
else:
    step("tcp-server-to-client", tcp("10.77.0.1", 80))

with open(OUT, "a") as f:
    for name, outcome in results:
        f.write(f"{name}\t{outcome}\n")
