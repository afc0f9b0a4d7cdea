#!/bin/bash
# A writer killed while creating a trace never destroys the trace that was at its path: hvt_trace_create
# writes the header and META to a temporary file in the same directory and renames it over the path only
# then. tests/preload/kill_at_write.so kills the writer (SIGKILL) at its first write() to a file whose path
# holds the trace's name, the moment that used to leave an empty file where the old trace was (the file was
# opened with O_TRUNC before anything was written). Both through the library (tests/tools/synth_trace) and
# through `hvmtrace record`.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
KILLER=$ROOT/$BUILD/tests/preload/kill_at_write.so
[ -f "$KILLER" ] || fail "$KILLER is not built (make tests)"
# A sanitized program needs its ASan runtime first in the preload list.
preload() { echo "$(ldd "$1" | awk '/libasan/ { print $3 }') $KILLER"; }

mkdir "$T/d"
TR=$T/d/t.hvt
"$TOOLS/synth_trace" -o "$TR" --guest 1G --intervals 3 --runs 10 || fail "cannot write the first trace"
"$HVT" export --jsonl "$T/before.jsonl" "$TR" || fail "cannot export the first trace"
cp "$TR" "$T/before.hvt"

# killed NAME CMD…: CMD dies by SIGKILL at its first write to the trace; the old trace is untouched
killed() {
	local name=$1 rc=0
	shift
	HVT_KILL_AT_WRITE=t.hvt LD_PRELOAD=$(preload "$1") "$@" >"$T/out" 2>"$T/err" || rc=$?
	[ $rc = 137 ] || fail "$name: expected death by SIGKILL (137), got $rc: $(cat "$T/err")"
	cmp "$T/before.hvt" "$TR" || fail "$name: the trace at the path changed ($(stat -c %s "$TR") bytes)"
	"$HVT" export --jsonl "$T/after.jsonl" "$TR" || fail "$name: the old trace no longer exports"
	cmp "$T/before.jsonl" "$T/after.jsonl" || fail "$name: the old trace's intervals changed"
	# what the kill left: hidden temporary files, private like traces
	for f in "$T"/d/.t.hvt.*; do
		[ -f "$f" ] || fail "$name: no temporary file was left (the kill came elsewhere?)"
		assert_eq "$name: mode of $f" 600 "$(stat -c %a "$f")"
	done
	rm -f "$T"/d/.t.hvt.*
}
killed synth_trace "$TOOLS/synth_trace" -o "$TR" --guest 1G --intervals 5 --runs 10

rm -f "$T/f.sock"
start_fakepeer "$T/f.sock" disconnect 3
killed record "$HVT" record --attach "$T/f.sock" --interval 100ms --duration 300ms -q -o "$TR"
kill "${BG_PIDS[-1]}" 2>/dev/null

# without the kill, a new trace replaces the old one whole, and nothing else is left in the directory
"$TOOLS/synth_trace" -o "$TR" --guest 1G --intervals 5 --runs 10 || fail "cannot write the second trace"
assert_eq "intervals of the new trace" 5 "$("$HVT" export --jsonl - "$TR" | wc -l)"
assert_eq "files in the directory" "t.hvt" "$(ls -A "$T/d" | xargs)"
assert_eq "mode of the trace" 600 "$(stat -c %a "$TR")"
echo "ok: a writer killed at its first write (library and record) left the old trace byte for byte"
