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

/* Where a field lives, for messages: the message type and, for nested objects, the member's name. */
struct ctx {
	const char *type;
	struct hvt_err *err;
};

static struct json_object *member(struct ctx *c, struct json_object *o, const char *k, json_type t,
				  const char *tname, int *rc)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k, &v)) {
		*rc = hvt_err_set(c->err, -EPROTO, "%s message: missing \"%s\"", c->type, k);
		return NULL;
	}
	if (!json_object_is_type(v, t)) {
		*rc = hvt_err_set(c->err, -EPROTO, "%s message: \"%s\" is not %s", c->type, k, tname);
		return NULL;
	}
	return v;
}

static int get_int(struct ctx *c, struct json_object *o, const char *k, int64_t min, uint64_t max,
		   int64_t *si, uint64_t *ui)
{
	int rc = 0;
	struct json_object *v = member(c, o, k, json_type_int, "an integer", &rc);
	int64_t s;
	uint64_t u;

	if (!v)
		return rc;
	s = json_object_get_int64(v);
	u = json_object_get_uint64(v);
	/* get_int64 clamps values above INT64_MAX, get_uint64 clamps negatives to 0: use the one that is
	 * exact. */
	if (s < 0 ? s < min : u > max)
		return hvt_err_set(c->err, -EPROTO,
				   "%s message: \"%s\" = %s is out of range [%" PRId64 ", %" PRIu64 "]",
				   c->type, k, json_object_to_json_string(v), min, max);
	if (si)
		*si = s;
	if (ui)
		*ui = u;
	return 0;
}

static int get_u64(struct ctx *c, struct json_object *o, const char *k, uint64_t *out)
{
	return get_int(c, o, k, 0, UINT64_MAX, NULL, out);
}

static int get_u32(struct ctx *c, struct json_object *o, const char *k, uint32_t *out)
{
	uint64_t v;
	int rc = get_int(c, o, k, 0, UINT32_MAX, NULL, &v);

	*out = (uint32_t)v;
	return rc;
}

static int get_i32(struct ctx *c, struct json_object *o, const char *k, int32_t min, int32_t *out)
{
	int64_t v;
	int rc = get_int(c, o, k, min, INT32_MAX, &v, NULL);

	*out = (int32_t)v;
	return rc;
}

/* Identifiers must fit; free text (truncate = true) is cut to the buffer. */
static int get_str(struct ctx *c, struct json_object *o, const char *k, char *buf, size_t size, bool truncate)
{
	int rc = 0;
	struct json_object *v = member(c, o, k, json_type_string, "a string", &rc);
	size_t len;

	if (!v)
		return rc;
	len = strlen(json_object_get_string(v));
	if (len >= size && !truncate)
		return hvt_err_set(c->err, -EPROTO, "%s message: \"%s\" is longer than %zu bytes", c->type, k,
				   size - 1);
	if (len >= size) {
		len = size - 1;
		/* Do not cut a UTF-8 sequence in two. */
		while (len > 0 && ((unsigned char)json_object_get_string(v)[len] & 0xc0) == 0x80)
			len--;
	}
	memcpy(buf, json_object_get_string(v), len);
	buf[len] = '\0';
	return 0;
}

static int get_mode(struct ctx *c, struct json_object *o, enum hvt_mode *mode, bool must_know)
{
	char name[32];
	int rc = get_str(c, o, "mode", name, sizeof(name), true);

	if (rc)
		return rc;
	*mode = hvt_mode_from_name(name);
	if (*mode == HVT_MODE_NONE && must_know)
		return hvt_err_set(c->err, -EPROTO, "%s message: unknown mode \"%s\"", c->type, name);
	return 0;
}

static int get_layout(struct ctx *c, struct json_object *o, struct hvt_layout *l)
{
	int rc = 0;
	struct json_object *v = member(c, o, "layout", json_type_object, "an object", &rc);

	if (!v)
		return rc;
	rc = hvt_layout_from_json(l, v, c->err);
	if (rc)
		return hvt_err_prefix(c->err, rc == -ENOMEM ? rc : -EPROTO, "%s message: ", c->type);
	if (l->generation == 0) {
		hvt_layout_fini(l);
		return hvt_err_set(c->err, -EPROTO,
				   "%s message: layout generation 0 (generations start at 1)", c->type);
	}
	if ((rc = check_guest_bytes(c->type, l, c->err)))
		hvt_layout_fini(l);
	return rc;
}

static int hello_from_json(struct ctx *c, struct json_object *o, struct hvt_msg_hello *h)
{
	struct json_object *vm, *modes, *tids;
	int rc = 0;

	if ((rc = get_u32(c, o, "protocol", &h->protocol)) ||
	    (rc = get_str(c, o, "vmm", h->vmm, sizeof(h->vmm), true)))
		return rc;
	if (!(vm = member(c, o, "vm", json_type_object, "an object", &rc)))
		return rc;
	if ((rc = get_str(c, vm, "name", h->vm_name, sizeof(h->vm_name), false)) ||
	    (rc = get_str(c, vm, "uuid", h->vm_uuid, sizeof(h->vm_uuid), false)) ||
	    (rc = get_i32(c, vm, "pid", 0, &h->vm_pid)) ||
	    (rc = get_str(c, o, "accel", h->accel, sizeof(h->accel), false)) ||
	    (rc = get_u32(c, o, "page_size", &h->page_size)) ||
	    (rc = get_i32(c, o, "default_cpu", -1, &h->default_cpu)))
		return rc;
	if (!(modes = member(c, o, "modes", json_type_array, "an array", &rc)))
		return rc;
	h->modes = 0;
	for (size_t i = 0; i < json_object_array_length(modes); i++) {
		struct json_object *e = json_object_array_get_idx(modes, i);

		if (!json_object_is_type(e, json_type_string))
			return hvt_err_set(c->err, -EPROTO, "hello message: \"modes\"[%zu] is not a string",
					   i);
		/* Modes this tracer does not know are not offered to it. */
		enum hvt_mode m = hvt_mode_from_name(json_object_get_string(e));
		if (m != HVT_MODE_NONE)
			h->modes |= HVT_MODE_BIT(m);
	}
	if (!(tids = member(c, o, "vcpu_tids", json_type_array, "an array", &rc)))
		return rc;
	if (json_object_array_length(tids) > HVT_ATTACH_MAX_VCPUS)
		return hvt_err_set(c->err, -EPROTO, "hello message: %zu vcpu_tids (at most %d)",
				   json_object_array_length(tids), HVT_ATTACH_MAX_VCPUS);
	h->nvcpu_tids = (uint32_t)json_object_array_length(tids);
	for (uint32_t i = 0; i < h->nvcpu_tids; i++) {
		struct json_object *e = json_object_array_get_idx(tids, i);
		int64_t tid = json_object_get_int64(e);

		if (!json_object_is_type(e, json_type_int) || tid <= 0 || tid > INT32_MAX)
			return hvt_err_set(c->err, -EPROTO,
					   "hello message: \"vcpu_tids\"[%" PRIu32 "] is not a thread id", i);
		h->vcpu_tids[i] = (int32_t)tid;
	}
	if ((rc = get_layout(c, o, &h->layout)))
		return rc;
	if (h->layout.page_size != h->page_size) {
		hvt_layout_fini(&h->layout);
		return hvt_err_set(c->err, -EPROTO,
				   "hello message: page_size %" PRIu32 " differs from the layout's %" PRIu32,
				   h->page_size, h->layout.page_size);
	}
	return 0;
}

static int attach_from_json(struct ctx *c, struct json_object *o, struct hvt_msg_attach *a)
{
	struct json_object *t;
	int rc = 0;

	if ((rc = get_u32(c, o, "protocol", &a->protocol)) || (rc = get_mode(c, o, &a->mode, false)) ||
	    (rc = get_i32(c, o, "cpu", -1, &a->cpu)))
		return rc;
	if (!(t = member(c, o, "tracer", json_type_object, "an object", &rc)))
		return rc;
	if ((rc = get_str(c, t, "name", a->tracer, sizeof(a->tracer), true)) ||
	    (rc = get_i32(c, t, "pid", 0, &a->tracer_pid)))
		return rc;
	return 0;
}

static int harvested_from_json(struct ctx *c, struct json_object *o, struct hvt_msg_harvested *h)
{
	struct json_object *f;
	int rc = 0;

	if ((rc = get_u64(c, o, "seq", &h->seq)) || (rc = get_u64(c, o, "generation", &h->generation)) ||
	    (rc = get_u64(c, o, "t_start_ns", &h->t_start_ns)) ||
	    (rc = get_u64(c, o, "t_end_ns", &h->t_end_ns)) ||
	    (rc = get_u64(c, o, "t_done_ns", &h->t_done_ns)) ||
	    (rc = get_u64(c, o, "dirty_pages", &h->dirty_pages)) ||
	    (rc = get_u64(c, o, "lost_pages", &h->lost_pages)))
		return rc;
	if (!(f = member(c, o, "final", json_type_boolean, "a boolean", &rc)))
		return rc;
	h->final = json_object_get_boolean(f);
	return 0;
}

int hvt_attach_msg_from_json(struct hvt_msg *m, struct json_object *o, struct hvt_err *err)
{
	struct ctx c = {.type = "?", .err = err};
	struct json_object *t;
	int rc = 0;

	if (!json_object_is_type(o, json_type_object))
		return hvt_err_set(err, -EPROTO, "frame holds JSON %s, not an object",
				   json_type_to_name(json_object_get_type(o)));
	if (!json_object_object_get_ex(o, "type", &t) || !json_object_is_type(t, json_type_string))
		return hvt_err_set(err, -EPROTO, "message without a string \"type\"");
	m->type = type_from_name(json_object_get_string(t));
	if (!m->type)
		return hvt_err_set(err, -EPROTO, "unknown message type \"%.64s\"", json_object_get_string(t));
	c.type = hvt_msg_type_name(m->type);

	switch (m->type) {
	case HVT_MSG_HELLO:
		rc = hello_from_json(&c, o, &m->u.hello);
		break;
	case HVT_MSG_ATTACH:
		rc = attach_from_json(&c, o, &m->u.attach);
		break;
	case HVT_MSG_ATTACHED: {
		struct hvt_msg_attached *a = &m->u.attached;

		if ((rc = get_mode(&c, o, &a->mode, true)) || (rc = get_i32(&c, o, "cpu", -1, &a->cpu)) ||
		    (rc = get_u64(&c, o, "generation", &a->generation)) ||
		    (rc = get_u64(&c, o, "t_armed_ns", &a->t_armed_ns)) ||
		    (rc = get_u64(&c, o, "bitmap_bytes", &a->bitmap_bytes)))
			break;
		break;
	}
	case HVT_MSG_LAYOUT:
		if ((rc = get_u64(&c, o, "bitmap_bytes", &m->u.layout.bitmap_bytes)))
			break;
		rc = get_layout(&c, o, &m->u.layout.layout);
		break;
	case HVT_MSG_HARVEST:
		rc = get_u64(&c, o, "seq", &m->u.harvest.seq);
		break;
	case HVT_MSG_HARVESTED:
		rc = harvested_from_json(&c, o, &m->u.harvested);
		break;
	case HVT_MSG_BYE:
		m->u.bye.reason[0] = '\0';
		if (json_object_object_get_ex(o, "reason", NULL))
			rc = get_str(&c, o, "reason", m->u.bye.reason, sizeof(m->u.bye.reason), true);
		break;
	case HVT_MSG_ERROR:
		if ((rc = get_str(&c, o, "code", m->u.error.code, sizeof(m->u.error.code), false)))
			break;
		rc = get_str(&c, o, "message", m->u.error.message, sizeof(m->u.error.message), true);
		break;
	}
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
