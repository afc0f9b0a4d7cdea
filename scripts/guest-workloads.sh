#!/bin/sh
# The built-in Linux guest: a Debian kernel (PVH vmlinux, fast to boot under TCG) and a busybox initramfs
# whose /init runs one workload, chosen on the kernel command line, prints "HVT EXIT <status>" and powers
# off:
#   hvt.run=array (default)  the seed paper's array program (tests/guest/array.c), with hvt.size=BYTES
#                            per array and hvt.phase=SECONDS per phase (copy, then add)
#   hvt.run=build            a build-like load (tests/guest/buildload.c: make, cc1, as and ld, under those
#                            names) for hvt.seconds=SECONDS with hvt.jobs=N parallel compilations, rounds of
#                            hvt.units=N (64), and hvt.passes=N (1) passes of each cc1 over its heap of
#                            hvt.heap_kib=KIB (4096), and at least hvt.min_rounds=N rounds
#   hvt.damon=S,A,MIN,MAX    also record DAMON (tests/guest/damon-record.sh: paddr, sampling S us,
#                            aggregation A us, MIN-MAX regions) over the workload, and write the record
#                            (hvmtrace-damon 1) to the second serial port, ttyS1, before powering off
#   hvt.owners=SECONDS       also run the guest agent (hvmtrace-guest, docs/attribution.md) over the workload:
#                            a snapshot of who owns which page every SECONDS, and one at once when the array
#                            program has its arrays, to the virtio-serial port org.hvmtrace.owners.0 (QEMU:
#                            -device virtio-serial-pci -device virtserialport,name=org.hvmtrace.owners.0,...);
#                            its cost per snapshot on the console at the end ("hvmtrace-guest: snapshot of
#                            ..."). Until the host connects to the port, the agent waits in its first write.
# Usage: scripts/guest-workloads.sh BUILD_DIR   (make BUILD_DIR/guest/array BUILD_DIR/guest/buildload and
#        BUILD_DIR/bin/hvmtrace-guest first)
# Prints two lines: the kernel, then the initramfs (both cached under $HVMTRACE_CACHE).
set -eu
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/array-guest.sh BUILD_DIR}
for p in guest/array guest/buildload bin/hvmtrace-guest; do
	[ -x "$build/$p" ] || { echo "guest-workloads: $build/$p is not built" >&2; exit 1; }
done
kdir=$(scripts/guest-kernel.sh -q 6.12)
init=$(mktemp)
trap 'rm -f "$init"' EXIT
cat >"$init" <<'EOT'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for a in $(cat /proc/cmdline); do case $a in hvt.*=*) eval "${a#hvt.}";; esac; done
[ -z "${damon:-}" ] || /bin/damon-record start $(echo "$damon" | tr , ' ') || damon=failed
agent=
if [ -n "${owners:-}" ]; then
	# The 6.12 kernel has virtio_console built in (no module to load). No udev here to name the port: find
	# it by its name in sysfs (it appears once the host has announced it, shortly after the driver's
	# probe) and link it where udev would.
	port=org.hvmtrace.owners.0
	for _ in $(seq 50); do
		for p in /sys/class/virtio-ports/*; do
			[ "$(cat "$p/name" 2>/dev/null)" = $port ] || continue
			mkdir -p /dev/virtio-ports && ln -sf "/dev/${p##*/}" /dev/virtio-ports/$port
		done
		[ -e /dev/virtio-ports/$port ] && break
		sleep 0.1
	done
	if [ -e /dev/virtio-ports/$port ]; then
		/bin/hvmtrace-guest -v --every "$owners" -o /dev/virtio-ports/$port 2>/tmp/owners.log &
		agent=$!
		echo "HVT OWNERS agent $agent every ${owners}s to $port"
	else
		echo "HVT OWNERS no virtio-serial port $port: no agent"
	fi
fi
case "${run:-array}" in
array) /bin/array --size "${size:-33554432}" --phase "${phase:-5}" ${agent:+--notify $agent} ;;
build) /bin/buildload --seconds "${seconds:-10}" --jobs "${jobs:-4}" \
	--units "${units:-64}" --passes "${passes:-1}" --heap-kib "${heap_kib:-4096}" \
	--min-rounds "${min_rounds:-0}" ;;
*) echo "unknown hvt.run=$run"; false ;;
esac
rc=$?
if [ -n "$agent" ]; then
	kill "$agent"
	# Its cost per snapshot and any complaint; not the per-process lines of -v.
	grep -v ' pages in [0-9]* runs' /tmp/owners.log
fi
if [ "${damon:-}" = failed ]; then
	rc=1
elif [ -n "${damon:-}" ]; then
	if /bin/damon-record stop >/tmp/damon.rec; then
		stty -F /dev/ttyS1 raw -echo && cat /tmp/damon.rec >/dev/ttyS1 &&
			echo "HVT DAMON-RECORD $(wc -l </tmp/damon.rec) lines" || rc=1
	else
		rc=1
	fi
fi
echo "HVT EXIT $rc"
poweroff -f
EOT
initrd=$(scripts/mkinitramfs.sh -q -b "$build/guest/array:/bin/array" -b "$build/guest/buildload:/bin/buildload" \
	-b "$build/bin/hvmtrace-guest:/bin/hvmtrace-guest" \
	-f tests/guest/damon-record.sh:/bin/damon-record "$init")
echo "$kdir/vmlinux"
echo "$initrd"
