#!/usr/bin/env python3
# The guest agent's snapshots against the array program (tests/guest/array.c) of the built-in guest:
#   owners_array_check.py SNAPSHOTS CONSOLE [WHOLE]
# SNAPSHOTS: what came over the port (owners_snap.py reads it); CONSOLE: the guest's console log, stamped
# or not, with the program's HVT C-RUN lines (c's guest frames) and HVT PHASE lines (the guest's
# CLOCK_REALTIME, the snapshots' clock). Every snapshot taken during the copy phase must give each page of c
# to the process named array alone, as anonymous memory, and there must be one. Prints the index of the
# first such snapshot; exit 1 (saying why on stderr) if not. A last snapshot cut short (the guest powered
# off while it crossed the port) is left out, and said; WHOLE, if given, gets the whole ones (for
# hvmtrace attribute, which refuses a file that ends in a cut snapshot).
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from owners_snap import decode  # noqa: E402

snaps_file, console = sys.argv[1], sys.argv[2]
c, phase = set(), {}
for line in open(console, errors="replace"):
    w = line.split()
    if "HVT" not in w:
        continue
    w = w[w.index("HVT"):]
    if w[1] == "C-RUN":
        first, n = int(w[2]), int(w[3])
        c.update(range(first, first + n))
    elif w[1] == "PHASE" and len(w) > 3:
        phase[w[2]] = int(w[3])
if not c or "copy" not in phase or "add" not in phase:
    sys.exit("the console lacks the array program's C-RUN and timed PHASE lines")
data = open(snaps_file, "rb").read()
whole = 0
while whole + 40 <= len(data) and whole + 40 + struct.unpack_from("<Q", data, whole + 32)[0] <= len(data):
    whole += 40 + struct.unpack_from("<Q", data, whole + 32)[0]
if whole < len(data):
    print(f"a last snapshot cut short ({len(data) - whole} bytes) left out", file=sys.stderr)
snaps = list(decode(data[:whole]))
if len(sys.argv) > 3:
    open(sys.argv[3], "wb").write(data[:whole])
during = [i for i, s in enumerate(snaps) if phase["copy"] <= s["time_ns"] < phase["add"]]
print(f"{len(snaps)} snapshots, {len(during)} during the copy: {during}", file=sys.stderr)
if not during:
    sys.exit("no snapshot was taken during the copy phase")
for i in during:
    owners = {}
    for o in snaps[i]["owners"]:
        who = o["name"] if o["type"] == "process" else "kind " + o["kind"]
        for first, n in o["runs"]:
            for g in c.intersection(range(first, first + n)):
                owners.setdefault(g, set()).add(who)
    wrong = sum(1 for g in c if owners.get(g) != {"array", "kind anon"})
    if wrong:
        sys.exit(f"snapshot {i}: {wrong} of c's {len(c)} pages are not array's anonymous memory alone")
print(during[0])
