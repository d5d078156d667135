"""Does a jump in capture time cost `rampart flows` anything? Builds captures of many flows
with full payloads from the nDPI captures (their Ethernet ones merged with mergecap), COPIES
copies of them with addresses rewritten per copy and packets 1 us apart, then three variants of
the same packets:

  plain        as built;
  first-1970   the first packet dated 1970 (a bogus first timestamp, merged capture sets);
  middle-1970  the middle packet dated 1970 (time steps back to 1970 and forward again);
  back-1h      the second half dated an hour earlier (a clock stepped back for good).

and times `rampart flows -q -o /dev/null` (every stage on) and `--dpi off --no-rtt` on each,
all commands in turn, the order reversed every other round, wall and CPU time (getrusage),
medians, with each variant's ratio to the plain capture. The files are written one after
another just before they are timed: a file the page cache has held for long can read slower
than a fresh copy of it (on this machine by up to 15 %, all in system time).

Usage: time-jump-compare.py RAMPART NDPI_PCAP_DIR WORKDIR RUNS COPIES [COPIES ...]
e.g.   time-jump-compare.py target/release/rampart ../shared/data/pcaps/dpi/ndpi/pcap /tmp/tj 7 20 40 80

Addresses are rewritten so that every checksum stays right without being recomputed (the
one's-complement sum of each address is kept, as NPTv6 translation does): for copy k, the
first 16-bit word of every IPv4 or IPv6 address gains k and the second loses k."""
import glob
import os
import resource
import statistics
import struct
import subprocess
import sys
import time

rampart, src, work, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
copies_list = [int(c) for c in sys.argv[5:]]
os.makedirs(work, exist_ok=True)

# The nDPI captures with an Ethernet link, merged in time order into one classic pcap.
merged = os.path.join(work, "ndpi-merged.pcap")
if not os.path.exists(merged):
    files = []
    for f in sorted(glob.glob(os.path.join(src, "*.pcap*"))):
        out = subprocess.run(["capinfos", "-T", "-m", "-E", f], capture_output=True, text=True)
        if out.stdout.strip().splitlines()[-1].split(",")[1] == "ether":
            files.append(f)
    subprocess.run(["mergecap", "-F", "pcap", "-w", merged] + files, check=True)

with open(merged, "rb") as fh:
    data = fh.read()
magic = struct.unpack_from("<I", data)[0]
assert magic in (0xA1B2C3D4, 0xA1B23C4D), "a little-endian classic pcap"
records = []
at = 24
while at + 16 <= len(data):
    incl = struct.unpack_from("<I", data, at + 8)[0]
    records.append((data[at + 8 : at + 16], data[at + 16 : at + 16 + incl]))
    at += 16 + incl


def ones_add(a, b):
    s = a + b
    return (s & 0xFFFF) + (s >> 16)


def shift(buf, off, k):
    """Adds k to the word at off and takes it from the next one (one's complement)."""
    w1, w2 = struct.unpack_from(">HH", buf, off)
    struct.pack_into(">HH", buf, off, ones_add(w1, k), ones_add(w2, 0xFFFF - k))


def rewrite(frame, k):
    buf = bytearray(frame)
    off, etype = 12, None
    while off + 2 <= len(buf):
        etype = struct.unpack_from(">H", buf, off)[0]
        if etype in (0x8100, 0x88A8):
            off += 4
            continue
        break
    ip = off + 2
    if etype == 0x0800 and len(buf) >= ip + 20:
        shift(buf, ip + 12, k)
        shift(buf, ip + 16, k)
    elif etype == 0x86DD and len(buf) >= ip + 40:
        shift(buf, ip + 8, k)
        shift(buf, ip + 24, k)
    return bytes(buf)


def build(copies):
    base = os.path.join(work, f"ndpi-x{copies}")
    paths = {v: f"{base}-{v}.pcap" for v in ("plain", "first-1970", "middle-1970", "back-1h")}
    frames = [(lens, rewrite(f, k)) for k in range(1, copies + 1) for lens, f in records]
    start, mid = 1_700_000_000, len(frames) // 2
    header = data[:24]
    for v, p in paths.items():
        with open(p, "wb") as out:
            out.write(header)
            for n, (lens, f) in enumerate(frames):
                sec, usec = start + n // 1_000_000, n % 1_000_000
                if (v == "first-1970" and n == 0) or (v == "middle-1970" and n == mid):
                    sec, usec = 0, 0
                elif v == "back-1h" and n >= mid:
                    sec -= 3600
                out.write(struct.pack("<II", sec, usec) + lens + f)
    return paths


def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


modes = {"all stages": [], "--dpi off --no-rtt": ["--dpi", "off", "--no-rtt"]}
for copies in copies_list:
    paths = build(copies)
    for p in paths.values():
        with open(p, "rb") as fh:
            while fh.read(1 << 24):
                pass
    recs = {v: subprocess.run([rampart, "flows", "-r", p, "--format", "csv"], capture_output=True,
                              text=True, check=True).stdout.count("\n") - 1
            for v, p in paths.items()}
    order = [(m, v) for m in modes for v in paths]
    res = {o: ([], []) for o in order}
    for i in range(runs):
        for m, v in order if i % 2 == 0 else reversed(order):
            c0, t = cpu(), time.perf_counter()
            subprocess.run([rampart, "flows", "-q", "-r", paths[v], "-o", "/dev/null"] + modes[m],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            res[(m, v)][0].append(time.perf_counter() - t)
            res[(m, v)][1].append(cpu() - c0)
    packets = len(records) * copies
    print(f"x{copies}: {packets} packets, medians of {runs}")
    for m in modes:
        plain = statistics.median(res[(m, "plain")][1])
        for v in paths:
            wall = statistics.median(res[(m, v)][0]) * 1e3
            c = statistics.median(res[(m, v)][1])
            print(f"  {m:20} {v:11} wall {wall:7.1f} ms  cpu {c * 1e3:7.1f} ms  "
                  f"cpu ratio {c / plain:.3f}  ({recs[v]} records)")
