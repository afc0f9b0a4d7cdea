#!/bin/bash
# Tracing overhead on this host's KVM, measured with the test VMM's array payload (copy c[i]=a[i], then
# add c[i]=a[i]+b[i], at page level): guest speed (payload passes per second) untraced and traced at
# 1 s / 100 ms / 10 ms, the harvest time, and the trace bytes per interval. Prints figures; asserts nothing.
# usage: bench/tracing_overhead.sh BUILD_DIR   (needs /dev/kvm)
set -u
BUILD=${1:?usage: bench/tracing_overhead.sh BUILD_DIR}
PHASE=${PHASE:-3s}
ARRAY=${ARRAY:-64M}
[ -c /dev/kvm ] && [ -w /dev/kvm ] || { echo "no usable /dev/kvm: skipped"; exit 0; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
last=$(($(nproc) - 1))

# passes per second of each phase of round 0, from the VMM's phase log: "copy add"
rates() {
	awk -F'[:,}]' '
	/"type":"phase"/ { for (i = 1; i < NF; i++) { if ($i ~ /"index"/) p = $(i + 1); if ($i ~ /"t_ns"/) t[p] = $(i + 1) } }
	/"type":"done"/  { for (i = 1; i < NF; i++) if ($i ~ /"t_ns"/) done = $(i + 1) }
	/"type":"pass"/  { for (i = 1; i < NF; i++) { if ($i ~ /"phase"/) p = $(i + 1); if ($i ~ /"pass"/ && $i !~ /type/) n[p] = $(i + 1) } }
	END { printf "%.0f %.0f", n[0] / ((t[1] - t[0]) / 1e9), n[1] / ((done - t[1]) / 1e9) }' "$1"
}

printf '%-9s %14s %14s %10s %12s %12s %14s\n' interval "copy passes/s" "add passes/s" slowdown \
	"harvest_us" "written/iv" "trace B/iv"
base_copy=""
for iv in none 1s 100ms 10ms; do
	rm -f "$T/vm.sock" "$T/pl.jsonl" "$T/t.hvt" "$T/t.jsonl"
	if [ $iv = none ]; then
		"$BUILD/bin/hvmtrace-vmm" --payload array --array-size "$ARRAY" --phase-time "$PHASE" --vcpu-cpu 0 \
			--phase-log "$T/pl.jsonl" 2>/dev/null
	else
		"$BUILD/bin/hvmtrace-vmm" --payload array --array-size "$ARRAY" --phase-time "$PHASE" --vcpu-cpu 0 \
			--phase-log "$T/pl.jsonl" --listen "$T/vm.sock" --wait-attach 2>/dev/null &
		vmm=$!
		for _ in $(seq 100); do [ -S "$T/vm.sock" ] && break; sleep 0.05; done
		"$BUILD/bin/hvmtrace" record --attach "$T/vm.sock" --cpu $last --interval $iv -o "$T/t.hvt" \
			--jsonl "$T/t.jsonl" 2>/dev/null
		wait $vmm
	fi
	read -r copy add <<<"$(rates "$T/pl.jsonl")"
	[ -z "$base_copy" ] && base_copy=$copy base_add=$add
	slow=$(awk -v a="$base_copy" -v b="$copy" -v c="$base_add" -v d="$add" 'BEGIN { printf "%.2fx", (a / b + c / d) / 2 }')
	if [ $iv = none ]; then
		printf '%-9s %14s %14s %10s %12s %12s %14s\n' untraced "$copy" "$add" 1.00x - - -
	else
		n=$(wc -l <"$T/t.jsonl")
		h=$(grep -o '"harvest_us":[0-9.]*' "$T/t.jsonl" | awk -F: '{ s += $2 } END { printf "%.0f", s / NR }')
		w=$(grep -o '"written_pages":[0-9]*' "$T/t.jsonl" | awk -F: '{ s += $2 } END { printf "%.0f", s / NR }')
		b=$(($(stat -c %s "$T/t.hvt") / n))
		printf '%-9s %14s %14s %10s %12s %12s %14s\n' "$iv" "$copy" "$add" "$slow" "$h" "$w" "$b"
	fi
done
echo "(array payload: arrays of $ARRAY, phases of $PHASE; a pass touches every page of the phase's arrays once;"
echo " traced runs re-arm write protection each interval, so each written page costs one fault per interval)"
