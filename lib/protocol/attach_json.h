/* SPDX-License-Identifier: MIT */
/* Private to lib/attach_*.c: the JSON side of the attach protocol, used by the framing code. */
#ifndef HVMTRACE_LIB_ATTACH_JSON_H
#define HVMTRACE_LIB_ATTACH_JSON_H

struct hvt_err;
struct hvt_msg;
struct json_object;

/* The message as a JSON object, or NULL with -EINVAL in *rc (unknown type, invalid layout). */
struct json_object *hvt_attach_msg_to_json(const struct hvt_msg *m, int *rc, struct hvt_err *err);

/* Fills m (fds untouched) from a parsed frame; -EPROTO naming the message type and the field at fault. */
int hvt_attach_msg_from_json(struct hvt_msg *m, struct json_object *o, struct hvt_err *err);

/* Checks that a message of m's type may carry nfds descriptors: -EPROTO (receiving) naming the problem. */
int hvt_attach_check_nfds(const struct hvt_msg *m, int nfds, struct hvt_err *err);

#endif
