#!/bin/bash
# `make bench`: one table, every figure a ratio of two figures measured in this run (issue 12 item 3;
# docs/performance.md has the table of the last run with its date and machine):
#   1  dirty-log harvest + encode + write per interval, sparse guests 1 GiB .. 1 TiB, 0.1/1/10 % written,
#      next to one copy of the bitmap; the tracer's share of a core at 1 s and 100 ms; the same in mode
#      dirty-ring (KVM's dirty ring) at 0.1 and 10 %; and the patched QEMU's harvest in both modes, guests of
#      4 to 256 GiB, and of 1 TiB in mode dirty-ring (bench/table/qemu_ring.sh)
#   2  KVM_AD_HARVEST in the nested lab, AMD NPT (L0 QEMU TCG) and Intel EPT (L0 Bochs), 4 KiB / 2 MiB
#      mappings, 1 / 100 % touched, pruned / full walk, next to the bitmap copy in the same L1, and a
#      16 GiB slot of 2 MiB mappings, 1 % touched, where the pruned walk skips whole GiBs
#      (bench/table/lab_section.sh, which runs alone too; no bochs: the Intel rows say so)
#   3  QEMU's calc-dirty-rate on the same guest and load as hvmtrace, under the patched QEMU
#   4  guest slowdown of the memory-bound array payload, traced at 1 s, 100 ms, 10 ms vs untraced
#   5  trace bytes per interval next to the raw bitmap
#   6  record's locked memory for the test VMM's TiB guest next to issue 25's goal of 0.5 GiB (mode dirty-log),
#      and mode ad's working memory for the same guest RAM, computed (bench/table/record_budget.sh, which runs
#      alone too; SIZES="64G 256G 1T" gives docs/performance.md's rows)
# Figures only: nothing is asserted about time, but a run a figure depends on that fails fails the bench.
# Measure on a quiet machine (the figures of docs/performance.md were taken holding the machine's lock).
# usage: bench/table.sh BUILD_DIR   BENCH_LAB=0 skips section 2 (minutes under TCG and Bochs), BENCH_QEMU=0 section 3
# and section 1's QEMU rows.
set -u
BUILD=${1:?usage: bench/table.sh BUILD_DIR}
cd "$(dirname "$0")/.."
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
status=0
start=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
section() { echo "bench: section $1 ($(($(date +%s) - start)) s so far)" >&2; }
touch "$T/s1" "$T/s2" "$T/s3" "$T/s4" "$T/s5" "$T/s6"

if [ ! -c /dev/kvm ] || [ ! -w /dev/kvm ]; then
	echo "bench: no usable /dev/kvm: sections 1, 3 and 4 need KVM" >&2
	exit 1
fi

section 1
bench/table/sparse_guests.sh "$BUILD" "$T/s1" "$T/s5" || status=1
# The same guests harvested from KVM's dirty ring, at 0.1 % and 10 % (their trace bytes are dirty-log's).
if python3 -c 'import fcntl, os, sys; sys.exit(0 if fcntl.ioctl(os.open("/dev/kvm", os.O_RDWR), 0xAE03, 192) > 0 else 1)'; then
	MODE=dirty-ring EVERY="1000 10" bench/table/sparse_guests.sh "$BUILD" "$T/s1" /dev/null || status=1
else
	echo "| 1 | dirty-ring | not measured: this host's KVM offers no dirty ring (KVM_CAP_DIRTY_LOG_RING is 0) | | | |" >>"$T/s1"
fi
# The patched QEMU in both modes (its dirty-ring rows need the ring: qemu_ring.sh's QEMU fails without it).
if [ "${BENCH_QEMU:-1}" = 0 ]; then
	echo "| 1 | QEMU, dirty-log and dirty-ring | not measured: skipped (BENCH_QEMU=0) | | | |" >>"$T/s1"
else
	bench/table/qemu_ring.sh "$BUILD" "$T/s1" || status=1
fi

# Section 5 beside the strided sets of section 1: the same encoder (zstd-runs, the trace's default) on
# uniformly random sets, the worst case for it.
if "$BUILD/bench/pageset_codec" >"$T/codec.out"; then
	awk -F'|' -v out="$T/s5" '$5 ~ /zstd-runs/ && $3 ~ /random (0\.1|1|10)%/ {
		gsub(/^ +| +$/, "", $2); gsub(/^ +| +$/, "", $3); gsub(/ /, "", $4); gsub(/ /, "", $6)
		raw = ($2 == "1 GiB" ? 1 : 64) * 262144 / 8
		pct = substr($3, 8); sub(/%/, " %", pct)
		printf "| 5 | %s, %s of the pages (uniform) | encoded set %d B (the encoder alone, bench/pageset_codec) | raw bitmap %d B | %.4f× | %d pages set, %.2f B per page; the INTERVAL record adds its fixed part |\n", \
			$2, pct, $6, raw, $6 / raw, $4, $6 / $4 >> out }' "$T/codec.out"
else
	echo "| 5 | random sets | failed: bench/pageset_codec failed | | | |" >>"$T/s5"
	status=1
fi

section 6
bench/table/record_budget.sh "$BUILD" "$T/s6" || status=1

section 4
if PHASE=${PHASE:-3s} bench/tracing_overhead.sh "$BUILD" >"$T/overhead.out" 2>&1 &&
	awk '$1 == "untraced" || $1 ~ /^[0-9]+m?s$/' "$T/overhead.out" | grep -q '^10ms'; then
	awk -v out="$T/s4" '
	$1 == "untraced" { bc = $2; ba = $3; next }
	$1 ~ /^[0-9]+m?s$/ {
		iv = $1; s = iv ~ /ms$/ ? substr(iv, 1, length(iv) - 2) / 1000 : substr(iv, 1, length(iv) - 1)
		slow = (bc / $2 + ba / $3) / 2
		# Guest time lost per second over the write-protect faults per second (each page written in an
		# interval takes one: the first write after the harvest re-armed write protection).
		per = (1 - 1 / slow) * 1e6 / ($6 / s)
		cost = slow < 1.05 ? "a slowdown within this shared machine'"'"'s noise: no cost per page" : sprintf("%.1f µs of guest time per written page and interval", per)
		printf "| 4 | array payload traced at %s (dirty-log) | copy %s / add %s passes/s | untraced %s / %s passes/s | %.2f× slower | harvest %s µs, %s pages written per interval: %s |\n", \
			iv, $2, $3, bc, ba, slow, $5, $6, cost >> out }' "$T/overhead.out"
else
	cat "$T/overhead.out" >&2
	echo "| 4 | array payload, traced vs untraced | failed: bench/tracing_overhead.sh did not run every case (stderr above) | | | |" >>"$T/s4"
	status=1
fi

section 3
if [ "${BENCH_QEMU:-1}" = 0 ]; then
	echo "| 3 | QEMU calc-dirty-rate | not measured: skipped (BENCH_QEMU=0) | | | |" >>"$T/s3"
else
	bench/table/qemu_peer.sh "$BUILD" "$T/s3" || status=1
fi

section 2
if [ "${BENCH_LAB:-1}" = 0 ]; then
	echo "| 2 | KVM_AD_HARVEST in the lab | not measured: skipped (BENCH_LAB=0) | | | |" >>"$T/s2"
else
	bench/table/lab_section.sh "$BUILD" >>"$T/s2" || status=1
fi

echo
echo "| § | case | ours | limit or peer | ratio | also measured |"
echo "|---|---|---|---|---:|---|"
cat "$T/s1" "$T/s2" "$T/s3" "$T/s4" "$T/s5" "$T/s6"
echo
echo "bench: $(($(date +%s) - start)) s; $(date -u +%Y-%m-%d); $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, Linux $(uname -r); load average $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
exit $status
