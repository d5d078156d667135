#!/usr/bin/env bash
# The highest lossless rate of all-new-flow UDP (every packet a new 5-tuple, 60-byte frames)
# for live capture: `rampart flows -i` with identification on and off, and tcpdump, in the
# same run, on a veth pair between two network namespaces this script creates and deletes.
#
# The generator (crates/capture/examples/udpgen.rs) runs pinned to CPU 0 and the capture tool
# to CPU 1; on veth the receive path up to the AF_PACKET ring runs in the sender's context, so
# CPU 1 does only what the tool itself does. Every tool gets the same ring (-B, KiB). A rate is
# lossless when the tool saw every packet sent and neither the kernel nor the tool dropped
# any; a rate the generator could not hold (below 98 % of the asked rate) is marked and not
# counted. The tool's CPU time (user + system, from /usr/bin/time) divided by the packets it
# captured gives its cost per new flow.
#
# Usage: sudo scripts/bench-live.sh [SECONDS] [RATE...]
#        sudo scripts/bench-live.sh drain [PACKETS] [RUNS]
#        (root; iproute2, ethtool, taskset, tcpdump, GNU time; RAMPART_BIN=PATH runs another
#        build of rampart)
#
# `drain` measures how fast each tool empties a full ring when the generator cannot offer
# more than the tool takes (on veth the generator's CPU also carries the receive path, which
# caps it near 600 kpps on some machines). The tool starts with a ring large enough for
# PACKETS frames (default 3,000,000) and is stopped (SIGSTOP); the generator fills the ring
# as fast as it can; then the tool is continued and its CPU time watched (/proc, all threads)
# until it stops growing. Drain rate = PACKETS / (wall time from SIGCONT to the last CPU
# tick). Both CPUs are free while it drains, so `--workers 2` runs here unpinned, beside the
# one-worker runs pinned to CPU 1. A run whose tool did not capture every packet, or whose
# kernel dropped any, is marked.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=rate
if [ "${1:-}" = drain ]; then
    mode=drain
    shift
    packets=${1:-3000000}
    runs=${2:-3}
    set --
fi
secs=${1:-5}
shift || true
rates=${*:-200000 400000 600000 700000 800000 900000 1000000}
ring_kib=${RING_KIB:-32768}
cargo build --release -q -p rampart
cargo build --release -q -p rampart-capture --example udpgen
bin=${RAMPART_BIN:-$PWD/target/release/rampart}
gen=$PWD/target/release/examples/udpgen
id=$$
g=rbg$id
c=rbc$id
tmp=$(mktemp -d)
cleanup() {
    for n in $g $c; do
        ip netns pids $n 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        ip netns del $n 2>/dev/null || true
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add $g
ip netns add $c
ip link add g0 netns $g type veth peer name c0 netns $c
for x in "$g g0" "$c c0"; do
    set -- $x
    ip -n $1 link set $2 up
    ip netns exec $1 ethtool -K $2 tx off sg off tso off gso off gro off >/dev/null 2>&1 || true
    ip netns exec $1 sysctl -qw net.ipv6.conf.$2.disable_ipv6=1
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; ${secs} s per rate; ring ${ring_kib} KiB"

# run NAME CMD...: runs the capture tool, sends at each rate, prints a line per rate.
run() {
    local name=$1
    shift
    for rate in $rates; do
        local count=$((rate * secs))
        taskset -c 1 ip netns exec $c /usr/bin/time -f '%U %S' -o "$tmp/cpu" "$@" \
            >"$tmp/out" 2>"$tmp/err" &
        local pid=$!
        sleep 1
        # GNU time ignores SIGINT; the tool is its child.
        local tool
        tool=$(pgrep -P $pid)
        local sent
        sent=$(taskset -c 0 ip netns exec $g "$gen" g0 "$rate" "$count")
        sleep 1
        kill -INT "$tool"
        wait $pid || true
        local achieved
        achieved=$(sed -n 's/.*s: \([0-9]*\) pps.*/\1/p' <<<"$sent")
        local got kdrop rdrop
        if [ "$name" = tcpdump ]; then
            got=$(sed -n 's/^\([0-9]*\) packets captured/\1/p' "$tmp/err")
            kdrop=$(sed -n 's/^\([0-9]*\) packets dropped by kernel/\1/p' "$tmp/err")
            rdrop=0
        else
            read -r got kdrop rdrop < <(sed -n \
                's/.*capture: \([0-9]*\) packets received, \([0-9]*\) dropped by the kernel, \([0-9]*\) dropped by rampart.*/\1 \2 \3/p' \
                "$tmp/err") || true
        fi
        local cpu
        cpu=$(awk -v n="${got:-0}" '{ if (n > 0) printf "%.0f", ($1 + $2) * 1e9 / n; else print "?" }' "$tmp/cpu")
        local verdict=lossless
        if [ "$achieved" -lt $((rate * 98 / 100)) ]; then
            verdict="generator reached only $achieved pps"
        elif [ "${kdrop:-1}" != 0 ] || [ "${rdrop:-1}" != 0 ] || [ "${got:-0}" -lt "$count" ]; then
            verdict=lossy
        fi
        printf '%-14s %8d pps: sent %9d, captured %9s, kernel dropped %8s, tool dropped %s, %5s ns CPU/packet: %s\n' \
            "$name" "$rate" "$count" "${got:-?}" "${kdrop:-?}" "${rdrop:-?}" "$cpu" "$verdict"
    done
}

# cpu_ticks PID: user + system clock ticks of every thread of PID so far.
cpu_ticks() {
    awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# drain NAME CPUS CMD...: fills the stopped tool's ring, then times how fast it empties it.
drain() {
    local name=$1 cpus=$2
    shift 2
    taskset -c "$cpus" ip netns exec $c "$@" >"$tmp/out" 2>"$tmp/err" &
    local pid=$!
    # A large ring takes the kernel a moment to set up.
    sleep 3
    local tool
    tool=$(pgrep -n -f "^$1 " | head -1)
    [ -n "$tool" ] || tool=$pid
    kill -STOP "$tool"
    local sent
    sent=$(taskset -c 0 ip netns exec $g "$gen" g0 5000000 "$packets")
    sleep 0.5
    local before t0 t1 last now
    before=$(cpu_ticks "$tool")
    last=$before
    t0=$(date +%s.%N)
    t1=$t0
    kill -CONT "$tool"
    local quiet=0
    while [ $quiet -lt 10 ]; do
        sleep 0.05
        now=$(cpu_ticks "$tool")
        if [ "$now" -gt "$last" ]; then
            last=$now
            t1=$(date +%s.%N)
            quiet=0
        else
            quiet=$((quiet + 1))
        fi
    done
    kill -INT "$tool"
    wait $pid || true
    local got kdrop
    if [ "$name" = tcpdump ]; then
        got=$(sed -n 's/^\([0-9]*\) packets captured/\1/p' "$tmp/err")
        kdrop=$(sed -n 's/^\([0-9]*\) packets dropped by kernel/\1/p' "$tmp/err")
    else
        read -r got kdrop < <(sed -n \
            's/.*capture: \([0-9]*\) packets received, \([0-9]*\) dropped by the kernel.*/\1 \2/p' \
            "$tmp/err") || true
    fi
    local verdict=complete
    if [ "${got:-0}" -lt "$packets" ] || [ "${kdrop:-1}" != 0 ]; then
        verdict="INCOMPLETE (captured ${got:-?}, kernel dropped ${kdrop:-?})"
    fi
    awk -v n="$packets" -v a="$t0" -v b="$t1" -v ticks=$((last - before)) -v name="$name" \
        -v sent="$(sed -n 's/.*s: \([0-9]*\) pps.*/\1/p' <<<"$sent")" -v v="$verdict" \
        'BEGIN { s = b - a; printf "%-18s filled at %7d pps; drained %d in %.2f s: %8.0f pps, %4.0f ns CPU/packet: %s\n", name, sent, n, s, n / s, ticks * 1e7 / n, v }'
}

if [ $mode = drain ]; then
    # Room for every frame: a 60-byte frame takes under 160 bytes of a TPACKET_V3 block.
    ring_kib=$(((packets * 256 / 1024 / 1024 + 64) * 1024))
    echo "drain: $packets packets, ring $ring_kib KiB, $runs runs"
    for _ in $(seq "$runs"); do
        drain rampart-dpi 1 "$bin" flows -i c0 -B "$ring_kib" -o /dev/null
        drain rampart-no-dpi 1 "$bin" flows -i c0 -B "$ring_kib" --dpi off -o /dev/null
        drain rampart-dpi-2w 0,1 "$bin" flows -i c0 -B "$ring_kib" --workers 2 -o /dev/null
        drain rampart-no-dpi-2w 0,1 "$bin" flows -i c0 -B "$ring_kib" --workers 2 --dpi off -o /dev/null
        drain tcpdump 1 tcpdump -i c0 -B "$ring_kib" -w /dev/null
    done
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    exit 0
fi

run rampart-dpi "$bin" flows -i c0 -B "$ring_kib" -o /dev/null
run rampart-no-dpi "$bin" flows -i c0 -B "$ring_kib" --dpi off -o /dev/null
run tcpdump tcpdump -i c0 -B "$ring_kib" -w /dev/null
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
