#!/bin/bash
# Inputs and outputs given on the command line (docs/reliability.md, "Limits"). Readers refuse what is not
# a regular file with one line before they could block on it (a FIFO held report and export in open()
# forever); no output may be an input, compared by device and inode (`export --jsonl T T` truncated the
# trace T to 0 bytes; `record -o F --jsonl F` was accepted); an export that fails leaves the file that was
# there (it used to truncate it first); JSON Lines and CSV are created 0600 like traces.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
CM=$BIN/chanmap
FIX=tests/fixtures/trace

cp "$FIX/dirtylog-nobw.hvt" "$T/t.hvt"
sum=$(sha256sum <"$T/t.hvt")
"$HVT" export --jsonl "$T/good.jsonl" "$T/t.hvt" || fail "export of the fixture failed"

# --- not regular files: refused at once (timeout: before the fix the FIFO blocked for ever)
mkfifo "$T/fifo"
for f in "$T/fifo" /dev/zero /dev/null "$T"; do
	kind=$(stat -L -c %F "$f")
	expect 2 "$f: not a trace: it is a" timeout 20 "$HVT" report "$f"
	[ "$(wc -l <"$T/err")" = 1 ] || fail "report $f ($kind): more than one line"
	expect 2 "$f: not a trace: it is a" timeout 20 "$HVT" export --jsonl - "$f"
	expect 2 "cannot read channel map $f: it is a" timeout 20 "$CM" show "$f"
done
assert_contains "$T/err" "it is a directory, not a regular file"

# --- an output that is the input, by any name: refused, and the trace is untouched
ln "$T/t.hvt" "$T/hardlink.hvt"
ln -s t.hvt "$T/symlink.hvt"
for out in "$T/t.hvt" "$T/./t.hvt" "$T/../$(basename "$T")/t.hvt" "$T/hardlink.hvt" "$T/symlink.hvt"; do
	expect 2 "--jsonl $out is the trace being read; refusing to overwrite it" \
		"$HVT" export --jsonl "$out" "$T/t.hvt"
	expect 2 "--csv $out is the trace being read" "$HVT" export --csv "$out" "$T/t.hvt"
	expect 2 "--csv-pages $out is the trace being read" "$HVT" export --csv-pages "$out" "$T/t.hvt"
done
assert_eq "the trace after the refused exports" "$sum" "$(sha256sum <"$T/t.hvt")"
expect 2 "--jsonl and --csv name the same file" "$HVT" export --jsonl "$T/o" --csv "$T/./o" "$T/t.hvt"
[ -e "$T/o" ] && fail "a refused export created its output"
"$HVT" export --jsonl /dev/stdout --csv /dev/stdout "$T/t.hvt" | cat >"$T/both"
[ "${PIPESTATUS[0]}" = 0 ] || fail "two outputs on one pipe were refused"
# record checks before it connects: no VMM is needed, and F is neither created nor truncated
expect 2 "-o $T/t.hvt and --jsonl $T/./t.hvt name the same file" \
	"$HVT" record --attach "$T/none.sock" -o "$T/t.hvt" --jsonl "$T/./t.hvt"
expect 2 "name the same file" "$HVT" record --attach "$T/none.sock" -o "$T/new.hvt" --jsonl "$T/new.hvt"
[ -e "$T/new.hvt" ] && fail "a refused record created its output"
assert_eq "the trace after the refused record" "$sum" "$(sha256sum <"$T/t.hvt")"

# --- an export that fails keeps the file that was there: the second output cannot be created
cp "$T/good.jsonl" "$T/keep.jsonl"
expect 1 "cannot create $T/no/such/dir.csv" \
	"$HVT" export --jsonl "$T/keep.jsonl" --csv "$T/no/such/dir.csv" "$T/t.hvt"
cmp "$T/good.jsonl" "$T/keep.jsonl" || fail "a failed export changed the file it was to replace"
[ -z "$(find "$T" -name '.*.??????')" ] || fail "a failed export left its temporary file: $(find "$T" -name '.*.??????')"

# --- outputs replace their file whole, 0600 whatever the umask; through a symlink, the target
umask 022
echo old >"$T/out.jsonl" && chmod 644 "$T/out.jsonl"
ln -s out.jsonl "$T/link.jsonl"
"$HVT" export --jsonl "$T/link.jsonl" --csv "$T/out.csv" --csv-pages "$T/pages.csv" "$T/t.hvt" || fail "export failed"
cmp "$T/good.jsonl" "$T/out.jsonl" || fail "export through a symlink did not replace its target"
[ -L "$T/link.jsonl" ] || fail "export replaced the symlink instead of its target"
for f in out.jsonl out.csv pages.csv; do
	assert_eq "mode of $f" 600 "$(stat -c %a "$T/$f")"
done
"$HVT" export --jsonl /dev/null "$T/t.hvt" || fail "export to /dev/null failed"
[ -c /dev/null ] || fail "export replaced /dev/null"
"$HVT" export --jsonl /dev/stdout "$T/t.hvt" | cmp - "$T/good.jsonl" || fail "export to /dev/stdout differs"

# --- record's JSON Lines: 0600 like its trace (a peer that answers 3 harvests, then hangs up)
start_fakepeer "$T/f.sock" disconnect 3
expect 1 "closed the connection" "$HVT" record --attach "$T/f.sock" --interval 100ms -o "$T/r.hvt" --jsonl "$T/r.jsonl"
assert_eq "mode of record's trace" 600 "$(stat -c %a "$T/r.hvt")"
assert_eq "mode of record's JSON Lines" 600 "$(stat -c %a "$T/r.jsonl")"
echo "ok: 4 non-regular inputs refused, 5 names of the input refused as outputs, failed export kept the old file, outputs 0600"
