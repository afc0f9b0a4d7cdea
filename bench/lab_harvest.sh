#!/bin/bash
# KVM_AD_HARVEST cost, measured in the nested lab (Debian 6.12 L1 under TCG, npt=1): harvest time per GiB
# with 4 KiB and with 2 MiB mappings, next to the L1's own limit (the two bitmaps copied at the L1's measured
# memcpy bandwidth). The lab is emulated, so the figures that carry over are the ratios, not the times.
# usage: bench/lab_harvest.sh BUILD_DIR
set -u
BUILD=${1:?usage: bench/lab_harvest.sh BUILD_DIR}
cd "$(dirname "$0")/.."
make -s "BUILD=$BUILD" "$BUILD/tests/lab/ad_check" >/dev/null || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
AD_CHECK=$BUILD/tests/lab/ad_check tests/lab/run.sh -b 256 -o "$log" 6.12 >/dev/null 2>&1 ||
	{ echo "the lab did not pass; its serial log:"; tail -20 "$log"; exit 1; }
grep -E 'BENCH|bench' "$log" | sed 's/^/  /'
