#!/usr/bin/env bash
# rampart's classifier beside DPDK's rte_acl, in the same run, on the ClassBench sets.
# Dev-only (not part of the tests): needs Debian's libdpdk-dev and pkg-config. Three header
# sets per rule set: its ClassBench trace, 100,000 uniform headers, and 100,000 near misses
# (`bench::near_miss_headers`, written by `examples/measure.rs`).
#   crates/classify/compare/compare.sh [SET...]      (default: all nine sets)
#   ACL_ALG=sse|avx2|avx512x16|avx512x32|default      rte_acl's method (default: sse)
# Data: $RAMPART_DATA/classbench or ../shared/data/classbench. rte_acl needs several GB and
# up to a minute per 100K set to build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
data=${RAMPART_DATA:-$root/../shared/data}/classbench
[ -d "$data" ] || { echo "skipped: no ClassBench data at $data"; exit 0; }
pkg-config --exists libdpdk || { echo "needs libdpdk-dev and pkg-config" >&2; exit 2; }
out=$root/target/compare
mkdir -p "$out"
cc -O2 -march=native -o "$out/acl_compare" "$here/acl_compare.c" $(pkg-config --cflags --libs libdpdk)
cargo build --release -q -p rampart --manifest-path "$root/Cargo.toml"
cargo build --release -q -p rampart-classify --example measure --manifest-path "$root/Cargo.toml"
rampart=$root/target/release/rampart
alg=${ACL_ALG:-sse}
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(acl1_1k fw1_1k ipc1_1k acl1_10k fw1_10k ipc1_10k acl1_100k fw1_100k ipc1_100k)
unpack() { # NAME -> path of a plain copy
  if [ -f "$data/$1" ]; then echo "$data/$1"; else gzip -dc "$data/$1.gz" > "$out/$1"; echo "$out/$1"; fi
}
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }
echo "| set | rules | rte_acl ($alg) build ms | rampart build ms | trace: rte_acl ns | trace: rampart ns | ratio | uniform: rte_acl ns | uniform: rampart ns | ratio | near misses: rte_acl ns | near misses: rampart ns | ratio | rampart B/rule | rampart update µs: mean (median) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for s in "${sets[@]}"; do
  rules=$(unpack "$s"); trace=$(unpack "${s}_trace")
  acl=$("$out/acl_compare" "$rules" "$trace" "$out/${s}_uniform" "$alg" 2>/dev/null)
  [ "$(echo "$acl" | field mismatches)" = 0 ] || { echo "$s: rte_acl disagrees with the oracle: $acl" >&2; exit 1; }
  # Near misses (`bench::near_miss_headers`: drawn inside a rule, moved just outside it in
  # one field), written by the measure example, given to rte_acl as its trace.
  MEASURE_NEAR_OUT="$out" "$root/target/release/examples/measure" "$(dirname "$rules")" "$s"
  accn=$("$out/acl_compare" "$rules" "$out/${s}_near" "$out/${s}_uniform" "$alg" 2>/dev/null)
  [ "$(echo "$accn" | field mismatches)" = 0 ] || { echo "$s: rte_acl disagrees with the oracle on near misses: $accn" >&2; exit 1; }
  rt=$("$rampart" classify --rules "$rules" --format classbench --trace "$trace" --bench)
  ru=$("$rampart" classify --rules "$rules" --format classbench --trace "$out/${s}_uniform" --bench)
  rn=$("$rampart" classify --rules "$rules" --format classbench --trace "$out/${s}_near" --bench)
  # rampart's answers against rte_acl's oracle-checked ones are covered by the tests; here
  # both are timed.
  at=$(echo "$acl" | field trace_ns); au=$(echo "$acl" | field uniform_ns)
  bt=$(echo "$rt" | field lookup_ns); bu=$(echo "$ru" | field lookup_ns)
  an=$(echo "$accn" | field trace_ns); bn=$(echo "$rn" | field lookup_ns)
  printf '| %s | %s | %s | %s | %s | %s | %.2f | %s | %s | %.2f | %s | %s | %.2f | %s | %s |\n' "$s" \
    "$(echo "$acl" | field rules)" "$(echo "$acl" | field build_ms)" "$(echo "$rt" | field build_ms)" \
    "$at" "$bt" "$(awk "BEGIN{print $bt/$at}")" "$au" "$bu" "$(awk "BEGIN{print $bu/$au}")" \
    "$an" "$bn" "$(awk "BEGIN{print $bn/$an}")" \
    "$(echo "$rt" | field bytes_per_rule)" "$(echo "$rt" | field update_us) ($(echo "$rt" | field update_median_us))"
done
echo
simd=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(sse4_2|avx2|avx512f|avx512bw|avx512vl|avx512vbmi|gfni)$' | tr '\n' ' ')
echo "ratio = rampart / rte_acl (below 1: rampart faster). rampart kernel $(echo "$rt" | field kernel | tr -d '"'), rte_acl method $alg."
echo "$(date -u +%F), load $(cut -d' ' -f1-3 /proc/loadavg); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), SIMD: $simd"
