# The base of every test script (sourced first, not a test itself): the directories under test and HVT, the
# hvmtrace under test; a private temporary directory $T removed at exit with every background process the
# test started, the verdicts (fail, skip), assertions, waits on observed progress, and the CPUs tests pin to.
# The topic libraries next to it (vmm.bash, qemu.bash, lab.bash) build on it; a test sources this file and
# the topics it uses. BUILD is the build directory under test (tests/run.sh exports it).
set -u
BUILD=${BUILD:-build/check}
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$ROOT" || exit 1
BIN=$ROOT/$BUILD/bin
HVT=$BIN/hvmtrace
TOOLS=$ROOT/$BUILD/tests/tools
T=$(mktemp -d /tmp/hvmtrace-test.XXXXXX)
chmod 755 "$T"
BG_PIDS=()
MOUNTS=()

cleanup() {
	# Bash reports each job killed here ("line N: PID Killed …") on stderr, after the test's last word; a
	# skip's reason must stay the last line of the log (tests/run.sh shows it).
	exec 2>/dev/null
	# Children first: a background "timeout QEMU …" must not leave QEMU behind.
	for p in "${BG_PIDS[@]}"; do
		pkill -9 -P "$p" 2>/dev/null
		kill -9 "$p" 2>/dev/null
	done
	# ... and whatever else still works in this test's directory (the other side of a pipeline).
	pkill -9 -f "$T/" 2>/dev/null
	wait 2>/dev/null
	# Mounts last, newest first: nothing of the test uses them now, and rm -rf must not meet one.
	local i
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null; done
	if [ "${KEEP_TEST_DIR:-0}" = 1 ]; then echo "test files kept in $T"; else rm -rf "$T"; fi
	[ -z "${SHM:-}" ] || rm -rf "$SHM"
}
trap cleanup EXIT

# mount_at DIR MOUNT-ARGS...: mounts (mount MOUNT-ARGS DIR) and has cleanup unmount DIR at exit, whatever
# ends the test (a failure before the test's own trap is set included); returns mount's status.
mount_at() {
	local dir=$1
	shift
	mount "$@" "$dir" || return
	MOUNTS+=("$dir")
}

fail() {
	echo "FAIL: $*"
	exit 1
}

skip() {
	echo "$*"
	exit 77
}

need_kvm() {
	[ -c /dev/kvm ] || skip "no /dev/kvm on this machine"
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || skip "/dev/kvm is not accessible to $(id -un)"
}

assert_eq() { # what expected actual
	[ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}

assert_contains() { # file text...: each text, in turn
	local file=$1 text
	shift
	for text in "$@"; do
		grep -qF -- "$text" "$file" || {
			echo "--- $file:"
			cat "$file"
			fail "$file does not say '$text'"
		}
	done
}

# assert_near WHAT A B TOLERANCE: the numbers A and B differ by less than TOLERANCE, else fail saying WHAT.
assert_near() {
	awk -v a="$2" -v b="$3" -v t="$4" 'BEGIN { exit !(a - b < t && b - a < t) }' || fail "$1"
}

# expect EXIT TEXT COMMAND...: runs COMMAND, which must exit EXIT and say TEXT on stderr.
expect() {
	local want=$1 text=$2 rc=0
	shift 2
	"$@" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" = "$want" ] || {
		cat "$T/err"
		fail "'$*' exited $rc, expected $want"
	}
	assert_contains "$T/err" "$text"
	echo "ok ($rc): $* -> $(head -c 300 "$T/err" | tr '\n' ' ')"
}

# Waits follow what they observe, not a wall-clock guess: each waits for its condition while the process
# that is to bring it about lives, fails at once when that process exits, and gives up only after
# WAIT_BOUND seconds (default 300), a bound for a machine busy with other work, not a measure of speed.
#
# wait_until WHAT PID COMMAND...: waits until COMMAND succeeds while PID lives.
wait_until() {
	local what=$1 pid=$2 start=$SECONDS
	shift 2
	until "$@"; do
		kill -0 "$pid" 2>/dev/null || { "$@" && return 0; fail "$what: the process that was to do it (pid $pid) has exited"; }
		[ $((SECONDS - start)) -lt "${WAIT_BOUND:-300}" ] || fail "$what: not within ${WAIT_BOUND:-300} s"
		sleep 0.05
	done
}

# wait_socket SOCK: waits for the socket SOCK, which the last background process started (BG_PIDS) makes.
wait_socket() {
	wait_until "socket $1 did not appear" "${BG_PIDS[-1]}" test -S "$1"
}

# wait_contains FILE TEXT PID: waits until FILE says TEXT, which PID is to write there.
wait_contains() {
	wait_until "$1 does not say '$2'" "$3" grep -qF -- "$2" "$1"
}

# bounded NAME CMD…: CMD exits 0 within LIMIT_KB (the test's) resident; its output in $T/NAME.out.
bounded() {
	local name=$1 rss
	shift
	"$TOOLS/maxrss" "$T/$name.rss" "$@" >"$T/$name.out" 2>"$T/err" || fail "$name exited $?: $(head -c 600 "$T/err")"
	rss=$(cat "$T/$name.rss")
	[ "$rss" -le "$LIMIT_KB" ] || fail "$name used $rss KiB resident (bound $LIMIT_KB)"
	echo "  $name: $rss KiB"
}

# The CPUs tests pin to: the VM's vCPU on the first, the tracer and harvest thread on the last.
NCPUS=$(nproc)
VCPU_CPU=0
TRACER_CPU=$((NCPUS - 1))
