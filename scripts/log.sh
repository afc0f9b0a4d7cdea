# Sourced by the build scripts: their progress (`say`, silent when quiet=1, their -q) and their one-line
# failures (`die`), each prefixed with the script's name, $SCRIPT_NAME.
quiet=0 # until the script's -q says otherwise
say() { [ "${quiet:-0}" = 1 ] || echo "$SCRIPT_NAME: $*" >&2; }
die() {
	echo "$SCRIPT_NAME: $*" >&2
	exit 1
}
