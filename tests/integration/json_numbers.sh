#!/bin/bash
# JSON numbers are the shortest decimals that read back exactly (241.925, not json-c's 241.92500000000001),
# in every JSON writer: report --json (with the energy what-if), export's JSON Lines and --meta, all read by
# Python's json module, whose float repr is the shortest round-trip form. And no writer makes a double
# but through lib/core/json_number.c.
source "$(dirname "$0")/../lib/assert.bash"
command -v python3 >/dev/null || skip "python3 is not installed (scripts/install-deps.sh)"

# Every double goes through hvt_json_new_double (or the JSON Lines writer's hvt_json_format_double).
grep -rn "json_object_new_double" lib hvmtrace plot chanmap --include='*.c' | grep -v '^lib/core/json_number.c:' >"$T/raw" &&
	fail "a JSON writer makes doubles without lib/core/json_number.c: $(cat "$T/raw")"

"$TOOLS/synth_trace" -o "$T/t.hvt" --guest 1G --intervals 40 --runs 200 --phase 10 --bandwidth >/dev/null ||
	fail "synth_trace failed"
"$HVT" report --json "$T/t.hvt" >"$T/report.json" || fail "report --json failed"
"$HVT" report --json --energy "$T/t.hvt" >"$T/energy.json" || fail "report --json --energy failed"
"$HVT" export --jsonl "$T/t.jsonl" "$T/t.hvt" || fail "export --jsonl failed"
"$HVT" export --meta "$T/t.hvt" >"$T/meta.json" || fail "export --meta failed"

/usr/bin/python3 - "$T/report.json" "$T/energy.json" "$T/t.jsonl" "$T/meta.json" <<'EOP' || fail "JSON numbers are not in their shortest form"
import json, sys

def digits(s):
    """Significant digits of a number as written: mantissa without sign, point, leading or trailing zeros."""
    m = s.lower().split("e")[0].lstrip("-").replace(".", "").lstrip("0").rstrip("0")
    return max(len(m), 1)

bad, seen = [], 0
def number(s):
    global seen
    seen += 1
    v = float(s)
    # repr is the shortest string that reads back as v
    if digits(s) != digits(repr(v)) and len(bad) < 5:
        bad.append("%s (shortest: %r)" % (s, v))
    return v

for path in sys.argv[1:]:
    with open(path) as f:
        for line in f if path.endswith(".jsonl") else [f.read()]:
            json.loads(line, parse_float=number)
if bad:
    print("longer than needed: " + ", ".join(bad))
    sys.exit(1)
if seen < 100:
    print("only %d numbers with a fraction or exponent seen: the test reads nothing" % seen)
    sys.exit(1)
print("%d JSON doubles, each in its shortest form" % seen)
EOP
echo "ok: JSON numbers print in their shortest round-trip form"
