// SPDX-License-Identifier: MIT
/*
 * The attach protocol's messages as JSON (include/hvmtrace/attach.h lists every field). Every documented
 * member is required except "bye"'s "reason"; unknown members are ignored so later versions can add some.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "attach_json.h"
#include "hvmtrace/attach.h"
#include "hvmtrace/error.h"
#include "hvmtrace/json_read.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/tracking_mode.h"

static const char *const type_names[] = {
    [HVT_MSG_HELLO] = "hello",   [HVT_MSG_ATTACH] = "attach",   [HVT_MSG_ATTACHED] = "attached",
    [HVT_MSG_LAYOUT] = "layout", [HVT_MSG_HARVEST] = "harvest", [HVT_MSG_HARVESTED] = "harvested",
    [HVT_MSG_BYE] = "bye",       [HVT_MSG_ERROR] = "error",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const char *hvt_msg_type_name(enum hvt_msg_type t)
{
	if ((unsigned)t < NELEM(type_names) && type_names[t])
		return type_names[t];
	return "unknown";
}

static enum hvt_msg_type type_from_name(const char *name)
{
	for (unsigned i = 1; i < NELEM(type_names); i++)
		if (!strcmp(name, type_names[i]))
			return (enum hvt_msg_type)i;
	return 0;
}

void hvt_msg_fini(struct hvt_msg *m)
{
	if (!m)
		return;
	if (m->type == HVT_MSG_HELLO)
		hvt_layout_fini(&m->u.hello.layout);
	else if (m->type == HVT_MSG_LAYOUT)
		hvt_layout_fini(&m->u.layout.layout);
	for (int i = 0; i < m->nfds && i < HVT_ATTACH_MAX_FDS; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	m->nfds = 0;
	m->type = 0;
}

/* ---- struct -> JSON ---- */

static void put_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static void put_i64(struct json_object *o, const char *k, int64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v));
}

static void put_str(struct json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v));
}

/* The protocol's bound on guest RAM, checked on both ends: a VMM cannot make a tracer map and lock bitmaps
 * of any size it likes. Slots are validated (non-overlapping) first, so the sum cannot wrap. */
static int check_guest_bytes(const char *type, const struct hvt_layout *l, struct hvt_err *err)
{
	uint64_t bytes = 0;

	for (uint32_t i = 0; i < l->nslots; i++) {
		if (l->slots[i].size > HVT_ATTACH_MAX_GUEST_BYTES - bytes)
			return hvt_err_set(
			    err, -EPROTO,
			    "%s message: slot %" PRIu32 " (%" PRIu64
			    " bytes) takes the layout's guest RAM past the attach protocol's bound of %llu bytes (16 TiB)",
			    type, l->slots[i].slot, l->slots[i].size, HVT_ATTACH_MAX_GUEST_BYTES);
		bytes += l->slots[i].size;
	}
	return 0;
}

static void hello_to_json(struct json_object *o, const struct hvt_msg_hello *h)
{
	struct json_object *vm = json_object_new_object(), *modes = json_object_new_array(),
			   *tids = json_object_new_array();

	put_u64(o, "protocol", h->protocol);
	put_str(o, "vmm", h->vmm);
	put_str(vm, "name", h->vm_name);
	put_str(vm, "uuid", h->vm_uuid);
	put_i64(vm, "pid", h->vm_pid);
	json_object_object_add(o, "vm", vm);
	put_str(o, "accel", h->accel);
	put_u64(o, "page_size", h->page_size);
	for (unsigned m = 1; m < HVT_MODE_NMODES; m++)
		if (h->modes & HVT_MODE_BIT(m))
			json_object_array_add(modes, json_object_new_string(hvt_mode_name((enum hvt_mode)m)));
	json_object_object_add(o, "modes", modes);
	put_i64(o, "default_cpu", h->default_cpu);
	for (uint32_t i = 0; i < h->nvcpu_tids && i < HVT_ATTACH_MAX_VCPUS; i++)
		json_object_array_add(tids, json_object_new_int64(h->vcpu_tids[i]));
	json_object_object_add(o, "vcpu_tids", tids);
	json_object_object_add(o, "layout", hvt_layout_to_json(&h->layout));
}

struct json_object *hvt_attach_msg_to_json(const struct hvt_msg *m, int *rc, struct hvt_err *err)
{
	const char *type = hvt_msg_type_name(m->type);
	struct json_object *o;

	*rc = 0;
	if (!strcmp(type, "unknown")) {
		*rc = hvt_err_set(err, -EINVAL, "cannot send a message of unknown type %d", (int)m->type);
		return NULL;
	}
	if (m->type == HVT_MSG_HELLO || m->type == HVT_MSG_LAYOUT) {
		const struct hvt_layout *l =
		    m->type == HVT_MSG_HELLO ? &m->u.hello.layout : &m->u.layout.layout;

		*rc = hvt_layout_validate(l, err);
		if (*rc) {
			hvt_err_prefix(err, *rc, "%s: invalid layout: ", type);
			return NULL;
		}
		*rc = check_guest_bytes(type, l, err);
		if (*rc)
			return NULL;
	}
	o = json_object_new_object();
	put_str(o, "type", type);
	switch (m->type) {
	case HVT_MSG_HELLO:
		hello_to_json(o, &m->u.hello);
		break;
	case HVT_MSG_ATTACH: {
		const struct hvt_msg_attach *a = &m->u.attach;
		struct json_object *t = json_object_new_object();

		put_u64(o, "protocol", a->protocol);
		put_str(o, "mode", hvt_mode_name(a->mode));
		put_i64(o, "cpu", a->cpu);
		put_str(t, "name", a->tracer);
		put_i64(t, "pid", a->tracer_pid);
		json_object_object_add(o, "tracer", t);
		break;
	}
	case HVT_MSG_ATTACHED: {
		const struct hvt_msg_attached *a = &m->u.attached;

		put_str(o, "mode", hvt_mode_name(a->mode));
		put_i64(o, "cpu", a->cpu);
		put_u64(o, "generation", a->generation);
		put_u64(o, "t_armed_ns", a->t_armed_ns);
		put_u64(o, "bitmap_bytes", a->bitmap_bytes);
		break;
	}
	case HVT_MSG_LAYOUT:
		json_object_object_add(o, "layout", hvt_layout_to_json(&m->u.layout.layout));
		put_u64(o, "bitmap_bytes", m->u.layout.bitmap_bytes);
		break;
	case HVT_MSG_HARVEST:
		put_u64(o, "seq", m->u.harvest.seq);
		break;
	case HVT_MSG_HARVESTED: {
		const struct hvt_msg_harvested *h = &m->u.harvested;

		put_u64(o, "seq", h->seq);
		put_u64(o, "generation", h->generation);
		put_u64(o, "t_start_ns", h->t_start_ns);
		put_u64(o, "t_end_ns", h->t_end_ns);
		put_u64(o, "t_done_ns", h->t_done_ns);
		put_u64(o, "dirty_pages", h->dirty_pages);
		put_u64(o, "lost_pages", h->lost_pages);
		json_object_object_add(o, "final", json_object_new_boolean(h->final));
		if (h->listed) /* dirty-ring only: older tracers and VMMs neither send nor read them */
			json_object_object_add(o, "listed", json_object_new_boolean(true));
		if (h->ring_full)
			put_u64(o, "ring_full", h->ring_full);
		break;
	}
	case HVT_MSG_BYE:
		put_str(o, "reason", m->u.bye.reason);
		break;
	case HVT_MSG_ERROR:
		put_str(o, "code", m->u.error.code);
		put_str(o, "message", m->u.error.message);
		break;
	}
	return o;
}

/* ---- JSON -> struct ---- */

/* The readers below read a message through in, which names it ("harvest message") and refuses with -EPROTO.
 */

static int get_mode(const struct hvt_json_in *in, enum hvt_mode *mode, bool must_know)
{
	char name[32];
	int rc = hvt_json_strbuf(in, "mode", name, sizeof(name), true);

	if (rc)
		return rc;
	*mode = hvt_mode_from_name(name);
	if (*mode == HVT_MODE_NONE && must_know)
		return hvt_err_set(in->err, -EPROTO, "%s: unknown mode \"%s\"", in->where, name);
	return 0;
}

/* type: the message type's name, for check_guest_bytes */
static int get_layout(const struct hvt_json_in *in, const char *type, struct hvt_layout *l)
{
	struct hvt_json_in lo;
	int rc = hvt_json_object(in, "layout", &lo);

	if (rc)
		return rc;
	rc = hvt_layout_from_json(l, lo.o, in->err);
	if (rc)
		return hvt_err_prefix(in->err, rc == -ENOMEM ? rc : -EPROTO, "%s: ", in->where);
	if (l->generation == 0) {
		hvt_layout_fini(l);
		return hvt_err_set(in->err, -EPROTO, "%s: layout generation 0 (generations start at 1)",
				   in->where);
	}
	if ((rc = check_guest_bytes(type, l, in->err)))
		hvt_layout_fini(l);
	return rc;
}

static int hello_from_json(const struct hvt_json_in *in, struct hvt_msg_hello *h)
{
	struct hvt_json_in vm, modes, tids;
	size_t n;
	int rc;

	if ((rc = hvt_json_u32(in, "protocol", 0, UINT32_MAX, &h->protocol)) ||
	    (rc = hvt_json_strbuf(in, "vmm", h->vmm, sizeof(h->vmm), true)) ||
	    (rc = hvt_json_object(in, "vm", &vm)) ||
	    (rc = hvt_json_strbuf(&vm, "name", h->vm_name, sizeof(h->vm_name), false)) ||
	    (rc = hvt_json_strbuf(&vm, "uuid", h->vm_uuid, sizeof(h->vm_uuid), false)) ||
	    (rc = hvt_json_i32(&vm, "pid", 0, INT32_MAX, &h->vm_pid)) ||
	    (rc = hvt_json_strbuf(in, "accel", h->accel, sizeof(h->accel), false)) ||
	    (rc = hvt_json_u32(in, "page_size", 0, UINT32_MAX, &h->page_size)) ||
	    (rc = hvt_json_i32(in, "default_cpu", -1, INT32_MAX, &h->default_cpu)) ||
	    (rc = hvt_json_array(in, "modes", SIZE_MAX, &modes, &n)))
		return rc;
	h->modes = 0;
	for (size_t i = 0; i < n; i++) {
		const char *name;

		if ((rc = hvt_json_item_str(&modes, i, SIZE_MAX, &name)))
			return rc;
		/* Modes this tracer does not know are not offered to it. */
		enum hvt_mode m = hvt_mode_from_name(name);
		if (m != HVT_MODE_NONE)
			h->modes |= HVT_MODE_BIT(m);
	}
	if ((rc = hvt_json_array(in, "vcpu_tids", HVT_ATTACH_MAX_VCPUS, &tids, &n)))
		return rc;
	h->nvcpu_tids = (uint32_t)n;
	for (uint32_t i = 0; i < h->nvcpu_tids; i++) {
		uint64_t tid;

		if ((rc = hvt_json_item_uint(&tids, i, 1, INT32_MAX, &tid)))
			return rc;
		h->vcpu_tids[i] = (int32_t)tid;
	}
	if ((rc = get_layout(in, "hello", &h->layout)))
		return rc;
	if (h->layout.page_size != h->page_size) {
		hvt_layout_fini(&h->layout);
		return hvt_err_set(in->err, -EPROTO,
				   "hello message: page_size %" PRIu32 " differs from the layout's %" PRIu32,
				   h->page_size, h->layout.page_size);
	}
	return 0;
}

static int attach_from_json(const struct hvt_json_in *in, struct hvt_msg_attach *a)
{
	struct hvt_json_in t;
	int rc;

	if ((rc = hvt_json_u32(in, "protocol", 0, UINT32_MAX, &a->protocol)) ||
	    (rc = get_mode(in, &a->mode, false)) || (rc = hvt_json_i32(in, "cpu", -1, INT32_MAX, &a->cpu)) ||
	    (rc = hvt_json_object(in, "tracer", &t)) ||
	    (rc = hvt_json_strbuf(&t, "name", a->tracer, sizeof(a->tracer), true)) ||
	    (rc = hvt_json_i32(&t, "pid", 0, INT32_MAX, &a->tracer_pid)))
		return rc;
	return 0;
}

static int harvested_from_json(const struct hvt_json_in *in, struct hvt_msg_harvested *h)
{
	int rc;

	if ((rc = hvt_json_uint(in, "seq", 0, UINT64_MAX, &h->seq)) ||
	    (rc = hvt_json_uint(in, "generation", 0, UINT64_MAX, &h->generation)) ||
	    (rc = hvt_json_uint(in, "t_start_ns", 0, UINT64_MAX, &h->t_start_ns)) ||
	    (rc = hvt_json_uint(in, "t_end_ns", 0, UINT64_MAX, &h->t_end_ns)) ||
	    (rc = hvt_json_uint(in, "t_done_ns", 0, UINT64_MAX, &h->t_done_ns)) ||
	    (rc = hvt_json_uint(in, "dirty_pages", 0, UINT64_MAX, &h->dirty_pages)) ||
	    (rc = hvt_json_uint(in, "lost_pages", 0, UINT64_MAX, &h->lost_pages)) ||
	    (rc = HVT_JSON_OPT(hvt_json_bool, in, "listed", &h->listed)) ||
	    (rc = HVT_JSON_OPT(hvt_json_uint, in, "ring_full", 0, UINT64_MAX, &h->ring_full)))
		return rc;
	return hvt_json_bool(in, "final", &h->final);
}

static int fields_from_json(struct hvt_msg *m, const struct hvt_json_in *in)
{
	int rc;

	switch (m->type) {
	case HVT_MSG_HELLO:
		return hello_from_json(in, &m->u.hello);
	case HVT_MSG_ATTACH:
		return attach_from_json(in, &m->u.attach);
	case HVT_MSG_ATTACHED: {
		struct hvt_msg_attached *a = &m->u.attached;

		if ((rc = get_mode(in, &a->mode, true)) ||
		    (rc = hvt_json_i32(in, "cpu", -1, INT32_MAX, &a->cpu)) ||
		    (rc = hvt_json_uint(in, "generation", 0, UINT64_MAX, &a->generation)) ||
		    (rc = hvt_json_uint(in, "t_armed_ns", 0, UINT64_MAX, &a->t_armed_ns)))
			return rc;
		return hvt_json_uint(in, "bitmap_bytes", 0, UINT64_MAX, &a->bitmap_bytes);
	}
	case HVT_MSG_LAYOUT:
		if ((rc = hvt_json_uint(in, "bitmap_bytes", 0, UINT64_MAX, &m->u.layout.bitmap_bytes)))
			return rc;
		return get_layout(in, "layout", &m->u.layout.layout);
	case HVT_MSG_HARVEST:
		return hvt_json_uint(in, "seq", 0, UINT64_MAX, &m->u.harvest.seq);
	case HVT_MSG_HARVESTED:
		return harvested_from_json(in, &m->u.harvested);
	case HVT_MSG_BYE:
		m->u.bye.reason[0] = '\0';
		return HVT_JSON_OPT(hvt_json_strbuf, in, "reason", m->u.bye.reason, sizeof(m->u.bye.reason),
				    true);
	case HVT_MSG_ERROR:
		if ((rc = hvt_json_strbuf(in, "code", m->u.error.code, sizeof(m->u.error.code), false)))
			return rc;
		return hvt_json_strbuf(in, "message", m->u.error.message, sizeof(m->u.error.message), true);
	}
	return 0;
}

int hvt_attach_msg_from_json(struct hvt_msg *m, struct json_object *o, struct hvt_err *err)
{
	struct hvt_json_in in;
	struct json_object *t;
	int rc;

	if (!json_object_is_type(o, json_type_object))
		return hvt_err_set(err, -EPROTO, "frame holds JSON %s, not an object",
				   json_type_to_name(json_object_get_type(o)));
	if (!json_object_object_get_ex(o, "type", &t) || !json_object_is_type(t, json_type_string))
		return hvt_err_set(err, -EPROTO, "message without a string \"type\"");
	m->type = type_from_name(json_object_get_string(t));
	if (!m->type)
		return hvt_err_set(err, -EPROTO, "unknown message type \"%.64s\"", json_object_get_string(t));
	hvt_json_in_init(&in, o, -EPROTO, err, "%s message", hvt_msg_type_name(m->type));
	rc = fields_from_json(m, &in);
	if (rc) {
		hvt_msg_fini(m); /* the layout is freed on its own error paths; fini covers the rest */
		memset(m, 0, sizeof(*m));
	}
	return rc;
}

int hvt_attach_check_nfds(const struct hvt_msg *m, int nfds, struct hvt_err *err)
{
	const char *type = hvt_msg_type_name(m->type);
	int need_min = 0, need_max = 0;

	if (m->type == HVT_MSG_ATTACHED) {
		need_min = need_max = 1;
	} else if (m->type == HVT_MSG_LAYOUT) {
		/* dirty-log mode brings a new memfd; ad mode has no bitmaps and no fd. */
		need_min = need_max = m->u.layout.bitmap_bytes > 0;
	}
	if (nfds < need_min)
		return hvt_err_set(err, -EPROTO, "%s message without its file descriptor", type);
	if (nfds > need_max)
		return hvt_err_set(err, -EPROTO, "%s message carries %d stray file descriptor%s", type,
				   nfds - need_max, nfds - need_max == 1 ? "" : "s");
	return 0;
}
