#!/bin/bash
# hvmtrace-guest (docs/attribution.md) on this host, which is a Linux with /proc/kpageflags and pagemaps as a
# guest's would be: a process that touches a known 8 MiB buffer is found in the agent's snapshot with every
# PFN of that buffer, as the test reads them itself from /proc/PID/pagemap, under its name and cgroup, and
# the kinds say those pages are anonymous. The snapshot is decoded by tests/tools/owners_snap.py, apart from
# the C reader; it describes only pages of RAM (System RAM in /proc/iomem). It writes to a FIFO as to a port, and SIGTERM ends it while its write waits for a reader
# that does not read. Then the agent's refusals, each one line naming the input.
source "$(dirname "$0")/../lib/assert.bash"
command -v python3 >/dev/null || skip "needs python3"
[ "$(id -u)" = 0 ] || skip "needs root: the kernel hides PFNs from others"
[ -r /proc/kpageflags ] || skip "no /proc/kpageflags on this kernel"
AGENT=$BIN/hvmtrace-guest
SNAP=(python3 "$ROOT/tests/tools/owners_snap.py")

# the owned process: names itself (in UTF-8, which the snapshot writes as ?), touches 2048 pages, says where they are, waits for its stdin to close
mkfifo "$T/in"
python3 -c '
import mmap, sys
open("/proc/self/comm", "wb").write("hvt-owné".encode())
buf = mmap.mmap(-1, 8 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for i in range(0, 8 << 20, 4096):
    buf[i] = 1
import ctypes
addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
print(addr, flush=True)
sys.stdin.read()
' <"$T/in" >"$T/addr" &
owned=$!
BG_PIDS+=("$owned")
exec 3>"$T/in"
for _ in $(seq 600); do [ -s "$T/addr" ] && break; sleep 0.1; done
[ -s "$T/addr" ] || fail "the owned process did not start"

# its buffer's PFNs, read here from its pagemap
python3 -c '
import struct, sys
pid, addr = int(sys.argv[1]), int(sys.argv[2])
with open("/proc/%d/pagemap" % pid, "rb") as f:
    f.seek(addr // 4096 * 8)
    for (e,) in struct.iter_unpack("<Q", f.read(2048 * 8)):
        assert e >> 63, "a page of the buffer is not present"
        print(e & ((1 << 55) - 1))
' "$owned" "$(cat "$T/addr")" >"$T/pfns" || fail "reading the buffer's pagemap"
assert_eq "buffer pages" 2048 "$(sort -u "$T/pfns" | wc -l)"

"$AGENT" -o "$T/snap" -v 2>"$T/agent.err" || fail "hvmtrace-guest exited $?: $(cat "$T/agent.err")"
"${SNAP[@]}" decode "$T/snap" >"$T/snap.json" || fail "the snapshot does not decode"
assert_eq "snapshots in the file" 1 "$(wc -l <"$T/snap.json")"
python3 - "$T/snap.json" "$T/pfns" "$owned" "$(cut -d: -f3- "/proc/$owned/cgroup" | tail -n 1)" <<'PY' || fail "attribution"
import json, sys
snap = json.loads(open(sys.argv[1]).read())
pfns = [int(l) for l in open(sys.argv[2])]
pid, cgroup = int(sys.argv[3]), sys.argv[4]
assert snap["page_size"] == 4096, snap["page_size"]
mine = [o for o in snap["owners"] if o["type"] == "process" and o["pid"] == pid]
assert len(mine) == 1, "pid %d is not one owner of the snapshot" % pid
o = mine[0]
assert o["name"] == "hvt-own??", o["name"]  # UTF-8 written as ? (printable ASCII only)
assert o["cgroup"] == cgroup, (o["cgroup"], cgroup)
def has(runs, p):
    return any(f <= p < f + c for f, c in runs)
missing = [p for p in pfns if not has(o["runs"], p)]
assert not missing, "%d of the buffer's pages are not the process's, e.g. %d" % (len(missing), missing[0])
kinds = {k["kind"]: k["runs"] for k in snap["owners"] if k["type"] == "kind"}
notanon = [p for p in pfns if not has(kinds.get("anon", []), p)]
assert not notanon, "%d of the buffer's pages are not of kind anon" % len(notanon)
# every process's runs ascending and apart; kinds disjoint
for x in snap["owners"]:
    r = x["runs"]
    assert all(r[i][0] + r[i][1] < r[i + 1][0] for i in range(len(r) - 1)), x["name"]
allk = sorted(run for runs in kinds.values() for run in runs)
assert all(allk[i][0] + allk[i][1] <= allk[i + 1][0] for i in range(len(allk) - 1)), "kinds overlap"
print("ok: pid %d's %d buffer pages are its own and anonymous; %d owners" % (pid, len(pfns), len(snap["owners"])))
PY
grep -q "snapshot of .* owners" "$T/agent.err" || fail "-v does not say what the snapshot took"
echo "ok: $(tail -n 1 "$T/agent.err")"

# only pages of RAM ("System RAM" at the top of /proc/iomem): a page Linux describes that is not RAM (a PC's
# VGA window) is no page of the VMM's either. An iomem naming 4 KiB-0x9ffff RAM leaves PFNs 1-0x9f.
printf '00000000-00000fff : Reserved\n00001000-0009ffff : System RAM\n  00001000-00001fff : nested\n' >"$T/iomem"
"$AGENT" -o "$T/snap-ram" --iomem "$T/iomem" -v 2>"$T/agent.err" || fail "hvmtrace-guest --iomem exited $?: $(cat "$T/agent.err")"
"${SNAP[@]}" decode "$T/snap-ram" | python3 -c '
import json, sys
runs = [r for o in json.loads(sys.stdin.read())["owners"] for r in o["runs"]]
out = [r for r in runs if r[0] < 1 or r[0] + r[1] > 0xa0]
assert runs and not out, "runs outside the RAM of the iomem: %s" % out[:3]
' || fail "pages outside System RAM in the snapshot"
grep -q "pages ([1-9][0-9]* not RAM)" "$T/agent.err" || fail "-v does not count the pages that are not RAM: $(cat "$T/agent.err")"
echo "ok: only System RAM: $(tail -n 1 "$T/agent.err")"

# two snapshots in one file, a stream the reader splits
"$AGENT" -o "$T/snap2" --every 0.01 --count 2 || fail "--every --count"
assert_eq "snapshots of --count 2" 2 "$("${SNAP[@]}" decode "$T/snap2" | wc -l)"
exec 3>&-
# a character device or FIFO (a virtio-serial port in a guest) is written as it is, not replaced
mkfifo "$T/port"
cat "$T/port" >"$T/from-port" &
BG_PIDS+=("$!")
"$AGENT" -o "$T/port" || fail "writing to a FIFO"
wait "${BG_PIDS[-1]}"
[ -p "$T/port" ] || fail "the FIFO was replaced"
assert_eq "snapshots through the FIFO" 1 "$("${SNAP[@]}" decode "$T/from-port" | wc -l)"

# a port nobody reads holds the agent's write (a FIFO opened for reading and never read stands in: this
# host's snapshot is larger than its buffer); SIGTERM still ends it, without an error
mkfifo "$T/stuck"
sleep 600 <"$T/stuck" &
BG_PIDS+=("$!")
"$AGENT" -o "$T/stuck" --every 1 2>"$T/stuck.err" &
agent=$!
BG_PIDS+=("$agent")
# in write(2) (x86-64's syscall 1): only there, when nobody reads, does it wait
writing() { [ "$(cut -d' ' -f1 "/proc/$agent/syscall" 2>/dev/null)" = 1 ]; }
wait_until "the agent did not wait in a write to the FIFO" "$agent" writing
kill -TERM "$agent"
ended() { # gone, or a zombie until waited for
	local state
	state=$(awk '{ print $3 }' "/proc/$agent/stat" 2>/dev/null)
	[ -z "$state" ] || [ "$state" = Z ]
}
wait_until "SIGTERM did not end the agent waiting in its write" $$ ended
rc=0
wait "$agent" || rc=$?
[ $rc = 0 ] || fail "the agent stopped in a waiting write exited $rc: $(cat "$T/stuck.err")"
assert_contains "$T/stuck.err" "hvmtrace-guest: stopped with a snapshot of"
echo "ok: SIGTERM ends an agent whose write waits: $(cat "$T/stuck.err")"

# refusals
"$AGENT" --every 0 2>"$T/err" && fail "--every 0 accepted"
assert_contains "$T/err" "hvmtrace-guest: --every 0: not a number of seconds"
"$AGENT" --count 2 2>"$T/err" && fail "--count without --every accepted"
assert_contains "$T/err" "hvmtrace-guest: --count needs --every"
"$AGENT" -o "$T/no/such/dir" 2>"$T/err" && fail "an output in a missing directory accepted"
assert_contains "$T/err" "hvmtrace-guest: $T/no/such/dir: No such file or directory"
"$AGENT" -o "$T/x" --kpageflags "$T/none" 2>"$T/err" && fail "a missing kpageflags accepted"
assert_contains "$T/err" "hvmtrace-guest: $T/none: No such file or directory"
echo "ok: refusals"
