#!/bin/bash
# hvmtrace top in a real terminal (tmux): it finds two running recorders through the registry, shows each
# VM's written pages/s, WSS, per-channel MB/s, CPU % and missed deadlines, refreshes, sorts on a key and
# quits on q. The VMs are fakepeer's (page i of harvest i written: 1 page per interval), one with stand-in
# channels (tests/fixtures/sysfs/standin) and one without bandwidth.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
[ "$(id -u)" = 0 ] || skip "needs root (CPU-wide perf events for the stand-in channels)"
command -v tmux >/dev/null || skip "tmux is not installed (scripts/install-deps.sh)"
export HVMTRACE_RUN_DIR=$T/run

recorder() { # NAME INTERVAL [record options]: fakepeer and a recorder with --metrics, in the background
	local name=$1 iv=$2
	shift 2
	start_fakepeer "$T/$name.sock" devmem
	"$BIN/hvmtrace" record --attach "$T/$name.sock" --interval "$iv" --metrics 0 -o "$T/$name.hvt" \
		--jsonl "$T/$name.jsonl" "$@" 2>"$T/$name.err" &
	BG_PIDS+=($!)
	wait_contains "$T/$name.err" "attached to VM" "${BG_PIDS[-1]}"
}
recorder a 100ms --sysfs-root tests/fixtures/sysfs/standin/sys
recorder b 250ms
[ "$(ls "$T/run" | wc -l)" = 2 ] || fail "the registry holds $(ls "$T/run")"

# The first screen has one sample of each: no rate yet, so "-", not 0.0 (written/s, the MB/s, CPU %).
"$BIN/hvmtrace" top -n 1 </dev/null >"$T/first" || fail "top -n 1 failed"
cat "$T/first"
grep 'fake .* 0.250s' "$T/first" | awk '{ exit !($4 == "-" && $5 == "n/a" && $(NF - 1) == "-") }' ||
	fail "the first screen shows rates of the 250 ms recorder"
grep 'fake .* 0.100s' "$T/first" | awk '{ exit !($4 == "-" && $(NF - 3) == "-" && $(NF - 2) == "-") }' ||
	fail "the first screen shows rates of the 100 ms recorder"
grep '^  s0.mc0.ch1 ' "$T/first" | awk '{ exit !($2 == "-" && $3 == "-") }' || fail "the first screen shows channel rates"

S=hvt-top-$$
tmux -L "$S" new-session -d -s top -x 132 -y 30 "env HVMTRACE_RUN_DIR=$T/run $BIN/hvmtrace top; sleep 30"
screen() { tmux -L "$S" capture-pane -p -t top; }
trap 'tmux -L "$S" kill-server 2>/dev/null; cleanup' EXIT
# two refreshes at least: rates need two scrapes
shows() { screen >"$T/screen"; for re in "$@"; do grep -q "$re" "$T/screen" || return 1; done; }
wait_until "top never showed both recorders with rates" "$(tmux -L "$S" display -p -t top '#{pane_pid}')" \
	shows 'fake .*dirty-log .*0.100s *[1-9]' 'fake .*dirty-log .*0.250s *[1-9]'
screen | tee "$T/screen"
assert_contains "$T/screen" "hvmtrace top: 2 recorders; sorted by written/s"
assert_contains "$T/screen" "VM                   mode      interval    written/s   accessed/s         WSS  read MB/s write MB/s  CPU %  missed"
# rows: 1 page per interval, so 10 pages/s at 100 ms and 4 at 250 ms (rates between two scrapes of counters)
row_a=$(grep 'fake .* 0.100s' "$T/screen")
row_b=$(grep 'fake .* 0.250s' "$T/screen")
[ -n "$row_a" ] && [ -n "$row_b" ] || fail "a recorder's row is missing"
awk '{ exit !($4 >= 7 && $4 <= 13) }' <<<"$row_a" || fail "100 ms recorder: written/s is not about 10: $row_a"
awk '{ exit !($4 >= 2.5 && $4 <= 5.5) }' <<<"$row_b" || fail "250 ms recorder: written/s is not about 4: $row_b"
assert_contains "$T/screen" "4 KiB" # WSS: one page
assert_contains "$T/screen" "  s0.mc0.ch1"
assert_contains "$T/screen" "  s1.mc0.ch0"
grep -q 'fake .* 0.250s .* n/a *n/a ' "$T/screen" || fail "the recorder without bandwidth shows MB/s"
# sorted by written/s: the 100 ms VM (10/s) first
[ "$(grep -n 'fake .* 0.100s' "$T/screen" | cut -d: -f1)" -lt "$(grep -n 'fake .* 0.250s' "$T/screen" | cut -d: -f1)" ] ||
	fail "not sorted by written/s"
# n sorts by VM name (both 'fake': stable enough to check the header), m by missed deadlines
tmux -L "$S" send-keys -t top m
wait_until "top did not sort by missed deadlines" "$(tmux -L "$S" display -p -t top '#{pane_pid}')" shows "sorted by missed"
tmux -L "$S" send-keys -t top q
gone() { ! pgrep -f "$BIN/hvmtrace top" >/dev/null; }
wait_until "top did not quit on q" "$(tmux -L "$S" display -p -t top '#{pane_pid}')" gone
# An endpoint named that does not answer is shown with the reason; -n ends without a terminal.
"$BIN/hvmtrace" top -n 1 http://127.0.0.1:1/metrics </dev/null >"$T/dead" || fail "top -n 1 failed"
assert_contains "$T/dead" "http://127.0.0.1:1/metrics: cannot connect: Connection refused"
echo "ok: $(grep -c '^fake' "$T/screen") VMs shown, sorted, quit"
