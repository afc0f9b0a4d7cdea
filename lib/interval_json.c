// SPDX-License-Identifier: MIT
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>

#include "hvmtrace/interval_json.h"

static int by_gpa(const void *a, const void *b, void *layout)
{
	const struct hvt_layout *l = layout;
	uint64_t ga = l->slots[*(const uint32_t *)a].gpa;
	uint64_t gb = l->slots[*(const uint32_t *)b].gpa;

	return (ga > gb) - (ga < gb);
}

/* [[first_gfn, count], …] over every slot in ascending GFN order. The layout's slot order is the VMM's and
 * need not be GFN order; slots never overlap, so sorting the slots sorts the runs. */
static struct json_object *ranges_json(const struct hvt_pageset *sets, const struct hvt_layout *l)
{
	struct json_object *arr = json_object_new_array();
	uint32_t order[HVT_LAYOUT_MAX_SLOTS];

	for (uint32_t i = 0; i < l->nslots; i++)
		order[i] = i;
	qsort_r(order, l->nslots, sizeof(order[0]), by_gpa, (void *)l);
	for (uint32_t k = 0; k < l->nslots; k++) {
		uint32_t i = order[k];
		uint64_t base = hvt_memslot_first_gfn(l, &l->slots[i]);
		uint64_t pos = 0;
		struct hvt_run run;

		while (hvt_pageset_next_run(&sets[i], &pos, &run)) {
			struct json_object *pair = json_object_new_array_ext(2);

			json_object_array_add(pair, json_object_new_uint64(base + run.first));
			json_object_array_add(pair, json_object_new_uint64(run.count));
			json_object_array_add(arr, pair);
		}
	}
	return arr;
}

static void add_set(struct json_object *o, const char *kind, const struct hvt_pageset *sets,
		    const struct hvt_layout *l, const struct hvt_json_opts *opts)
{
	char key[32];

	snprintf(key, sizeof(key), "%s_pages", kind);
	if (!sets) {
		json_object_object_add(o, key, NULL);
		snprintf(key, sizeof(key), "%s_bytes", kind);
		json_object_object_add(o, key, NULL);
		if (opts->page_ranges)
			json_object_object_add(o, kind, NULL);
		return;
	}
	uint64_t pages = hvt_interval_count_pages(sets, l->nslots);
	json_object_object_add(o, key, json_object_new_uint64(pages));
	snprintf(key, sizeof(key), "%s_bytes", kind);
	json_object_object_add(o, key, json_object_new_uint64(pages * l->page_size));
	if (opts->page_ranges)
		json_object_object_add(o, kind, ranges_json(sets, l));
}

/* An integer, or null when the quantity was not measured. */
static struct json_object *opt_u64(bool present, uint64_t v)
{
	return present ? json_object_new_uint64(v) : NULL;
}

/*
 * read_bytes/write_bytes/total_bytes of the VM and of each channel. Channels that count only totals
 * (HVT_IV_BW_TOTAL, e.g. resctrl) have null reads and writes: the split was not measured.
 */
static void add_bandwidth(struct json_object *o, const struct hvt_interval *iv)
{
	bool bw = iv->flags & HVT_IV_BANDWIDTH, split = bw && !(iv->flags & HVT_IV_BW_TOTAL);
	struct json_object *chans = bw ? json_object_new_array() : NULL;
	uint64_t rd = 0, wr = 0;

	for (uint32_t i = 0; bw && i < iv->nchannels; i++) {
		const struct hvt_channel_bytes *ch = &iv->channels[i];
		struct json_object *c = json_object_new_object();

		rd += ch->read_bytes;
		wr += ch->write_bytes;
		json_object_object_add(c, "channel", json_object_new_uint64(ch->channel));
		json_object_object_add(c, "read_bytes", opt_u64(split, ch->read_bytes));
		json_object_object_add(c, "write_bytes", opt_u64(split, ch->write_bytes));
		json_object_object_add(c, "total_bytes",
				       json_object_new_uint64(ch->read_bytes + ch->write_bytes));
		json_object_array_add(chans, c);
	}
	json_object_object_add(o, "read_bytes", opt_u64(split, rd));
	json_object_object_add(o, "write_bytes", opt_u64(split, wr));
	json_object_object_add(o, "total_bytes", opt_u64(bw, rd + wr));
	json_object_object_add(o, "channels", chans);
}

struct json_object *hvt_interval_to_json(const struct hvt_interval *iv, const struct hvt_layout *l,
					 const struct hvt_json_opts *opts)
{
	struct json_object *o = json_object_new_object();
	char wall[64];

	hvt_format_wall(iv->wall_start_ns, wall, sizeof(wall));
	json_object_object_add(o, "seq", json_object_new_uint64(iv->seq));
	json_object_object_add(o, "t_start_ns", json_object_new_uint64(iv->t_start_ns));
	json_object_object_add(o, "t_end_ns", json_object_new_uint64(iv->t_end_ns));
	json_object_object_add(o, "duration_s",
			       json_object_new_double((iv->t_end_ns - iv->t_start_ns) / 1e9));
	json_object_object_add(o, "wall_start", json_object_new_string(wall));
	json_object_object_add(o, "generation", json_object_new_uint64(iv->generation));
	json_object_object_add(o, "missed_deadlines", json_object_new_uint64(iv->missed_deadlines));
	json_object_object_add(o, "final", json_object_new_boolean(!!(iv->flags & HVT_IV_FINAL)));
	json_object_object_add(o, "harvest_us", json_object_new_double(iv->harvest_ns / 1e3));
	json_object_object_add(o, "lost_pages", json_object_new_uint64(iv->lost_pages));
	json_object_object_add(o, "tracer_cpu_us",
			       iv->flags & HVT_IV_TRACER_CPU ? json_object_new_double(iv->tracer_cpu_ns / 1e3)
							     : NULL);
	json_object_object_add(o, "tracer_busy", json_object_new_boolean(!!(iv->flags & HVT_IV_TRACER_BUSY)));
	json_object_object_add(o, "layout_refused",
			       json_object_new_boolean(!!(iv->flags & HVT_IV_LAYOUT_REFUSED)));

	add_set(o, "written", (iv->flags & HVT_IV_WRITTEN) ? iv->written : NULL, l, opts);
	add_set(o, "accessed", (iv->flags & HVT_IV_ACCESSED) ? iv->accessed : NULL, l, opts);
	json_object_object_add(o, "written_not_accessed",
			       opt_u64(iv->flags & HVT_IV_WNA_COUNTED, iv->written_not_accessed));

	add_bandwidth(o, iv);
	return o;
}

int hvt_jsonl_write(FILE *f, const struct hvt_interval *iv, const struct hvt_layout *l,
		    const struct hvt_json_opts *opts)
{
	struct json_object *o = hvt_interval_to_json(iv, l, opts);
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	int rc = 0;

	if (fputs(s, f) == EOF || fputc('\n', f) == EOF || fflush(f) == EOF)
		rc = -errno;
	json_object_put(o);
	return rc;
}
