#!/bin/bash
# scripts/damon-hva-to-gpa.sh, the translator of a host-side DAMON record (vaddr on the VMM's process) to
# guest-physical addresses: a guest-physical record (misses and false hits on a trace known by construction,
# tests/tools/synth_arrays) moved into a VMM's address space (guest RAM in two pieces at two host addresses,
# the VMM's own memory around them, regions across a piece's edge) comes back as the same regions, and
# `hvmtrace score` scores the two alike; each bad input is refused with a line naming it. Run with every awk
# found (the nested lab's L1 has busybox's).
source "$(dirname "$0")/../lib/assert.bash"
CONV=$ROOT/scripts/damon-hva-to-gpa.sh

"$TOOLS/synth_arrays" -o "$T/a.hvt" --memory 512M --intervals 40 --noise-written 0 --noise-accessed 0 \
	>"$T/truth" || fail "synth_arrays"
read -r _ _ a n <<<"$(grep '^array a' "$T/truth")"
read -r _ _ c _ <<<"$(grep '^array c' "$T/truth")"
a=$((a)) c=$((c)) n=$((n))

# Guest RAM [0, 256 MiB) at host address B0 and [256, 512 MiB) at B1, not adjacent; the map in hex and
# decimal both.
B0=$((0x7f1200000000)) B1=$((0x7f3400000000)) H=$((256 << 20))
printf '# guest RAM\n0x%x 0x%x 0x0\n%d %d %d\n' $B0 $((B0 + H)) $B1 $((B1 + H)) $H >"$T/map"
hva() { # GPA: its host address
	if [ "$1" -lt $H ]; then echo $((B0 + $1)); else echo $((B1 + $1 - H)); fi
}

# The guest-physical record: 4 windows of 10 s; a with 10 accesses, c's first half with 5, its second half
# 0, 100 pages past c with 1 (false hits), and the last 64 KiB of the first piece with the first 64 KiB of
# the second with 2 (one region across the edge on the host side, two here).
G=5000000000 edge=$((H - 65536))
{
	echo "hvmtrace-damon 1"
	echo "aggr_us 10000000"
	for w in 1 2 3 4; do
		t=$((G + w * 10000000000))
		echo "$t $((a * 4096)) $(((a + n) * 4096)) 10"
		echo "$t $edge $H 2"
		echo "$t $H $((H + 65536)) 2"
		echo "$t $((c * 4096)) $(((c + n / 2) * 4096)) 5"
		echo "$t $(((c + n / 2) * 4096)) $(((c + n) * 4096)) 0"
		echo "$t $(((c + n) * 4096)) $(((c + n + 100) * 4096)) 1"
	done
} >"$T/gpa.rec"
# The same on the host side: the VMM's heap before B0 (7 accesses, not the guest's), the same regions at
# their host addresses, the edge as one region from B0's piece across the gap into B1's, and a library
# after B1's piece.
awk -v b0=$B0 -v b1=$B1 -v h=$H 'function hv(g) { return g < h ? b0 + g : b1 + g - h }
	NR <= 2 { print; next }
	{ t = $1 }
	t != last { printf "%s %.0f %.0f 7\n", t, b0 - 1048576, b0; last = t }
	$2 == h - 65536 { printf "%s %.0f %.0f 2\n", t, b0 + $2, b1 + 65536; next }
	$2 == h { printf "%s %.0f %.0f 1\n", t, b1 + h, b1 + h + 4096; next }
	{ printf "%s %.0f %.0f %s\n", t, hv($2), hv($3 - 4096) + 4096, $4 }' "$T/gpa.rec" >"$T/hva.rec"
grep -q "$(hva $((a * 4096)))" "$T/hva.rec" || fail "the host-side record is not where the map says"

awks=()
for x in gawk mawk original-awk; do command -v $x >/dev/null && awks+=("$(command -v $x)"); done
command -v busybox >/dev/null && busybox awk 'BEGIN {}' 2>/dev/null && awks+=(busybox)
[ ${#awks[@]} -gt 0 ] || skip "no awk found"
for x in "${awks[@]}"; do
	mkdir -p "$T/bin" && rm -f "$T/bin/awk"
	if [ "$x" = busybox ]; then
		printf '#!/bin/sh\nexec busybox awk "$@"\n' >"$T/bin/awk"
	else
		ln -s "$x" "$T/bin/awk"
	fi
	chmod +x "$T/bin/awk"
	conv() { PATH=$T/bin:$PATH "$CONV" "$@"; }

	conv "$T/map" "$T/hva.rec" >"$T/back.rec" || fail "$x: the translation failed: $(conv "$T/map" "$T/hva.rec" 2>&1)"
	assert_eq "$x: the regions back at their guest-physical addresses" "$(cat "$T/gpa.rec")" "$(cat "$T/back.rec")"
	conv "$T/map" <"$T/hva.rec" | cmp -s - "$T/back.rec" || fail "$x: from standard input: not the same"
	"$HVT" score "$T/a.hvt" --damon "$T/gpa.rec" | tail -n +2 >"$T/want" || fail "score of the guest-side record"
	"$HVT" score "$T/a.hvt" --damon "$T/back.rec" | tail -n +2 >"$T/got" || fail "$x: score of the translated record"
	assert_eq "$x: the same score" "$(cat "$T/want")" "$(cat "$T/got")"

	expect 2 ": \"0x10 0x10 0\": expected HVA_START HVA_END GPA_START, START < END" \
		conv <(echo "0x10 0x10 0") "$T/hva.rec"
	expect 2 ": pieces must ascend and not overlap, in HVA and GPA both" \
		conv <(printf '%d %d 0\n%d %d 4096\n' $B0 $((B0 + 8192)) $B1 $((B1 + 4096))) "$T/hva.rec"
	expect 2 ": no piece of guest RAM" conv <(echo "# nothing") "$T/hva.rec"
	expect 2 "cannot read the map" conv "$T/none" "$T/hva.rec"
	expect 2 "hva.rec: snapshot at $((G + 10000000000)) ns has no region in the guest RAM of" \
		conv <(echo "$((B1 + 4 * H)) $((B1 + 5 * H)) 0") "$T/hva.rec"
	sed '3s/ 10$/ x/' "$T/gpa.rec" >"$T/bad.rec"
	expect 2 "bad.rec: line 3: expected TIME_NS START END NR_ACCESSES" conv "$T/map" "$T/bad.rec"
	echo "[" >"$T/bad.rec"
	expect 2 "bad.rec: not a hvmtrace-damon 1 record (first line \"[\")" conv "$T/map" "$T/bad.rec"
	echo "ok: $x"
done
echo "ok: ${#awks[@]} awks"
