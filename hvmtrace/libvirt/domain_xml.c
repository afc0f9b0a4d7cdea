// SPDX-License-Identifier: MIT
/* The domain XML reader (libxml2): a libvirt domain's tracing request and the facts it depends on. */
#include <errno.h>
#include <grp.h>
#include <json-c/json.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"
#include "hvmtrace/json_read.h"
#include "hvmtrace/util.h"
#include "libvirt_domain.h"

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
	/* the guest agent's channel (virt-xml --owners): the socket QEMU serves and record reads */
	if (!rc)
		d->owners_port =
		    xp_string(ctx, "/domain/devices/channel[@type='unix']"
				   "[target/@type='virtio' and target/@name='" HVT_LV_OWNERS_PORT "']"
				   "/source[@mode='bind']/@path");
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
