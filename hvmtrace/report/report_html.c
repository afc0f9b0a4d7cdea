// SPDX-License-Identifier: MIT
/*
 * hvmtrace report --html FILE: one self-contained HTML file (docs/plots.md, "The HTML report"): the page
 * and its script (hvmtrace/report/report_page.html, hvmtrace/report/report_view.js, built into the program),
 * the trace's metadata and per-interval series as JSON, and the pages as tiles.
 *
 * The page covers the selection (select.h), as report's other outputs do. Tiles: the selected guest RAM
 * (with the small holes between its slots; gaps at least 1/16 as wide as the RAM, such as the PCI hole, left
 * out: gfn_bins.h, as plot heatmap cuts it) is cut into segments and those into cells of `cell_pages` pages
 * (a power of two, so that there are at most about 3 × 2^16 cells: page resolution up to 768 MiB), the
 * selected intervals into blocks of `block` intervals (so that cells × blocks stays under 8 Mi per set). Each
 * tile holds the page-intervals written (and accessed) in its cell and block: the view sums tiles for any
 * block-aligned time range without the trace. They are little-endian u16 (u32 when a count could exceed
 * 65535), gzip'd, base64.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hvmtrace/json_number.h"
#include "hvmtrace/gfn_bins.h"
#include "hvmtrace/trace_input.h"
#include "hvmtrace/trace_series.h"
#include "report_html.h"
#include "report_html_owners.h"

#define MAX_CELLS       (3u << 16)
#define MAX_TILE_VALUES (8u << 20)

extern const char hvt_report_page[], hvt_report_page_end[];
extern const char hvt_report_view[], hvt_report_view_end[];

struct tiles {
	struct hvt_gfn_bins cells; /* gaps have none */
	uint64_t block, nblocks;
	uint32_t *w, *a;            /* [block][cell] */
	struct html_owners *owners; /* --by, else NULL */
};

static int tile_interval(void *ctx, const struct trace_series *s, const struct hvt_iv_runs *ir,
			 const struct hvt_layout *l, uint64_t i)
{
	struct tiles *t = ctx;
	uint64_t b = i / t->block;

	(void)l;
	(void)s;
	if (b >= t->nblocks)
		return 0;
	if (t->owners) {
		int rc = html_owners_interval(t->owners, ir);

		if (rc)
			return rc;
	}
	if (ir->hdr.flags & HVT_IV_WRITTEN)
		hvt_gfn_bins_add(&t->cells, &ir->set[0], t->w + b * t->cells.nbins);
	if (ir->hdr.flags & HVT_IV_ACCESSED)
		hvt_gfn_bins_add(&t->cells, &ir->set[1], t->a + b * t->cells.nbins);
	return 0;
}

/* The selected RAM in segments, large gaps left out; then the cell size, a power of two. */
static void segment(struct tiles *t, const struct trace_series *s)
{
	uint64_t cell_pages = 1;

	hvt_gfn_bins_segment(&t->cells, s->slots, s->nslots, s->gfn_first, s->gfn_end);
	while ((t->cells.scale_pages + cell_pages - 1) / cell_pages > MAX_CELLS)
		cell_pages *= 2;
	hvt_gfn_bins_size(&t->cells, cell_pages, 0);
}

static struct json_object *u64_array(uint64_t n, const uint64_t *v, size_t stride, const bool *have)
{
	struct json_object *a = json_object_new_array_ext((int)n);

	for (uint64_t i = 0; i < n; i++)
		json_object_array_add(
		    a, have && !have[i]
			   ? NULL
			   : json_object_new_uint64(*(const uint64_t *)((const char *)v + i * stride)));
	return a;
}

static struct json_object *double_array(uint64_t n, const double *v, size_t stride)
{
	struct json_object *a = json_object_new_array_ext((int)n);

	for (uint64_t i = 0; i < n; i++)
		json_object_array_add(a,
				      hvt_json_new_double(*(const double *)((const char *)v + i * stride)));
	return a;
}

/* The per-interval series: seq, times, pages, bytes summed over channels (null where not available). */
static struct json_object *series_json(const struct trace_series *s)
{
	struct json_object *o = json_object_new_object();
	uint64_t n = s->niv, *rd = calloc(n, 8), *wr = calloc(n, 8);
	bool *hw = calloc(n, 1), *ha = calloc(n, 1), *hb = calloc(n, 1), *hs = calloc(n, 1);

	for (uint64_t i = 0; i < n; i++) {
		hw[i] = s->iv[i].flags & HVT_IV_WRITTEN;
		ha[i] = s->iv[i].flags & HVT_IV_ACCESSED;
		hb[i] = s->iv[i].flags & HVT_IV_BANDWIDTH;
		hs[i] = hb[i] && !s->bw_total;
		for (uint32_t c = 0; c < s->nchannels; c++) {
			rd[i] += s->read[i * s->nchannels + c];
			wr[i] += s->write[i * s->nchannels + c];
		}
	}
	json_object_object_add(o, "seq", u64_array(n, &s->iv[0].seq, sizeof(s->iv[0]), NULL));
	json_object_object_add(o, "t0", double_array(n, &s->iv[0].t0, sizeof(s->iv[0])));
	json_object_object_add(o, "t1", double_array(n, &s->iv[0].t1, sizeof(s->iv[0])));
	json_object_object_add(o, "written", u64_array(n, &s->iv[0].written, sizeof(s->iv[0]), hw));
	json_object_object_add(o, "accessed", u64_array(n, &s->iv[0].accessed, sizeof(s->iv[0]), ha));
	/* read holds the total where the source does not split reads and writes */
	json_object_object_add(o, "read_bytes", u64_array(n, rd, 8, hb));
	json_object_object_add(o, "write_bytes", u64_array(n, wr, 8, hs));
	free(rd);
	free(wr);
	free(hw);
	free(ha);
	free(hb);
	free(hs);
	return o;
}

/* Slots (cut to the range), and the host channel of every devmem extent, in GFNs. */
static void layout_json(struct json_object *o, const struct trace_series *s)
{
	struct json_object *slots = json_object_new_array(), *ext = json_object_new_array();
	struct hvt_trace_status st;

	for (uint32_t i = 0; i < s->nslots; i++) {
		uint64_t first = s->slots[i].first > s->gfn_first ? s->slots[i].first : s->gfn_first;
		uint64_t end = s->slots[i].end < s->gfn_end ? s->slots[i].end : s->gfn_end;
		struct json_object *x;

		if (first >= end)
			continue;
		x = json_object_new_object();
		json_object_object_add(x, "first", json_object_new_uint64(first));
		json_object_object_add(x, "end", json_object_new_uint64(end));
		json_object_object_add(x, "name", json_object_new_string(s->slots[i].name));
		json_object_array_add(slots, x);
	}
	hvt_trace_get_status(s->r, &st);
	for (uint64_t k = 0; k < st.layouts; k++) {
		const struct hvt_layout *l = hvt_trace_layout_at(s->r, k);

		for (uint32_t i = 0; i < l->nslots; i++)
			for (uint32_t e = 0; e < l->slots[i].nextents; e++) {
				const struct hvt_extent *x = &l->slots[i].extents[e];
				struct json_object *j;

				if (!x->channel[0])
					continue;
				j = json_object_new_object();
				json_object_object_add(j, "first",
						       json_object_new_uint64(x->gpa / l->page_size));
				json_object_object_add(
				    j, "end", json_object_new_uint64((x->gpa + x->size) / l->page_size));
				json_object_object_add(j, "channel", json_object_new_string(x->channel));
				json_object_array_add(ext, j);
			}
	}
	json_object_object_add(o, "slots", slots);
	json_object_object_add(o, "extents", ext);
}

static struct json_object *meta_json(const struct trace_series *s, const struct tiles *t, unsigned tile_bytes)
{
	struct json_object *o = json_object_new_object(), *ch = json_object_new_array();
	const struct hvt_trace_meta *m = s->meta;
	const char *slash = strrchr(s->path, '/');

	json_object_object_add(o, "trace", json_object_new_string(slash ? slash + 1 : s->path));
	json_object_object_add(o, "incomplete", json_object_new_boolean(s->incomplete));
	json_object_object_add(o, "vm", json_object_new_string(m->vm_name));
	json_object_object_add(o, "vmm", json_object_new_string(m->vm_vmm));
	json_object_object_add(o, "accel", json_object_new_string(m->vm_accel));
	json_object_object_add(o, "mode", json_object_new_string(hvt_mode_name(m->mode)));
	json_object_object_add(o, "interval_ns", json_object_new_uint64(m->interval_ns));
	json_object_object_add(o, "page_size", json_object_new_uint64(s->page_size));
	json_object_object_add(o, "accessed_available", json_object_new_boolean(m->accessed_available));
	json_object_object_add(o, "bandwidth",
			       json_object_new_string(!s->bandwidth ? "none"
						      : s->bw_total ? "total"
								    : "split"));
	json_object_object_add(
	    o, "bandwidth_source",
	    json_object_new_string(s->bandwidth ? hvt_bw_source_name(m->bandwidth_source) : ""));
	for (uint32_t i = 0; i < s->nchannels; i++)
		json_object_array_add(ch, json_object_new_string(m->channels.v[i].id));
	json_object_object_add(o, "channels", ch);
	json_object_object_add(o, "gfn_first", json_object_new_uint64(s->gfn_first));
	json_object_object_add(o, "gfn_end", json_object_new_uint64(s->gfn_end));
	layout_json(o, s);
	struct json_object *segs = json_object_new_array();

	for (unsigned i = 0; i < t->cells.nseg; i++) {
		const struct hvt_bin_seg *g = &t->cells.seg[i];
		struct json_object *a;

		if (g->gap)
			continue;
		a = json_object_new_array();
		json_object_array_add(a, json_object_new_uint64(g->first));
		json_object_array_add(a, json_object_new_uint64(g->end));
		json_object_array_add(a, json_object_new_uint64(g->bin0));
		json_object_array_add(segs, a);
	}
	json_object_object_add(o, "segments", segs);
	json_object_object_add(o, "cell_pages", json_object_new_uint64(t->cells.pages_per_bin));
	json_object_object_add(o, "ncells", json_object_new_uint64(t->cells.nbins));
	json_object_object_add(o, "block", json_object_new_uint64(t->block));
	json_object_object_add(o, "nblocks", json_object_new_uint64(t->nblocks));
	json_object_object_add(o, "tile_bytes", json_object_new_int((int)tile_bytes));
	json_object_object_add(o, "intervals", series_json(s));
	return o;
}

/* The tiles as one little-endian array (w, then a when accessed sets exist), gzip'd. */
static int pack_tiles(const struct tiles *t, bool accessed, unsigned *tile_bytes, unsigned char **out,
		      size_t *outlen)
{
	uint64_t n = t->nblocks * t->cells.nbins, sets = accessed ? 2 : 1;
	uint32_t max = 0;
	unsigned char *raw;
	size_t rawlen;
	z_stream z = {0};
	int rc;

	for (uint64_t i = 0; i < n; i++) {
		max = t->w[i] > max ? t->w[i] : max;
		max = accessed && t->a[i] > max ? t->a[i] : max;
	}
	*tile_bytes = max > 65535 ? 4 : 2;
	rawlen = n * sets * *tile_bytes;
	raw = malloc(rawlen);
	if (!raw)
		return -1;
	for (uint64_t k = 0; k < sets; k++)
		for (uint64_t i = 0; i < n; i++) {
			uint32_t v = (k ? t->a : t->w)[i];
			unsigned char *p = raw + (k * n + i) * *tile_bytes;

			p[0] = v;
			p[1] = v >> 8;
			if (*tile_bytes == 4) {
				p[2] = v >> 16;
				p[3] = v >> 24;
			}
		}
	*outlen = compressBound(rawlen) + 64;
	*out = malloc(*outlen);
	if (!*out || deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(raw);
		return -1;
	}
	z.next_in = raw;
	z.avail_in = rawlen;
	z.next_out = *out;
	z.avail_out = *outlen;
	rc = deflate(&z, Z_FINISH);
	*outlen = z.total_out;
	deflateEnd(&z);
	free(raw);
	return rc == Z_STREAM_END ? 0 : -1;
}

static void base64(FILE *f, const unsigned char *p, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char line[4 * 1024 + 2];
	size_t k = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = p[i] << 16 | (i + 1 < n ? p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);

		line[k++] = tab[v >> 18];
		line[k++] = tab[(v >> 12) & 63];
		line[k++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		line[k++] = i + 2 < n ? tab[v & 63] : '=';
		if (k == sizeof(line) - 2) {
			fwrite(line, 1, k, f);
			k = 0;
		}
	}
	fwrite(line, 1, k, f);
}

int report_html(const char *trace, const struct hvt_selection *sel, const char *out,
		const struct report_html_owners *by)
{
	struct trace_series s;
	struct tiles t = {0};
	unsigned char *gz = NULL;
	size_t gzlen = 0;
	unsigned tile_bytes;
	uint64_t niv, ncells;
	struct json_object *meta;
	FILE *f = fopen(out, "we");
	int rc;

	if (!f) {
		fprintf(stderr, "hvmtrace report: cannot create %s: %s\n", out, strerror(errno));
		return TRACE_USAGE;
	}
	rc = trace_series_open(&s, "report", trace, sel);
	if (rc)
		goto fail;
	if (by && by->by && !(t.owners = html_owners_open(&s, by->by, by->file, by->snapshot))) {
		rc = TRACE_USAGE;
		goto fail;
	}
	niv = trace_series_count(&s, sel);
	segment(&t, &s);
	ncells = t.cells.nbins;
	t.block = (ncells * niv + MAX_TILE_VALUES - 1) / MAX_TILE_VALUES;
	t.block = t.block ? t.block : 1;
	t.nblocks = (niv + t.block - 1) / t.block;
	t.w = calloc(t.nblocks ? t.nblocks * ncells : 1, sizeof(uint32_t));
	t.a = calloc(t.nblocks ? t.nblocks * ncells : 1, sizeof(uint32_t));
	if (!t.w || !t.a) {
		fprintf(stderr, "hvmtrace report: out of memory for %" PRIu64 " tiles\n", t.nblocks * ncells);
		rc = TRACE_OUTPUT_FAILED;
		goto fail;
	}
	rc = trace_series_walk(&s, sel, tile_interval, &t);
	if (rc && rc != TRACE_INCOMPLETE)
		goto fail;
	t.nblocks = (s.niv + t.block - 1) / t.block; /* a torn trace has fewer */
	if (pack_tiles(&t, s.meta->accessed_available, &tile_bytes, &gz, &gzlen)) {
		fprintf(stderr, "hvmtrace report: out of memory packing the tiles\n");
		rc = TRACE_OUTPUT_FAILED;
		goto fail;
	}
	meta = meta_json(&s, &t, tile_bytes);
	if (t.owners) {
		struct json_object *own = html_owners_json(t.owners, &s, &t.cells);

		if (!own) {
			json_object_put(meta);
			rc = TRACE_OUTPUT_FAILED;
			goto fail;
		}
		json_object_object_add(meta, "owners", own);
	}
	fwrite(hvt_report_page, 1, hvt_report_page_end - hvt_report_page, f);
	fprintf(f, "<script id=\"hvt-meta\" type=\"application/json\">%s</script>\n",
		json_object_to_json_string_ext(meta, JSON_C_TO_STRING_PLAIN));
	json_object_put(meta);
	fputs("<script id=\"hvt-tiles\" type=\"application/octet-stream\">", f);
	base64(f, gz, gzlen);
	fputs("</script>\n<script>\n", f);
	fwrite(hvt_report_view, 1, hvt_report_view_end - hvt_report_view, f);
	fputs("</script>\n</body>\n</html>\n", f);
	if (fclose(f)) {
		f = NULL;
		fprintf(stderr, "hvmtrace report: writing %s: %s\n", out, strerror(errno));
		rc = TRACE_OUTPUT_FAILED;
		goto fail;
	}
	printf("hvmtrace report: wrote %s: %" PRIu64 " intervals; %" PRIu64 " cells of %" PRIu64
	       " page%s, blocks of %" PRIu64 " interval%s\n",
	       out, s.niv, t.cells.nbins, t.cells.pages_per_bin, t.cells.pages_per_bin == 1 ? "" : "s",
	       t.block, t.block == 1 ? "" : "s");
	free(gz);
	free(t.w);
	free(t.a);
	html_owners_free(t.owners);
	trace_series_fini(&s);
	return rc;
fail:
	if (f)
		fclose(f);
	remove(out);
	free(gz);
	free(t.w);
	free(t.a);
	html_owners_free(t.owners);
	trace_series_fini(&s);
	return rc;
}
