// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/files.h"
#include "hvmtrace/util.h"

uint64_t hvt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * HVT_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

int64_t hvt_wall_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * (int64_t)HVT_NSEC_PER_SEC + ts.tv_nsec;
}

/* Reads "<decimal><suffix>" where the suffix must be one of the table's; the scale of "" is given. */
static int parse_scaled(const char *s, const char *const *suffixes, const double *scales, size_t n,
			double empty_scale, double *out)
{
	char *end;
	double v, scale = -1;

	if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v <= 0)
		return -EINVAL;
	if (!*end) {
		scale = empty_scale;
	} else {
		for (size_t i = 0; i < n; i++)
			if (!strcmp(end, suffixes[i]))
				scale = scales[i];
	}
	if (scale < 0)
		return -EINVAL;
	*out = v * scale;
	return 0;
}

int hvt_parse_duration(const char *s, uint64_t *ns)
{
	static const char *const suffixes[] = {"ns", "us", "ms", "s", "m", "h"};
	static const double scales[] = {1, 1e3, 1e6, 1e9, 60e9, 3600e9};
	double v;

	if (parse_scaled(s, suffixes, scales, 6, 1e9, &v) || v < 1 || v > 1e18)
		return -EINVAL;
	*ns = (uint64_t)llround(v);
	return 0;
}

int hvt_parse_size(const char *s, uint64_t *bytes)
{
	static const char *const suffixes[] = {"K", "M", "G", "T", "KiB", "MiB", "GiB", "TiB"};
	static const double scales[] = {0x1p10, 0x1p20, 0x1p30, 0x1p40, 0x1p10, 0x1p20, 0x1p30, 0x1p40};
	double v;

	if (parse_scaled(s, suffixes, scales, 8, 1, &v) || v >= 0x1p63 || v != floor(v))
		return -EINVAL;
	*bytes = (uint64_t)v;
	return 0;
}

void hvt_format_duration(uint64_t ns, char *buf, unsigned len)
{
	if (ns % HVT_NSEC_PER_SEC == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ns / HVT_NSEC_PER_SEC));
	else if (ns % 1000000 == 0)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / 1000000));
	else if (ns % 1000 == 0)
		snprintf(buf, len, "%lluus", (unsigned long long)(ns / 1000));
	else
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

void hvt_format_size(uint64_t bytes, char *buf, unsigned len)
{
	if (bytes >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", bytes / (double)(1ull << 30));
	else if (bytes >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", bytes / (double)(1ull << 20));
	else
		snprintf(buf, len, "%" PRIu64 " KiB", bytes >> 10);
}

/* Splits wall_ns into whole seconds and a non-negative remainder, and formats the date and time. */
static long format_utc(int64_t wall_ns, char *date, size_t len)
{
	time_t secs = (time_t)(wall_ns / (int64_t)HVT_NSEC_PER_SEC);
	long rest = (long)(wall_ns % (int64_t)HVT_NSEC_PER_SEC);
	struct tm tm;

	if (rest < 0) { /* before 1970: keep the remainder positive */
		secs -= 1;
		rest += (long)HVT_NSEC_PER_SEC;
	}
	gmtime_r(&secs, &tm);
	strftime(date, len, "%Y-%m-%dT%H:%M:%S", &tm);
	return rest;
}

void hvt_format_wall(int64_t wall_ns, char *buf, size_t len)
{
	char date[32];
	long ns = format_utc(wall_ns, date, sizeof(date));

	snprintf(buf, len, "%s.%06ldZ", date, ns / 1000);
}

void hvt_format_wall_seconds(int64_t wall_ns, char *buf, size_t len)
{
	char date[32];

	format_utc(wall_ns, date, sizeof(date));
	snprintf(buf, len, "%sZ", date);
}

/* One CPU number of a list: decimal digits only (no sign or space, which strtoul would take). */
static int cpu_number(const char **s, unsigned long *cpu)
{
	char *end;

	if (!isdigit((unsigned char)**s))
		return -EINVAL;
	errno = 0;
	*cpu = strtoul(*s, &end, 10);
	if (errno || *cpu >= CPU_SETSIZE)
		return -EINVAL;
	*s = end;
	return 0;
}

int hvt_parse_cpulist(const char *s, cpu_set_t *set)
{
	long next = 0; /* the lowest CPU the next item may name */
	int n = 0;

	CPU_ZERO(set);
	while (*s && strcmp(s, "\n")) {
		unsigned long a, b;

		if (cpu_number(&s, &a))
			return -EINVAL;
		b = a;
		if (*s == '-') {
			s++;
			if (cpu_number(&s, &b) || b < a)
				return -EINVAL;
		}
		if ((long)a < next)
			return -EINVAL;
		for (unsigned long c = a; c <= b; c++, n++)
			CPU_SET(c, set);
		next = (long)b + 1;
		if (*s == ',' && s[1] && s[1] != '\n')
			s++;
		else if (*s && strcmp(s, "\n"))
			return -EINVAL;
	}
	return n;
}

/* Reads at most max bytes of fd into a NUL-terminated buffer; -EFBIG when there is more. */
static int read_bounded(int fd, size_t max, char **text, size_t *len)
{
	size_t cap = max < 4096 ? max + 2 : 4096, n = 0;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n == cap - 1) { /* full: grow up to max + 1 bytes, one more than allowed */
			size_t want = cap * 2 > max + 2 ? max + 2 : cap * 2;
			char *grown = want > cap ? realloc(buf, want) : NULL;

			if (!grown) {
				free(buf);
				return want > cap ? -ENOMEM : -EFBIG;
			}
			buf = grown;
			cap = want;
		}
		ssize_t got = read(fd, buf + n, cap - 1 - n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int rc = -errno;

			free(buf);
			return rc;
		}
		if (got == 0)
			break;
		n += (size_t)got;
		if (n > max) {
			free(buf);
			return -EFBIG;
		}
	}
	buf[n] = '\0';
	*text = buf;
	if (len)
		*len = n;
	return 0;
}

/* Opens and reads path; *opened says whether open() succeeded (for the message); a file that is not regular
 * is refused with -EINVAL and its type in *mode. */
static int read_path(const char *path, size_t max, char **text, size_t *len, bool *opened, mode_t *mode)
{
	int fd = hvt_open_regular(path, mode), rc;

	*opened = fd >= 0;
	if (fd < 0)
		return fd;
	rc = read_bounded(fd, max, text, len);
	close(fd);
	return rc;
}

int hvt_read_fd(int fd, const char *what, size_t max, char **text, size_t *len, struct hvt_err *e)
{
	int rc;

	*text = NULL;
	rc = read_bounded(fd, max, text, len);
	if (rc == -EFBIG)
		return hvt_err_set(
		    e, rc, "cannot read %s: it is larger than %zu bytes, the most read from it", what, max);
	if (rc == -ENOMEM)
		return hvt_err_set(e, rc, "out of memory");
	if (rc)
		return hvt_err_set(e, rc, "cannot read %s: %s", what, strerror(-rc));
	return 0;
}

int hvt_read_file(const char *path, const char *what, size_t max, char **text, size_t *len, struct hvt_err *e)
{
	const char *sep = what ? " " : "";
	bool opened;
	mode_t mode = 0;
	int rc;

	*text = NULL;
	rc = read_path(path, max, text, len, &opened, &mode);
	if (rc == -EINVAL && mode)
		return hvt_err_set(e, rc, "cannot read %s%s%s: it is %s, not a regular file",
				   what ? what : "", sep, path, hvt_file_type_name(mode));
	if (rc == -EFBIG)
		return hvt_err_set(e, rc,
				   "cannot read %s%s%s: it is larger than %zu bytes, the most read from it",
				   what ? what : "", sep, path, max);
	if (rc == -ENOMEM)
		return hvt_err_set(e, rc, "out of memory");
	if (rc)
		return hvt_err_set(e, rc, "cannot %s %s%s%s: %s", opened ? "read" : "open", what ? what : "",
				   sep, path, strerror(-rc));
	return 0;
}

int hvt_read_text(const char *path, char *buf, size_t len, struct hvt_err *e)
{
	char *text;
	size_t n;
	bool opened;
	mode_t mode = 0;
	int rc = read_path(path, len - 1, &text, &n, &opened, &mode);

	if (rc == -EINVAL && mode)
		return hvt_err_set(e, rc, "%s: %s, not a regular file", path, hvt_file_type_name(mode));
	if (rc == -EFBIG)
		return hvt_err_set(e, rc, "%s: longer than %zu bytes, the most read from it", path, len - 1);
	if (rc)
		return hvt_err_set(e, rc, "%s: %s", path, strerror(-rc));
	while (n && isspace((unsigned char)text[n - 1]))
		n--;
	memcpy(buf, text, n);
	buf[n] = '\0';
	free(text);
	return 0;
}

int hvt_read_line(FILE *f, size_t max, char **buf, size_t *cap)
{
	size_t n = 0;
	int c;

	for (;;) {
		if (n + 1 >= *cap || !*buf) { /* room for this byte and the NUL */
			size_t want = *cap ? *cap * 2 : 4096;
			char *grown = realloc(*buf, want);

			if (!grown)
				return -ENOMEM;
			*buf = grown;
			*cap = want;
		}
		/* getc, not fgets: a NUL byte in the input must count towards max like any other */
		if ((c = getc(f)) == EOF || c == '\n')
			break;
		if (n == max)
			return -EFBIG;
		(*buf)[n++] = (char)c;
	}
	if (ferror(f))
		return -EIO;
	(*buf)[n] = '\0';
	return c == EOF && n == 0 ? 0 : 1;
}

bool hvt_process_alive(pid_t pid)
{
	char path[64], stat[1024];
	const char *state;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (hvt_read_text(path, stat, sizeof(stat), NULL))
		return false;
	state = strrchr(stat, ')');
	return state && state[1] == ' ' && state[2] && !strchr("ZXx", state[2]);
}

int hvt_process_start_time(pid_t pid, unsigned long long *ticks)
{
	char path[64], stat[1024];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (hvt_read_text(path, stat, sizeof(stat), NULL))
		return -ESRCH;
	p = strrchr(stat, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EIO;
	if (strchr("ZXx", p[2]))
		return -ESRCH;
	/* the blank before each field from 3 (state) to 22, the start time */
	for (int field = 3; field <= 22; field++)
		if (!(p = strchr(p + 1, ' ')))
			return -EIO;
	return sscanf(p + 1, "%llu", ticks) == 1 ? 0 : -EIO;
}

uint64_t hvt_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void hvt_channel_json_add(struct json_object *o, const char *id, int socket, int controller, int channel,
			  const char *pmu)
{
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "socket", json_object_new_int(socket));
	json_object_object_add(o, "controller", json_object_new_int(controller));
	json_object_object_add(o, "channel", json_object_new_int(channel));
	json_object_object_add(o, "pmu", json_object_new_string(pmu));
}

int hvt_array_room(void **v, size_t *cap, size_t n, size_t elem)
{
	size_t want = *cap ? 2 * *cap : 256;
	void *p;

	if (n < *cap)
		return 0;
	if (want > SIZE_MAX / elem || !(p = realloc(*v, want * elem)))
		return -ENOMEM;
	*v = p;
	*cap = want;
	return 0;
}
