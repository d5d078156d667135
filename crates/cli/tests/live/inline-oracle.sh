#!/usr/bin/env bash
# inline-oracle.sh MODE RULES OUT [RAMPART]: the same traffic through a stateful middlebox
# between a client and a server namespace, decided either by Linux (MODE linux: the middle
# namespace routes with forwarding on, proxy ARP and proxy NDP, and the nftables rule set
# RULES loaded with `nft -f`) or by rampart (MODE af_packet or af_xdp: `RAMPART run --rules
# RULES --driver MODE` bridging the two address-less interfaces). Both see the same addresses (10.77.0.1 and 10.77.0.2/24,
# fd77::1 and fd77::2/64, on-link), so the client and server cannot tell them apart.
#
# Writes OUT/results.tsv: one line per step, `step<TAB>outcome`, and OUT/seen.tsv: the crafted
# packets the server's interface saw. Creates and deletes its namespaces (named with its pid);
# needs root, ip, nft (linux mode), python3, curl, ping.
set -euo pipefail
MODE=$1 RULES=$2 OUT=$3 RAMPART=${4:-rampart}
HERE=$(cd "$(dirname "$0")" && pwd)
T="rio$$"; C="$T-c"; R="$T-r"; S="$T-s"
mkdir -p "$OUT"
cleanup() {
  set +e
  for n in "$C" "$R" "$S"; do
    ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$n" 2>/dev/null
  done
}
trap cleanup EXIT
for n in "$C" "$R" "$S"; do
  ip netns add "$n"; ip -n "$n" link set lo up
  # No duplicate address detection: link-local addresses (which neighbour discovery, proxied
  # or not, answers from) are usable at once.
  ip netns exec "$n" sysctl -qw net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0
done
ip link add c0 netns "$C" type veth peer name r0 netns "$R"
ip link add s0 netns "$S" type veth peer name r1 netns "$R"
ip -n "$C" addr add 10.77.0.1/24 dev c0
ip -n "$S" addr add 10.77.0.2/24 dev s0
ip -n "$C" addr add fd77::1/64 dev c0 nodad
ip -n "$S" addr add fd77::2/64 dev s0 nodad
# Frames no larger than the MTU (a bridge forwards frames, not segments to be cut), with
# their checksums computed by the sender (AF_XDP sees no "checksum left to the device" mark).
for x in "$C c0" "$S s0" "$R r0" "$R r1"; do
  set -- $x
  ip netns exec "$1" ethtool -K "$2" tso off gso off gro off tx off >/dev/null 2>&1 || true
done
for x in "$C c0" "$S s0" "$R r0" "$R r1"; do set -- $x; ip -n "$1" link set "$2" up; done
RPID=
if [ "$MODE" = linux ]; then
  ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
    net.ipv4.conf.r0.proxy_arp=1 net.ipv4.conf.r1.proxy_arp=1 net.ipv6.conf.all.proxy_ndp=1
  ip -n "$R" addr add 10.78.0.1/32 dev r0
  ip -n "$R" route add 10.77.0.1/32 dev r0
  ip -n "$R" route add 10.77.0.2/32 dev r1
  ip -n "$R" -6 route add fd77::1/128 dev r0
  ip -n "$R" -6 route add fd77::2/128 dev r1
  ip -n "$R" -6 neigh add proxy fd77::2 dev r0
  ip -n "$R" -6 neigh add proxy fd77::1 dev r1
  ip netns exec "$R" nft -f "$RULES"
else
  ip netns exec "$R" sysctl -qw net.ipv6.conf.r0.disable_ipv6=1 net.ipv6.conf.r1.disable_ipv6=1
  ip netns exec "$R" "$RAMPART" run -q --rules "$RULES" --pair r0:r1 --driver "$MODE" \
    --control "$OUT/control.sock" -o "$OUT/flows.json" --log "$OUT/log.json" \
    2>"$OUT/rampart.err" &
  RPID=$!
  for _ in $(seq 50); do [ -S "$OUT/control.sock" ] && break; sleep 0.1; done
fi
# The server: a web server, and a sniffer counting the crafted packets that reach it.
ip netns exec "$S" python3 -m http.server 80 --bind 10.77.0.2 >/dev/null 2>&1 &
ip netns exec "$S" python3 "$HERE/inline_sniff.py" s0 "$OUT/seen.tsv" 8 &
SNIFF=$!
sleep 0.8
ip netns exec "$C" python3 "$HERE/inline_steps.py" client "$OUT/results.tsv"
# And one step from the server's side: a connection the rules do not allow that way.
ip netns exec "$S" python3 "$HERE/inline_steps.py" server "$OUT/results.tsv"
wait "$SNIFF" || true
if [ -n "$RPID" ]; then
  kill -INT "$RPID"; wait "$RPID" || echo "rampart exit $?" >>"$OUT/rampart.err"
fi
