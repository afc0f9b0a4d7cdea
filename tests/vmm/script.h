/* SPDX-License-Identifier: MIT */
/*
 * Built-in phase scripts: which guest pages each phase writes and reads. A script is described in pages
 * (for the phase log) and encoded in bytes for the payload (guest_abi.h).
 */
#ifndef HVMTRACE_VMM_SCRIPT_H
#define HVMTRACE_VMM_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

struct hvt_err;

struct page_range {
	uint64_t first_gfn, count, stride; /* pages first_gfn, first_gfn + stride, … (count of them) */
};

struct range_list {
	struct page_range *v;
	size_t n, cap;
};

struct phase {
	char name[16];
	struct range_list write, read;
};

struct script {
	char name[16];
	unsigned nphases;
	struct phase *phases;
};

/* Where the payload may go: the two RAM slots and the first gfn above the system area. */
struct script_geometry {
	uint64_t low_pages;      /* slot 0: gfn [0, low_pages) */
	uint64_t high_first_gfn; /* slot 1 */
	uint64_t high_pages;
	uint64_t first_free_gfn; /* nothing below this but gfn 0 may be touched */
	uint64_t array_bytes;    /* "array": size of each of a, b, c */
	uint64_t write_every;    /* "sparse": writes every write_every-th page of the high slot */
};

/* Appends pages first, first + stride, … (count of them) to l; -ENOMEM if it cannot grow. */
int script_add_range(struct range_list *l, uint64_t first, uint64_t count, uint64_t stride);

/* Names of the built-in scripts, NULL-terminated, for --help and errors. */
extern const char *const script_names[];

/* Builds the named script for the geometry; the error names the script and what does not fit. */
int script_build(struct script *s, const char *name, const struct script_geometry *g, struct hvt_err *err);
void script_free(struct script *s);

/* The payload's byte form: returns its length, or 0 if cap is too small (then call again with more). */
size_t script_encode(const struct script *s, uint8_t *buf, size_t cap);
size_t script_encoded_size(const struct script *s);

#endif
