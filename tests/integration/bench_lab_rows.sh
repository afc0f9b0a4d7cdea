#!/bin/bash
# make bench's section 2 (the harvest in the nested lab) names each vendor's rows and turns the lab's LAB_AD
# lines into ratios (bench/table/lab_rows.sh): Intel EPT under Bochs and AMD NPT under QEMU TCG, each case
# against the bitmap copy, and pruned against full; a lab that cannot run (exit 77) is one row saying why;
# and bench/table/lab_section.sh gives that row, exit 0, when Bochs's BIOS is missing (a private mount
# namespace hides it), so that a host without Bochs still gets its table.
# one build: it runs the bench's table scripts on fixed input; no program of the build under test.
source "$(dirname "$0")/../lib/assert.bash"

# Pruned 4 KiB 1 %: 500 µs against a full walk of 10 ms and a copy of 50 µs: 10.0× and 0.050; the GiB slot's
# pruned walk 150 µs against 1 ms: 0.150.
cat >"$T/lab.out" <<'EOF'
LAB_AD mapping=4k touched=1 walk=pruned harvest_ns=500000 copy_ns=50000 pages=65536
LAB_AD mapping=4k touched=1 walk=full harvest_ns=10000000 copy_ns=50000 pages=65536
LAB_AD mapping=4k touched=100 walk=pruned harvest_ns=30000000 copy_ns=50000 pages=65536
LAB_AD mapping=4k touched=100 walk=full harvest_ns=40000000 copy_ns=50000 pages=65536
LAB_AD mapping=2m touched=1 walk=pruned harvest_ns=200000 copy_ns=50000 pages=65536
LAB_AD mapping=2m touched=1 walk=full harvest_ns=100000 copy_ns=50000 pages=65536
LAB_AD mapping=2m touched=100 walk=pruned harvest_ns=300000 copy_ns=50000 pages=65536
LAB_AD mapping=2m_gib touched=1 walk=pruned harvest_ns=150000 copy_ns=100000 pages=4194304
LAB_AD mapping=2m_gib touched=1 walk=full harvest_ns=1000000 copy_ns=100000 pages=4194304
EOF

bench/table/lab_rows.sh "$T/lab.out" 0 intel >"$T/intel.rows" || fail "lab_rows.sh intel exited $?"
[ "$(grep -c '^| 2 | Intel EPT, ' "$T/intel.rows")" = 10 ] || fail "expected 10 Intel EPT rows: $(cat "$T/intel.rows")"
grep -q '^| 2 | Intel EPT, 2 MiB mappings over 16 GiB (1 GiB pruning, SPARSE), 1 % touched, pruned walk | KVM_AD_HARVEST 150.0 µs | bitmap copy 100.0 µs | 1.5× | 4194304 pages; pruned / full walk = 0.150 ' "$T/intel.rows" ||
	fail "the pruned GiB-slot row: $(grep 'over 16 GiB' "$T/intel.rows")"
grep -q '^| 2 | Intel EPT, 4 KiB mappings, 1 % touched, pruned walk | KVM_AD_HARVEST 500.0 µs | bitmap copy 50.0 µs | 10.0× | 65536 pages; pruned / full walk = 0.050 (nested lab under Bochs' "$T/intel.rows" ||
	fail "the pruned 4 KiB 1 % row: $(grep '4 KiB mappings, 1 % touched, pruned' "$T/intel.rows")"
grep -q '^| 2 | Intel EPT, 2 MiB mappings, 100 % touched, full walk | not measured: the lab printed no LAB_AD line for it |' "$T/intel.rows" ||
	fail "a case without its line is not 'not measured': $(grep '2 MiB mappings, 100 % touched, full' "$T/intel.rows")"

bench/table/lab_rows.sh "$T/lab.out" 0 >"$T/amd.rows" || fail "lab_rows.sh (amd) exited $?"
[ "$(grep -c '^| 2 | AMD NPT, .*nested lab under QEMU TCG' "$T/amd.rows")" = 9 ] ||
	fail "expected 9 measured AMD NPT rows by default: $(cat "$T/amd.rows")"

echo "skipped: bochs not installed (scripts/install-deps.sh installs it)" >"$T/skip.out"
bench/table/lab_rows.sh "$T/skip.out" 77 intel >"$T/skip.rows" || fail "lab_rows.sh on a skip exited $?"
[ "$(cat "$T/skip.rows")" = '| 2 | Intel EPT: KVM_AD_HARVEST in the nested lab under Bochs | not measured: bochs not installed (scripts/install-deps.sh installs it) | | | |' ] ||
	fail "a skipped lab is not one row with its reason: $(cat "$T/skip.rows")"

bench/table/lab_rows.sh "$T/lab.out" 0 arm >/dev/null 2>"$T/err" && fail "lab_rows.sh took vendor 'arm'"
grep -q "vendor 'arm': expected amd or intel" "$T/err" || fail "no reason for vendor 'arm': $(cat "$T/err")"

# The whole section for Intel on a host without Bochs's BIOS: one row, and the bench does not fail.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && [ -x "$ROOT/$BUILD/tests/lab/ad_check" ]; then
	mkdir "$T/empty"
	# shellcheck disable=SC2016 # the inner shell expands them
	BENCH_LAB_VENDORS=intel unshare -m bash -c '[ ! -d /usr/share/bochs ] ||
		mount --bind "$1" /usr/share/bochs 2>/dev/null || exit 99
		exec bench/table/lab_section.sh "$2"' _ "$T/empty" "$BUILD" >"$T/section.rows" 2>"$T/section.err"
	rc=$?
	[ $rc != 99 ] || skip "cannot hide Bochs's BIOS in a private mount namespace (the row checks above passed)"
	[ $rc = 0 ] || fail "lab_section.sh without Bochs's BIOS exited $rc: $(cat "$T/section.err")"
	grep -q "^| 2 | Intel EPT: KVM_AD_HARVEST in the nested lab under Bochs | not measured: .*\(Bochs's BIOS\|bochs not installed\)" "$T/section.rows" ||
		fail "lab_section.sh without Bochs's BIOS: $(cat "$T/section.rows")"
fi
echo "PASS: lab rows by vendor, as ratios; a lab that cannot run is one row with its reason"
