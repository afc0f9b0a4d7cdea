/* SPDX-License-Identifier: MIT */
/*
 * Internal to libhvmtrace: the intervals of a trace read, selected, decoded into runs and cut to the GFN
 * range on a thread of their own, a few ahead of the walk's caller (select_walk.c): report's sweep, the
 * pictures, export, which then overlap decoding (about a fifth of a report's time) with their own work. The
 * items come in the trace's order, one per interval read, ending with the first that is not
 * HVT_AHEAD_SELECTED or HVT_AHEAD_SKIPPED. The reader belongs to the thread until hvt_ahead_stop.
 */
#ifndef HVMTRACE_LIB_SELECT_AHEAD_H
#define HVMTRACE_LIB_SELECT_AHEAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hvmtrace/error.h"
#include "hvmtrace/select.h"
#include "hvmtrace/trace_runs.h"

struct hvt_selection;

#define HVT_AHEAD_SLOTS 4

enum hvt_ahead_kind {
	HVT_AHEAD_SELECTED, /* decoded into ir, cut into view (unless the walk only counts) */
	HVT_AHEAD_SKIPPED,  /* before the selection */
	HVT_AHEAD_PAST,     /* past the selection: the last item */
	HVT_AHEAD_ERROR,    /* rc and err: the last item */
	HVT_AHEAD_END,      /* no more intervals: the last item */
};

struct hvt_ahead_item {
	enum hvt_ahead_kind kind;
	uint64_t index; /* 0-based interval in the trace */
	bool parsed;    /* seq, t_start and t_end are the interval's (every kind but a read error) */
	uint64_t seq, ts_ns, te_ns; /* as recorded */
	const struct hvt_layout *layout;
	struct hvt_iv_runs ir;
	struct hvt_runs cut[2];  /* room for ir's sets cut to the range, where they leave it */
	struct hvt_iv_runs view; /* ir with its sets cut: borrows ir's and cut's arrays */
	int rc;
	struct hvt_err err;
};

/*
 * Work done on the reading thread with each selected interval once it is cut, before its item is handed on
 * (the loader's second half of the sweep): 0, or -errno with err set, which makes the item an error.
 */
typedef int (*hvt_ahead_early_fn)(void *ctx, const struct hvt_iv_runs *view, struct hvt_err *err);

struct hvt_ahead {
	struct hvt_trace_reader *r;
	hvt_ahead_early_fn early; /* NULL: none */
	void *early_ctx;
	const struct hvt_selection *sel;
	uint64_t gfn_first, gfn_end; /* the range the runs are cut to */
	bool decode;                 /* false: only select, for a count */
	uint64_t total;
	struct hvt_ahead_item slot[HVT_AHEAD_SLOTS];
	uint64_t produced, taken, released; /* items */
	bool stop, started;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	pthread_t thread;
};

/* Starts reading the total intervals of r that sel selects, decoded (if decode) with their runs cut to GFNs
 * [first, end), early (if not NULL) called on the thread with each selected one: 0, or -errno with err set.
 */
int hvt_ahead_start(struct hvt_ahead *q, struct hvt_trace_reader *r, const struct hvt_selection *sel,
		    uint64_t first, uint64_t end, bool decode, uint64_t total, hvt_ahead_early_fn early,
		    void *early_ctx, struct hvt_err *err);

/* hvt_select_walk with early called on the reading thread with each selected interval, in order, before fn
 * is with it (an error of early ends the walk as a damaged interval would, with its rc and message). */
int hvt_select_walk_early(struct hvt_trace_reader *r, const struct hvt_selection *sel, uint64_t first,
			  uint64_t end, hvt_ahead_early_fn early, void *early_ctx, hvt_walk_fn fn, void *ctx,
			  struct hvt_walk_end *out, struct hvt_err *err);
/* The next item, valid until the next call; after the last item, that one again. */
const struct hvt_ahead_item *hvt_ahead_next(struct hvt_ahead *q);
/* Stops the thread (it may be ahead) and frees the items. */
void hvt_ahead_stop(struct hvt_ahead *q);

/* The seq, start and end of interval i of r as recorded, from its payload's head (nothing decoded): 0, or
 * -errno when it cannot be read. Not while a walk owns r. */
int hvt_ahead_read_head(struct hvt_trace_reader *r, uint64_t i, uint64_t *seq, uint64_t *ts_ns,
			uint64_t *te_ns);

#endif
