# Sourced by the build scripts: where heavy artefacts (QEMU builds, kernel images, KVM modules, lab
# initramfs) are cached outside the clone, keyed by a hash of their inputs, so a warm machine reuses them
# and a changed input rebuilds.
#   HVMTRACE_CACHE   cache root (default /var/cache/hvmtrace)
#   cache_key FILE|DIR|STRING...   prints a 16-hex-digit key over the contents of files (recursively for
#                                  directories, in name order; a name counts relative to its item, so
#                                  the key is the same in every clone) and literal strings
#   cache_path NAME KEY [SUFFIX]   prints "$HVMTRACE_CACHE/NAME-KEYSUFFIX", and marks it used now if it
#                                  exists (its mtime), for scripts/cache-prune.sh

HVMTRACE_CACHE=${HVMTRACE_CACHE:-/var/cache/hvmtrace}

cache_key() {
	for item in "$@"; do
		# Names enter the key relative to the item, never where the clone lies: every clone of one
		# commit shares the cache.
		if [ -d "$item" ]; then
			(cd "$item" && find . -type f | LC_ALL=C sort | while read -r f; do
				printf '%s\n' "$f"
				cat "$f"
			done)
		elif [ -f "$item" ]; then
			printf '%s\n' "${item##*/}"
			cat "$item"
		else
			printf 'string:%s\n' "$item"
		fi
	done | sha256sum | cut -c1-16
}

# cache_lock NAME: takes an exclusive lock on the entry NAME (basename of its cache_path), held until the
# calling script exits (on its fd 9), so that two builders of one entry (the test suite's two lanes, two
# clones at once) build it once: the second waits, then finds it built. Take it before looking for the
# entry; a dot-file beside the entries, which cache-prune leaves alone.
cache_lock() {
	mkdir -p "$HVMTRACE_CACHE"
	exec 9>"$HVMTRACE_CACHE/.lock-$1"
	flock 9
}

cache_path() {
	set -- "$HVMTRACE_CACHE/$1-$2${3:-}"
	[ ! -e "$1" ] || touch -c "$1"
	printf '%s\n' "$1"
}
