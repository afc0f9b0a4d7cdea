// SPDX-License-Identifier: MIT
/* A libvirt domain's tracing request and the facts it depends on, from the domain XML (libxml2). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <pwd.h>
#include <grp.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvmtrace/iomem.h"
#include "hvmtrace/json_read.h"
#include "hvmtrace/util.h"
#include "libvirt_domain.h"

#define CLAIM_LINE 160

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The string value of an XPath expression, or NULL when it selects nothing (free() it). */
static char *xp_string(xmlXPathContextPtr ctx, const char *expr)
{
	xmlXPathObjectPtr o = xmlXPathEvalExpression((const xmlChar *)expr, ctx);
	char *s = NULL;

	if (o && o->type == XPATH_NODESET && o->nodesetval && o->nodesetval->nodeNr > 0) {
		xmlChar *v = xmlNodeGetContent(o->nodesetval->nodeTab[0]);
		s = dup_or_null((const char *)v);
		xmlFree(v);
	}
	xmlXPathFreeObject(o);
	return s;
}

static xmlXPathObjectPtr xp_nodes(xmlXPathContextPtr ctx, const char *expr)
{
	xmlXPathObjectPtr o = xmlXPathEvalExpression((const xmlChar *)expr, ctx);

	if (o && (o->type != XPATH_NODESET || !o->nodesetval)) {
		xmlXPathFreeObject(o);
		return NULL;
	}
	return o;
}

static char *attr(xmlNodePtr n, const char *name)
{
	xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
	char *s = dup_or_null((const char *)v);

	xmlFree(v);
	return s;
}

/* libvirt's memory units (docs: "Memory Allocation"); KiB when none is given. */
static int memory_bytes(const char *value, const char *unit, uint64_t *out)
{
	static const struct {
		const char *name;
		uint64_t mult;
	} units[] = {{"b", 1},           {"bytes", 1},       {"KB", 1000},     {"k", 1024},
		     {"KiB", 1024},      {"MB", 1000000},    {"M", 1 << 20},   {"MiB", 1 << 20},
		     {"GB", 1000000000}, {"G", 1 << 30},     {"GiB", 1 << 30}, {"TB", 1000000000000ull},
		     {"T", 1ull << 40},  {"TiB", 1ull << 40}};
	char *end;
	unsigned long long v;

	if (!value)
		return -EINVAL;
	errno = 0;
	v = strtoull(value, &end, 10);
	while (*end == ' ' || *end == '\n' || *end == '\t')
		end++;
	if (errno || end == value || *end)
		return -EINVAL;
	if (!unit)
		unit = "KiB";
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(unit, units[i].name)) {
			if (v > UINT64_MAX / units[i].mult)
				return -EINVAL; /* more bytes than 64 bits hold */
			*out = v * units[i].mult;
			return 0;
		}
	return -EINVAL;
}

int hvt_lv_parse_cpuset(const char *s, cpu_set_t *set)
{
	char *copy = strdup(s), *save = NULL;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	CPU_ZERO(set);
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		bool exclude = *item == '^';
		char *end;
		unsigned long a, b;

		while (*item == ' ' || *item == '^')
			item++;
		a = b = strtoul(item, &end, 10);
		if (end == item) {
			rc = -EINVAL;
			break;
		}
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		if (*end || b < a || b >= CPU_SETSIZE) {
			rc = -EINVAL;
			break;
		}
		for (unsigned long c = a; c <= b; c++) {
			if (exclude)
				CPU_CLR(c, set);
			else
				CPU_SET(c, set);
		}
	}
	free(copy);
	return rc;
}

/* "+64055:+64055" or "user:group" (the DAC label) into ids. */
static void dac_label(const char *label, long *uid, long *gid)
{
	char user[128], group[128];
	const char *colon = label ? strchr(label, ':') : NULL;

	*uid = *gid = -1;
	if (!colon || (size_t)(colon - label) >= sizeof(user) || strlen(colon + 1) >= sizeof(group))
		return;
	memcpy(user, label, colon - label);
	user[colon - label] = 0;
	strcpy(group, colon + 1);
	if (user[0] == '+') {
		*uid = strtol(user + 1, NULL, 10);
	} else {
		struct passwd *p = getpwnam(user);
		*uid = p ? (long)p->pw_uid : -1;
	}
	if (group[0] == '+') {
		*gid = strtol(group + 1, NULL, 10);
	} else {
		struct group *g = getgrnam(group);
		*gid = g ? (long)g->gr_gid : -1;
	}
}

static int parse_pins(xmlXPathContextPtr ctx, struct hvt_lv_domain *d, struct hvt_err *e)
{
	xmlXPathObjectPtr o =
	    xp_nodes(ctx, "/domain/cputune/vcpupin/@cpuset | /domain/cputune/emulatorpin/@cpuset |"
			  " /domain/vcpu/@cpuset");
	int rc = 0;

	CPU_ZERO(&d->pin_set);
	for (int i = 0; o && i < o->nodesetval->nodeNr; i++) {
		xmlChar *v = xmlNodeGetContent(o->nodesetval->nodeTab[i]);
		cpu_set_t s;

		if (hvt_lv_parse_cpuset((const char *)v, &s)) {
			rc = hvt_err_set(e, -EINVAL, "cpuset '%s' in <cputune> or <vcpu> is not a CPU list",
					 (const char *)v);
			xmlFree(v);
			break;
		}
		xmlFree(v);
		CPU_OR(&d->pin_set, &d->pin_set, &s);
		d->pinned = true;
	}
	xmlXPathFreeObject(o);
	return rc;
}

static int parse_ram(xmlXPathContextPtr ctx, struct hvt_lv_trace *t, struct hvt_err *e)
{
	xmlXPathObjectPtr o = xp_nodes(ctx, "/domain/metadata/hvmtrace:trace/hvmtrace:ram");
	xmlNodePtr ram;
	int rc = 0;

	if (!o || o->nodesetval->nodeNr == 0) {
		xmlXPathFreeObject(o);
		return 0;
	}
	ram = o->nodesetval->nodeTab[0];
	xmlXPathFreeObject(o);
	t->chanmap = attr(ram, "chanmap");
	t->mem_path = attr(ram, "mem-path");
	t->iomem = attr(ram, "iomem");
	for (xmlNodePtr c = ram->children; c && !rc; c = c->next) {
		if (c->type != XML_ELEMENT_NODE)
			continue;
		if (!strcmp((const char *)c->name, "channel")) {
			char *id = attr(c, "id"), **v = realloc(t->channels, (t->nchannels + 1) * sizeof(*v));

			if (!id || !v) {
				free(id);
				if (v)
					t->channels = v;
				rc = hvt_err_set(e, -EINVAL, "<hvmtrace:channel> needs an id");
				break;
			}
			t->channels = v;
			t->channels[t->nchannels++] = id;
		} else if (!strcmp((const char *)c->name, "extent")) {
			char *phys = attr(c, "phys"), *size = attr(c, "size"), *end1 = NULL, *end2 = NULL;
			struct hvt_range *v = realloc(t->extents, (t->nextents + 1) * sizeof(*v));
			uint64_t p = phys ? strtoull(phys, &end1, 0) : 0,
				 s = size ? strtoull(size, &end2, 0) : 0;

			if (v)
				t->extents = v;
			if (!v || !phys || !size || *end1 || *end2 || !s || p + s < p)
				rc = hvt_err_set(
				    e, -EINVAL,
				    "<hvmtrace:extent phys='%s' size='%s'>: phys and size must be numbers "
				    "(size not 0, the extent below 2^64)",
				    phys ? phys : "", size ? size : "");
			else
				t->extents[t->nextents++] = (struct hvt_range){p, s};
			free(phys);
			free(size);
		} else {
			rc = hvt_err_set(e, -EINVAL,
					 "<hvmtrace:ram> holds <%s>, which is neither channel nor extent",
					 (const char *)c->name);
		}
	}
	if (rc)
		return rc;
	if (t->chanmap && t->nextents)
		return hvt_err_set(e, -EINVAL, "<hvmtrace:ram> gives both a chanmap and extents: give one");
	if (t->chanmap && !t->nchannels)
		return hvt_err_set(e, -EINVAL, "<hvmtrace:ram chanmap='%s'> names no <hvmtrace:channel>",
				   t->chanmap);
	if (!t->chanmap && t->nchannels)
		return hvt_err_set(e, -EINVAL, "<hvmtrace:channel> needs <hvmtrace:ram chanmap='FILE'>");
	if (!t->chanmap && !t->nextents)
		return hvt_err_set(e, -EINVAL, "<hvmtrace:ram> gives neither channels nor extents");
	t->ram = t->chanmap ? HVT_LV_RAM_CHANMAP : HVT_LV_RAM_EXTENTS;
	if (!t->mem_path)
		t->mem_path = strdup("/dev/mem");
	if (!t->iomem)
		t->iomem = strdup(HVT_IOMEM_PATH);
	return 0;
}

static int parse_trace(xmlXPathContextPtr ctx, struct hvt_lv_trace *t, struct hvt_err *e)
{
	char *cpu, *bw, *jl, *end;

	t->interval = xp_string(ctx, "/domain/metadata/hvmtrace:trace/@interval");
	t->output = xp_string(ctx, "/domain/metadata/hvmtrace:trace/@output");
	t->mode = xp_string(ctx, "/domain/metadata/hvmtrace:trace/@mode");
	t->run_dir = xp_string(ctx, "/domain/metadata/hvmtrace:trace/@run-dir");
	cpu = xp_string(ctx, "/domain/metadata/hvmtrace:trace/@cpu");
	bw = xp_string(ctx, "/domain/metadata/hvmtrace:trace/@bandwidth");
	t->cpu = -1;
	t->bandwidth = !bw || !strcmp(bw, "on");
	jl = xp_string(ctx, "/domain/metadata/hvmtrace:trace/@jsonl");
	t->jsonl = jl && !strcmp(jl, "on");
	if (!t->interval)
		t->interval = strdup("1s");
	if (!t->mode)
		t->mode = strdup("auto");
	if (!t->run_dir)
		t->run_dir = strdup(HVT_LV_RUN_DIR);
	int rc = 0;
	if (bw && strcmp(bw, "on") && strcmp(bw, "off"))
		rc = hvt_err_set(e, -EINVAL, "<hvmtrace:trace bandwidth='%s'>: on or off", bw);
	else if (jl && strcmp(jl, "on") && strcmp(jl, "off"))
		rc = hvt_err_set(e, -EINVAL, "<hvmtrace:trace jsonl='%s'>: on or off", jl);
	else if (!cpu)
		rc = hvt_err_set(e, -EINVAL, "<hvmtrace:trace> needs cpu='N' (the tracer's host CPU)");
	else if ((t->cpu = (int)strtol(cpu, &end, 10)) < 0 || *end || end == cpu || t->cpu >= CPU_SETSIZE)
		rc = hvt_err_set(e, -EINVAL, "<hvmtrace:trace cpu='%s'>: not a CPU number", cpu);
	else if (!t->output || t->output[0] != '/')
		rc = hvt_err_set(e, -EINVAL, "<hvmtrace:trace> needs output='DIR', an absolute directory");
	else if (!t->run_dir || t->run_dir[0] != '/')
		rc = hvt_err_set(e, -EINVAL, "<hvmtrace:trace run-dir='%s'>: not an absolute directory",
				 t->run_dir ? t->run_dir : "");
	else if (hvt_parse_duration(t->interval, &t->interval_ns) || t->interval_ns < 1000000)
		rc = hvt_err_set(e, -EINVAL, "<hvmtrace:trace interval='%s'>: not a duration of 1ms or more",
				 t->interval);
	else if (strcmp(t->mode, "auto") && strcmp(t->mode, "ad") && strcmp(t->mode, "dirty-log"))
		rc = hvt_err_set(e, -EINVAL, "<hvmtrace:trace mode='%s'>: auto, ad or dirty-log", t->mode);
	free(cpu);
	free(bw);
	free(jl);
	return rc ? rc : parse_ram(ctx, t, e);
}

/* What virt-xml put into <qemu:commandline>: the hvmtrace object's socket and the devmem helper's. */
static void parse_commandline(xmlXPathContextPtr ctx, struct hvt_lv_domain *d)
{
	xmlXPathObjectPtr o = xp_nodes(ctx, "/domain/qemu:commandline/qemu:arg/@value");

	for (int i = 0; o && i < o->nodesetval->nodeNr; i++) {
		xmlChar *v = xmlNodeGetContent(o->nodesetval->nodeTab[i]);
		const char *s = (const char *)v, *p;

		if (s && !strncmp(s, "hvmtrace,id=" HVT_LV_OBJ_ID ",", 16) && (p = strstr(s, ",path="))) {
			free(d->qemu_socket);
			d->qemu_socket = strndup(p + 6, strcspn(p + 6, ","));
		} else if (s && strstr(s, "\"id\":\"" HVT_LV_RAM_ID "\"")) {
			struct hvt_json_in in;
			const char *h;

			/* no string "helper" is no helper, which hvt_lv_check then names */
			hvt_json_in_init(&in, json_tokener_parse(s), -EINVAL, NULL, "ram object");
			if (!hvt_json_str(&in, "helper", SIZE_MAX, &h)) {
				free(d->qemu_helper);
				d->qemu_helper = strdup(h);
			}
			json_object_put(in.o);
		}
		xmlFree(v);
	}
	xmlXPathFreeObject(o);
}

int hvt_lv_parse(const char *xml, size_t len, struct hvt_lv_domain *d, struct hvt_err *e)
{
	xmlDocPtr doc;
	xmlXPathContextPtr ctx = NULL;
	char *mem = NULL, *unit = NULL, *vcpus = NULL, *label = NULL, *traced = NULL;
	int rc = 0;

	memset(d, 0, sizeof(*d));
	d->uid = d->gid = -1;
	doc = xmlReadMemory(xml, (int)len, "domain.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc)
		return hvt_err_set(e, -EINVAL, "not well-formed XML");
	ctx = xmlXPathNewContext(doc);
	if (!ctx || xmlXPathRegisterNs(ctx, (const xmlChar *)"hvmtrace", (const xmlChar *)HVT_LV_NS) ||
	    xmlXPathRegisterNs(ctx, (const xmlChar *)"qemu", (const xmlChar *)HVT_LV_QEMU_NS)) {
		rc = hvt_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	d->name = xp_string(ctx, "/domain/name");
	mem = xp_string(ctx, "/domain/memory");
	unit = xp_string(ctx, "/domain/memory/@unit");
	vcpus = xp_string(ctx, "/domain/vcpu");
	label = xp_string(ctx, "/domain/seclabel[@model='dac']/label");
	traced = xp_string(ctx, "name(/domain/metadata/hvmtrace:trace)");
	if (!d->name || !d->name[0]) {
		rc = hvt_err_set(e, -EINVAL, "not a libvirt domain: no /domain/name");
		goto out;
	}
	/* The hook, as root, makes RUN_DIR/NAME and OUTPUT/NAME-<time>.hvt: a name is one path component,
	 * as libvirt itself requires (it refuses a '/' in a domain's name). */
	if (strchr(d->name, '/') || !strcmp(d->name, ".") || !strcmp(d->name, "..")) {
		rc = hvt_err_set(e, -EINVAL, "domain name '%s' is not a file name", d->name);
		goto out;
	}
	if (memory_bytes(mem, unit, &d->memory)) {
		rc = hvt_err_set(e, -EINVAL, "<memory unit='%s'>%s</memory> is not a size",
				 unit ? unit : "KiB", mem ? mem : "");
		goto out;
	}
	d->vcpus = vcpus ? (unsigned)strtoul(vcpus, NULL, 10) : 1;
	dac_label(label, &d->uid, &d->gid);
	rc = parse_pins(ctx, d, e);
	if (rc)
		goto out;
	xmlXPathObjectPtr o = xp_nodes(ctx, "/domain/metadata/hvmtrace:trace");
	d->traced = o && o->nodesetval->nodeNr > 0;
	xmlXPathFreeObject(o);
	if (d->traced)
		rc = parse_trace(ctx, &d->t, e);
	if (!rc)
		parse_commandline(ctx, d);
out:
	free(mem);
	free(unit);
	free(vcpus);
	free(label);
	free(traced);
	xmlXPathFreeContext(ctx);
	xmlFreeDoc(doc);
	if (rc)
		hvt_lv_free(d); /* a refused domain holds nothing (freeing it again is harmless) */
	return rc;
}

void hvt_lv_free(struct hvt_lv_domain *d)
{
	struct hvt_lv_trace *t = &d->t;

	free(d->name);
	free(d->qemu_socket);
	free(d->qemu_helper);
	free(t->interval);
	free(t->output);
	free(t->mode);
	free(t->chanmap);
	for (size_t i = 0; i < t->nchannels; i++)
		free(t->channels[i]);
	free(t->channels);
	free(t->extents);
	free(t->mem_path);
	free(t->iomem);
	free(t->run_dir);
	memset(d, 0, sizeof(*d));
}

int hvt_lv_extents(const struct hvt_lv_domain *d, struct hvt_range **out, size_t *n, struct hvt_err *e)
{
	const struct hvt_lv_trace *t = &d->t;
	struct hvt_chanmap m;
	uint64_t need = d->memory, total = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (t->ram == HVT_LV_RAM_NONE)
		return 0;
	if (t->ram == HVT_LV_RAM_EXTENTS) {
		for (size_t i = 0; i < t->nextents; i++)
			total += t->extents[i].size;
		if (total != d->memory)
			return hvt_err_set(e, -EINVAL,
					   "the extents hold %llu bytes, the domain's <memory> is %llu bytes",
					   (unsigned long long)total, (unsigned long long)d->memory);
		if (!(*out = malloc(t->nextents * sizeof(**out))))
			return -ENOMEM;
		memcpy(*out, t->extents, t->nextents * sizeof(**out));
		*n = t->nextents;
		return 0;
	}
	hvt_chanmap_init(&m);
	rc = hvt_chanmap_read(t->chanmap, &m, e);
	if (rc)
		return rc;
	for (size_t i = 0; i < t->nchannels && need; i++) {
		int ci = hvt_chanmap_find(&m, t->channels[i]);

		if (ci < 0) {
			rc = hvt_err_set(e, -ENOENT, "channel %s is not in the channel map %s",
					 t->channels[i], t->chanmap);
			goto out;
		}
		for (size_t r = 0; r < m.channels[ci].nranges && need; r++) {
			struct hvt_range x = m.channels[ci].ranges[r],
					 *v = realloc(*out, (*n + 1) * sizeof(*v));

			if (!v) {
				rc = -ENOMEM;
				goto out;
			}
			*out = v;
			if (x.size > need)
				x.size = need;
			(*out)[(*n)++] = x;
			need -= x.size;
		}
	}
	if (need)
		rc = hvt_err_set(e, -ENOSPC,
				 "channels %s%s hold %llu bytes, the domain's <memory> is %llu bytes",
				 t->channels[0], t->nchannels > 1 ? ",…" : "",
				 (unsigned long long)(d->memory - need), (unsigned long long)d->memory);
out:
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	hvt_chanmap_free(&m);
	return rc;
}

void hvt_lv_path(const struct hvt_lv_domain *d, const char *leaf, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s%s%s", d->t.run_dir, d->name, leaf ? "/" : "", leaf ? leaf : "");
}

static int check_cpu(const struct hvt_lv_domain *d, struct hvt_err *e)
{
	char online[256];
	cpu_set_t on;

	if (hvt_read_text("/sys/devices/system/cpu/online", online, sizeof(online), e) ||
	    hvt_parse_cpulist(online, &on) < 0)
		return hvt_err_set(e, -EIO, "cannot read this host's online CPUs");
	if (!CPU_ISSET(d->t.cpu, &on))
		return hvt_err_set(e, -ENODEV, "tracer CPU %d does not exist on this host (online: %s)",
				   d->t.cpu, online);
	if (d->pinned && CPU_ISSET(d->t.cpu, &d->pin_set))
		return hvt_err_set(
		    e, -EBUSY,
		    "tracer CPU %d is one the domain's vCPUs or emulator threads are pinned to "
		    "(<cputune>)",
		    d->t.cpu);
	return 0;
}

bool hvt_lv_systemd_runs(void)
{
	struct stat st;

	return !getenv("HVMTRACE_NO_SYSTEMD") && !stat("/run/systemd/system", &st) && S_ISDIR(st.st_mode);
}

/* Directories the hook, outside any sandbox, can write but the tracer's unit
 * (hvmtrace/libvirt/hvmtrace@.service) cannot keep a trace in: a domain whose traces would go there is
 * refused rather than traced into nothing. */
static const struct {
	const char *dir, *why;
} unit_unfit[] = {
    {"/tmp", "PrivateTmp=yes: the unit's /tmp is its own, removed when it stops"},
    {"/var/tmp", "PrivateTmp=yes: the unit's /var/tmp is its own, removed when it stops"},
    {"/home", "ProtectHome=yes: the unit cannot see it"},
    {"/root", "ProtectHome=yes: the unit cannot see it"},
    {"/run/user", "ProtectHome=yes: the unit cannot see it"},
    {"/usr", "ProtectSystem=full: read-only in the unit"},
    {"/boot", "ProtectSystem=full: read-only in the unit"},
    {"/efi", "ProtectSystem=full: read-only in the unit"},
    {"/etc", "ProtectSystem=full: read-only in the unit"},
};

static int check_unit_can_write(const char *dir, struct hvt_err *e)
{
	char real[PATH_MAX];

	if (!realpath(dir, real))
		return hvt_err_set(e, -errno, "output directory %s: %s", dir, strerror(errno));
	for (size_t i = 0; i < sizeof(unit_unfit) / sizeof(unit_unfit[0]); i++) {
		size_t len = strlen(unit_unfit[i].dir);

		if (!strncmp(real, unit_unfit[i].dir, len) && (real[len] == '/' || !real[len]))
			return hvt_err_set(
			    e, -EACCES,
			    "output directory %s is under %s, where the tracer's systemd unit "
			    "hvmtrace@.service cannot keep a trace (%s): choose another, such as "
			    "/var/lib/hvmtrace",
			    dir, unit_unfit[i].dir, unit_unfit[i].why);
	}
	return 0;
}

static int check_output(const char *dir, struct hvt_err *e)
{
	char probe[4096];
	struct stat st;
	int fd, rc;

	if (stat(dir, &st))
		return hvt_err_set(e, -errno, "output directory %s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return hvt_err_set(e, -ENOTDIR, "output directory %s is not a directory", dir);
	if (hvt_lv_systemd_runs() && (rc = check_unit_can_write(dir, e)))
		return rc;
	/* Root passes access(W_OK) on a read-only mount: only creating a file tells. */
	snprintf(probe, sizeof(probe), "%s/.hvmtrace-probe-XXXXXX", dir);
	fd = mkstemp(probe);
	if (fd < 0)
		return hvt_err_set(e, -errno, "output directory %s is not writable: %s", dir,
				   strerror(errno));
	close(fd);
	unlink(probe);
	return 0;
}

static int check_iomem(const struct hvt_lv_domain *d, const struct hvt_range *x, size_t n, struct hvt_err *e)
{
	struct hvt_iomem io;
	int rc = hvt_iomem_read(d->t.iomem, &io, e);

	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		rc = hvt_iomem_check_extent(&io, x[i].start, x[i].size, e);
		if (rc)
			hvt_err_prefix(e, rc, "guest RAM: ");
	}
	hvt_iomem_free(&io);
	return rc;
}

/*
 * A claim (RUN_DIR/NAME/claim) is lines "PHYS SIZE" and one "owner PID START": the process that holds the
 * memory, with its start time (/proc/PID/stat), so that a pid used again later is not taken for it. The
 * owner is the libvirt daemon that runs the hook while the domain starts, then the QEMU the devmem helper
 * handed the memory to. A claim whose owner is gone is stale: its domain's release never ran (the daemon
 * died and lost the domain). A claim without an owner line is held (written before owners were recorded).
 */
static bool claim_owner_gone(FILE *f)
{
	char line[CLAIM_LINE];
	unsigned long long start, now;
	int pid;

	rewind(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "owner %d %llu", &pid, &start) == 2)
			return pid <= 0 || hvt_process_start_time(pid, &now) || now != start;
	return false;
}

/* Other running domains' claims that overlap ours. A stale one (claim_owner_gone) does not count; with
 * take_over (the hook's start, under the claims lock) it is removed, saying so on stderr. */
static int check_claims(const struct hvt_lv_domain *d, const struct hvt_range *x, size_t n, bool take_over,
			struct hvt_err *e)
{
	DIR *dir = opendir(d->t.run_dir);
	struct dirent *de;
	int rc = 0;

	if (!dir)
		return 0; /* no run directory yet: nobody claims anything */
	while (!rc && (de = readdir(dir))) {
		char path[4096], line[CLAIM_LINE];
		size_t hit = n;
		FILE *f;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, d->name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/claim", d->t.run_dir, de->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		while (hit == n && fgets(line, sizeof(line), f)) {
			unsigned long long p, s;

			if (sscanf(line, "%llx %llx", &p, &s) != 2)
				continue;
			for (size_t i = 0; i < n && hit == n; i++)
				if (x[i].start < p + s && p < x[i].start + x[i].size)
					hit = i;
		}
		if (hit < n && claim_owner_gone(f)) {
			if (take_over && !unlink(path))
				fprintf(
				    stderr,
				    "hvmtrace: domain '%s': took over the stale claim of domain '%s' on guest RAM "
				    "0x%llx+0x%llx (its owner is gone; its release never ran)\n",
				    d->name, de->d_name, (unsigned long long)x[hit].start,
				    (unsigned long long)x[hit].size);
		} else if (hit < n) {
			rc = hvt_err_set(
			    e, -EBUSY, "guest RAM 0x%llx+0x%llx is in use by running domain '%s'",
			    (unsigned long long)x[hit].start, (unsigned long long)x[hit].size, de->d_name);
		}
		fclose(f);
	}
	closedir(dir);
	return rc;
}

/* QEMU's command line must be the one virt-xml writes for this request and name (a renamed or hand-edited
 * domain would put QEMU's sockets where the hook does not look). */
static int check_commandline(const struct hvt_lv_domain *d, struct hvt_err *e)
{
	char want[4200];

	hvt_lv_path(d, "qemu/vm.sock", want, sizeof(want));
	if (!d->qemu_socket || strcmp(d->qemu_socket, want))
		return hvt_err_set(
		    e, -EINVAL,
		    "<qemu:commandline> puts the hvmtrace socket at %s, not %s: run hvmtrace virt-xml "
		    "on this domain again",
		    d->qemu_socket ? d->qemu_socket : "(nowhere)", want);
	hvt_lv_path(d, "devmem.sock", want, sizeof(want));
	if (d->t.ram != HVT_LV_RAM_NONE && (!d->qemu_helper || strcmp(d->qemu_helper, want)))
		return hvt_err_set(
		    e, -EINVAL,
		    "<qemu:commandline> takes guest RAM from helper %s, not %s: run hvmtrace virt-xml "
		    "on this domain again",
		    d->qemu_helper ? d->qemu_helper : "(none)", want);
	return 0;
}

int hvt_lv_check(const struct hvt_lv_domain *d, struct hvt_err *e)
{
	struct hvt_range *x = NULL;
	size_t n = 0;
	int rc;

	if (!d->traced)
		return 0;
	rc = check_cpu(d, e);
	if (!rc)
		rc = check_output(d->t.output, e);
	if (!rc)
		rc = hvt_lv_extents(d, &x, &n, e);
	if (!rc && n)
		rc = check_iomem(d, x, n, e);
	if (!rc && n)
		rc = check_claims(d, x, n, false, e);
	if (!rc)
		rc = check_commandline(d, e);
	free(x);
	return rc;
}

/* Writes RUN_DIR/NAME/claim (extents, then the owner) through a temporary file; the claims lock is held. */
static int write_claim(const struct hvt_lv_domain *d, const struct hvt_range *x, size_t n, pid_t owner,
		       struct hvt_err *e)
{
	char path[4096], tmp[4200];
	unsigned long long start;
	FILE *f;

	if (hvt_process_start_time(owner, &start))
		return hvt_err_set(e, -ESRCH, "the claim's owner, pid %d, is not running", (int)owner);
	hvt_lv_path(d, "claim", path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(tmp, "w")))
		return hvt_err_set(e, -errno, "%s: %s", tmp, strerror(errno));
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%llx %llx\n", (unsigned long long)x[i].start, (unsigned long long)x[i].size);
	fprintf(f, "owner %d %llu\n", (int)owner, start);
	if (fclose(f) || rename(tmp, path))
		return hvt_err_set(e, -errno, "%s: %s", path, strerror(errno));
	return 0;
}

/* One claimer at a time, so two domains starting together cannot both see the memory free: the lock's fd,
 * or -errno with e set. */
static int lock_claims(const struct hvt_lv_domain *d, struct hvt_err *e)
{
	char lock[4096];
	int lfd;

	snprintf(lock, sizeof(lock), "%s/claims.lock", d->t.run_dir);
	lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX)) {
		int rc = hvt_err_set(e, -errno, "%s: %s", lock, strerror(errno));

		if (lfd >= 0)
			close(lfd);
		return rc;
	}
	return lfd;
}

/* Writes the claim under the claims' lock; check_others: first refuse memory another live domain claims. */
static int claim(const struct hvt_lv_domain *d, pid_t owner, bool check_others, struct hvt_err *e)
{
	struct hvt_range *x;
	size_t n;
	int rc, lfd;

	rc = hvt_lv_extents(d, &x, &n, e);
	if (rc || !n)
		return rc;
	lfd = lock_claims(d, e);
	if (lfd < 0)
		rc = lfd;
	else if (!check_others || !(rc = check_claims(d, x, n, true, e)))
		rc = write_claim(d, x, n, owner, e);
	if (lfd >= 0)
		close(lfd);
	free(x);
	return rc;
}

int hvt_lv_claim(const struct hvt_lv_domain *d, pid_t owner, struct hvt_err *e)
{
	return claim(d, owner, true, e);
}

int hvt_lv_claim_owner(const struct hvt_lv_domain *d, pid_t owner, struct hvt_err *e)
{
	return claim(d, owner, false, e);
}

void hvt_lv_unclaim(const struct hvt_lv_domain *d)
{
	char path[4096];

	hvt_lv_path(d, "claim", path, sizeof(path));
	unlink(path);
}

static void quiet_libvirt(void *opaque, virErrorPtr err)
{
	(void)opaque;
	(void)err;
}

int hvt_lv_lookup(const char *uri, const char *name, struct hvt_lv_domain *d, struct hvt_err *e)
{
	virConnectPtr c;
	virDomainPtr dom;
	char *xml;
	int rc;

	virSetErrorFunc(NULL, quiet_libvirt);
	c = virConnectOpenReadOnly(uri);
	if (!c)
		return hvt_err_set(e, -ECONNREFUSED, "cannot connect to libvirt%s%s: %s", uri ? " at " : "",
				   uri ? uri : "", virGetLastErrorMessage());
	dom = virDomainLookupByName(c, name);
	if (!dom) {
		rc = hvt_err_set(e, -ENOENT, "libvirt has no domain '%s'", name);
		virConnectClose(c);
		return rc;
	}
	xml = virDomainGetXMLDesc(dom, 0);
	if (!xml)
		rc = hvt_err_set(e, -EIO, "domain '%s': cannot read its XML: %s", name,
				 virGetLastErrorMessage());
	else
		rc = hvt_lv_parse(xml, strlen(xml), d, e);
	free(xml);
	virDomainFree(dom);
	virConnectClose(c);
	return rc;
}
