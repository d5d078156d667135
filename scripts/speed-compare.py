"""Wall-time medians of two rampart builds on the bench capture, run alternately:
`flows -q -r F -o /dev/null` and `rtt -m -q -r F`. Usage: speed-compare.py OLD NEW RUNS [CAPTURE]"""
import subprocess, sys, time, statistics
base, new, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
cap = sys.argv[4] if len(sys.argv) > 4 else "/tmp/b/rtt-bench.pcap"
cmds = {
    "flows": lambda b: [b, "flows", "-q", "-r", cap, "-o", "/dev/null"],
    "rtt": lambda b: [b, "rtt", "-m", "-q", "-r", cap],
}
res = {k: {"base": [], "new": []} for k in cmds}
for i in range(runs):
    for k, f in cmds.items():
        for name, b in (("base", base), ("new", new)) if i % 2 == 0 else (("new", new), ("base", base)):
            t = time.perf_counter()
            subprocess.run(f(b), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            res[k][name].append(time.perf_counter() - t)
for k in cmds:
    mb, mn = statistics.median(res[k]["base"]), statistics.median(res[k]["new"])
    print(f"{k}: base {mb*1e3:.1f} ms, new {mn*1e3:.1f} ms, ratio {mn/mb:.3f} (medians of {runs})")
