#!/bin/bash
# Table section 2 of `make bench`: KVM_AD_HARVEST in the nested lab, on each vendor's nested paging in turn
# (bench/lab_harvest.sh: AMD NPT under QEMU TCG, Intel EPT under Bochs), one row per case
# (bench/table/lab_rows.sh). A vendor whose lab cannot run here (no bochs, no kernel headers) is one row
# saying why and does not fail the bench; a lab that ran and failed does, its output on stderr.
# Runs alone too (the rows of bench/table.sh's section 2 and nothing else): bench/table/lab_section.sh BUILD
# Env: BENCH_LAB_VENDORS (default "amd intel"), BENCH_LAB_MIB (the slot, default 256 MiB: ad_check's most).
# usage: bench/table/lab_section.sh BUILD_DIR   (rows on stdout)
set -u
BUILD=${1:?usage: bench/table/lab_section.sh BUILD_DIR}
cd "$(dirname "$0")/../.." || exit 1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
for vendor in ${BENCH_LAB_VENDORS:-amd intel}; do
	start=$(date +%s)
	LAB_VENDOR=$vendor bench/lab_harvest.sh "$BUILD" "${BENCH_LAB_MIB:-256}" >"$out" 2>&1
	rc=$?
	echo "bench: lab $vendor: exit $rc after $(($(date +%s) - start)) s" >&2
	if [ $rc != 0 ] && [ $rc != 77 ]; then
		status=1
		cat "$out" >&2
		echo "bench: LAB_VENDOR=$vendor bench/lab_harvest.sh failed (its output above)" >&2
	fi
	bench/table/lab_rows.sh "$out" "$rc" "$vendor" || status=1
done
exit $status
