#!/usr/bin/env bash
# rampart firewall against rampart flows --dpi off on one capture, whole process, the runs of
# each command interleaved; prints each command's median wall time and median CPU time
# (perf's task-clock: user and system time of every thread) and their ratios to flows.
#
#   scripts/bench-firewall.sh RUNS CAPTURE RULES [OLD_RAMPART]
#
# RULES is an nftables file whose forward chain the capture's packets go through (every
# packet is routed out of the one port, so the forward hook sees it). With OLD_RAMPART, a
# second build's firewall is run in the same rounds (a before/after comparison).
set -euo pipefail
runs=${1:?runs}
capture=${2:?capture}
rules=${3:?rules}
old=${4:-}
bin=${RAMPART:-target/release/rampart}
command -v perf >/dev/null || { echo "needs perf (Debian: linux-perf)" >&2; exit 2; }

flows=("$bin" flows -q -r "$capture" --dpi off -o /dev/null)
fw=(firewall -q --rules "$rules" -r "eth0=$capture" --route 0.0.0.0/0=eth0 --route ::/0=eth0
    --dpi off -o /dev/null)

# One run: "wall_ms cpu_ms".
measure() {
    local start end cpu
    start=$(date +%s%N)
    cpu=$(perf stat -x, -e task-clock "$@" 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}')
    end=$(date +%s%N)
    echo "$(( (end - start) / 1000 )) $cpu" | awk '{printf "%.1f %.1f\n", $1 / 1000, $2}'
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for _ in $(seq "$runs"); do
    measure "${flows[@]}" >>"$tmp/flows"
    measure "$bin" "${fw[@]}" >>"$tmp/firewall"
    if [ -n "$old" ]; then measure "$old" "${fw[@]}" >>"$tmp/old"; fi
done
base_wall=$(cut -d' ' -f1 "$tmp/flows" | median)
base_cpu=$(cut -d' ' -f2 "$tmp/flows" | median)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $runs runs each, interleaved"
for name in flows firewall old; do
    [ -s "$tmp/$name" ] || continue
    wall=$(cut -d' ' -f1 "$tmp/$name" | median)
    cpu=$(cut -d' ' -f2 "$tmp/$name" | median)
    awk -v n="$name" -v w="$wall" -v c="$cpu" -v bw="$base_wall" -v bc="$base_cpu" \
        'BEGIN {printf "%-9s wall %7.1f ms (%.3fx)   cpu %7.1f ms (%.3fx)\n", n, w, w / bw, c, c / bc}'
done
