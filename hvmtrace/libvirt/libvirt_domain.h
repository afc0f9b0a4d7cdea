/* SPDX-License-Identifier: MIT */
/*
 * A libvirt domain's tracing request (<hvmtrace:trace> in its <metadata>; docs/libvirt.md and
 * docs/libvirt-trace.rng) and the facts of the domain that tracing depends on, read from its XML
 * (domain_xml.c; libvirt_domain.c what follows from them). Shared by `hvmtrace virt-xml`, the libvirt hook
 * and `record --domain`. Beside it: the host checks (host_checks.h), the claims on host memory (claims.h)
 * and the domain's XML from libvirt (libvirt_lookup.h).
 */
#ifndef HVT_LIBVIRT_LIBVIRT_DOMAIN_H
#define HVT_LIBVIRT_LIBVIRT_DOMAIN_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hvt_err;
struct hvt_range;

#define HVT_LV_NS        "urn:x-hvmtrace:libvirt:trace:1"
#define HVT_LV_NS_PREFIX "hvmtrace"
#define HVT_LV_QEMU_NS   "http://libvirt.org/schemas/domain/qemu/1.0"
#define HVT_LV_RUN_DIR   "/run/hvmtrace"
#define HVT_LV_RAM_ID    "hvt-ram" /* the devmem backend's id on QEMU's command line */
#define HVT_LV_OBJ_ID    "hvt0"    /* the hvmtrace object's id */
/* The virtio-serial port the guest agent (hvmtrace-guest, docs/attribution.md) writes its snapshots to */
#define HVT_LV_OWNERS_PORT "org.hvmtrace.owners.0"

enum hvt_lv_ram { HVT_LV_RAM_NONE, HVT_LV_RAM_CHANMAP, HVT_LV_RAM_EXTENTS };

/* What <hvmtrace:trace> asks for. Strings are owned (free with hvt_lv_free). */
struct hvt_lv_trace {
	uint64_t interval_ns;
	char *interval; /* as written ("1s") */
	int cpu;        /* the tracer's host CPU */
	char *output;   /* directory of the trace files */
	char *mode;     /* "auto", "ad" or "dirty-log" */
	bool bandwidth;
	bool jsonl; /* also DIR/DOMAIN-<start time>.jsonl, one flushed line per interval */
	enum hvt_lv_ram ram;
	char *chanmap; /* HVT_LV_RAM_CHANMAP: the map and the channel ids, in order */
	size_t nchannels;
	char **channels;
	size_t nextents; /* HVT_LV_RAM_EXTENTS */
	struct hvt_range *extents;
	char *mem_path; /* the memory the helper opens: /dev/mem, or a regular file in tests */
	char *iomem;    /* what the extents are checked against: /proc/iomem, or a recorded file in tests */
	char *run_dir;  /* sockets, pid files and claims (default /run/hvmtrace) */
};

struct hvt_lv_domain {
	char *name;
	uint64_t memory; /* bytes, from <memory> */
	unsigned vcpus;
	long uid, gid;     /* QEMU's user and group from the DAC seclabel; -1 when the XML has none */
	bool pinned;       /* some vcpupin, emulatorpin or <vcpu cpuset> is given */
	cpu_set_t pin_set; /* the union of their CPUs */
	bool traced;       /* it has <hvmtrace:trace> */
	char *qemu_socket; /* from <qemu:commandline>: the hvmtrace object's path, NULL if none */
	char *qemu_helper; /* ... and the devmem backend's helper socket, NULL if none */
	char *owners_port; /* the unix socket of the <channel> to HVT_LV_OWNERS_PORT, NULL if none */
	struct hvt_lv_trace t;
};

/* Parses a domain's XML. 0 (d->traced says whether it asks for tracing), or an error naming the element
 * or attribute that is wrong, d then holding nothing. */
int hvt_lv_parse(const char *xml, size_t len, struct hvt_lv_domain *d, struct hvt_err *e);
void hvt_lv_free(struct hvt_lv_domain *d);

/* The host-physical extents of the domain's RAM, in guest order: the explicit extents, or the channels'
 * ranges in order up to the domain's memory (as the devmem backend takes them). */
int hvt_lv_extents(const struct hvt_lv_domain *d, struct hvt_range **out, size_t *n, struct hvt_err *e);

/* RUN_DIR/NAME[/leaf] into buf. */
void hvt_lv_path(const struct hvt_lv_domain *d, const char *leaf, char *buf, size_t len);

/* Parses a libvirt cpuset ("0-3,^2,6") into set; -EINVAL for junk. */
int hvt_lv_parse_cpuset(const char *s, cpu_set_t *set);

#endif
