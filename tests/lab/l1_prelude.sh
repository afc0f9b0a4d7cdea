# Sourced first by every /init of the nested lab's L1 (ad_init.sh, qemu_init.sh, record_init.sh; the host
# side is tests/lib/lab.bash): mounts, the KVM modules L1 needs before the vendor module, the vendor module's
# loading per MMU setting, and the end. Sets result=PASS (scenarios set FAIL). Every line the host reads as
# progress starts with LAB, CHECK, BENCH, EVIDENCE, lab: or harvest:.
#
# The vendor module is kvm-amd (the AMD tier: its MMU parameter npt=) or, when the host put kvm-intel.ko
# into /lab, kvm-intel (the Intel tier: ept=). The host's kernel command line may ask for more:
#   labkvm=P=V,...  further parameters of the vendor module (the Intel tier: eptad=, pml=); may be given
#                   more than once
#   labtdp=1,0      the MMU settings the scenarios run, in order (default 1 then 0: the TDP MMU, then the
#                   shadow MMU)
# TRACER_CPU is L1's last CPU: CPU 1 of the two-CPU AMD tier (the vCPU thread runs on CPU 0), CPU 0 of the
# one-CPU Intel tier.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
echo "LAB-L1-UP uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r) cpus=$(nproc)"
cd /lab || exit 1
result=PASS
if [ -f kvm-intel.ko ]; then KVM_VENDOR=kvm_intel MMU=ept; else KVM_VENDOR=kvm_amd MMU=npt; fi
KVM_OPTS=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^labkvm=//p' | tr ',\n' '  ')
LAB_TDP=$(sed -n 's/.*labtdp=\([01,]*\).*/\1/p' /proc/cmdline | tr , ' ')
: "${LAB_TDP:=1 0}"
TRACER_CPU=$(($(nproc) - 1))
# ccp (AMD's crypto coprocessor, for SEV) only where kvm-amd needs it.
insmod ./irqbypass.ko && { [ ! -f ccp.ko ] || insmod ./ccp.ko; } && insmod ./kvm.ko || result=FAIL
# Where the KVM modules' code sections are, on the second serial port, so the host can place a hung L1's
# addresses in them (tests/lib/lab.bash, lab_where; reading /proc/kallsyms costs ~10 s here).
code_sections() {
	for f in /sys/module/"$1"/sections/.*text*; do echo "$(cat "$f") $1 ${f##*/}"; done >/dev/ttyS1 2>/dev/null
}
code_sections kvm
# Sanitized test builds: leak checking needs nothing from the lab, but keep it quiet and fatal-free.
export ASAN_OPTIONS=detect_leaks=0

# load_kvm TDP [PARAM=VALUE...]: our vendor module with npt=TDP or ept=TDP (1: TDP MMU, 0: shadow MMU),
# labkvm='s parameters and then these (the last of a name counts); says which, or FAIL.
load_kvm() {
	_tdp=$1
	shift
	# shellcheck disable=SC2086
	if ! insmod "./$(echo $KVM_VENDOR | tr _ -).ko" $MMU="$_tdp" $KVM_OPTS "$@"; then
		echo "LAB $MMU=$_tdp FAIL cannot load $KVM_VENDOR with $MMU=$_tdp $KVM_OPTS $*"
		result=FAIL
		return 1
	fi
	_p=/sys/module/$KVM_VENDOR/parameters
	_more=""
	[ "$KVM_VENDOR" = kvm_amd ] || _more=" eptad=$(cat $_p/eptad) pml=$(cat $_p/pml)"
	echo "LAB $MMU=$_tdp $KVM_VENDOR.$MMU=$(cat $_p/$MMU)$_more tdp_mmu=$(cat /sys/module/kvm/parameters/tdp_mmu)"
	code_sections $KVM_VENDOR
}

# The last VM's fds may still be closing: retry for a few seconds.
unload_kvm() {
	for _ in 1 2 3 4 5; do rmmod $KVM_VENDOR 2>/dev/null && return; sleep 1; done
}

lab_end() {
	# WARN()s print at KERN_WARNING, which loglevel=4 keeps off the console: count them here.
	echo "lab: kernel warnings: $(dmesg | grep -c 'WARNING:')$(dmesg | grep -m1 'WARNING:' | sed 's/^/; the first: /')"
	echo "LAB-RESULT $result uptime=$(cut -d' ' -f1 /proc/uptime)"
	poweroff -f
}

# l1_wait PID COMMAND...: waits until COMMAND succeeds while PID (the process that is to bring it about)
# lives, at most 200 s (a bound below the host's LAB_STALL, not a measure of speed); 1 if it did not.
l1_wait() {
	_w_pid=$1
	shift
	_w_i=0
	until "$@"; do
		kill -0 "$_w_pid" 2>/dev/null || { "$@"; return; }
		_w_i=$((_w_i + 1))
		[ "$_w_i" -lt 2000 ] || return 1
		sleep 0.1
	done
}
