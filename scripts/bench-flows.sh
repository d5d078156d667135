#!/usr/bin/env bash
# Whole-process timing of `rampart flows` against `tcpdump -r FILE -w /dev/null` (a plain libpcap
# read-and-copy) on the shared benchmark capture, in the same hyperfine run.
#
# Usage: scripts/bench-flows.sh [RUNS]     (needs tcpdump, hyperfine, zstd, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-30}
data=${RAMPART_DATA:-../shared/data}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
zstd -q -d -o "$tmp/bench.pcap" "$data/pcaps/bench/rtt-bench.pcap.zst"
cargo build --release -q
bin=$PWD/target/release/rampart
packets=$(capinfos -c -M "$tmp/bench.pcap" 2>/dev/null | awk '/Number of packets/ {print $NF}' || true)
packets=${packets:-1456477}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $packets packets"
hyperfine -N --warmup 3 --runs "$runs" --export-json "$tmp/h.json" \
    "$bin flows -q -r $tmp/bench.pcap --format json -o /dev/null" \
    "tcpdump -r $tmp/bench.pcap -w /dev/null" >/dev/null 2>&1
python3 - "$tmp/h.json" "$packets" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
n = int(sys.argv[2])
for r in res:
    print(f"{r['command'].split()[0].split('/')[-1]:>8}: median {r['median']*1e3:7.1f} ms = "
          f"{r['median']*1e9/n:6.1f} ns/packet (user {r['user']*1e3:.1f} ms, sys {r['system']*1e3:.1f} ms)")
print(f"ratio rampart/tcpdump: {res[0]['median']/res[1]['median']:.2f}")
PY
