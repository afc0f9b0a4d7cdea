#!/bin/bash
# make score's mode-ad part: DAMON scored with precision, in the nested AMD lab (tests/lab/test_qemu.sh, L1
# Debian's 6.12 under QEMU TCG with our KVM modules, the built-in Linux guest as L2 under KVM, traced in
# mode ad at 20 ms). One L1 boot runs the scenarios damon (DAMON in L2, paddr) and damon-host (DAMON in L2
# and in L1 on QEMU's process, vaddr, moved to guest-physical addresses) once per attribute set and load,
# then prints one line per run and side: guest (DAMON in L2 alone), guest+h (DAMON in L2 with host DAMON
# beside it, whose clear_young takes A bits from both), host (DAMON in L1).
#   scripts/score-damon-lab.sh [BUILD]
#   DAMON="S,A,MIN,MAX ..."  the attribute sets (default as scripts/score-damon.sh)
#   LOADS="array build"      the loads (array: 16 MiB arrays, 5 s phases; build: BUILD_SECS, default 12)
#   OUT=DIR                  where the lab's output goes (OUT/lab.log; default score-out)
# When the lab cannot run here (its own checks: the kernels, modules and QEMU it boots),
# it says why and exits 0; a failed lab check fails this script after the table.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
DAMON=${DAMON:-5000,100000,10,1000 5000,100000,10,20 20000,1000000,10,1000}
LOADS=${LOADS:-array build}
OUT=${OUT:-score-out}
mkdir -p "$OUT" || exit 1
log=$OUT/lab.log

echo "== mode ad in the nested lab: loads $LOADS, DAMON sets $DAMON (one L1 boot; log in $log)"
start=$SECONDS
# Twelve L2 runs in one boot: past the lab's default bound on a boot (1800 s) on a busy machine.
LAB_TIMEOUT=${LAB_TIMEOUT:-3600} LAB_QEMU_SCENARIOS=damon,damon-host LAB_KERNELS=6.12 LAB_DAMON_ATTRS=$DAMON LAB_DAMON_LOADS=$LOADS \
	LAB_DAMON_BUILD_SECS=${BUILD_SECS:-12} BUILD=$build nice tests/lab/test_qemu.sh >"$log" 2>&1
rc=$?
if [ $rc = 77 ]; then
	echo "score-damon-lab: the nested lab cannot run here, skipping mode ad: $(tail -n 1 "$log")"
	exit 0
fi
echo "   the lab took $((SECONDS - start)) s ($(grep -c '^CHECK qemu damon.* PASS' "$log") scenarios passed)"

# "lab: SCORE SIDE npt=1 host=H load=L attrs=A: overall: N of M snapshots scored, ..." and
# "lab: SCORE SIDE npt=1 host=H load=L attrs=A: precision P  recall R  hot-10% overlap O  WSS error E".
echo "== summary, mode ad (all the pages accessed; windows = DAMON snapshots scored)"
printf '%-6s %-22s %-8s %7s %9s %7s %7s %8s\n' load "sample,aggr,min,max" side windows precision recall hot wss_err
awk -v loads="$LOADS" -v sets="$DAMON" '$1 == "lab:" && $2 == "SCORE" && $6 ~ /^load=/ {
		side = $3 (($3 == "guest" && $5 == "host=1") ? "+h" : "")
		attrs = substr($7, 7); sub(/:$/, "", attrs)
		k = substr($6, 6) " " attrs " " side
		if ($8 == "overall:") w[k] = $9
		if ($8 == "precision") line[k] = $9 " " $11 " " $14 " " $17
	}
	END {
		nl = split(loads, l, " "); ns = split(sets, s, " "); split("guest guest+h host", sd, " ")
		for (i = 1; i <= nl; i++) for (j = 1; j <= ns; j++) for (h = 1; h <= 3; h++) {
			k = l[i] " " s[j] " " sd[h]
			if (!(k in line)) { printf "%-6s %-22s %-8s %7s\n", l[i], s[j], sd[h], "-"; continue }
			split(line[k], f, " ")
			printf "%-6s %-22s %-8s %7d %9.4f %7.4f %7.4f %+8.4f\n", l[i], s[j], sd[h], w[k], f[1], f[2], f[3], f[4]
		}
	}' "$log"
[ $rc = 0 ] || { echo "score-damon-lab: the lab failed (exit $rc): $(grep -E '^FAIL|CHECK .*FAIL' "$log" | head -3)"; exit 1; }
