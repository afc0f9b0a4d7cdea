#!/bin/bash
# The test VMM stopped at random moments while a tracer harvests it every 10 ms (VMM_STOPS times, default
# 20; seeds 1..N): each time, record ends normally, its trace holds every harvest the VMM made, in order,
# with the page count the VMM announced, and the last one is the final interval the VMM harvested after its
# bye (protocol 2: the final interval answers the tracer's request). The page-exact race test with 200 stops
# is final_harvest_race.sh; this one runs the real dirty log of hvmtrace-vmm under KVM.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm
command -v jq >/dev/null || skip "jq is not installed (scripts/install-deps.sh)"
STOPS=${VMM_STOPS:-20}

for seed in $(seq 1 "$STOPS"); do
	start_vmm "$T/vmm.sock" -v --payload phases4 --phase-time 30ms --repeat 0 --wait-attach \
		--vcpu-cpu $VCPU_CPU
	# The last stop's record.err says "attached" too: gone before the new record starts, or the wait
	# below can read it before the new record's shell has truncated it, and kill the VMM before attach.
	rm -f "$T/record.err"
	"$HVT" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 10ms -q -o "$T/t.hvt" \
		2>"$T/record.err" &
	rec=$!
	wait_contains "$T/record.err" "attached to VM" $rec
	# A moment 0-99 ms after attach, from the seed: anywhere in the harvest cycle.
	sleep "0.0$(((seed * 37) % 100 / 10))$(((seed * 37) % 10))"
	kill -TERM "$VMM_PID"
	wait "$rec" || { cat "$T/record.err" "$T/vmm.out"; fail "stop $seed: record failed"; }
	wait "$VMM_PID" || fail "stop $seed: the VMM failed: $(cat "$T/vmm.out")"
	# What the VMM harvested, as its log says: "harvest N[ (final)]: D dirty pages".
	sed -n 's/^hvmtrace-vmm: harvest \([0-9]*\)\( (final)\)\{0,1\}: \([0-9]*\) dirty pages.*/{"seq":\1,"final":\2,"written_pages":\3}/p' \
		"$T/vmm.out" | sed 's/"final":,/"final":false,/; s/"final": (final),/"final":true,/' >"$T/want.jsonl"
	"$HVT" export --jsonl - "$T/t.hvt" | jq -c '{seq,final,written_pages}' >"$T/got.jsonl" ||
		fail "stop $seed: the trace does not export"
	cmp -s "$T/want.jsonl" "$T/got.jsonl" || {
		diff "$T/want.jsonl" "$T/got.jsonl" | head
		fail "stop $seed: the trace differs from what the VMM harvested"
	}
	tail -n 1 "$T/got.jsonl" | grep -q '"final":true' || fail "stop $seed: no final interval"
	echo "ok: stop $seed: $(wc -l <"$T/got.jsonl") intervals, the last final"
done
echo "ok: $STOPS stops of hvmtrace-vmm, every harvest recorded, each ending with its final interval"
