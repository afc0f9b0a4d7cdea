// SPDX-License-Identifier: MIT
/* The shortest round-trip form of a JSON double (json_number.h). */
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/json_number.h"

/* %.{digits}g of v, and whether strtod reads it back as v. */
static bool exact(double v, int digits, char *buf, size_t len)
{
	snprintf(buf, len, "%.*g", digits, v);
	return strtod(buf, NULL) == v;
}

size_t hvt_json_format_double(double v, char *buf, size_t len)
{
	char tmp[HVT_JSON_DOUBLE_LEN];
	int digits = 1;

	if (!isfinite(v))
		return (size_t)snprintf(buf, len, "null");
	/* 17 significant digits always read back (IEEE 754 binary64), so the search ends there */
	while (digits < 17 && !exact(v, digits, tmp, sizeof(tmp)))
		digits++;
	exact(v, digits, tmp, sizeof(tmp));
	/* %g goes to an exponent once it reaches the digits asked for (100 as "1e+02"). Below 2^53 that
	 * number is a whole one the double holds exactly, so written out its added digits are all zeros. */
	const char *e = strchr(tmp, 'e');
	if (e && atoi(e + 1) >= digits && fabs(v) < 0x1p53)
		snprintf(tmp, sizeof(tmp), "%.*g", atoi(e + 1) + 1, v);
	if (!strpbrk(tmp, ".e"))
		strcat(tmp, ".0");
	return (size_t)snprintf(buf, len, "%s", tmp);
}

struct json_object *hvt_json_new_double(double v)
{
	char buf[HVT_JSON_DOUBLE_LEN];

	if (!isfinite(v))
		return NULL; /* JSON has no NaN: json-c writes a NULL member or item as null */
	hvt_json_format_double(v, buf, sizeof(buf));
	return json_object_new_double_s(v, buf);
}
