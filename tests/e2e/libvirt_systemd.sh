#!/bin/bash
# The hook's systemd route under a running systemd (docs/libvirt.md §4): a container booted by
# systemd-nspawn with systemd as its PID 1, its /usr this host's (Debian's systemd and libvirt as
# installed, bound read-only), Debian's libvirtd.service and its sockets enabled as the package enables
# them, and hvmtrace put in by `make install-libvirt` (the hook in /etc/libvirt/hooks/qemu.d, the template
# unit in /etc/systemd/system). A oneshot unit after libvirtd.service runs tests/e2e/inside/libvirt_systemd.sh
# there, the built-in array guest under TCG with RAM from the devmem backend as in e2e/libvirt_trace:
#  1. virsh start: the hook starts hvmtrace@vm.service (no supervisor); the tracer runs in the unit's cgroup
#     on the drop-in's CPU, its main process with the unit's capability bounding set, NoNewPrivs, the unit's
#     LimitMEMLOCK, and no effective capability once attached; its trace grows. virt-xml --check refuses an
#     output directory under /tmp (the unit's PrivateTmp).
#  2. systemctl restart libvirtd: the hook's reconnect keeps the unit's main process and its tracer.
#  3. kill -9 of the tracer: systemd restarts the unit (NRestarts 1), which writes a new file; the old one
#     reads to its last complete interval.
#  4. virsh destroy: the unit goes inactive with result success, its trace complete, the claim released.
# The container's root is the container's own: every mount it makes is in its namespaces, and it ends
# with the test (a PID namespace around systemd-nspawn takes the container with it).
# one build: the unit, the hook's systemd route and the container; e2e/libvirt_trace runs the same tracer on both
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
need_qemu
command -v systemd-nspawn >/dev/null || skip "no systemd-nspawn (scripts/install-deps.sh installs systemd-container)"
[ -x /usr/lib/systemd/systemd ] || skip "no systemd"
[ -f /usr/lib/systemd/system/libvirtd.service ] || skip "no libvirtd.service (scripts/install-deps.sh installs libvirt-daemon-system)"
[ "$(id -u)" = 0 ] || skip "needs root (systemd-nspawn)"

guest_linux

# The container's root: its own /etc (this host's accounts, loader cache, alternatives (iptables, for
# libvirt's network driver) and libvirt configuration, no other service of this host's), /usr from this
# host; the rest is what systemd makes at boot.
R=$T/root
mkdir -p "$R"/{etc,usr,var/lib,run,tmp,proc,sys,dev,opt,out,img} "$T/out"
for l in bin lib lib64 sbin; do ln -s "usr/$l" "$R/$l"; done
cp -a /etc/{passwd,group,shadow,gshadow,nsswitch.conf,ld.so.cache,ld.so.conf,ld.so.conf.d,alternatives,libvirt} "$R/etc/"
cp /usr/lib/os-release "$R/etc/os-release" # systemd-nspawn looks for it before /usr is bound
: >"$R/etc/machine-id"
rm -rf "$R/etc/libvirt/hooks" "$R/etc/libvirt/qemu"
echo 'stdio_handler = "file"' >>"$R/etc/libvirt/qemu.conf" # as e2e/libvirt_trace: QEMU's log in a file
cp "$kernel" "$R/img/vmlinux" && cp "$initrd" "$R/img/initrd"

make -s -o all install-libvirt BUILD="$BUILD" DESTDIR="$R" PREFIX=/opt/hvmtrace \
	LIBVIRT_HOOKS_DIR=/etc/libvirt/hooks SYSTEMD_UNITS=/etc/systemd/system >"$T/install.out" 2>&1 ||
	{ cat "$T/install.out"; fail "make install-libvirt into the container"; }
[ -f "$R/etc/systemd/system/hvmtrace@.service" ] || fail "make install-libvirt installed no unit"
[ -x "$R/etc/libvirt/hooks/qemu.d/hvmtrace" ] || fail "make install-libvirt installed no hook"

# The units a Debian host enables for libvirt (libvirt-daemon-system's presets), and the test's own.
S=$R/etc/systemd/system
mkdir -p "$S/multi-user.target.wants" "$S/sockets.target.wants"
ln -s /usr/lib/systemd/system/multi-user.target "$S/default.target"
ln -s /usr/lib/systemd/system/libvirtd.service "$S/multi-user.target.wants/"
for s in libvirtd libvirtd-ro libvirtd-admin virtlogd virtlockd; do
	ln -s "/usr/lib/systemd/system/$s.socket" "$S/sockets.target.wants/"
done
cat >"$S/hvt-test.service" <<EOF
[Unit]
Description=e2e/libvirt_systemd inside
Wants=libvirtd.service
After=libvirtd.service multi-user.target

[Service]
Type=oneshot
Environment=ROOT=$ROOT BUILD=$BUILD QEMU=$QEMU IMG=/img TRACES=/var/lib/hvt-test/traces PREFIX=/opt/hvmtrace
ExecStart=/bin/sh -c 'bash $ROOT/tests/e2e/inside/libvirt_systemd.sh >/out/log 2>&1; echo \$\$? >/out/rc'
ExecStopPost=/usr/bin/systemctl poweroff --no-block
EOF
ln -s ../hvt-test.service "$S/multi-user.target.wants/"

# QEMU's user needs the guest's kernel; libvirt relabels it and the domain's other files itself.
chmod 0755 "$R" "$R/img"

# The container's cgroups. libvirt puts each QEMU in cgroups of its own (cpu, devices, ...), which the
# read-only cgroup v1 controllers systemd-nspawn gives a container refuse ("Failed to create v1 controller
# cpu for group: Read-only file system"). So the container gets a cgroup of the test's in every v1
# controller's hierarchy, as its cgroup namespace's root, mounted writable at its /sys/fs/cgroup; in
# name=systemd, systemd-nspawn 252 itself puts the container in payload/ at the hierarchy's root (its own
# cgroup, as it reads it on this host, is "/"). What the container makes there is removed at the test's end.
# (A host with cgroup v2 only would need none of this: nspawn delegates a v2 subtree; not tried here.)
CGNAME=hvmtrace-test-$$
SYSTEMD_CG=
CGDIRS=()
CGMOUNTS=()
while IFS=: read -r _ ctrls path; do
	[ -n "$ctrls" ] || continue # the v2 line
	mnt=$(awk -v want="$ctrls" '$3 == "cgroup" {
		n = split(want, w, ","); ok = 1
		for (i = 1; i <= n; i++) if (index("," $4 ",", "," w[i] ",") == 0) ok = 0
		if (ok) { print $2; exit }
	}' /proc/mounts)
	[ -n "$mnt" ] || continue # a hierarchy this host has not mounted
	if [ "$ctrls" = name=systemd ]; then
		SYSTEMD_CG=$mnt
		CGMOUNTS+=("$(basename "$mnt"):none,$ctrls")
		continue
	fi
	d=$mnt${path%/}/$CGNAME
	mkdir "$d" || fail "cannot make the container's cgroup $d"
	CGDIRS+=("$d")
	# a new cpuset cgroup has no CPUs or memory nodes until given its parent's
	for f in cpuset.cpus cpuset.mems; do [ ! -f "$d/$f" ] || cat "$(dirname "$d")/$f" >"$d/$f"; done
	opts=$ctrls
	[[ $ctrls != name=* ]] || opts=none,$ctrls
	CGMOUNTS+=("$(basename "$mnt"):$opts")
done </proc/self/cgroup
rm_cgroups() {
	local d
	for d in "${CGDIRS[@]}" "$SYSTEMD_CG/payload" "$SYSTEMD_CG/supervisor"; do
		[ ! -d "$d" ] || find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	for d in "${CGDIRS[@]}"; do [ ! -d "$d" ] || echo "warning: cgroup $d outlived the test (processes left in it)"; done
	return 0
}
trap 'cleanup; rm_cgroups' EXIT
[ -n "$SYSTEMD_CG" ] || skip "this host has no cgroup v1 name=systemd hierarchy (a v2 host: not yet supported here)"

# Root in the container keeps what a host's root has and systemd-nspawn drops by default: locked memory
# for the tracer (CAP_IPC_LOCK), raising limits (CAP_SYS_RESOURCE: LimitMEMLOCK=infinity), perf counters.
# The launcher joins the test's cgroups and, in a mount namespace of its own, mounts every hierarchy as the
# container's cgroup namespace will see it: a shell that joined name=systemd's payload/ mounts them from a
# cgroup namespace of its own, so each is rooted where the container will be. A PID namespace around
# systemd-nspawn takes the container with it.
cat >"$T/launch.sh" <<'EOS'
#!/bin/bash
set -eu
for d in $CGDIRS; do echo $$ >"$d/cgroup.procs"; done
exec unshare --mount --propagation private -- bash -c '
	set -eu
	mkdir -p "$T/cgroup"
	mount -t tmpfs -o mode=755 cgroup "$T/cgroup"
	mkdir -p "$SYSTEMD_CG/payload"
	(
		echo $BASHPID >"$SYSTEMD_CG/payload/cgroup.procs"
		exec unshare --cgroup -- bash -c "
			set -eu
			for m in $CGMOUNTS; do
				mkdir \"$T/cgroup/\${m%%:*}\"
				mount -t cgroup -o \"\${m#*:}\" cgroup \"$T/cgroup/\${m%%:*}\"
			done"
	)
	mount -o remount,ro "$T/cgroup"
	exec unshare --pid --fork --kill-child --mount-proc -- systemd-nspawn -q -D "$T/root" --register=no \
		--keep-unit --private-network --capability=CAP_IPC_LOCK,CAP_SYS_RESOURCE,CAP_PERFMON \
		--rlimit=RLIMIT_MEMLOCK=infinity \
		--bind-ro=/usr --bind-ro="$ROOT" --bind-ro="$QDIR" --bind="$T/out:/out" \
		--bind="$T/cgroup:/sys/fs/cgroup" -b --console=pipe'
EOS
T=$T ROOT=$ROOT QDIR=$(dirname "$QEMU") CGDIRS="${CGDIRS[*]}" CGMOUNTS="${CGMOUNTS[*]}" SYSTEMD_CG=$SYSTEMD_CG \
	bash "$T/launch.sh" >"$T/nspawn.out" 2>&1 </dev/null &
ns=$!
BG_PIDS+=($ns)
verdict() { [ -f "$T/out/rc" ]; }
(WAIT_BOUND=900 wait_until "the test inside the container gave no verdict" "$ns" verdict) || {
	cat "$T/out/log" 2>/dev/null
	tail -n 40 "$T/nspawn.out"
	fail "the container ended without the test's verdict"
}
cat "$T/out/log"
# the test's unit powers the container off; what still runs at the test's end goes with the PID namespace
for _ in $(seq 3000); do kill -0 "$ns" 2>/dev/null || break; sleep 0.1; done
assert_eq "the test inside the container (its exit status)" 0 "$(cat "$T/out/rc")"
grep -q '^ok: virsh destroy' "$T/out/log" || fail "the test inside did not reach its end"
echo "ok: the systemd route under systemd $(systemctl --version 2>/dev/null | awk 'NR == 1 { print $2 }') as PID 1"
