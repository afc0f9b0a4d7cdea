# Sourced by record_init.sh after l1_prelude.sh: `hvmtrace doctor` in the nested lab's L1 (issue 24), where
# our KVM modules are loaded, the host booted L1 with a memmap= reservation (labdoctor=START, its start),
# Debian's kernel config is at /boot/config-RELEASE as on a Debian host, and the patched QEMU is on PATH (the
# host side: lab_doctor_files and lab_doctor_expect in tests/lib/lab.bash). Each answer is held to what L1
# shows for itself (cpuinfo, /sys/module, /proc/iomem): "CHECK doctor virtualisation|placement|verdict|text
# PASS|FAIL (…)". L1 has no memory-controller PMU and no channel map, so the honest answers there are
# "no" for both, and bandwidth is not available. The text form is printed whole on "doctor-text| " lines
# (not progress lines: the host keeps them in its log for docs/doctor.md).

# dj_field FILE ID FIELD: FIELD (status, what, evidence, fix) of the check ID in the doctor's pretty JSON
# (one key a line); "absent" when there is no such check.
dj_field() {
	awk -v id="$2" -v f="$3" '
		index($0, "\"id\": \"" id "\",") { in_check = 1; next }
		in_check && index($0, "\"" f "\": \"") {
			sub("^[^:]*: \"", ""); sub("\",?$", ""); print; found = 1; exit
		}
		END { if (!found) print "absent" }' "$1"
}

# dj_available FILE CAP: true or false, the verdict's "available" for CAP (dirty-log, ad, bandwidth).
dj_available() {
	awk -v cap="$2" '
		/"verdict": \{/ { in_verdict = 1 }
		in_verdict && index($0, "\"" cap "\": {") { in_cap = 1 }
		in_cap && /"available":/ { print ($0 ~ /true/) ? "true" : "false"; exit }' "$1"
}

# A failed expectation of the current CHECK: remembered, printed with the CHECK line.
doctor_expect() {
	if ! "$@" >/dev/null 2>&1; then
		_doc_ok=0
		_doc_why="$_doc_why; not: $*"
	fi
}

doctor_report() {
	if [ "$_doc_ok" = 1 ]; then
		echo "CHECK doctor $1 PASS ($2)"
	else
		echo "CHECK doctor $1 FAIL (${_doc_why#; })"
		result=FAIL _doc_failed=1
	fi
	_doc_ok=1 _doc_why=""
}

# has FILE ID FIELD TEXT: the check's FIELD contains TEXT (a fixed string).
has() {
	dj_field "$1" "$2" "$3" | grep -qF -- "$4"
}

is() {
	[ "$(dj_field "$1" "$2" status)" = "$3" ]
}

# doctor_check: runs the doctor (JSON, then text) with the modules loaded, and checks its answers.
doctor_check() {
	d=/tmp/doctor
	rm -rf "$d" && mkdir -p "$d/out"
	_doc_ok=1 _doc_why="" _doc_failed=0
	j=$d/doctor.json
	hvmtrace doctor --json --need dirty-log,ad --output-dir "$d/out" >"$j" 2>"$d/err"
	rc=$?
	echo "lab: hvmtrace doctor --json --need dirty-log,ad: exit $rc in $(sed -n 's/.*"seconds": \([0-9.]*\).*/\1/p' "$j") s"
	p=/sys/module/$KVM_VENDOR/parameters
	release=$(uname -r)
	series=$(echo "$release" | sed -n 's/^\(6\.1\)[.-].*/\1/p; s/^\(6\.12\)[.-].*/\1/p')

	# Virtualisation: the CPU L0 emulates, our modules (out of tree) with the parameters sysfs shows, the
	# capability of our series for this kernel, and mode ad for record --mode auto.
	doctor_expect [ "$rc" = 0 ]
	if [ "$KVM_VENDOR" = kvm_amd ]; then
		doctor_expect has "$j" cpu.virt what "CPU with SVM (AMD-V)"
		params="kvm_amd npt=$(cat "$p/npt")"
	else
		doctor_expect has "$j" cpu.virt what "CPU with VMX (Intel VT-x)"
		params="kvm_intel ept=$(cat "$p/ept") eptad=$(cat "$p/eptad") pml=$(cat "$p/pml")"
	fi
	[ ! -f /sys/module/kvm/parameters/tdp_mmu ] ||
		params="$params, kvm tdp_mmu=$(cat /sys/module/kvm/parameters/tdp_mmu)"
	doctor_expect is "$j" cpu.virt yes
	doctor_expect is "$j" kvm.dev yes
	doctor_expect has "$j" kvm.modules what "kvm (loaded, out of tree), $KVM_VENDOR (loaded, out of tree)"
	doctor_expect has "$j" kvm.modules evidence "parameters: $params"
	doctor_expect is "$j" kvm.ad_harvest yes
	doctor_expect [ -n "$series" ]
	doctor_expect has "$j" kvm.ad_harvest what "hvmtrace's series for $series, running on $release"
	doctor_expect has "$j" kvm.ad_harvest evidence "KVM_CAP_AD_HARVEST = 0x10000) on /dev/kvm = 1"
	doctor_expect has "$j" record.modes what "record --mode auto would use ad"
	doctor_report virtualisation "$(dj_field "$j" kvm.ad_harvest what); $params"

	# Placement: /dev/mem under Debian's STRICT_DEVMEM, and the reservation: Reserved in /proc/iomem (as L1
	# shows it) and one page of it mapped. No channel map in L1: the doctor says there is none.
	start=$(sed -n 's/.*labdoctor=0x\([0-9a-f]*\).*/\1/p' /proc/cmdline)
	doctor_expect [ -n "$start" ]
	doctor_expect grep -qi "^ *0*$start-[0-9a-f]* : Reserved\$" /proc/iomem
	doctor_expect is "$j" devmem yes
	doctor_expect has "$j" devmem evidence "kernel config /boot/config-$release: CONFIG_DEVMEM=y CONFIG_STRICT_DEVMEM=y"
	doctor_expect is "$j" devmem.strict info
	doctor_expect is "$j" "memmap.0x$start" yes
	doctor_expect has "$j" "memmap.0x$start" what "\$0x$start is Reserved, not busy and mapped through /dev/mem"
	doctor_expect is "$j" memmap absent
	doctor_expect is "$j" chanmap no
	doctor_expect has "$j" chanmap what "no channel map: none given (--chanmap) and none at /etc/hvmtrace/chanmap.json"
	doctor_expect is "$j" "chanmap.0x$start" absent
	doctor_report placement "$(dj_field "$j" "memmap.0x$start" what); $(dj_field "$j" chanmap what)"

	# The verdict: written sets and accessed+written sets yes (KVM, our capability and the patched QEMU);
	# bandwidth no: L1 has no memory-controller PMU.
	doctor_expect is "$j" qemu.patched yes
	doctor_expect [ "$(dj_available "$j" dirty-log)" = true ]
	doctor_expect [ "$(dj_available "$j" ad)" = true ]
	doctor_expect [ "$(dj_available "$j" bandwidth)" = false ]
	doctor_expect is "$j" pmu.discovery no
	doctor_expect grep -q '"exit": 0,' "$j"
	doctor_report verdict "dirty-log $(dj_available "$j" dirty-log), ad $(dj_available "$j" ad), bandwidth $(dj_available "$j" bandwidth): $(dj_field "$j" pmu.discovery what | cut -c1-60)…"

	# The text form, as a user reads it (docs/doctor.md shows it).
	hvmtrace doctor --need dirty-log,ad --output-dir "$d/out" >"$d/doctor.txt" 2>>"$d/err"
	trc=$?
	sed 's/^/doctor-text| /' "$d/doctor.txt"
	doctor_expect [ "$trc" = 0 ]
	doctor_expect grep -qE '^  written sets \(dirty-log\) +yes, because' "$d/doctor.txt"
	doctor_expect grep -qE '^  accessed and written sets \(ad\) +yes, because' "$d/doctor.txt"
	doctor_report text "exit $trc"
	# On a failure, the whole report where the host shows it.
	if [ "$_doc_failed" = 1 ]; then
		sed 's/^/lab: doctor: /' "$d/doctor.txt"
		sed 's/^/lab: doctor stderr: /' "$d/err" | head -n 20
	fi
}
