# A private libvirt daemon for a test (sourced after assert.bash). The daemon runs as root in a mount
# namespace of its own where /etc/libvirt, /run/libvirt, /var/lib/libvirt, /var/log/libvirt and
# /var/cache/libvirt are directories under $T, so the test owns its configuration, hooks, sockets and
# state and touches nothing of the host's libvirt. Its pid file is its own too ($LV/run/DAEMON.pid, given
# with -p): the default, /run/libvirtd.pid or /run/virtqemud.pid, lies outside /run/libvirt, and a system
# daemon that runs holds its lock (e2e/libvirt_beside_system starts such a decoy and the private daemon
# beside it). libvirt's security model stays as Debian ships it: QEMU
# runs as libvirt-qemu with its capabilities cleared, behind the DAC security driver (no user = "root", no
# clear_emulator_capabilities = 0, no security_driver = "none").
#
# need_libvirt: skips unless the daemon and virsh are installed (scripts/install-deps.sh installs them).
# start_libvirtd [QEMU_CONF_LINES...]: starts the daemon; sets LV (its directories), VIRSH (an array: virsh
#   talking to it) and LIBVIRTD_PID; the extra lines go into its qemu.conf. Stopped at exit by stop_libvirtd.
# lv_install_hook FILE: installs FILE as $LV/etc/hooks/qemu.d/hvmtrace (before start_libvirtd).
# lv_hook: installs the qemu and daemon hooks as make install-libvirt does, calling this build's hvmtrace.
# size_of, grows, export_trace, has_interval: reading the hook's traces (below).

need_libvirt() {
	LIBVIRTD=$(command -v virtqemud || command -v libvirtd) || skip "no libvirt daemon (scripts/install-deps.sh installs it)"
	command -v virsh >/dev/null || skip "no virsh (scripts/install-deps.sh installs it)"
	[ "$(id -u)" = 0 ] || skip "needs root (a system libvirt daemon)"
	command -v unshare >/dev/null || skip "no unshare"
	LV=$T/libvirt
	mkdir -p "$LV"/{etc,run,lib,log,cache}
	cp -a /etc/libvirt/. "$LV/etc/"
	rm -rf "$LV/etc/hooks" "$LV/etc/qemu" && mkdir -p "$LV/etc/hooks/qemu.d" "$LV/etc/qemu"
	# The packaged defaults stand (user libvirt-qemu, DAC, capabilities cleared); only paths and the
	# stdio handler change: QEMU's log goes to a file, not through a virtlogd we would also have to run.
	cat >"$LV/etc/qemu.conf" <<'EOF'
stdio_handler = "file"
EOF
	cat >"$LV/etc/$(basename "$LIBVIRTD").conf" <<EOF
unix_sock_group = "root"
unix_sock_rw_perms = "0700"
unix_sock_ro_perms = "0700"
log_outputs = "3:file:$LV/log/daemon.log"
EOF
}

lv_install_hook() {
	install -m 0755 "$1" "$LV/etc/hooks/qemu.d/hvmtrace"
}

start_libvirtd() {
	local line
	for line in "$@"; do echo "$line" >>"$LV/etc/qemu.conf"; done
	# The namespace's mounts are bind mounts of $T's directories, so what the daemon writes there is
	# visible outside too (its socket, QEMU's log, the domain's state).
	unshare --mount --propagation private -- bash -c '
		set -e
		for d in etc:/etc/libvirt run:/run/libvirt lib:/var/lib/libvirt log:/var/log/libvirt cache:/var/cache/libvirt; do
			mkdir -p "${d#*:}"
			mount --bind "$1/${d%%:*}" "${d#*:}"
		done
		exec "$2" -f "/etc/libvirt/$(basename "$2").conf" -p "/run/libvirt/$(basename "$2").pid"
	' lv "$LV" "$LIBVIRTD" >"$LV/log/stdout" 2>&1 &
	LIBVIRTD_PID=$!
	BG_PIDS+=("$LIBVIRTD_PID")
	local sock=$LV/run/$(basename "$LIBVIRTD")-sock
	[ "$(basename "$LIBVIRTD")" = libvirtd ] && sock=$LV/run/libvirt-sock
	wait_until "the libvirt daemon did not open $sock" "$LIBVIRTD_PID" test -S "$sock"
	VIRSH=(virsh -q -c "qemu:///system?socket=$sock")
	LV_URI="qemu:///system?socket=$sock"
	trap 'stop_libvirtd; cleanup' EXIT
}

# stop_libvirtd: destroys the daemon's running domains and stops it (SIGTERM, as its service would).
stop_libvirtd() {
	[ -n "${LIBVIRTD_PID:-}" ] || return 0
	local d
	for d in $("${VIRSH[@]}" list --name 2>/dev/null); do "${VIRSH[@]}" destroy "$d" >/dev/null 2>&1; done
	kill -TERM "$LIBVIRTD_PID" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$LIBVIRTD_PID" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$LIBVIRTD_PID" 2>/dev/null
	LIBVIRTD_PID=
}

# restart_libvirtd: stops the daemon as its service would (SIGTERM leaves running domains running) and
# starts it again; it reconnects to the running domains (the hook's "reconnect").
restart_libvirtd() {
	kill -TERM "$LIBVIRTD_PID"
	wait "$LIBVIRTD_PID" 2>/dev/null # our child: its exit ends the wait
	rm -f "$LV/run/libvirt-sock" "$LV/run/virtqemud-sock"
	start_libvirtd
}

# qemu_pid_of DOMAIN: the pid of the domain's QEMU (from the daemon's pidfile).
qemu_pid_of() {
	cat "$LV/run/qemu/$1.pid" 2>/dev/null
}

# The traces the hook's tracer writes, read with ${HVT:-$BIN/hvmtrace}: conditions for wait_until, and
# export_trace TRACE, which exports its intervals as JSON Lines and sets N (how many) and RC (export's exit
# status: 0 complete, 3 cut short after N intervals).
size_of() { stat -c %s "$1" 2>/dev/null || echo 0; }
grows() { [ "$(size_of "$1")" -gt "$2" ]; }
export_trace() {
	RC=0
	"${HVT:-$BIN/hvmtrace}" export --jsonl "$T/x.jsonl" "$1" 2>"$T/x.err" || RC=$?
	N=$(wc -l <"$T/x.jsonl")
}
has_interval() { export_trace "$1" && [ "$N" -ge 1 ]; }

# lv_plain_array_domain NAME KERNEL INITRD SIZE PHASE: a plain domain (no tracing yet) of the built-in Linux
# guest running the array program under TCG (-cpu max, as e2e/qemu_record_tcg), 512 MiB, its serial console on
# a pty; ACPI on, so that the guest's poweroff ends the domain.
lv_plain_array_domain() {
	cat <<EOX
<domain type='qemu'>
  <name>$1</name>
  <memory unit='MiB'>512</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>$2</kernel>
    <initrd>$3</initrd>
    <cmdline>console=ttyS0 quiet panic=-1 hvt.size=$4 hvt.phase=$5</cmdline>
  </os>
  <features><acpi/></features>
  <cpu mode='maximum'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <serial type='pty'/>
    <memballoon model='none'/>
  </devices>
</domain>
EOX
}

# The devmem stand-ins of the e2e tests: a tmpfs file for /dev/mem, a recorded iomem whose Reserved range
# covers 0x10000000-0x4fffffff, and a chanmap whose two channels lie there (512 MiB each).
lv_test_memory() {
	[ -n "${SHM:-}" ] || make_shm
	MEMFILE=$SHM/mem
	truncate -s $((0x50000000)) "$MEMFILE" && chmod 600 "$MEMFILE"
	IOMEM=$T/iomem
	cat >"$IOMEM" <<'EOI'
00000000-00000fff : Reserved
00001000-0009fbff : System RAM
00100000-0fffffff : System RAM
10000000-4fffffff : Reserved
50000000-7fffffff : System RAM
EOI
	CHANMAP=$T/chanmap.json
	cat >"$CHANMAP" <<'EOC'
{"schema": "hvmtrace-chanmap", "version": 1, "created": "2026-01-01T00:00:00Z",
 "source": "MODEL map for the libvirt tests (a tmpfs file stands in for /dev/mem)",
 "host": {"hostname": "test", "kernel": "none (model)", "machine_id": ""},
 "cpu": {"vendor": "GenuineIntel", "family": 6, "model": 85, "name": "MODEL", "generation": "skx"},
 "sockets": 1,
 "channels": [
  {"id": "s0.mc0.ch0", "socket": 0, "controller": 0, "channel": 0, "pmu": "uncore_imc_0",
   "ranges": [{"start": "0x10000000", "size": "0x20000000"}]},
  {"id": "s0.mc0.ch1", "socket": 0, "controller": 0, "channel": 1, "pmu": "uncore_imc_1",
   "ranges": [{"start": "0x30000000", "size": "0x20000000"}]}],
 "interleaved": [], "advice": ""}
EOC
	chmod 644 "$CHANMAP" "$IOMEM"
}

# lv_hook: the hooks as make install-libvirt installs them (hvmtrace/libvirt/qemu-hook and daemon-hook),
# calling this build's hvmtrace.
lv_hook() {
	sed "s|@BINDIR@|$BIN|" hvmtrace/libvirt/qemu-hook >"$T/hook"
	lv_install_hook "$T/hook"
	mkdir -p "$LV/etc/hooks/daemon.d"
	sed "s|@BINDIR@|$BIN|" hvmtrace/libvirt/daemon-hook >"$LV/etc/hooks/daemon.d/hvmtrace"
	chmod 0755 "$LV/etc/hooks/daemon.d/hvmtrace"
}

# LV_CHECK: the options that point virt-xml --check at the private daemon's hooks and run directory.
lv_check_opts() { LV_CHECK=(--hooks-dir "$LV/etc/hooks" --libvirt-run "$LV/run"); }
