#!/usr/bin/env bash
# `rampart run` on a live link, measured beside its baselines in the same run, on veth pairs
# between three network namespaces this script creates and deletes:
#
#   client (c0, 10.77.0.1) -- (r0) middle (r1) -- (s0, 10.77.0.2) server
#
# Modes:
#   rate [SECONDS] [RATE...]  64-byte frames (60 on the wire before the FCS) of 1,024 UDP
#       flows, paced by crates/capture/examples/udpgen.rs on CPU 0, through a plain AF_PACKET
#       bridge (crates/capture/examples/bridge.rs: RX ring, TX, no decision), `rampart run`
#       over AF_PACKET, a plain AF_XDP bridge (examples/xdpbridge.rs) and `rampart run
#       --driver af_xdp`, each pinned to CPU 1. Per rate: frames sent, frames that reached s0
#       (its rx_packets counter), and whether none was lost.
#   tcp [SECONDS] [RUNS]  iperf3 (one TCP stream) and ping latency (p50, p99 of 300 echoes)
#       through Linux forwarding the same rule set (nft, proxy ARP; as the oracle's router),
#       the plain AF_PACKET and AF_XDP bridges, and `rampart run` over AF_PACKET and AF_XDP,
#       RUNS interleaved rounds, each round starting one box later in the list.
#   reload [SECONDS] [RELOADS]  iperf3 through `rampart run` with and without RELOADS
#       reloads (`rampart reload`, back to back) during the transfer: throughput and
#       retransmissions.
#   flood [SECONDS] [RATE]  iperf3 through Linux forwarding and through `rampart run --ct-max
#       10000` (AF_PACKET and AF_XDP), each alone and then while udpgen sends a SYN flood of
#       RATE packets per second from random sources to an accepted port (every SYN a new
#       connection): the transfer's throughput, rampart's counters and its resident memory.
#       The plain bridges (`bridge`, `xdpbridge` in BOXES) give what forwarding the flood
#       costs a userspace box here with no decision at all.
#
# Usage: sudo scripts/bench-inline.sh MODE [ARGS...]   (RAMPART_BIN: another build to measure)
#        (MID_LOG=FILE keeps what the boxes print, BRIDGE_ARGS adds options to xdpbridge)
#        (root; iproute2, ethtool, taskset, iperf3, ping, nft, libxdp1 for the AF_XDP parts;
#        BOXES picks the boxes: in tcp mode from "linux bridge rampart xdpbridge rampart-xdp"
#        (all by default), in flood mode the same names, "linux rampart rampart-xdp" by
#        default; a box named "rampart-xdp:BIN" (or "rampart:BIN") runs the build at BIN)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: bench-inline.sh rate|tcp|reload|flood [ARGS...]}
shift
args=("$@")
cargo build --release -q -p rampart
cargo build --release -q -p rampart-capture --example udpgen --example bridge --example xdpbridge
bin=${RAMPART_BIN:-$PWD/target/release/rampart}
ex=$PWD/target/release/examples
id=$$
C=rbi${id}c R=rbi${id}r S=rbi${id}s
tmp=$(mktemp -d)
chmod 755 "$tmp"
cleanup() {
    set +e
    for n in $C $R $S; do
        ip netns pids $n 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del $n 2>/dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
for n in $C $R $S; do
    ip netns add $n
    ip -n $n link set lo up
    ip netns exec $n sysctl -qw net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0
done
ip link add c0 netns $C type veth peer name r0 netns $R
ip link add s0 netns $S type veth peer name r1 netns $R
ip -n $C addr add 10.77.0.1/24 dev c0
ip -n $S addr add 10.77.0.2/24 dev s0
for x in "$C c0" "$S s0" "$R r0" "$R r1"; do
    set -- $x
    ip netns exec $1 ethtool -K $2 tx off sg off tso off gso off gro off >/dev/null 2>&1 || true
    ip -n $1 link set $2 up
done
ip netns exec $R sysctl -qw net.ipv6.conf.r0.disable_ipv6=1 net.ipv6.conf.r1.disable_ipv6=1
s_mac=$(ip netns exec $S cat /sys/class/net/s0/address)
cat >"$tmp/rules.nft" <<'EOF'
table inet filter {
  chain forward {
    type filter hook forward priority 0; policy drop;
    ct state invalid drop
    ct state established,related accept
    udp dport 9 accept
    tcp dport { 9, 5201 } accept
    icmp type echo-request accept
  }
}
EOF
chmod 644 "$tmp/rules.nft"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $(uname -r)"
set -- "${args[@]}"

rx() { ip netns exec $S cat /sys/class/net/s0/statistics/rx_packets; }

# start NAME: starts the middle box NAME on CPU 1 (its pid in $mid).
start() {
    local b=$bin
    case $1 in *:*) b=${1#*:} ;; esac
    case ${1%%:*} in
    bridge) taskset -c 1 ip netns exec $R "$ex/bridge" r0 r1 100000 >"$tmp/mid.out" 2>&1 & ;;
    xdpbridge) taskset -c 1 ip netns exec $R "$ex/xdpbridge" r0 r1 100000 ${BRIDGE_ARGS:-} >"$tmp/mid.out" 2>&1 & ;;
    rampart | rampart-xdp)
        local d=af_packet
        [ "${1%%:*}" = rampart-xdp ] && d=af_xdp
        rm -f "$tmp/ctl"
        taskset -c 1 ip netns exec $R "$b" run --rules "$tmp/rules.nft" --pair r0:r1 \
            --driver $d --control "$tmp/ctl" --dpi off ${RUN_ARGS:-} >"$tmp/mid.out" 2>&1 &
        ;;
    linux)
        ip netns exec $R sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.r0.proxy_arp=1 \
            net.ipv4.conf.r1.proxy_arp=1
        ip -n $R addr add 10.78.0.1/32 dev r0
        ip -n $R route add 10.77.0.1/32 dev r0
        ip -n $R route add 10.77.0.2/32 dev r1
        # udpgen's packets (to 10.127.0.1) leave towards a MAC no one owns, as through the
        # bridges: the server's side drops them at once, whichever box forwarded them.
        ip -n $R route add 10.127.0.0/16 dev r1
        ip -n $R neigh replace 10.127.0.1 lladdr 02:00:00:00:00:02 dev r1
        ip netns exec $R nft -f "$tmp/rules.nft"
        mid=
        return
        ;;
    esac
    mid=$!
    sleep 1.5
}

stop() {
    if [ -n "$mid" ]; then
        kill -TERM $mid 2>/dev/null || true
        wait $mid 2>/dev/null || true
        # MID_LOG: a file that collects what each box printed (its counters at the end).
        [ -z "${MID_LOG:-}" ] || cat "$tmp/mid.out" >>"$MID_LOG"
    else
        ip netns exec $R nft flush ruleset
        ip netns exec $R sysctl -qw net.ipv4.ip_forward=0 net.ipv4.conf.r0.proxy_arp=0 \
            net.ipv4.conf.r1.proxy_arp=0
        ip -n $R addr flush dev r0
        ip -n $R route flush table main 2>/dev/null || true
    fi
    ip netns exec $C ip neigh flush all 2>/dev/null || true
    ip netns exec $S ip neigh flush all 2>/dev/null || true
}

case $mode in
rate)
    secs=${1:-3}
    shift || true
    rates=${*:-100000 200000 300000 400000 500000}
    for tool in bridge rampart xdpbridge rampart-xdp; do
        start $tool
        for rate in $rates; do
            count=$((rate * secs))
            before=$(rx)
            sent=$(taskset -c 0 ip netns exec $C "$ex/udpgen" c0 "$rate" "$count" 60 "$s_mac" 1024)
            sleep 0.5
            got=$(($(rx) - before))
            achieved=$(echo "$sent" | sed -n 's/.*: \([0-9]*\) pps.*/\1/p')
            note=lossy
            [ "$got" -ge "$count" ] && note=lossless
            [ "$achieved" -lt $((rate * 98 / 100)) ] && note="$note (generator short: $achieved pps)"
            printf '%-12s %8d pps: sent %9d, arrived %9d  %s\n' "$tool" "$rate" "$count" "$got" "$note"
        done
        stop
    done
    ;;
tcp)
    secs=${1:-5}
    runs=${2:-3}
    ip netns exec $S iperf3 -s -D -B 10.77.0.2
    sleep 0.5
    boxes=(${BOXES:-linux bridge rampart xdpbridge rampart-xdp})
    for r in $(seq "$runs"); do
        # Each round starts one box later than the one before, so no box always follows the
        # same one (one build measured 0.66 and 0.79 of Linux with the boxes in two orders).
        order=()
        for k in "${!boxes[@]}"; do
            order+=("${boxes[$(((k + r - 1) % ${#boxes[@]}))]}")
        done
        for box in "${order[@]}"; do
            start $box
            bps=$(ip netns exec $C iperf3 -c 10.77.0.2 -t "$secs" -J |
                python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]))')
            lat=$(ip netns exec $C ping -c 300 -i 0.005 10.77.0.2 | sed -n 's/.*time=\([0-9.]*\) ms/\1/p' |
                sort -n | awk '{a[NR]=$1} END {printf "p50 %.3f ms, p99 %.3f ms", a[int(NR*0.5)], a[int(NR*0.99)]}')
            printf 'round %d %-12s %6.2f Gbit/s  %s\n' "$r" "$box" "$(echo "$bps / 1000000000" | bc -l)" "$lat"
            stop
        done
    done
    ;;
reload)
    secs=${1:-10}
    n=${2:-1000}
    ip netns exec $S iperf3 -s -D -B 10.77.0.2
    sleep 0.5
    for with in no yes no yes; do
        start rampart
        ip netns exec $C iperf3 -c 10.77.0.2 -t "$secs" -J >"$tmp/iperf.json" &
        ip3=$!
        done_n=0
        if [ $with = yes ]; then
            sleep 0.5
            for _ in $(seq "$n"); do
                "$bin" reload --control "$tmp/ctl" >/dev/null && done_n=$((done_n + 1))
            done
        fi
        wait $ip3
        python3 - "$tmp/iperf.json" "$done_n" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
e = j["end"]
print(f"reloads {int(sys.argv[2]):5d}: {e['sum_received']['bits_per_second'] / 1e9:.2f} Gbit/s, "
      f"{e['sum_sent'].get('retransmits', 0)} retransmissions, "
      f"error: {j.get('error', 'none')}")
EOF
        stop
    done
    ;;
flood)
    secs=${1:-8}
    rate=${2:-200000}
    ip netns exec $S iperf3 -s -D -B 10.77.0.2
    sleep 0.5
    for box in ${BOXES:-linux rampart rampart-xdp}; do
        RUN_ARGS="--ct-max 10000" start $box
        rss() {
            local pid=$mid
            case $box in rampart*) pid=$(pgrep -f "control $tmp/ctl" | head -1) ;; esac
            [ -n "$pid" ] || { echo "-"; return; }
            awk '/VmRSS/ {print $2 " KiB"}' /proc/"$pid"/status
        }
        for flood in no yes; do
            if [ $flood = yes ]; then
                # To the next hop's MAC: the router's port, or through a bridge a MAC no one
                # owns (the server's interface drops the frames unprocessed).
                to=02:00:00:00:00:02
                [ -z "$mid" ] && to=$(ip netns exec $R cat /sys/class/net/r0/address)
                taskset -c 0 ip netns exec $C "$ex/udpgen" c0 "$rate" $((rate * (secs + 2))) 60 "$to" 0 syn >"$tmp/gen" &
                gen=$!
                sleep 1
            fi
            bps=$(ip netns exec $C iperf3 -c 10.77.0.2 -t "$secs" -J |
                python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]))')
            printf '%-8s flood %-3s: %6.2f Gbit/s; resident memory %s\n' $box $flood "$(echo "$bps / 1000000000" | bc -l)" "$(rss)"
            [ $flood = yes ] && { wait $gen; cat "$tmp/gen"; }
        done
        case $box in
        rampart*) "$bin" status --control "$tmp/ctl" | tail -1 ;;
        linux) ip netns exec $R cat /proc/sys/net/netfilter/nf_conntrack_count 2>/dev/null | sed 's/^/linux conntrack entries: /' ;;
        esac
        stop
        case $box in rampart*) sed -n '/dropped or rejected/p; /conntrack:/p' "$tmp/mid.out" ;; esac
    done
    ;;
*)
    echo "unknown mode $mode (rate, tcp, reload, flood)" >&2
    exit 2
    ;;
esac
