/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the programs, each written once: clocks, durations and sizes with suffixes, wall
 * clock and size formatting, CPU lists, bounded file reading, and a memory channel's identity in JSON.
 */
#ifndef HVMTRACE_UTIL_H
#define HVMTRACE_UTIL_H

#include <sched.h>
#include <stdbool.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct hvt_err;
struct json_object;

#define HVT_NSEC_PER_SEC 1000000000ull

uint64_t hvt_now_ns(void);     /* CLOCK_MONOTONIC */
int64_t hvt_wall_now_ns(void); /* CLOCK_REALTIME */

/*
 * Parses a duration: a decimal number with a suffix ns, us, ms, s, m or h; a bare number is seconds.
 * "10ms", "1s", "1.5s", "5m". Returns 0 or -EINVAL (zero, negative, overflow or junk are refused).
 */
int hvt_parse_duration(const char *s, uint64_t *ns);

/* Parses a size in bytes with an optional binary suffix K, M, G, T ("512M", "1G"); -EINVAL on junk. */
int hvt_parse_size(const char *s, uint64_t *bytes);

/* Formats a duration the way hvt_parse_duration reads it back ("10ms", "1s", "2.5s"). */
void hvt_format_duration(uint64_t ns, char *buf, unsigned len);

/* A size for tables: "12.00 GiB" from 1 GiB up, "512.0 MiB" from 1 MiB up, else whole KiB ("4 KiB"). */
void hvt_format_size(uint64_t bytes, char *buf, unsigned len);

/* A wall-clock time (ns since the epoch) in UTC, ISO 8601: "2026-11-22T10:00:00.123456Z", the form of every
 * time stamp in traces and JSON Lines; hvt_format_wall_seconds gives "2026-11-22T10:00:00Z". */
void hvt_format_wall(int64_t wall_ns, char *buf, size_t len);
void hvt_format_wall_seconds(int64_t wall_ns, char *buf, size_t len);

/*
 * Parses a Linux CPU list ("0-3,8,10-11": sysfs cpumask and cpulist files, Cpus_allowed_list in
 * /proc/PID/status; one trailing newline allowed) into set. Returns the number of CPUs, or -EINVAL for junk,
 * an empty item, a range that runs backwards, CPUs out of ascending order, or a CPU ≥ CPU_SETSIZE.
 */
int hvt_parse_cpulist(const char *s, cpu_set_t *set);

/* Reads at most max bytes of an open fd of any kind (a pipe from a parent, say) until its end, bounded as
 * hvt_read_file; what names it in messages. */
int hvt_read_fd(int fd, const char *what, size_t max, char **text, size_t *len, struct hvt_err *e);

/*
 * Reads a whole file into a NUL-terminated buffer (free() it); len (may be NULL) gets its length. It reads
 * at most max bytes: a longer file is refused with -EFBIG and a message naming the limit, so that no input
 * can exhaust memory; anything but a regular file (a FIFO, a device such as /dev/zero, a directory) is
 * refused with -EINVAL before it could block (hvt_open_regular). `what` (may be NULL) names the kind of
 * file in messages: "cannot open channel map PATH: …". Errors: -errno of open or read, -EINVAL, -EFBIG,
 * -ENOMEM.
 */
int hvt_read_file(const char *path, const char *what, size_t max, char **text, size_t *len,
		  struct hvt_err *e);

/*
 * Reads a small text file (a sysfs or procfs value, /proc/cmdline) into buf, without trailing whitespace.
 * The message names the path ("PATH: No such file or directory"); -EFBIG when the file does not fit in
 * len - 1 bytes; -EINVAL when it is not a regular file.
 */
int hvt_read_text(const char *path, char *buf, size_t len, struct hvt_err *e);

/*
 * Reads one line, without its newline, into *buf, growing it (*cap its size; free() it). Returns 1 for a
 * line, 0 at the end of the file, -EFBIG for a line longer than max bytes (a file without newlines such as
 * /dev/zero stops there), -ENOMEM or -EIO.
 */
int hvt_read_line(FILE *f, size_t max, char **buf, size_t *cap);

/* Whether process pid still runs: /proc/PID/stat exists and its state is not zombie or dead ("pid (comm) S
 * …"; comm may hold anything, so the state is read after the last ')'). */
bool hvt_process_alive(pid_t pid);

/* When process pid started, in clock ticks after boot (field 22 of /proc/PID/stat), for telling a process
 * from a later one that got the same pid. 0 on success; -ESRCH when pid is not a live process (also a
 * zombie), -EIO when its stat cannot be parsed. */
int hvt_process_start_time(pid_t pid, unsigned long long *ticks);

/* Room for one more element in the array *v of *cap elements of size elem holding n: doubles it (from 256)
 * when full. 0 or -ENOMEM (*v unchanged). */
int hvt_array_room(void **v, size_t *cap, size_t n, size_t elem);

/* SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): advances *state and returns the next 64-bit value. For
 * the model memory controller, tests and benchmarks: reproducible from a seed, not for secrets. */
uint64_t hvt_splitmix64(uint64_t *state);

/* Adds a memory channel's identity, as every JSON output names one: "id", "socket", "controller",
 * "channel", "pmu" (chanmap.json, `bw --jsonl`, a trace's bandwidth channels). */
void hvt_channel_json_add(struct json_object *o, const char *id, int socket, int controller, int channel,
			  const char *pmu);

#endif
