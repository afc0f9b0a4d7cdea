#!/bin/sh
# damon-hva-to-gpa.sh MAP [RECORD]: a DAMON record of a VMM's virtual addresses (DAMON's vaddr operations on
# QEMU's process, `hvmtrace-damon 1`, docs/score.md) turned into one of guest-physical addresses, which
# `hvmtrace score` reads. MAP has one line per piece of guest RAM, "HVA_START HVA_END GPA_START" (numbers
# decimal or 0x-hex, END exclusive; # comments), ascending in both HVA and GPA: where QEMU mapped the guest's
# RAM (its memory backend's mapping in /proc/PID/maps) and which guest-physical range that holds. Each region
# is cut to the pieces it overlaps and moved to their guest-physical addresses; what lies outside every
# piece (QEMU's own heap, libraries, stacks) is dropped. A snapshot left with no region (DAMON did not reach
# the guest's RAM) is refused: score would have nothing to compare. Portable awk (busybox's, gawk, mawk),
# for the nested lab's L1 (tests/lab/qemu_init.sh) and a host alike. Writes to standard output.
set -eu
[ $# -ge 1 ] && [ $# -le 2 ] || {
	echo "usage: damon-hva-to-gpa.sh MAP [RECORD]" >&2
	exit 2
}
[ -r "$1" ] || {
	echo "damon-hva-to-gpa: $1: cannot read the map" >&2
	exit 2
}
exec awk -v mapfile="$1" '
function num(s,   v, i, c) {
	if (s ~ /^0[xX][0-9a-fA-F]+$/) {
		v = 0
		for (i = 3; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef", tolower(substr(s, i, 1))) - 1
		return v
	}
	if (s ~ /^[0-9]+$/)
		return s + 0
	return -1
}
function die(msg) { print "damon-hva-to-gpa: " msg > "/dev/stderr"; failed = 1; exit 2 }
function flush(   ) {
	if (have_time && !emitted)
		die(recname ": snapshot at " cur " ns has no region in the guest RAM of " mapfile)
}
BEGIN {
	while ((r = getline line < mapfile) > 0) {
		sub(/#.*/, "", line)
		k = split(line, f, " ")
		if (k == 0)
			continue
		if (k != 3 || num(f[1]) < 0 || num(f[2]) < 0 || num(f[3]) < 0 || num(f[2]) <= num(f[1]))
			die(mapfile ": \"" line "\": expected HVA_START HVA_END GPA_START, START < END")
		n++
		hs[n] = num(f[1]); he[n] = num(f[2]); gs[n] = num(f[3])
		if (n > 1 && (hs[n] < he[n - 1] || gs[n] < gs[n - 1] + he[n - 1] - hs[n - 1]))
			die(mapfile ": pieces must ascend and not overlap, in HVA and GPA both")
	}
	if (r < 0)
		die(mapfile ": cannot read the map")
	if (n == 0)
		die(mapfile ": no piece of guest RAM")
	recname = ARGC > 1 ? ARGV[1] : "standard input"
}
FNR == 1 {
	if ($0 != "hvmtrace-damon 1")
		die(recname ": not a hvmtrace-damon 1 record (first line \"" $0 "\")")
	print
	next
}
/^#/ || /^aggr_us / || NF == 0 { print; next }
{
	if (NF != 4 || num($1) < 0 || num($2) < 0 || num($3) < 0 || num($4) < 0)
		die(recname ": line " FNR ": expected TIME_NS START END NR_ACCESSES")
	if (!have_time || $1 != cur) {
		flush()
		cur = $1; have_time = 1; emitted = 0
	}
	s = num($2); e = num($3)
	for (i = 1; i <= n; i++) {
		lo = s > hs[i] ? s : hs[i]
		hi = e < he[i] ? e : he[i]
		if (lo >= hi)
			continue
		printf "%s %.0f %.0f %s\n", $1, lo - hs[i] + gs[i], hi - hs[i] + gs[i], $4
		emitted = 1
	}
}
END {
	if (failed)
		exit 2
	flush()
	if (!have_time)
		die(recname ": no region at all")
}' "${2:-/dev/stdin}"
