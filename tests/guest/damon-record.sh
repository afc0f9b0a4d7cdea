#!/bin/sh
# DAMON recorder for the built-in Linux guest (scripts/guest-workloads.sh), without damo: busybox ash and
# awk, DAMON's sysfs interface and its damon:damon_aggregated tracepoint (the kernel's
# admin-guide/mm/damon/usage).
#   damon-record start SAMPLE_US AGGR_US MIN_REGIONS MAX_REGIONS [PID]
#       one kdamond, paddr operations over the largest "System RAM" range of /proc/iomem (or, with PID,
#       vaddr operations over that process's address space, regions as DAMON picks them), these
#       attributes; every aggregation's regions go to the trace ring buffer (clock: the guest's
#       CLOCK_MONOTONIC, trace_clock "mono"). Prints "HVT DAMON-SYNC start" on /dev/console right after a
#       "hvt-sync start" trace marker, so a host that stamps the console lines can align the clocks.
#   damon-record stop
#       the same sync point ("end"), DAMON off, then the record in `hvmtrace-damon 1` format
#       (docs/score.md) on standard output: one snapshot per aggregation, TIME_NS the guest's
#       CLOCK_MONOTONIC ns at its end, and "# sync NAME GUEST_NS" comments for the markers (each sync
#       point's SYNC_REPEAT markers, in order).
# The ring buffer is read once, at stop (no reader runs beside the workload); a record that lost events
# (the buffer wrapped) is refused here with one line on standard error.
set -eu
A=/sys/kernel/mm/damon/admin/kdamonds
T=/sys/kernel/tracing
die() {
	echo "damon-record: $*" >&2
	exit 1
}

# A vaddr record is a host's, whose trace clock is the tracer's own: no console line is needed there.
# SYNC_REPEAT times, 50 ms apart: a console line reaches the host late, never early, so the host takes the
# smallest of the offsets (a busy host delays some lines by hundreds of milliseconds, not all).
SYNC_REPEAT=5
sync_point() {
	i=0
	while [ $i -lt $SYNC_REPEAT ]; do
		[ $i = 0 ] || sleep 0.05
		echo "hvt-sync $1" >$T/trace_marker
		[ -n "$(cat /tmp/damon-pid 2>/dev/null)" ] || echo "HVT DAMON-SYNC $1" >/dev/console
		i=$((i + 1))
	done
}

start() {
	[ $# -eq 4 ] || [ $# -eq 5 ] || die "usage: damon-record start SAMPLE_US AGGR_US MIN_REGIONS MAX_REGIONS [PID]"
	echo "${5:-}" >/tmp/damon-pid
	[ -d $A ] || die "$A missing: the kernel lacks CONFIG_DAMON_SYSFS"
	[ -d $T/events ] || mount -t tracefs tracefs $T
	[ -d $T/events/damon ] || die "$T/events/damon missing: the kernel lacks DAMON's tracepoints"
	# The largest top-level System RAM range; /proc/iomem's END is inclusive.
	best_s=0 best_e=0
	[ $# -eq 4 ] || best_e=1
	[ $# -eq 5 ] || for r in $(sed -n 's/^\([0-9a-f]*-[0-9a-f]*\) : System RAM$/\1/p' /proc/iomem); do
		s=$((0x${r%-*})) e=$((0x${r#*-} + 1))
		[ $((e - s)) -le $((best_e - best_s)) ] || { best_s=$s best_e=$e; }
	done
	[ $best_e -gt 0 ] || die "no System RAM range in /proc/iomem"

	echo mono >$T/trace_clock
	echo 32768 >$T/buffer_size_kb
	echo >$T/trace
	# On: a previous stop turned it off (a host that records more than once), and the markers need it.
	echo 1 >$T/tracing_on
	echo 1 >$T/events/damon/damon_aggregated/enable

	echo 1 >$A/nr_kdamonds
	C=$A/0/contexts
	echo 1 >$C/nr_contexts
	if [ $# -eq 5 ]; then
		echo vaddr >$C/0/operations
	else
		echo paddr >$C/0/operations
	fi
	M=$C/0/monitoring_attrs
	echo "$1" >$M/intervals/sample_us
	echo "$2" >$M/intervals/aggr_us
	echo "$4" >$M/nr_regions/max
	echo "$3" >$M/nr_regions/min
	echo 1 >$C/0/targets/nr_targets
	if [ $# -eq 5 ]; then
		echo "$5" >$C/0/targets/0/pid_target
		echo "# vaddr pid $5 sample_us $1 aggr_us $2 min $3 max $4" >/tmp/damon-attrs
	else
		echo 1 >$C/0/targets/0/regions/nr_regions
		echo $best_s >$C/0/targets/0/regions/0/start
		echo $best_e >$C/0/targets/0/regions/0/end
		echo "# paddr $best_s-$best_e sample_us $1 aggr_us $2 min $3 max $4" >/tmp/damon-attrs
	fi
	echo on >$A/0/state
	sync_point start
}

stop() {
	sync_point end
	echo off >$A/0/state
	echo 0 >$T/events/damon/damon_aggregated/enable
	echo 0 >$T/tracing_on
	lost=$(sed -n 's/^# entries-in-buffer\/entries-written: \([0-9]*\)\/\([0-9]*\).*/\1 \2/p' $T/trace)
	set -- $lost
	[ $# -eq 2 ] && [ "$1" = "$2" ] ||
		die "the trace ring buffer lost events (in buffer/written: ${1:-?}/${2:-?}); raise buffer_size_kb"
	echo "hvmtrace-damon 1"
	cat /tmp/damon-attrs
	# A line: "TASK-PID [CPU] FLAGS SECS.USECS: damon_aggregated: target_id=0 nr_regions=N S-E: NR AGE".
	# The N regions of one aggregation are N consecutive events, a few us apart: they take the first's time.
	awk '
	function ns(t) { sub(/:$/, "", t); split(t, p, "."); return p[1] p[2] "000" }
	{
		for (i = 1; i <= NF && $i != "damon_aggregated:" && $i != "tracing_mark_write:"; i++)
			;
		if (i > NF)
			next
		if ($i == "tracing_mark_write:") {
			if ($(i + 1) == "hvt-sync")
				print "# sync", $(i + 2), ns($(i - 1))
			next
		}
		if (left == 0) {
			n = $(i + 2); sub(/^nr_regions=/, "", n); left = n + 0
			t = ns($(i - 1))
		}
		r = $(i + 3); sub(/:$/, "", r); split(r, se, "-")
		print t, se[1], se[2], $(i + 4)
		left--
	}' $T/trace
}

case "${1:-}" in
start)
	shift
	start "$@"
	;;
stop) stop ;;
*) die "usage: damon-record start SAMPLE_US AGGR_US MIN_REGIONS MAX_REGIONS | stop" ;;
esac
