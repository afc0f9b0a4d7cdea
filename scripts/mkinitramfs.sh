#!/bin/sh
# Build a small initramfs (gzip'd newc cpio) around busybox-static, and cache it.
#
# Usage: scripts/mkinitramfs.sh [-q] [-o OUT] [-f SRC[:DEST]]... [-b PROG[:DEST]]... INIT
#   INIT          becomes /init (mode 0755). "#!/bin/sh" scripts run under busybox's ash; every busybox
#                 applet is linked in /bin, so mount, insmod, poweroff, ... are on PATH.
#   -f SRC[:DEST] add a file or a directory tree (copied recursively) at DEST; DEST defaults to
#                 /SRC-basename. A DEST ending in / puts SRC inside that directory.
#   -b PROG[:DEST] add a dynamically linked program (default DEST /bin/PROG-basename) plus every shared
#                 library ldd names for it, at the same paths as on this host.
#   -o OUT        also copy the result to OUT.
#   -q            quiet.
# Prints one line on stdout: the path of the cached archive ($HVMTRACE_CACHE/initramfs-KEY.cpio.gz).
# The key covers the contents of INIT, every added file/tree, the libraries of -b programs, busybox
# and this script, so an unchanged input set reuses the archive and any change rebuilds it.
# The archive always holds /dev/console (so the kernel can give /init a console: needs root to
# create; without root it is left out and /init should mount devtmpfs first), /dev /proc /sys /tmp /run,
# and /bin/busybox with its applet links.
#
# Example init script:
#   #!/bin/sh
#   mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
#   /bin/my-test; echo "RESULT $?"; poweroff -f
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/cache.sh"

SCRIPT_NAME=mkinitramfs
. "$here/scripts/log.sh"
out=""
adds="" # newline-separated "kind<TAB>src<TAB>dest"
tab=$(printf '\t')
nl='
'
while getopts qo:f:b: opt; do
	case "$opt" in
	q) quiet=1 ;;
	o) out=$OPTARG ;;
	f | b)
		src=${OPTARG%%:*}
		dest=${OPTARG#"$src"}
		dest=${dest#:}
		[ -e "$src" ] || die "-$opt $OPTARG: '$src' does not exist"
		if [ "$opt" = b ]; then
			[ -f "$src" ] && [ -x "$src" ] || die "-b $OPTARG: '$src' is not an executable file"
			: "${dest:=/bin/}"
		else
			: "${dest:=/}"
		fi
		case "$dest" in
		/*) ;;
		*) die "-$opt $OPTARG: destination '$dest' must be an absolute path" ;;
		esac
		case "$dest" in */) dest=$dest$(basename "$src") ;; esac
		src=$(readlink -f "$src")
		adds="$adds$opt$tab$src$tab$dest$nl"
		;;
	*) die "usage: mkinitramfs.sh [-q] [-o OUT] [-f SRC[:DEST]]... [-b PROG[:DEST]]... INIT" ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || die "usage: mkinitramfs.sh [-q] [-o OUT] [-f SRC[:DEST]]... [-b PROG[:DEST]]... INIT"
init=$1
[ -f "$init" ] || die "init script '$init' does not exist"
busybox=/bin/busybox
[ -x "$busybox" ] && ldd "$busybox" 2>&1 | grep -q 'not a dynamic' ||
	die "$busybox is missing or not statically linked (Debian package: busybox-static)"
command -v cpio >/dev/null || die "cpio not found (Debian package: cpio)"

# Libraries of -b programs, so a host library update changes the key.
libs_of() { ldd "$1" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p'; }
# The destinations are in $adds already, as text: a destination that is also a path on this host
# (/usr, /lib) must not enter the key as that host tree.
key_inputs=$(printf '%s' "$adds" | while IFS="$tab" read -r kind src dest; do
	printf '%s\n' "$src"
	if [ "$kind" = b ]; then libs_of "$src"; fi
done)
# shellcheck disable=SC2086
key=$(cache_key "$here/scripts/mkinitramfs.sh" "$init" "$busybox" "$adds" $key_inputs)
archive=$(cache_path initramfs "$key" .cpio.gz)
cache_lock "${archive##*/}"
if [ ! -f "$archive" ]; then
	mkdir -p "$HVMTRACE_CACHE"
	root=$(mktemp -d "$HVMTRACE_CACHE/.initramfs.XXXXXX")
	trap 'rm -rf "$root"' EXIT
	mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/tmp" "$root/run" "$root/etc"
	cp "$busybox" "$root/bin/busybox"
	for applet in $("$busybox" --list); do
		[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
	done
	ln -s bin "$root/sbin"
	if [ "$(id -u)" -eq 0 ]; then
		mknod -m 600 "$root/dev/console" c 5 1
		mknod -m 666 "$root/dev/null" c 1 3
	fi
	cp "$init" "$root/init"
	chmod 0755 "$root/init"
	printf '%s' "$adds" | while IFS="$tab" read -r kind src dest; do
		mkdir -p "$root$(dirname "$dest")"
		if [ -d "$src" ]; then
			cp -a "$src" "$root$dest"
		else
			cp -L "$src" "$root$dest"
		fi
		if [ "$kind" = b ]; then
			for lib in $(libs_of "$src"); do
				mkdir -p "$root$(dirname "$lib")"
				cp -L "$lib" "$root$lib"
			done
		fi
	done
	# Fixed order and owner so equal inputs give an equal archive.
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -1 -n >"$root.cpio.gz"
	mv "$root.cpio.gz" "$archive"
	[ "$quiet" = 1 ] || echo "mkinitramfs: built $archive ($(du -h "$archive" | cut -f1))" >&2
fi
[ -z "$out" ] || cp "$archive" "$out"
echo "$archive"
