# A synthetic array run for the owner views' tests: tests/tools/synth_arrays in mode ad (256 MiB, 8 MiB
# arrays, written and accessed noise), and where its arrays lie.
# arrays_run TRACE INTERVALS: writes TRACE (its truth to $T/truth) and sets a, b and c (each array's first
# page) and n (pages per array).
arrays_run() {
	"$TOOLS/synth_arrays" -o "$1" --memory 256M --array 8M --intervals "$2" --noise-written 30 \
		--noise-accessed 40 >"$T/truth" || fail "synth_arrays"
	read -r _ _ a n <<<"$(grep '^array a' "$T/truth")"
	read -r _ _ b _ <<<"$(grep '^array b' "$T/truth")"
	read -r _ _ c _ <<<"$(grep '^array c' "$T/truth")"
	a=$((a)) b=$((b)) c=$((c)) n=$((n))
}
