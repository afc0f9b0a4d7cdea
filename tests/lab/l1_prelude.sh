# Sourced first by every /init of the nested lab's L1 (ad_init.sh, qemu_init.sh, record_init.sh; the host
# side is tests/lib/lab.bash): mounts, the KVM modules L1 needs before kvm-amd, kvm-amd loading per npt
# setting, and the end. Sets result=PASS (scenarios set FAIL). Every line the host reads as progress starts
# with LAB, CHECK, BENCH, EVIDENCE, lab: or harvest:.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
echo "LAB-L1-UP uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r) cpus=$(nproc)"
cd /lab || exit 1
result=PASS
insmod ./irqbypass.ko && insmod ./ccp.ko && insmod ./kvm.ko || result=FAIL
# Where the KVM modules' code sections are, on the second serial port, so the host can place a hung L1's
# addresses in them (tests/lib/lab.bash, lab_where; reading /proc/kallsyms costs ~10 s here).
code_sections() {
	for f in /sys/module/"$1"/sections/.*text*; do echo "$(cat "$f") $1 ${f##*/}"; done >/dev/ttyS1 2>/dev/null
}
code_sections kvm
# Sanitized test builds: leak checking needs nothing from the lab, but keep it quiet and fatal-free.
export ASAN_OPTIONS=detect_leaks=0

# load_kvm_amd NPT: our kvm-amd.ko with npt=NPT (1: TDP MMU, 0: shadow MMU); says which, or FAIL.
load_kvm_amd() {
	if ! insmod ./kvm-amd.ko npt="$1"; then
		echo "LAB npt=$1 FAIL cannot load kvm-amd.ko"
		result=FAIL
		return 1
	fi
	echo "LAB npt=$1 kvm_amd.npt=$(cat /sys/module/kvm_amd/parameters/npt) tdp_mmu=$(cat /sys/module/kvm/parameters/tdp_mmu)"
	code_sections kvm_amd
}

# The last VM's fds may still be closing: retry for a few seconds.
unload_kvm_amd() {
	for _ in 1 2 3 4 5; do rmmod kvm_amd 2>/dev/null && return; sleep 1; done
}

lab_end() {
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
