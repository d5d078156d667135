#!/usr/bin/env bash
# What exporting costs on top of `rampart flows -o /dev/null` on the shared benchmark capture,
# whole process, in one hyperfine run: IPFIX to a real collector (nfcapd on loopback, UDP) and
# a Parquet dataset (a fresh directory each run).
#
# Usage: scripts/bench-export.sh [RUNS] [BIN]   (needs hyperfine, zstd, nfcapd, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-21}
data=${RAMPART_DATA:-../shared/data}
tmp=$(mktemp -d)
nfpid=
cleanup() {
    [ -n "$nfpid" ] && kill "$nfpid" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
zstd -q -d -o "$tmp/bench.pcap" "$data/pcaps/bench/rtt-bench.pcap.zst"
if [ -n "${2:-}" ]; then
    bin=$2
else
    cargo build --release -q
    bin=$PWD/target/release/rampart
fi
port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/nf"
nfcapd -b 127.0.0.1 -p "$port" -w "$tmp/nf" >/dev/null 2>&1 &
nfpid=$!
sleep 0.5
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
hyperfine -N --warmup 2 --runs "$runs" --prepare "rm -rf $tmp/pq" --export-json "$tmp/h.json" \
    "$bin flows -q -r $tmp/bench.pcap -o /dev/null" \
    "$bin flows -q -r $tmp/bench.pcap -o /dev/null --ipfix udp://127.0.0.1:$port" \
    "$bin flows -q -r $tmp/bench.pcap --format parquet -o $tmp/pq" >/dev/null 2>&1
python3 - "$tmp/h.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
base = res[0]["median"]
for name, r in zip(["flows -o /dev/null", "+ --ipfix (nfcapd, UDP)", "--format parquet"], res):
    print(f"{name:>26}: median {r['median']*1e3:7.1f} ms (user {r['user']*1e3:.1f}, sys "
          f"{r['system']*1e3:.1f}), {r['median']/base:.3f}x")
PY
