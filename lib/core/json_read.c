// SPDX-License-Identifier: MIT
/* Typed reading of outside JSON (json_read.h): the rules and the messages, once. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/json_read.h"
#include "hvmtrace/util.h"

/* A value being read, and how messages name it: the member "key" of in, or (key NULL) its item [index]. */
struct at {
	const struct hvt_json_in *in;
	struct json_object *v;
	const char *key;
	size_t index;
};

void hvt_json_in_init(struct hvt_json_in *in, struct json_object *o, int code, struct hvt_err *err,
		      const char *fmt, ...)
{
	va_list ap;

	in->o = o;
	in->err = err;
	in->code = code;
	va_start(ap, fmt);
	vsnprintf(in->where, sizeof(in->where), fmt, ap);
	va_end(ap);
}

void hvt_json_rename(struct hvt_json_in *in, const char *fmt, ...)
{
	char where[sizeof(in->where)];
	va_list ap;

	/* through a copy: the arguments may be in->where itself */
	va_start(ap, fmt);
	vsnprintf(where, sizeof(where), fmt, ap);
	va_end(ap);
	memcpy(in->where, where, sizeof(where));
}

__attribute__((format(printf, 2, 0))) static int vrefuse(const struct at *a, const char *fmt, va_list ap)
{
	char what[300];

	vsnprintf(what, sizeof(what), fmt, ap);
	if (a->key)
		return hvt_err_set(a->in->err, a->in->code, "%s: \"%s\" %s", a->in->where, a->key, what);
	return hvt_err_set(a->in->err, a->in->code, "%s[%zu] %s", a->in->where, a->index, what);
}

__attribute__((format(printf, 2, 3))) static int refuse(const struct at *a, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vrefuse(a, fmt, ap);
	va_end(ap);
	return rc;
}

int hvt_json_refuse(const struct hvt_json_in *in, const char *key, const char *fmt, ...)
{
	struct at a = {in, NULL, key, 0};
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vrefuse(&a, fmt, ap);
	va_end(ap);
	return rc;
}

const char *hvt_json_kind(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
		return "null";
	case json_type_boolean:
		return "a boolean";
	case json_type_double:
		return "a fractional number";
	case json_type_int:
		return "an integer";
	case json_type_object:
		return "an object";
	case json_type_array:
		return "an array";
	case json_type_string:
		return "a string";
	}
	return "something else";
}

static int not_a(const struct at *a, const char *want)
{
	return refuse(a, "is not %s (got %s)", want, hvt_json_kind(a->v));
}

static int member(const struct hvt_json_in *in, const char *key, struct at *a)
{
	*a = (struct at){in, NULL, key, 0};
	if (!json_object_object_get_ex(in->o, key, &a->v))
		return hvt_err_set(in->err, in->code, "%s: missing \"%s\"", in->where, key);
	return 0;
}

static struct at item(const struct hvt_json_in *in, size_t i)
{
	/* json-c asserts on an index into anything but an array */
	bool array = json_object_is_type(in->o, json_type_array);

	return (struct at){in, array ? json_object_array_get_idx(in->o, i) : NULL, NULL, i};
}

bool hvt_json_has(const struct hvt_json_in *in, const char *key)
{
	return json_object_object_get_ex(in->o, key, NULL);
}

int hvt_json_only(const struct hvt_json_in *in, const char *const *known)
{
	if (!json_object_is_type(in->o, json_type_object))
		return 0;
	json_object_object_foreach(in->o, k, v)
	{
		char list[256] = "";
		size_t i, n = 0;

		(void)v;
		for (i = 0; known[i] && strcmp(k, known[i]); i++)
			;
		if (known[i])
			continue;
		for (i = 0; known[i] && n < sizeof(list); i++)
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", known[i]);
		return hvt_err_set(in->err, in->code, "%s: unknown member \"%.64s\" (known: %s)", in->where,
				   k, list);
	}
	return 0;
}

/* ---- strings ---- */

static int string(const struct at *a, size_t max, const char **out)
{
	const char *s;
	size_t len;

	if (!json_object_is_type(a->v, json_type_string))
		return not_a(a, "a string");
	s = json_object_get_string(a->v);
	len = (size_t)json_object_get_string_len(a->v);
	if (len > max)
		return refuse(a, "is longer than %zu bytes", max);
	if (strlen(s) != len)
		return refuse(a, "holds a NUL byte");
	*out = s;
	return 0;
}

int hvt_json_str(const struct hvt_json_in *in, const char *key, size_t max_bytes, const char **out)
{
	struct at a;
	int rc = member(in, key, &a);

	return rc ? rc : string(&a, max_bytes, out);
}

int hvt_json_item_str(const struct hvt_json_in *in, size_t i, size_t max_bytes, const char **out)
{
	struct at a = item(in, i);

	return string(&a, max_bytes, out);
}

int hvt_json_strbuf(const struct hvt_json_in *in, const char *key, char *buf, size_t size, bool cut)
{
	const char *s;
	size_t len;
	int rc = hvt_json_str(in, key, cut ? SIZE_MAX : size - 1, &s);

	if (rc)
		return rc;
	len = strlen(s);
	if (len >= size) {
		len = size - 1;
		/* Do not cut a UTF-8 sequence in two. */
		while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	return 0;
}

int hvt_json_bool(const struct hvt_json_in *in, const char *key, bool *out)
{
	struct at a;
	int rc = member(in, key, &a);

	if (rc)
		return rc;
	if (!json_object_is_type(a.v, json_type_boolean))
		return not_a(&a, "true or false");
	*out = json_object_get_boolean(a.v);
	return 0;
}

/* ---- numbers ---- */

/* A JSON integer in [min, max]; *s and *u hold it (*u is 0 for a negative). */
static int integer(const struct at *a, int64_t min, uint64_t max, int64_t *s, uint64_t *u)
{
	if (!json_object_is_type(a->v, json_type_int))
		return not_a(a, "an integer");
	/* json-c keeps big positive numbers as uint64; get_int64 is negative only for negative input. */
	*s = json_object_get_int64(a->v);
	*u = *s < 0 ? 0 : json_object_get_uint64(a->v);
	if (*s < 0 ? *s < min : (min > 0 && *u < (uint64_t)min) || *u > max) {
		char text[24];

		if (*s < 0)
			snprintf(text, sizeof(text), "%" PRId64, *s);
		else
			snprintf(text, sizeof(text), "%" PRIu64, *u);
		return refuse(a, "= %s is out of range (%" PRId64 " to %" PRIu64 ")", text, min, max);
	}
	return 0;
}

static int unsigned_at(const struct at *a, uint64_t min, uint64_t max, uint64_t *out)
{
	int64_t s;
	uint64_t u;
	int rc = integer(a, (int64_t)min, max, &s, &u);

	if (!rc)
		*out = u;
	return rc;
}

int hvt_json_uint(const struct hvt_json_in *in, const char *key, uint64_t min, uint64_t max, uint64_t *out)
{
	struct at a;
	int rc = member(in, key, &a);

	return rc ? rc : unsigned_at(&a, min, max, out);
}

int hvt_json_item_uint(const struct hvt_json_in *in, size_t i, uint64_t min, uint64_t max, uint64_t *out)
{
	struct at a = item(in, i);

	return unsigned_at(&a, min, max, out);
}

int hvt_json_u32(const struct hvt_json_in *in, const char *key, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	int rc = hvt_json_uint(in, key, min, max, &v);

	if (!rc)
		*out = (uint32_t)v;
	return rc;
}

int hvt_json_int(const struct hvt_json_in *in, const char *key, int64_t min, int64_t max, int64_t *out)
{
	struct at a;
	int64_t s;
	uint64_t u;
	int rc = member(in, key, &a);

	if (!rc && !(rc = integer(&a, min, (uint64_t)max, &s, &u)))
		*out = s;
	return rc;
}

int hvt_json_i32(const struct hvt_json_in *in, const char *key, int32_t min, int32_t max, int32_t *out)
{
	int64_t v;
	int rc = hvt_json_int(in, key, min, max, &v);

	if (!rc)
		*out = (int32_t)v;
	return rc;
}

int hvt_json_double(const struct hvt_json_in *in, const char *key, double min, double max, double *out)
{
	struct at a;
	double x;
	int rc = member(in, key, &a);

	if (rc)
		return rc;
	if (!json_object_is_type(a.v, json_type_double) && !json_object_is_type(a.v, json_type_int))
		return not_a(&a, "a number");
	x = json_object_get_double(a.v);
	if (!isfinite(x))
		return refuse(&a, "= %g is not a finite number", x);
	if (x < min && isinf(max))
		return refuse(&a, "= %g is out of range (at least %g)", x, min);
	if (x > max && isinf(min))
		return refuse(&a, "= %g is out of range (at most %g)", x, max);
	if (x < min || x > max)
		return refuse(&a, "= %g is out of range (%g to %g)", x, min, max);
	*out = x;
	return 0;
}

/* "0x…" hex or decimal digits and nothing else (no sign, no space, no octal leading 0) into *out; *over
 * when they pass 64 bits. */
static bool digits(const char *s, uint64_t *out, bool *over)
{
	unsigned base = 10;
	uint64_t v = 0;

	*over = false;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	} else if (s[0] == '0' && s[1]) {
		return false;
	}
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned d = *s >= '0' && *s <= '9'                 ? (unsigned)(*s - '0')
			     : base == 16 && *s >= 'a' && *s <= 'f' ? (unsigned)(*s - 'a' + 10)
			     : base == 16 && *s >= 'A' && *s <= 'F' ? (unsigned)(*s - 'A' + 10)
								    : 16;
		if (d >= base)
			return false;
		if (v > (UINT64_MAX - d) / base)
			*over = true;
		v = v * base + d;
	}
	*out = v;
	return true;
}

static int address(const struct at *a, uint64_t max, bool size, uint64_t *out)
{
	const char *what = size ? "a size" : "an address";
	const char *s;
	uint64_t v;
	bool over = false, ok;

	if (json_object_is_type(a->v, json_type_int))
		return unsigned_at(a, 0, max, out);
	if (!json_object_is_type(a->v, json_type_string))
		return not_a(a, what);
	s = json_object_get_string(a->v);
	if (strlen(s) != (size_t)json_object_get_string_len(a->v))
		return refuse(a, "holds a NUL byte");
	ok = digits(s, &v, &over);
	if (!ok && size && strncmp(s, "0x", 2) && strncmp(s, "0X", 2))
		ok = !hvt_parse_size(s, &v);
	if (!ok)
		return refuse(a, "= \"%.64s\" is not %s (%s)", s, what,
			      size ? "\"0x…\", decimal, or with K, M, G or T" : "\"0x…\" or decimal digits");
	if (over || v > max)
		return refuse(a, "= \"%.64s\" is out of range (0 to %" PRIu64 ")", s, max);
	*out = v;
	return 0;
}

int hvt_json_addr(const struct hvt_json_in *in, const char *key, uint64_t max, uint64_t *out)
{
	struct at a;
	int rc = member(in, key, &a);

	return rc ? rc : address(&a, max, false, out);
}

int hvt_json_size(const struct hvt_json_in *in, const char *key, uint64_t *out)
{
	struct at a;
	int rc = member(in, key, &a);

	return rc ? rc : address(&a, UINT64_MAX, true, out);
}

/* ---- objects and arrays ---- */

static int child_of(const struct at *a, enum json_type t, struct hvt_json_in *child)
{
	if (!json_object_is_type(a->v, t))
		return not_a(a, t == json_type_object ? "an object" : "an array");
	child->o = a->v;
	child->err = a->in->err;
	child->code = a->in->code;
	if (a->key)
		hvt_json_rename(child, "%s: %s", a->in->where, a->key);
	else
		hvt_json_rename(child, "%s[%zu]", a->in->where, a->index);
	return 0;
}

static int array_at(const struct at *a, size_t max, struct hvt_json_in *child, size_t *n)
{
	int rc = child_of(a, json_type_array, child);

	if (rc)
		return rc;
	*n = json_object_array_length(a->v);
	if (*n > max)
		return refuse(a, "has %zu entries (at most %zu)", *n, max);
	return 0;
}

int hvt_json_object(const struct hvt_json_in *in, const char *key, struct hvt_json_in *child)
{
	struct at a;
	int rc = member(in, key, &a);

	return rc ? rc : child_of(&a, json_type_object, child);
}

int hvt_json_item_object(const struct hvt_json_in *in, size_t i, struct hvt_json_in *child)
{
	struct at a = item(in, i);

	return child_of(&a, json_type_object, child);
}

int hvt_json_array(const struct hvt_json_in *in, const char *key, size_t max, struct hvt_json_in *child,
		   size_t *n)
{
	struct at a;
	int rc = member(in, key, &a);

	return rc ? rc : array_at(&a, max, child, n);
}

int hvt_json_item_array(const struct hvt_json_in *in, size_t i, size_t max, struct hvt_json_in *child,
			size_t *n)
{
	struct at a = item(in, i);

	return array_at(&a, max, child, n);
}
