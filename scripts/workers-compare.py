"""Wall and CPU time (user + system, getrusage) of two rampart builds with --workers W, run
alternately on a capture, medians: `flows -q -o /dev/null` and `rtt -m -q`.
Usage: workers-compare.py OLD NEW RUNS CAPTURE [W]   (W: 2 by default)"""
import resource
import statistics
import subprocess
import sys
import time

a, b, runs, cap = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
w = sys.argv[5] if len(sys.argv) > 5 else "2"
cmds = {
    "flows": ["flows", "-q", "-r", cap, "-o", "/dev/null", "--workers", w],
    "rtt": ["rtt", "-m", "-q", "-r", cap, "--workers", w],
}
res = {k: {a: [], b: []} for k in cmds}


def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


for i in range(runs):
    for k, c in cmds.items():
        for x in (a, b) if i % 2 == 0 else (b, a):
            c0, t = cpu(), time.perf_counter()
            subprocess.run([x] + c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            res[k][x].append((time.perf_counter() - t, cpu() - c0))
for k in cmds:
    for x in (a, b):
        wall = statistics.median(v[0] for v in res[k][x]) * 1e3
        used = statistics.median(v[1] for v in res[k][x]) * 1e3
        print(f"{k} --workers {w} {x}: wall {wall:.1f} ms, cpu {used:.1f} ms (medians of {runs})")
