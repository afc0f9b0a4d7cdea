#!/bin/bash
# The main job on a fresh Debian 12 machine: install what is needed, build, run the built-in payload guest
# under the test VMM (the seed paper's array program at page level: copy c[i]=a[i], then add
# c[i]=a[i]+b[i]), trace it at 1 s intervals, print the written pages per second, and leave the trace and
# its JSON Lines export in demo-out/.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-demo-out}
PHASE=${PHASE:-5s}

if [ "$(id -u)" != 0 ]; then
	echo "demo: run as root (it installs packages and uses /dev/kvm): sudo $0" >&2
	exit 1
fi
scripts/install-deps.sh
[ -f config.mk ] || ./configure >/dev/null
make -s all
[ -c /dev/kvm ] || { echo "demo: this machine has no /dev/kvm" >&2; exit 1; }

mkdir -p "$OUT"
rm -f "$OUT/vmm.sock"
ncpu=$(nproc)
build/bin/hvmtrace-vmm --listen "$OUT/vmm.sock" --name demo --payload array --phase-time "$PHASE" \
	--wait-attach --vcpu-cpu 0 --phase-log "$OUT/phases.jsonl" 2>"$OUT/vmm.log" &
vmm=$!
trap 'kill $vmm 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -S "$OUT/vmm.sock" ] && break; sleep 0.05; done

echo "== tracing the array payload (copy for $PHASE, then add for $PHASE)"
build/bin/hvmtrace record --attach "$OUT/vmm.sock" --cpu $((ncpu - 1)) --interval 1s -o "$OUT/demo.hvt"
wait $vmm
echo
echo "== written pages per second (hvmtrace report $OUT/demo.hvt)"
build/bin/hvmtrace report "$OUT/demo.hvt"
build/bin/hvmtrace export --jsonl "$OUT/demo.jsonl" --csv "$OUT/demo.csv" "$OUT/demo.hvt"
echo
echo "== wrote $OUT/demo.hvt (trace), $OUT/demo.jsonl and $OUT/demo.csv (exports), $OUT/phases.jsonl (VMM phase log)"
