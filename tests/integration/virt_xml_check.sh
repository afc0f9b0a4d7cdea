#!/bin/bash
# hvmtrace virt-xml's warnings and --check's last two holds, without a libvirt daemon (docs/libvirt.md §2,
# §5): a domain without --chanmap or --extents is written with a warning that bandwidth per channel needs
# the reservation (none with --bandwidth off); --check refuses, in one line, an emulator whose
# `-object help` lists no hvmtrace object (a stand-in of stock QEMU) and accepts one that does; it warns
# when a running traced domain (its run directory, as the hook keeps it) has the same tracer CPU, and not
# when its CPU differs; and it holds the daemon hook's record (hooks_loaded.h): written by the daemon hook
# under a live parent, --check passes; that parent gone, --check says the daemon has not loaded the hook.
# one build: virt-xml's checks, not the build's code paths
source "$(dirname "$0")/../lib/assert.bash"
[ "$(id -u)" = 0 ] || skip "needs root (a private mount namespace for the daemon hook's /run/libvirt)"
command -v unshare >/dev/null || skip "no unshare"
mkdir -p "$T/traces" "$T/hvt" "$T/hooks/qemu.d" "$T/lvrun"
# stand-ins of QEMU: -object help as QEMU 10.0 prints it, with and without the patch's object
fake_qemu() { # FILE WITH_HVMTRACE
	printf '#!/bin/sh\n[ "$1 $2" = "-object help" ] || exit 1\necho "List of user creatable objects:"\n' >"$1"
	printf 'echo "  authz-list"\necho "  memory-backend-file"\n' >>"$1"
	[ "$2" = yes ] && printf 'echo "  hvmtrace"\necho "  memory-backend-devmem"\n' >>"$1"
	echo 'echo "  iothread"' >>"$1"
	chmod 755 "$1"
}
fake_qemu "$T/qemu-patched" yes
fake_qemu "$T/qemu-stock" no
cat >"$T/plain.xml" <<'EOX'
<domain type='qemu'>
  <name>vm</name>
  <memory unit='MiB'>64</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
</domain>
EOX
gen() { # NAME OUT EXTRA...: virt-xml on the plain domain renamed NAME
	local name=$1 out=$2
	shift 2
	sed "s|<name>vm</name>|<name>$name</name>|" "$T/plain.xml" |
		"$HVT" virt-xml - -o "$out" --emulator "$T/qemu-patched" --cpu "$TRACER_CPU" --output-dir "$T/traces" \
			--run-dir "$T/hvt" "$@"
}

# ---- bandwidth without the reservation
gen vm "$T/vm.xml" 2>"$T/gen.err" || { cat "$T/gen.err"; fail "virt-xml"; }
assert_contains "$T/gen.err" "warning: guest RAM is libvirt's own (no --chanmap or --extents): bandwidth='on'" \
	"bandwidth per channel needs the guest's RAM on reserved channels"
gen vm "$T/vm-nobw.xml" --bandwidth off 2>"$T/gen.err" || fail "virt-xml --bandwidth off"
[ ! -s "$T/gen.err" ] || fail "virt-xml --bandwidth off warned: $(cat "$T/gen.err")"
echo "ok: the bandwidth warning without --chanmap, none with --bandwidth off"

# ---- the hook: the daemon hook's record under a parent that lives on (as libvirtd does), in a mount
# namespace whose /run is a tmpfs (the hook writes /run/libvirt/hvmtrace-hooks)
printf '#!/bin/sh\n' >"$T/hooks/qemu.d/hvmtrace" && chmod 755 "$T/hooks/qemu.d/hvmtrace"
unshare --mount --propagation private -- bash -c '
	mount -t tmpfs tmpfs /run && mkdir /run/libvirt || exit 3
	"$2" libvirt-hook --daemon "$1/hooks" - start - start || exit 4
	cp /run/libvirt/hvmtrace-hooks "$1/lvrun/" || exit 5
	exec sleep 600' daemon "$T" "$HVT" &
DAEMON=$!
BG_PIDS+=("$DAEMON")
wait_until "the daemon hook wrote no record" "$DAEMON" test -s "$T/lvrun/hvmtrace-hooks"
CHECK=(--hooks-dir "$T/hooks" --libvirt-run "$T/lvrun")

# ---- the emulator
"$HVT" virt-xml --check "${CHECK[@]}" "$T/vm.xml" >"$T/out" 2>"$T/err" || { cat "$T/err"; fail "--check refused the patched stand-in"; }
assert_contains "$T/out" "the tracing request fits this host" "the libvirt daemon (pid $DAEMON) has loaded the hvmtrace hook"
sed "s|$T/qemu-patched|$T/qemu-stock|" "$T/vm.xml" >"$T/vm-stock.xml"
expect 1 "emulator $T/qemu-stock is not hvmtrace's patched QEMU: its '-object help' lists no hvmtrace object" \
	"$HVT" virt-xml --check "${CHECK[@]}" "$T/vm-stock.xml"
assert_eq "lines --check said" 1 "$(wc -l <"$T/err")"
sed "s|$T/qemu-patched|$T/missing-qemu|" "$T/vm.xml" >"$T/vm-missing.xml"
expect 1 "emulator $T/missing-qemu: No such file or directory" "$HVT" virt-xml --check "${CHECK[@]}" "$T/vm-missing.xml"

# ---- a running traced domain on the same tracer CPU (the hook keeps RUN/NAME/domain.xml while it runs)
mkdir -p "$T/hvt/other"
gen other "$T/hvt/other/domain.xml" --bandwidth off || fail "virt-xml other"
"$HVT" virt-xml --check "${CHECK[@]}" "$T/vm.xml" >/dev/null 2>"$T/err" || { cat "$T/err"; fail "--check refused a shared CPU"; }
assert_contains "$T/err" "warning: tracer CPU $TRACER_CPU is also the tracer CPU of running domain(s) 'other'"
other_cpu=$((TRACER_CPU == 0 ? 1 : 0))
sed -i "s|cpu=\"$TRACER_CPU\"|cpu=\"$other_cpu\"|" "$T/hvt/other/domain.xml"
"$HVT" virt-xml --check "${CHECK[@]}" "$T/vm.xml" >/dev/null 2>"$T/err" || fail "--check refused"
[ ! -s "$T/err" ] || fail "--check warned about a domain on another CPU: $(cat "$T/err")"
echo "ok: the shared tracer CPU warned about, another CPU not"

# ---- the daemon that loaded the hooks has gone
kill "$DAEMON" && wait "$DAEMON" 2>/dev/null
expect 1 "libvirtd has not loaded the hvmtrace hook: restart libvirtd (or virtqemud); the daemon that loaded the hooks (pid $DAEMON) has ended" \
	"$HVT" virt-xml --check "${CHECK[@]}" "$T/vm.xml"
expect 1 "has ended" "$HVT" virt-xml --check-hook "${CHECK[@]}"
