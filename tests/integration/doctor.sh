#!/bin/bash
# hvmtrace doctor on this machine: every answer it gives is checked against what the test sees for itself
# (cpuinfo, /sys/module, /dev/mem and the kernel config, /proc/cmdline, the PMUs in sysfs, resctrl), and
# each "no" must carry its reason. On the development host (a PVM KVM without KVM_CAP_AD_HARVEST, no
# uncore PMU, no /dev/mem) the answers are mostly "no". The run's time is printed, not asserted (the
# issue's bound is 60 s). The self-test's arithmetic runs against the stand-in PMU (real perf events).
source "$(dirname "$0")/../lib/assert.bash"
command -v jq >/dev/null || skip "jq is not installed (scripts/install-deps.sh)"
D=$BIN/hvmtrace

# --help lists the exit statuses; a bad --need is a usage error.
"$D" doctor --help >"$T/help" || fail "--help failed"
assert_contains "$T/help" "Exit status:"
assert_contains "$T/help" "everything asked for (--need) works"
expect 2 "'everything' is not one of dirty-log, ad, bandwidth" "$D" doctor --need everything

# The patched QEMU when it is built (make qemu), else whatever is on PATH.
qemu_dir=$(scripts/build-qemu.sh --check 2>/dev/null) && QEMU_ARGS=(--qemu "$qemu_dir/qemu-system-x86_64") ||
	QEMU_ARGS=()
start=$(date +%s%N)
rc=0
"$D" doctor --json --output-dir "$T" "${QEMU_ARGS[@]}" >"$T/doctor.json" 2>"$T/err" || rc=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
echo "hvmtrace doctor --json took ${elapsed_ms} ms here (the issue's bound: 60 s)"
jq -e '.schema == "hvmtrace-doctor" and .version == 1' "$T/doctor.json" >/dev/null ||
	{ cat "$T/doctor.json" "$T/err"; fail "not the doctor's JSON"; }
status() { jq -r --arg id "$1" '[.checks[] | select(.id == $id)][0].status // "absent"' "$T/doctor.json"; }
field() { jq -r --arg id "$1" --arg f "$2" '[.checks[] | select(.id == $id)][0][$f] // ""' "$T/doctor.json"; }
check() { # ID STATUS TEXT-IN-WHAT-OR-FIX: the check has that status, and says TEXT in its finding or fix
	local s
	s=$(status "$1")
	[ "$s" = "$2" ] || fail "$1 is '$s', expected '$2': $(field "$1" what)"
	[ -z "${3:-}" ] || { field "$1" what; field "$1" fix; } | grep -qF -- "$3" ||
		fail "$1 does not say '$3': $(field "$1" what) / $(field "$1" fix)"
	echo "ok: $1 $2${3:+ ($3)}"
}
# Every "no" names its fix, or says why in its finding.
jq -e '[.checks[] | select(.status == "no") | select((.what | length) < 10)] | length == 0' "$T/doctor.json" \
	>/dev/null || fail "a 'no' without its reason"

# 1. Virtualisation.
if [ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then check kvm.dev yes "answers"; fi
if ! grep -qwE 'vmx|svm' /proc/cpuinfo; then
	check cpu.virt no "without VMX or SVM"
	! grep -qw hypervisor /proc/cpuinfo || check cpu.virt no "itself a virtual machine"
fi
if [ -d /sys/module/kvm_pvm ]; then
	check kvm.pvm warn "PVM"
	check kvm.ad_harvest no "not built with hvmtrace's series"
	[ -e /sys/module/kvm/initstate ] || check kvm.ad_harvest no "kvm is built into this kernel"
	check record.modes info "would use dirty-log"
	jq -e '.verdict.ad.available == false and (.verdict.ad.because | contains("KVM_CAP_AD_HARVEST"))' \
		"$T/doctor.json" >/dev/null || fail "the verdict on ad does not name KVM_CAP_AD_HARVEST"
fi

# 2. Memory placement.
if [ ! -e /dev/mem ]; then
	if [ -r /proc/config.gz ] && zgrep -q '^# CONFIG_DEVMEM is not set' /proc/config.gz; then
		check devmem no "CONFIG_DEVMEM is not set"
	else
		check devmem no "does not exist"
	fi
fi
grep -q 'memmap=[^ ]*\$' /proc/cmdline || check memmap no "no memmap=SIZE\$START reservation"
[ -e /etc/hvmtrace/chanmap.json ] || check chanmap no "no channel map"
check output yes "$T"

# 3. Counters.
if ! ls /sys/bus/event_source/devices | grep -qE '^(uncore_imc_[0-9]+|amd_umc_[0-9]+)$'; then
	check pmu.discovery no "no memory-controller PMU"
	check selftest.pmu skip "no memory-controller PMU"
	jq -e '.verdict.bandwidth.available == false and (.verdict.bandwidth.because | contains("no memory-controller PMU"))' \
		"$T/doctor.json" >/dev/null || fail "the verdict on bandwidth does not name the missing PMU"
fi
[ -e /sys/fs/resctrl/info/L3_MON ] || check resctrl.mbm skip "not available"

# 4. The rest of the chain.
if [ ${#QEMU_ARGS[@]} -gt 0 ]; then
	check qemu.patched yes "patched (memory-backend-devmem and the hvmtrace object)"
	if [ "$(status kvm.dev)" = yes ]; then
		jq -e '.verdict["dirty-log"].available' "$T/doctor.json" >/dev/null || fail "dirty-log should be available"
		"$D" doctor --need dirty-log --no-selftest --output-dir "$T" "${QEMU_ARGS[@]}" >"$T/text" ||
			fail "--need dirty-log should exit 0 here: $(tail -n 5 "$T/text")"
		assert_contains "$T/text" "On this host you can trace:"
		echo "ok: --need dirty-log exits 0 with the patched QEMU"
	fi
else
	[ "$(status qemu.patched)" = no ] || fail "an unpatched QEMU passed for patched"
fi

# The exit status: 1 while something asked for (by default everything) is missing, 0 when all of it works.
all=$(jq '[.verdict[] | .available] | all' "$T/doctor.json")
[ "$all" = true ] && assert_eq "exit status" 0 "$rc" || assert_eq "exit status" 1 "$rc"
jq -e --argjson rc "$rc" '.exit == $rc' "$T/doctor.json" >/dev/null || fail "JSON exit differs from the status"

# The self-test's arithmetic on the stand-in PMU (page-fault software events posing as one IMC, two sockets).
if [ "$(id -u)" = 0 ] && [ "$(nproc)" -ge 2 ]; then
	"$D" doctor --json --sysfs-root tests/fixtures/sysfs/standin-faults/sys --output-dir "$T" \
		>"$T/standin.json" || true
	jq -e '[.checks[] | select(.id | startswith("selftest.stand-in.")) | .status] as $s |
		($s | length) == 4 and ($s | all(. == "yes" or . == "warn"))' "$T/standin.json" >/dev/null ||
		{ jq '.checks[] | select(.group == "counters")' "$T/standin.json"; fail "the stand-in self-test did not pass"; }
	jq -e '.verdict.bandwidth.available == false' "$T/standin.json" >/dev/null ||
		fail "a stand-in PMU made bandwidth available"
	jq -r '.checks[] | select(.id | startswith("selftest.stand-in.")) | "ok: \(.id) ratio \(.ratio)"' "$T/standin.json"
fi
echo ok
