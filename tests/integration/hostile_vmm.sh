#!/bin/bash
# A hostile or broken VMM makes record refuse or stop with a clear message, never crash, hang or leave an
# unclosed trace (issue 13, items 7 and 10): a memfd shrunk under the tracer's mapping (SIGBUS), bitmaps
# written while the tracer reads them, a frame that arrives in pieces across a pause, a VMM that closes
# during attach, a hello with an absurd slot size, and a hello of JSON null.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"

fake() { next_fakepeer "$T/f.sock" "$@"; } # fakepeer in the given mode on $T/f.sock

# kept TRACE JSONL N: the trace is closed, exports equal to the JSON Lines written alongside, and holds the
# N intervals before the failure, page i of interval i.
kept() {
	"$HVT" export --jsonl "$T/export.jsonl" "$1" || fail "$1 does not export (not closed?)"
	cmp "$T/export.jsonl" "$2" || fail "trace and JSON Lines differ"
	assert_eq "intervals kept" "$3" "$(wc -l <"$T/export.jsonl")"
	for i in $(seq 1 "$3"); do
		sed -n "${i}p" "$T/export.jsonl" | grep -q "\"written\":\[\[$i,1\]\]" || fail "interval $i lost its page"
	done
}

# --- the memfd shrunk under the tracer's mapping: SIGBUS is caught, the run ends, the trace is closed.
fake shrink 2
expect 1 "the VMM (fakepeer, pid $FAKE_PID) shrank the shared bitmap memfd" \
	"$HVT" record --attach "$T/f.sock" --interval 50ms -o "$T/s.hvt" --jsonl "$T/s.jsonl"
kept "$T/s.hvt" "$T/s.jsonl" 2

# --- bitmaps the VMM is still writing (sequence word odd): the copy is discarded, not recorded.
fake scribble 2
expect 1 "wrote the shared bitmaps while the tracer read them" \
	"$HVT" record --attach "$T/f.sock" --interval 50ms -o "$T/w.hvt" --jsonl "$T/w.jsonl"
kept "$T/w.hvt" "$T/w.jsonl" 2

# --- bye arrives in two pieces 1.5 s apart (longer than the tracer's 1 s wait between deadlines): read
# whole, and the final interval follows it.
fake slow-bye 2
expect 0 "the VMM said bye: fakepeer's guest stopped" \
	"$HVT" record --attach "$T/f.sock" --interval 50ms -o "$T/b.hvt" --jsonl "$T/b.jsonl"
kept "$T/b.hvt" "$T/b.jsonl" 3
tail -n 1 "$T/export.jsonl" | grep -q '"final":true' || fail "the last interval is not marked final"

# --- bye, then the request that should bring the guest's last interval answered as not final (what QEMU
# did when a harvest was in flight as its guest stopped), or not answered at all: the trace keeps what came,
# and record says the final interval is missing, keeps the bye's reason and exits 1 (it used to exit 0,
# "complete", with no final interval).
fake bye-not-final 2
expect 1 "the VMM said bye: fakepeer's guest stopped, but the guest's final interval never came: what it did after interval 3 is not in the trace" \
	"$HVT" record --attach "$T/f.sock" --interval 50ms -o "$T/nf.hvt" --jsonl "$T/nf.jsonl"
kept "$T/nf.hvt" "$T/nf.jsonl" 3
grep -q '"final":true' "$T/export.jsonl" && fail "an interval is marked final"
fake bye-close 2
expect 1 "the VMM said bye: fakepeer's guest stopped; then it closed the connection" \
	"$HVT" record --attach "$T/f.sock" --interval 50ms -o "$T/bc.hvt" --jsonl "$T/bc.jsonl"
grep -q "closed the connection without bye" "$T/err" && fail "the bye's reason was lost: $(cat "$T/err")"
kept "$T/bc.hvt" "$T/bc.jsonl" 2

# --- a VMM that closes during attach: nothing recorded, so exit 2 and no trace file (README: exit 1 means
# the trace holds what came before).
fake attach-close
expect 2 "nothing recorded" "$HVT" record --attach "$T/f.sock" -o "$T/a.hvt"
[ -e "$T/a.hvt" ] && fail "a failed attach left a trace file behind"

# --- a hello whose slot is 2^60 bytes: refused at the protocol's documented bound.
fake huge
expect 2 "bound of 17592186044416 bytes (16 TiB)" "$HVT" record --attach "$T/f.sock" -o "$T/h.hvt"

# --- a hello of JSON null.
fake null
expect 2 "frame holds JSON null, not an object" "$HVT" record --attach "$T/f.sock" -o "$T/n.hvt"
grep -q "success" "$T/err" && fail "the message still says success: $(cat "$T/err")"
echo "ok"
