#!/bin/sh
# /init of the nested lab's L1 (see tests/lab/run.sh): loads our KVM modules and runs the scenarios with
# kvm_amd npt=1 (TDP MMU walker) and npt=0 (shadow MMU rmap walker). Every result line goes to the serial
# console; the last one is "LAB-RESULT PASS" or "LAB-RESULT FAIL".
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "LAB-L1-UP uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r)"
cd /lab || exit 1
result=PASS
insmod ./irqbypass.ko && insmod ./ccp.ko && insmod ./kvm.ko || result=FAIL
bench=$(sed -n 's/.*labbench=\([0-9]*\).*/\1/p' /proc/cmdline)
devmem=$(sed -n 's/.*labdevmem=\(0x[0-9a-fA-F]*\).*/\1/p' /proc/cmdline)
for npt in 1 0; do
	if ! insmod ./kvm-amd.ko npt=$npt; then
		echo "LAB npt=$npt FAIL cannot load kvm-amd.ko"
		result=FAIL
		continue
	fi
	echo "LAB npt=$npt kvm_amd.npt=$(cat /sys/module/kvm_amd/parameters/npt) tdp_mmu=$(cat /sys/module/kvm/parameters/tdp_mmu)"
	for args in "" "--huge" ${devmem:+"--devmem $devmem"}; do
		echo "LAB npt=$npt scenario: ad_check $args"
		# shellcheck disable=SC2086
		./ad_check $args || result=FAIL
	done
	if [ -n "$bench" ] && [ "$npt" = 1 ]; then
		echo "LAB npt=$npt bench: ad_check --bench $bench"
		./ad_check --bench "$bench" | grep -E '^BENCH|FAIL'
	fi
	# The last VM's fds may still be closing: retry for a few seconds.
	for _ in 1 2 3 4 5; do rmmod kvm_amd 2>/dev/null && break; sleep 1; done
done
echo "LAB-RESULT $result uptime=$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
