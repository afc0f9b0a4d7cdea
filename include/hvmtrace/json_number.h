/* SPDX-License-Identifier: MIT */
/*
 * JSON numbers as every writer prints them: the shortest decimal that reads back to the same double
 * (241.925, not json-c's %.17g 241.92500000000001), so a figure is the same in the JSON, on screen and in
 * a script that reads it. Every JSON writer makes its doubles with hvt_json_new_double, and the streamed
 * JSON Lines writer prints them with hvt_json_format_double: the two give the same bytes.
 */
#ifndef HVMTRACE_JSON_NUMBER_H
#define HVMTRACE_JSON_NUMBER_H

#include <stddef.h>

struct json_object;

/* Enough for any double in the form below, and its NUL. */
#define HVT_JSON_DOUBLE_LEN 32

/*
 * v in the fewest significant digits (1 to 17) that strtod reads back as v, as %g writes them (1e-05,
 * 1e+21, 5e-324) but for a whole number below 2^53, written out (100.0, not 1e+02); ".0" added where it
 * would read as an integer (100.0, -0.0), as json-c marks a double. A NaN or an infinity, which JSON cannot
 * write, is "null". Returns the length.
 */
size_t hvt_json_format_double(double v, char *buf, size_t len);

/* A json-c double that serialises as hvt_json_format_double prints it; NULL (json-c's null) for a NaN or an
 * infinity, or when out of memory. */
struct json_object *hvt_json_new_double(double v);

#endif
