#!/bin/bash
# KVM_AD_HARVEST cost, measured in the nested lab (Debian 6.12 L1; LAB_VENDOR=amd: under QEMU TCG, kvm_amd
# npt=1; LAB_VENDOR=intel: under Bochs, kvm_intel ept=1 eptad=1; the TDP MMU either way): the harvest of an
# MIB-sized slot with 4 KiB and with 2 MiB mappings, 1 % and 100 % of its pages touched in each interval (a
# contiguous working set, the same pages every interval), pruned walk (KVM_AD_HARVEST_PRUNE) and full walk,
# next to the limit: the two bitmaps the harvest returns, copied at the L1's measured memcpy bandwidth. The
# lab is emulated, so the figures that carry over are the ratios, not the times (docs/kvm-ad.md, "Cost").
#
# Prints one machine-readable line per case (the `make bench` table is built from them):
#   LAB_AD mapping=4k|2m|2m_gib touched=1|100 walk=pruned|full harvest_ns=N copy_ns=N pages=N
# (2m_gib: a 16 GiB slot of 2 MiB mappings, 1 % touched, where the pruned walk skips whole GiBs; harvested
# with KVM_AD_HARVEST_SPARSE, bitmaps zero on entry)
# then the ratios for people: harvest / copy, and pruned / full.
# usage: bench/lab_harvest.sh BUILD_DIR [MIB]   (MIB: the slot, default 256, at most 256: ad_check's limit)
# Env: LAB_VENDOR=amd|intel (default amd). Exit 77 with the reason on its last line when the lab cannot run
# here (tests/lab/run.sh skipped: no bochs, no kernel headers), 1 when it ran and failed.
set -u
BUILD=${1:?usage: bench/lab_harvest.sh BUILD_DIR [MIB]}
MIB=${2:-256}
cd "$(dirname "$0")/.." || exit 1
make -s "BUILD=$BUILD" "$BUILD/tests/lab/ad_check" >/dev/null || exit 1
log=$(mktemp) out=$(mktemp)
trap 'rm -f "$log" "$out"' EXIT
AD_CHECK=$BUILD/tests/lab/ad_check tests/lab/run.sh -b "$MIB" -o "$log" 6.12 >"$out" 2>&1
rc=$?
if [ $rc = 77 ]; then
	# run.sh's skip: its last line says why.
	echo "skipped: $(tail -n 1 "$out")"
	exit 77
fi
[ $rc = 0 ] || {
	echo "the lab did not pass (tests/lab/run.sh exit $rc); its last lines:"
	tail -20 "$out"
	echo "its serial log:"
	tail -20 "$log"
	exit 1
}
lines=$(grep -E '^LAB_AD ' "$log" | tr -d '\r')
[ "$(echo "$lines" | grep -c .)" = 10 ] || {
	echo "expected 10 LAB_AD lines from the lab, got: $lines"
	exit 1
}
echo "$lines"
# The GiB bench's other cases (idle, without SPARSE, 0.1 % written, 1 % read), for people.
grep -E '^BENCH mappings=2M slot_gib=' "$log" | tr -d '\r'
echo "$lines" | awk -v l0="$([ "${LAB_VENDOR:-amd}" = intel ] && echo Bochs || echo TCG)" '
	{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		key = f["mapping"] " " f["touched"]
		ns[key, f["walk"]] = f["harvest_ns"]; copy[key] = f["copy_ns"]; if (f["mapping"] != "2m_gib") pages = f["pages"]
		if (!(key in seen)) { seen[key] = 1; order[++n] = key }
	}
	END {
		printf "\nslots of %d pages (%.0f MiB; 2m_gib: 16 GiB); times are %s lab times, ratios carry over\n", pages, pages / 256, l0
		printf "%-8s %-8s %12s %12s %11s %11s %11s %12s\n", "mapping", "touched", "pruned_ms", "full_ms",
			"copy_ms", "pruned/copy", "full/copy", "pruned/full"
		for (i = 1; i <= n; i++) {
			split(order[i], k, " ")
			p = ns[order[i], "pruned"]; q = ns[order[i], "full"]; c = copy[order[i]]
			printf "%-8s %-8s %12.3f %12.3f %11.4f %11.0f %11.0f %12.3f\n", k[1], k[2] "%", p / 1e6,
				q / 1e6, c / 1e6, p / c, q / c, p / q
		}
		p = ns["4k 1", "pruned"]; q = ns["4k 1", "full"]
		printf "4 KiB mappings, 1 %% touched: the pruned walk costs %.3f of the full walk (the goal: at most 0.1)\n", p / q
		p = ns["2m_gib 1", "pruned"]; q = ns["2m_gib 1", "full"]
		printf "2 MiB mappings over 16 GiB, 1 %% touched: the pruned walk costs %.3f of the full walk (the goal: at most 0.2)\n", p / q
	}'
