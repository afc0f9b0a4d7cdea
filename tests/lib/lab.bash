# The nested lab (sourced after assert.bash): Debian's kernel K (6.1|6.12) boots as L1 with our KVM modules
# and runs the tests' /init script there (tests/lab/*_init.sh, after tests/lab/l1_prelude.sh). Every lab test
# (tests/lab/test_*.sh) and `make lab` (tests/lab/run.sh) boot L1 here, the same way. Two tiers, by
# LAB_VENDOR (the tests set it; default amd):
# - amd: L0 is QEMU TCG -cpu max (emulated AMD SVM with nested paging), the QEMU 10.0 this tree builds
#   (scripts/build-qemu.sh, cached; LAB_QEMU=PROGRAM for another): with Debian's 7.2, 4 of about 55
#   two-CPU L1 boots died where the kernel patches its own code; with 10.0, none of 30, at the same speed
#   (docs/lab.md, known issues). L1 has two CPUs (a vCPU on one, the tracer on the other, as on a real
#   host) and loads kvm-amd.
# - intel: L0 is Bochs (Debian's 2.7, emulated Intel VMX with EPT, EPT A/D and PML: cpu model
#   corei7_skylake_x), which TCG cannot be. It has no direct kernel boot: L1 boots from a CD image
#   (scripts/lab-iso.sh, cached). One emulated CPU (Bochs runs its CPUs in one host thread: a second one
#   halves the speed of each) and loads kvm-intel. The Bochs quirks the Intel tier works around are in
#   docs/lab.md (the Intel tier).
# - L1 runs with loglevel=4 (its errors reach the log, its boot chatter does not; lab_end counts its
#   warnings, which loglevel=4 keeps off the console too).
# - Progress is what L1 prints: its LAB/CHECK/BENCH/EVIDENCE/lab:/harvest: lines, shown as they come.
#
# The retry rule (one for the whole lab; docs/lab.md):
#   A lab run is repeated once, saying why, only when its failure says nothing about the sets under test:
#   1. L1 gave no result: its L0 exited without one (a panic: panic=-1 and -no-reboot; under Bochs a
#      panic line, panic=0), or L1 printed no progress line for LAB_STALL seconds (default 300, 900 under
#      Bochs; a hang). L1 is booted once more ("booting L1 once more"), after printing its first kernel
#      report and where its CPUs were (lab_where).
#   2. In L1, a phase scenario whose L2 was reset by a triple fault that reached no handler (QEMU's bye
#      says guest-reset and the payload reported no vector) runs once more ("RERUN:", l1_scenario.sh).
#   Nothing else is repeated: a wrong set (check_phases exit 1, an ad_check CHECK … FAIL) or too few
#   exact intervals (exit 3; the phases follow the tracer's harvests, so that is a failure too) fails at
#   once, and so does the second failure of either kind above. LAB_TIMEOUT (default 1800 s, 3600 s under
#   Bochs) bounds one boot in all; it is not a measure of speed.

LAB_VENDOR=${LAB_VENDOR:-amd}

# lab_l0: sets LAB_L0 (the L0 command, an array: QEMU, or Bochs for LAB_VENDOR=intel) and LAB_L0_NAME.
# Skips the Intel tier when Bochs or its BIOS is missing.
lab_l0() {
	if [ "$LAB_VENDOR" = intel ]; then
		command -v bochs >/dev/null || skip "bochs not installed (scripts/install-deps.sh installs it)"
		[ -f /usr/share/bochs/BIOS-bochs-latest ] && [ -f /usr/share/vgabios/vgabios.bin ] ||
			skip "Bochs's BIOS or VGA BIOS missing (packages bochsbios, vgabios; scripts/install-deps.sh)"
		LAB_L0=(bochs -q)
		LAB_L0_NAME="Bochs $(dpkg-query -W -f='${Version}' bochs 2>/dev/null)"
		return
	fi
	[ "$LAB_VENDOR" = amd ] || fail "LAB_VENDOR=$LAB_VENDOR: expected amd or intel"
	if [ -n "${LAB_QEMU:-}" ]; then
		command -v "$LAB_QEMU" >/dev/null || fail "LAB_QEMU=$LAB_QEMU not found"
		LAB_L0=("$LAB_QEMU")
	else
		need_qemu
		LAB_L0=("$QEMU" "${QEMU_L[@]}")
	fi
	LAB_L0_NAME=$("${LAB_L0[0]}" --version | head -n 1)
}

# lab_prepare K: sets LAB_KDIR (the guest kernel: PVH vmlinux and modules) and LAB_KVM_FILES (mkinitramfs.sh
# arguments putting into /lab the modules L1 loads, ours built by scripts/kvm-modules.sh as a user builds
# them, and the L1 prelude and scenario helpers). Skips when the kernel's headers are missing.
lab_prepare() {
	local abi mods
	. "$ROOT/versions.env"
	case $1 in 6.1) abi=$KERNEL_6_1_ABI ;; 6.12) abi=$KERNEL_6_12_ABI ;; *) fail "lab: no kernel '$1' (6.1, 6.12)" ;; esac
	[ -f "/usr/src/linux-headers-$abi/Makefile" ] ||
		skip "linux-headers-$abi not installed (scripts/install-deps.sh installs it)"
	LAB_KDIR=$(scripts/guest-kernel.sh -q "$1") || fail "guest kernel $1"
	mods=$(scripts/kvm-modules.sh -q "$abi" 2>"$T/mods-$1.err") || fail "kvm modules for $abi: $(tail -5 "$T/mods-$1.err")"
	LAB_KVM_FILES=(-f "$mods/kvm.ko:/lab/kvm.ko"
		-f "$LAB_KDIR/modules/kernel/virt/lib/irqbypass.ko:/lab/irqbypass.ko"
		-f "$ROOT/tests/lab/l1_prelude.sh:/lab/l1_prelude.sh"
		-f "$ROOT/tests/lab/l1_scenario.sh:/lab/l1_scenario.sh")
	# The vendor module (l1_prelude.sh loads the one it finds); kvm-amd needs ccp.
	if [ "$LAB_VENDOR" = intel ]; then
		LAB_KVM_FILES+=(-f "$mods/kvm-intel.ko:/lab/kvm-intel.ko")
	else
		LAB_KVM_FILES+=(-f "$mods/kvm-amd.ko:/lab/kvm-amd.ko"
			-f "$LAB_KDIR/modules/kernel/drivers/crypto/ccp/ccp.ko:/lab/ccp.ko")
	fi
	echo "lab $1: kernel $abi, our KVM modules from $mods"
}

LAB_PROGRESS='^(LAB|CHECK|BENCH|EVIDENCE|lab:|harvest:)'

# lab_start_qemu K INITRAMFS MEM_MIB [APPEND]: starts the AMD tier's L0 in the background, its pid in
# LAB_PID: two CPUs, serial ports to files, QMP for lab_where, and a panic (panic=-1) ends it (-no-reboot).
lab_start_qemu() {
	"${LAB_L0[@]}" -accel tcg -cpu max -m "$3" -smp 2 -display none -no-reboot \
		-serial "file:$T/serial-$1.log" -serial "file:$T/sections-$1.txt" -monitor none \
		-qmp "unix:$T/l1-$1.qmp,server=on,wait=off" \
		-nodefaults -kernel "$LAB_KDIR/vmlinux" -initrd "$2" \
		-append "console=ttyS0 nokaslr panic=-1 loglevel=4 ${4:-}" </dev/null >"$T/qemu-$1.out" 2>&1 &
	LAB_PID=$!
}

# Bochs's instruction rate (cpu: ips=): its TSC and the time it gives L1 run at this rate, so L1 is told it
# (tsc_early_khz=, lpj= at HZ=250), else L1 takes 3.5 GHz from the CPU model and its time runs 35x slow.
LAB_BOCHS_IPS=100000000

# lab_start_bochs K INITRAMFS MEM_MIB [APPEND]: starts the Intel tier's L0 in the background, its pid in
# LAB_PID: Bochs 2.7 (Debian's), cpu model corei7_skylake_x (VMX with EPT, EPT A/D, PML), one CPU (LAB_BOCHS_CPUS
# for more: the libvirt route's virt-xml wants a CPU for the tracer beside the vCPUs; docs/lab.md §6), booting a
# CD image of the kernel, the initramfs and the command line (scripts/lab-iso.sh, cached). Debian's Bochs
# has no headless display: rfb that waits for no viewer. It is built with its debugger, which -rc tells to
# run and then quit. L1's ACPI power-off is a PANIC to Bochs, which panic: action=fatal turns into an exit.
# L1 runs with panic=0 (Bochs would reboot it; the watch loop ends a panicked L1) and clock sync=none (the
# emulated time follows the instructions executed: a busy host slows L1 down without starving it). Sound is
# off: on a host without an ALSA device Bochs 2.7's mixer thread aborts ("buffer overflow detected").
lab_start_bochs() {
	local iso host_mib=$3 append
	append="console=ttyS0,115200 nokaslr panic=0 loglevel=4 mitigations=off tsc=reliable"
	append+=" tsc_early_khz=$((LAB_BOCHS_IPS / 1000)) lpj=$((LAB_BOCHS_IPS / 250)) no_timer_check"
	append+=" audit=0 nowatchdog ${4:-}"
	iso=$(scripts/lab-iso.sh -q "$LAB_KDIR/vmlinuz" "$2" "$append") || fail "lab $1: CD image"
	# Bochs allocates at most 2048 MiB of host memory; more guest RAM is allowed beyond it.
	[ "$host_mib" -le 2048 ] || host_mib=2048
	cat >"$T/bochsrc-$1" <<BOCHSRC
config_interface: textconfig
display_library: rfb, options="timeout=0"
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
cpu: model=corei7_skylake_x, count=${LAB_BOCHS_CPUS:-1}, ips=$LAB_BOCHS_IPS, reset_on_triple_fault=0, ignore_bad_msrs=1
memory: guest=$3, host=$host_mib
pci: enabled=1, chipset=i440fx
ata0: enabled=1, ioaddr1=0x1f0, ioaddr2=0x3f0, irq=14
ata0-master: type=cdrom, path=$iso, status=inserted
boot: cdrom
clock: sync=none, time0=utc
com1: enabled=1, mode=file, dev=$T/serial-$1.log
com2: enabled=1, mode=file, dev=$T/sections-$1.txt
log: $T/bochs-$1.log
panic: action=fatal
error: action=report
magic_break: enabled=0
mouse: enabled=0
speaker: enabled=0
sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy
BOCHSRC
	printf 'c\nquit\n' >"$T/bochs-$1.rc"
	touch "$T/serial-$1.log"
	"${LAB_L0[@]}" -f "$T/bochsrc-$1" -rc "$T/bochs-$1.rc" </dev/null >"$T/qemu-$1.out" 2>&1 &
	LAB_PID=$!
}

# lab_boot K INITRAMFS MEM_MIB [APPEND]: boots L1 (lab_l0 and lab_prepare first) under the retry rule
# above, and fails unless it reported "LAB-RESULT PASS". Its serial log, without carriage returns, is kept
# as $T/lab-K.log (and each failed boot's as $T/lab-K.bootN.log); the caller counts its CHECK lines.
lab_boot() {
	local k=$1 start wall pid how first seen n last_news try first_how="" stall=${LAB_STALL:-300}
	local timeout=${LAB_TIMEOUT:-1800}
	# Bochs runs L1 at about a tenth of TCG's speed on a busy host: one scenario of the record lab prints
	# nothing for up to 5 minutes there.
	if [ "$LAB_VENDOR" = intel ]; then stall=${LAB_STALL:-900} timeout=${LAB_TIMEOUT:-3600}; fi
	for try in 1 2; do
		start=$SECONDS
		rm -f "$T/l1-$k.qmp" "$T/serial-$k.log" "$T/sections-$k.txt"
		if [ "$LAB_VENDOR" = intel ]; then lab_start_bochs "$@"; else lab_start_qemu "$@"; fi
		pid=$LAB_PID
		BG_PIDS+=("$pid")
		echo "lab $k: booting L1 under $LAB_L0_NAME"
		seen=0 last_news=$SECONDS how=""
		while :; do
			sleep 1
			n=$(tr -d '\r' 2>/dev/null <"$T/serial-$k.log" | grep -cE "$LAB_PROGRESS")
			if [ "$n" -gt "$seen" ]; then
				tr -d '\r' <"$T/serial-$k.log" | grep -E "$LAB_PROGRESS" | sed -n "$((seen + 1)),${n}p" |
					sed "s/^LAB-L1-UP/lab $k: L1 up after $((SECONDS - start)) s: &/"
				seen=$n last_news=$SECONDS
			fi
			kill -0 "$pid" 2>/dev/null || { how="L1 STOPPED (its ${LAB_L0_NAME%% *} exited) with no result"; break; }
			# Under Bochs L1 runs with panic=0: a panic leaves it running.
			[ "$LAB_VENDOR" != intel ] || ! grep -q 'Kernel panic - not syncing' "$T/serial-$k.log" ||
				{ how="L1 PANICKED"; break; }
			[ $((SECONDS - last_news)) -lt "$stall" ] ||
				{ how="L1 HUNG: no progress line for $stall s"; break; }
			[ $((SECONDS - start)) -lt "$timeout" ] ||
				{ how="L1 HUNG: no result within LAB_TIMEOUT=$timeout s"; break; }
		done
		if kill -0 "$pid" 2>/dev/null; then
			lab_where "$k"
			kill "$pid"
		fi
		wait "$pid" 2>/dev/null
		tr -d '\r' <"$T/serial-$k.log" >"$T/lab-$k.log"
		tr -d '\r' <"$T/serial-$k.log" | grep -E "$LAB_PROGRESS" | sed -n "$((seen + 1)),\$p"
		wall=$((SECONDS - start))
		grep -q '^LAB-RESULT' "$T/lab-$k.log" && break
		# From L1's first oops, warning or stall report if there is one, else its last lines.
		first=$(grep -n -m1 -E 'Oops|BUG:|WARNING:|Kernel panic|rcu: INFO' "$T/lab-$k.log" | cut -d: -f1)
		echo "lab $k: $how after $wall s; ${first:+from its first kernel report: }its lines:"
		if [ -n "$first" ]; then tail -n "+$first" "$T/lab-$k.log" | head -n 60; else tail -n 40 "$T/lab-$k.log"; fi |
			sed 's/^/  | /'
		# An L0 that stopped before L1 said anything: its own last words.
		[ -s "$T/lab-$k.log" ] || tail -n 10 "$T/qemu-$k.out" | sed "s/^/lab $k: L0: /"
		cp "$T/lab-$k.log" "$T/lab-$k.boot$try.log"
		first_how=$how
		[ "$try" = 1 ] && echo "lab $k: booting L1 once more (the retry rule: $how)" || fail "lab $k: $how, twice"
	done
	if ! grep -q '^LAB-RESULT PASS' "$T/lab-$k.log"; then
		# At loglevel=4 whatever the kernel printed is a warning or worse (RCU stalls, oopses).
		grep -E '^\[ *[0-9]+\.[0-9]+\]' "$T/lab-$k.log" | head -n 30 | sed "s/^/lab $k: L1 kernel: /"
		fail "lab $k: $(grep -E '^(CHECK .*FAIL|LAB.*FAIL)' "$T/lab-$k.log" | head -5)"
	fi
	echo "lab $k: LAB-RESULT PASS in $wall s wall$([ "$try" = 2 ] && echo " (on the second boot; the first: $first_how)")"
}

# lab_expect K PATTERN N WHAT: L1's log (lab_boot) has exactly N lines matching the extended regex PATTERN.
lab_expect() {
	local n
	n=$(grep -cE "$2" "$T/lab-$1.log")
	[ "$n" -eq "$3" ] || fail "lab $1: $n $4, expected $3"
	echo "lab $1: $n $4"
}

# lab_where K: where L1's CPUs are (RIP and CPL, and for an address in the KVM modules, module, section and
# offset, from the section addresses L1 listed on its second serial port: `objdump -t` of the module in
# the kvm-modules cache names the function), read three times over 2 s through L0's QMP. Other kernel
# addresses stay numbers (L1 runs with nokaslr: the System.map of Debian's linux-image-ABI-dbg names them).
lab_where() {
	local i rip cpl
	if [ "$LAB_VENDOR" = intel ]; then
		echo "lab $1: (Bochs has no QMP to say where L1's CPU is; its log: bochs-$1.log)"
		return
	fi
	tr -d '\r' <"$T/sections-$1.txt" | sed 's/^0x//' | sort -k1,1 >"$T/sections-$1.sorted"
	for i in 1 2 3; do
		"$TOOLS/qmp" "$T/l1-$1.qmp" \
			'{"execute":"human-monitor-command","arguments":{"command-line":"info registers -a"}}' |
			sed 's/\\r\\n/\n/g' | sed -n 's/^[RE]IP=\([0-9a-f]*\) .*\(CPL=[0-3]\).*/\1 \2/p' |
			while read -r rip cpl; do
				# Both are 16 hex digits: as strings they sort like the addresses (mawk has no strtonum,
				# and its numbers are doubles: the offset is bash's 64-bit arithmetic).
				set -- "$1" $(awk -v a="$rip" '($1 "") > (a "") { exit } { s = $0 } END { print s }' \
					"$T/sections-$1.sorted")
				if [ $# = 4 ] && [ $((0x$rip - 0x$2)) -lt $((4 << 20)) ]; then
					printf 'lab %s: L1 CPU at %s %s in %s %s+0x%x\n' "$1" "$rip" "$cpl" "$3" "$4" $((0x$rip - 0x$2))
				else
					echo "lab $1: L1 CPU at $rip $cpl"
				fi
			done
		sleep 1
	done
}

# lab_ad K [BENCH_MIB]: the A/D checks of tests/lab/ad_check (tests/lab/ad_init.sh) in L1 of kernel K,
# with kvm_amd npt=1 and npt=0, and the harvest benchmark over a BENCH_MIB slot if given. 3 GiB of RAM, so
# that the memmap= hole at 2 GiB is RAM that /dev/mem can map. AD_CHECK is the static test program
# (default $BUILD/tests/lab/ad_check).
lab_ad() {
	local ad_check=${AD_CHECK:-$ROOT/$BUILD/tests/lab/ad_check} ir append
	[ -x "$ad_check" ] || fail "$ad_check not built (make tests builds it)"
	lab_prepare "$1"
	ir=$(scripts/mkinitramfs.sh -q -f "$ad_check:/lab/ad_check" "${LAB_KVM_FILES[@]}" tests/lab/ad_init.sh) ||
		fail "initramfs for $1"
	append="memmap=256M\$0x80000000 labdevmem=0x80000000${2:+ labbench=$2}"
	lab_boot "$1" "$ir" 3072 "$append"
}

# The doctor in L1 (tests/lab/l1_doctor.sh, issue 24) rides in the record lab's boots (test_record.sh,
# test_intel_record.sh): no boot of its own. lab_doctor_files K (after lab_prepare K) sets LAB_DOCTOR_FILES
# (mkinitramfs.sh arguments: the patched QEMU without its debug info, which the doctor runs for -version
# and -object help; Debian's kernel config at /boot/config-RELEASE, where a Debian host has it; the L1
# script) and LAB_DOCTOR_APPEND (a memmap= reservation inside L1's RAM of 1 GiB or more, and labdoctor=
# naming its start for the L1 script).
LAB_DOCTOR_START=0x20000000
lab_doctor_files() {
	[ -n "${QEMU:-}" ] || need_qemu
	[ -f "$T/qemu-system-x86_64" ] || strip -o "$T/qemu-system-x86_64" "$QEMU" || fail "strip $QEMU"
	LAB_DOCTOR_FILES=(-b "$T/qemu-system-x86_64:/bin/qemu-system-x86_64"
		-f "$LAB_KDIR/config:/boot/config-$(cat "$LAB_KDIR/abi")"
		-f "$ROOT/tests/lab/l1_doctor.sh:/lab/l1_doctor.sh")
	LAB_DOCTOR_APPEND="memmap=64M\$$LAB_DOCTOR_START labdoctor=$LAB_DOCTOR_START"
}

# lab_doctor_expect K: the doctor's four checks passed in L1 of kernel K: mode ad available with our
# capability for this kernel, the reservation usable through /dev/mem (and no chanmap, L1 has none), the
# verdict's written and accessed+written sets yes, and its text form the same.
lab_doctor_expect() {
	lab_expect "$1" '^CHECK doctor (virtualisation|placement|verdict|text) PASS' 4 "doctor checks passed"
}
