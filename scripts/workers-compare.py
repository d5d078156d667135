"""Wall and CPU time (user + system, getrusage) of two rampart builds with one worker and with
--workers W, every command run in turn (the order reversed every other round), medians, and
each build's speed-up of W workers over one: `flows -q -o /dev/null` and `rtt -m -q`.
Usage: workers-compare.py OLD NEW RUNS CAPTURE [W]   (W: 2 by default)"""
import resource
import statistics
import subprocess
import sys
import time

a, b, runs, cap = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
w = sys.argv[5] if len(sys.argv) > 5 else "2"
cmds = {
    "flows": ["flows", "-q", "-r", cap, "-o", "/dev/null", "--workers"],
    "rtt": ["rtt", "-m", "-q", "-r", cap, "--workers"],
}
order = [(k, x, n) for x in (a, b) for k in cmds for n in ("1", w)]
res = {o: [] for o in order}


def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


for i in range(runs):
    for k, x, n in order if i % 2 == 0 else reversed(order):
        c0, t = cpu(), time.perf_counter()
        subprocess.run([x] + cmds[k] + [n], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
        res[(k, x, n)].append((time.perf_counter() - t, cpu() - c0))


def med(k, x, n, i):
    return statistics.median(v[i] for v in res[(k, x, n)]) * 1e3


for k in cmds:
    for x in (a, b):
        one, many = med(k, x, "1", 0), med(k, x, w, 0)
        print(f"{k} {x}: 1 worker wall {one:.1f} ms cpu {med(k, x, '1', 1):.1f} ms; "
              f"{w} workers wall {many:.1f} ms cpu {med(k, x, w, 1):.1f} ms; "
              f"speed-up {one / many:.2f} (medians of {runs})")
