/* SPDX-License-Identifier: MIT */
/*
 * Typed reading of JSON that comes from outside (files, a peer's messages, a log): every parser reads its
 * members and array items through these, so one set of rules holds everywhere:
 *  - an integer is a JSON integer (not a fraction, not a string), inside the caller's range (so a negative
 *    is refused where the range starts at 0, and an overflow is out of range);
 *  - an address is a non-negative JSON integer or a "0x…" (hex) or decimal string, wholly digits: nothing
 *    after the number, no sign, no space, no leading 0 (which strtoull would read as octal);
 *  - a size is an address, or a size with a binary suffix ("4G", hvt_parse_size);
 *  - a number is a JSON integer or fraction, finite, inside the caller's range;
 *  - a string holds no NUL byte and fits its bound (or, for free text, is cut to it on a character
 *    boundary).
 * A refusal sets one message in err naming the object (where), the member and the problem, e.g.
 *   harvest message: "seq" = -1 is out of range (0 to 18446744073709551615)
 *   doc.json: channel s0.mc0.ch0: ranges[0]: "start" = "0x10zz" is not an address ("0x…" or decimal digits)
 *   session s.jsonl line 7: rd[3] is not an integer (got a string)
 * and returns the context's code (-EINVAL for a file, -EPROTO for a peer's message).
 *
 * A missing member is refused by every getter; HVT_JSON_OPT reads an optional one. Values are written to
 * *out only when read.
 */
#ifndef HVMTRACE_JSON_READ_H
#define HVMTRACE_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;
struct hvt_err;

/* An object (read by member key) or an array (read by item index), and how messages name it. */
struct hvt_json_in {
	struct json_object *o;
	struct hvt_err *err; /* may be NULL */
	int code;            /* what a refusal returns: a negative errno */
	char where[200];     /* "harvest message", "layout: slots[2] (slot 3)", "META: vm" */
};

/* Sets up in over o, named by the format. */
void hvt_json_in_init(struct hvt_json_in *in, struct json_object *o, int code, struct hvt_err *err,
		      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Names in anew (the format may use in->where: "%s extents", in->where). */
void hvt_json_rename(struct hvt_json_in *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "null", "a boolean", "an integer", "a fractional number", "a string", "an array", "an object". */
const char *hvt_json_kind(struct json_object *v);

/* Whether the object has the member (a JSON null counts: it is given, and of the wrong type). */
bool hvt_json_has(const struct hvt_json_in *in, const char *key);

/* An optional member: get(in, key, …) when it is given, else 0 and *out as it was (the caller's default). */
#define HVT_JSON_OPT(get, in, key, ...) (hvt_json_has(in, key) ? get(in, key, __VA_ARGS__) : 0)

/* Refuses a member whose key is not in known (NULL-terminated), listing the known ones. */
int hvt_json_only(const struct hvt_json_in *in, const char *const *known);

/* Refuses the member for a reason of the caller's ("= \"fast\" is not a harvest mode"): one message of
 * the same shape, "<where>: \"key\" <problem>". */
int hvt_json_refuse(const struct hvt_json_in *in, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Members. */
int hvt_json_str(const struct hvt_json_in *in, const char *key, size_t max_bytes, const char **out);
/* Into buf (size bytes with the terminator): a longer string is refused, or with cut (free text) cut to
 * fit on a character boundary. */
int hvt_json_strbuf(const struct hvt_json_in *in, const char *key, char *buf, size_t size, bool cut);
int hvt_json_bool(const struct hvt_json_in *in, const char *key, bool *out);
int hvt_json_uint(const struct hvt_json_in *in, const char *key, uint64_t min, uint64_t max, uint64_t *out);
int hvt_json_u32(const struct hvt_json_in *in, const char *key, uint32_t min, uint32_t max, uint32_t *out);
/* max >= 0 */
int hvt_json_int(const struct hvt_json_in *in, const char *key, int64_t min, int64_t max, int64_t *out);
int hvt_json_i32(const struct hvt_json_in *in, const char *key, int32_t min, int32_t max, int32_t *out);
int hvt_json_double(const struct hvt_json_in *in, const char *key, double min, double max, double *out);
int hvt_json_addr(const struct hvt_json_in *in, const char *key, uint64_t max, uint64_t *out);
int hvt_json_size(const struct hvt_json_in *in, const char *key, uint64_t *out);

/* A member object or array as a context of its own, named "<where>: key"; an array of at most max items,
 * their count in *n. */
int hvt_json_object(const struct hvt_json_in *in, const char *key, struct hvt_json_in *child);
int hvt_json_array(const struct hvt_json_in *in, const char *key, size_t max, struct hvt_json_in *child,
		   size_t *n);

/* Items of an array context (i below its length), named "<where>[i]". */
int hvt_json_item_str(const struct hvt_json_in *in, size_t i, size_t max_bytes, const char **out);
int hvt_json_item_uint(const struct hvt_json_in *in, size_t i, uint64_t min, uint64_t max, uint64_t *out);
int hvt_json_item_object(const struct hvt_json_in *in, size_t i, struct hvt_json_in *child);
int hvt_json_item_array(const struct hvt_json_in *in, size_t i, size_t max, struct hvt_json_in *child,
			size_t *n);

#endif
