// SPDX-License-Identifier: MIT
/*
 * hvmtrace virt-xml: turns a plain libvirt domain into a traced one (docs/libvirt.md §2): the patched
 * emulator, guest RAM from memory-backend-devmem through the devmem helper plus the hvmtrace object (QEMU's
 * JSON -object form in <qemu:commandline>), <cputune> that keeps vCPUs and emulator threads off the tracer's
 * CPU, the request in <metadata> (<hvmtrace:trace>), and with --owners the virtio-serial channel of the
 * guest agent (docs/attribution.md). --check holds an existing domain's request to this
 * host instead: the request, the emulator, and whether the libvirt daemon has loaded the hook.
 */
#include <errno.h>
#include <json-c/json.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "hvmtrace/options.h"
#include "hvmtrace/util.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "libvirt/emulator.h"
#include "libvirt/hooks_loaded.h"
#include "libvirt/host_checks.h"
#include "libvirt/libvirt_domain.h"

#define XML_MAX (16u << 20)

enum virt_xml_exit { VX_OK = 0, VX_REFUSED = 1, VX_USAGE = 2 };

static const struct hvt_exit_status vx_exits[] = {
    {VX_OK, "written (or, with --check, the request fits this host)"},
    {VX_REFUSED, "the domain or its request cannot be traced here (one line says why)"},
    {VX_USAGE, "bad arguments, or the input is not a domain"},
    {0, NULL},
};

struct vx_opts {
	const char *input, *domain, *connect, *output;
	bool check, check_hook, owners;
	const char *hooks_dir, *libvirt_run;
	const char *emulator, *interval, *outdir, *mode, *bandwidth, *jsonl, *chanmap, *channels, *extents,
	    *run_dir, *mem_path, *iomem;
	int cpu;
};

static int read_input(const struct vx_opts *o, char **xml, size_t *len, struct hvt_err *e)
{
	if (o->domain) {
		virConnectPtr c = virConnectOpenReadOnly(o->connect);
		virDomainPtr d;
		int rc = 0;

		if (!c)
			return hvt_err_set(e, -ECONNREFUSED, "cannot connect to libvirt: %s",
					   virGetLastErrorMessage());
		d = virDomainLookupByName(c, o->domain);
		if (!d)
			rc = hvt_err_set(e, -ENOENT, "libvirt has no domain '%s'", o->domain);
		/* the persistent definition: what virsh define takes back */
		else if (!(*xml = virDomainGetXMLDesc(d, o->check ? 0 : VIR_DOMAIN_XML_INACTIVE)))
			rc = hvt_err_set(e, -EIO, "domain '%s': %s", o->domain, virGetLastErrorMessage());
		if (d)
			virDomainFree(d);
		virConnectClose(c);
		if (!rc)
			*len = strlen(*xml);
		return rc;
	}
	if (!strcmp(o->input,
		    "-")) /* a pipe, as often as not: read the fd, not a path that must be regular */
		return hvt_read_fd(STDIN_FILENO, "the domain XML on standard input", XML_MAX, xml, len, e);
	return hvt_read_file(o->input, "domain XML", XML_MAX, xml, len, e);
}

static xmlNodePtr child(xmlNodePtr parent, const char *name, xmlNsPtr ns)
{
	for (xmlNodePtr c = parent->children; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE && !strcmp((const char *)c->name, name) &&
		    (ns ? c->ns && !strcmp((const char *)c->ns->href, (const char *)ns->href) : !c->ns))
			return c;
	return NULL;
}

static xmlNodePtr ensure_child(xmlNodePtr parent, const char *name, xmlNsPtr ns)
{
	xmlNodePtr c = child(parent, name, ns);

	return c ? c : xmlNewChild(parent, ns, (const xmlChar *)name, NULL);
}

static void remove_children(xmlNodePtr parent, const char *name)
{
	xmlNodePtr c = parent->children, next;

	for (; c; c = next) {
		next = c->next;
		if (c->type == XML_ELEMENT_NODE && !strcmp((const char *)c->name, name)) {
			xmlUnlinkNode(c);
			xmlFreeNode(c);
		}
	}
}

/* The CPUs other than the tracer's, as a cpuset; -ENODEV when the tracer's CPU is not online or none is
 * left. */
static int other_cpus(int cpu, char *buf, size_t len, struct hvt_err *e)
{
	char online[256];
	cpu_set_t on;
	size_t n = 0;

	if (hvt_read_text("/sys/devices/system/cpu/online", online, sizeof(online), e) ||
	    hvt_parse_cpulist(online, &on) < 0)
		return hvt_err_set(e, -EIO, "cannot read this host's online CPUs");
	if (!CPU_ISSET(cpu, &on))
		return hvt_err_set(e, -ENODEV, "tracer CPU %d does not exist on this host (online: %s)", cpu,
				   online);
	CPU_CLR(cpu, &on);
	buf[0] = 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &on))
			n += snprintf(buf + n, n < len ? len - n : 0, "%s%d", n ? "," : "", c);
	if (!n)
		return hvt_err_set(e, -ENODEV, "CPU %d is this host's only CPU: none is left for the vCPUs",
				   cpu);
	return 0;
}

static int set_cputune(xmlNodePtr dom, const struct hvt_lv_domain *d, int cpu, struct hvt_err *e)
{
	char cpus[1024], id[16];
	xmlNodePtr tune;
	int rc = other_cpus(cpu, cpus, sizeof(cpus), e);

	if (rc)
		return rc;
	tune = ensure_child(dom, "cputune", NULL);
	remove_children(tune, "vcpupin");
	remove_children(tune, "emulatorpin");
	for (unsigned v = 0; v < d->vcpus; v++) {
		xmlNodePtr p = xmlNewChild(tune, NULL, (const xmlChar *)"vcpupin", NULL);

		snprintf(id, sizeof(id), "%u", v);
		xmlNewProp(p, (const xmlChar *)"vcpu", (const xmlChar *)id);
		xmlNewProp(p, (const xmlChar *)"cpuset", (const xmlChar *)cpus);
	}
	xmlNewProp(xmlNewChild(tune, NULL, (const xmlChar *)"emulatorpin", NULL), (const xmlChar *)"cpuset",
		   (const xmlChar *)cpus);
	return 0;
}

/* The devmem backend's -object JSON: the request's memory, through the helper's socket. */
static char *devmem_json(const struct hvt_lv_domain *d)
{
	json_object *o = json_object_new_object();
	char sock[4200], *s;

	hvt_lv_path(d, "devmem.sock", sock, sizeof(sock));
	json_object_object_add(o, "qom-type", json_object_new_string("memory-backend-devmem"));
	json_object_object_add(o, "id", json_object_new_string(HVT_LV_RAM_ID));
	json_object_object_add(o, "size", json_object_new_uint64(d->memory));
	json_object_object_add(o, "helper", json_object_new_string(sock));
	if (d->t.ram == HVT_LV_RAM_CHANMAP) {
		json_object *ch = json_object_new_array();

		for (size_t i = 0; i < d->t.nchannels; i++)
			json_object_array_add(ch, json_object_new_string(d->t.channels[i]));
		json_object_object_add(o, "chanmap", json_object_new_string(d->t.chanmap));
		json_object_object_add(o, "channels", ch);
	} else {
		json_object *xs = json_object_new_array();

		for (size_t i = 0; i < d->t.nextents; i++) {
			json_object *x = json_object_new_object();

			json_object_object_add(x, "phys", json_object_new_uint64(d->t.extents[i].start));
			json_object_object_add(x, "size", json_object_new_uint64(d->t.extents[i].size));
			json_object_array_add(xs, x);
		}
		json_object_object_add(o, "extents", xs);
	}
	s = strdup(
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}

static void add_arg(xmlNodePtr cmdline, xmlNsPtr qns, const char *value)
{
	xmlNewProp(xmlNewChild(cmdline, qns, (const xmlChar *)"arg", NULL), (const xmlChar *)"value",
		   (const xmlChar *)value);
}

/* Ours are -object/-machine/-L pairs whose value names our ids or the emulator's ROMs: removed, so that
 * virt-xml can run again. */
static bool is_our_arg(const char *v)
{
	size_t n = v ? strlen(v) : 0;

	return v &&
	       (strstr(v, "\"id\":\"" HVT_LV_RAM_ID "\"") ||
		!strncmp(v, "hvmtrace,id=" HVT_LV_OBJ_ID ",", 16) ||
		!strcmp(v, "memory-backend=" HVT_LV_RAM_ID) || (n > 10 && !strcmp(v + n - 10, "/optionrom")));
}

static void set_commandline(xmlNodePtr dom, const struct hvt_lv_domain *d, const char *emulator)
{
	xmlNsPtr qns = xmlSearchNsByHref(dom->doc, dom, (const xmlChar *)HVT_LV_QEMU_NS);
	xmlNodePtr cl, c, next;
	char sock[4200], obj[4300];

	if (!qns)
		qns = xmlNewNs(dom, (const xmlChar *)HVT_LV_QEMU_NS, (const xmlChar *)"qemu");
	cl = ensure_child(dom, "commandline", qns);
	for (c = cl->children; c; c = next) {
		xmlChar *v = xmlGetProp(c, (const xmlChar *)"value");

		next = c->next;
		if (is_our_arg((const char *)v)) {
			xmlNodePtr prev = c->prev;

			while (prev && prev->type != XML_ELEMENT_NODE)
				prev = prev->prev;
			if (prev) {
				xmlUnlinkNode(prev);
				xmlFreeNode(prev);
			}
			xmlUnlinkNode(c);
			xmlFreeNode(c);
		}
		xmlFree(v);
	}
	/* A QEMU as scripts/build-qemu.sh leaves it has its option ROMs beside it (pvh.bin for -kernel). */
	char roms[4200];
	const char *slash = strrchr(emulator, '/');
	struct stat st;
	snprintf(roms, sizeof(roms), "%.*s/optionrom", slash ? (int)(slash - emulator) : 1,
		 slash ? emulator : ".");
	if (!stat(roms, &st) && S_ISDIR(st.st_mode)) {
		add_arg(cl, qns, "-L");
		add_arg(cl, qns, roms);
	}
	if (d->t.ram != HVT_LV_RAM_NONE) {
		char *json = devmem_json(d);

		add_arg(cl, qns, "-object");
		add_arg(cl, qns, json);
		add_arg(cl, qns, "-machine");
		add_arg(cl, qns, "memory-backend=" HVT_LV_RAM_ID);
		free(json);
	}
	hvt_lv_path(d, "qemu/vm.sock", sock, sizeof(sock));
	snprintf(obj, sizeof(obj), "hvmtrace,id=" HVT_LV_OBJ_ID ",path=%s", sock);
	add_arg(cl, qns, "-object");
	add_arg(cl, qns, obj);
}

/* Is this <channel> the guest agent's (its target's name is HVT_LV_OWNERS_PORT)? */
static bool is_owners_channel(xmlNodePtr c)
{
	xmlNodePtr target;
	xmlChar *name;
	bool ours;

	if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "channel") ||
	    !(target = child(c, "target", NULL)))
		return false;
	name = xmlGetProp(target, (const xmlChar *)"name");
	ours = name && !strcmp((const char *)name, HVT_LV_OWNERS_PORT);
	xmlFree(name);
	return ours;
}

/* The guest agent's port (--owners): a virtio channel QEMU serves as a unix socket in its run directory,
 * RUN/NAME/qemu/owners.sock, beside the hvmtrace object's; libvirt adds the virtio-serial controller.
 * An earlier one goes first, so that virt-xml can run again (and without --owners takes it away). */
static void set_owners_channel(xmlNodePtr dev, const struct hvt_lv_domain *d, bool owners)
{
	xmlNodePtr c, next, src, target;
	char sock[4200];

	for (c = dev->children; c; c = next) {
		next = c->next;
		if (is_owners_channel(c)) {
			xmlUnlinkNode(c);
			xmlFreeNode(c);
		}
	}
	if (!owners)
		return;
	hvt_lv_path(d, "qemu/owners.sock", sock, sizeof(sock));
	c = xmlNewChild(dev, NULL, (const xmlChar *)"channel", NULL);
	xmlNewProp(c, (const xmlChar *)"type", (const xmlChar *)"unix");
	src = xmlNewChild(c, NULL, (const xmlChar *)"source", NULL);
	xmlNewProp(src, (const xmlChar *)"mode", (const xmlChar *)"bind");
	xmlNewProp(src, (const xmlChar *)"path", (const xmlChar *)sock);
	target = xmlNewChild(c, NULL, (const xmlChar *)"target", NULL);
	xmlNewProp(target, (const xmlChar *)"type", (const xmlChar *)"virtio");
	xmlNewProp(target, (const xmlChar *)"name", (const xmlChar *)HVT_LV_OWNERS_PORT);
}

static int add_extents(xmlNodePtr ram, xmlNsPtr ns, const char *list, struct hvt_err *e)
{
	char *copy = strdup(list), *save = NULL;
	int rc = 0;

	for (char *item = strtok_r(copy, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(item, ':'), *end, buf[32];
		uint64_t phys, size;

		if (colon)
			*colon = 0;
		phys = strtoull(item, &end, 0);
		if (!colon || *end || end == item || hvt_parse_size(colon + 1, &size) || !size) {
			rc = hvt_err_set(e, -EINVAL, "--extents: '%s' is not PHYS:SIZE (e.g. 0x100000000:1G)",
					 item);
			break;
		}
		xmlNodePtr x = xmlNewChild(ram, ns, (const xmlChar *)"extent", NULL);
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)phys);
		xmlNewProp(x, (const xmlChar *)"phys", (const xmlChar *)buf);
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)size);
		xmlNewProp(x, (const xmlChar *)"size", (const xmlChar *)buf);
	}
	free(copy);
	return rc;
}

static int set_metadata(xmlNodePtr dom, const struct vx_opts *o, struct hvt_err *e)
{
	xmlNodePtr md = ensure_child(dom, "metadata", NULL), t, next, ram;
	xmlNsPtr ns;
	char cpu[16];

	for (t = md->children; t; t = next) {
		next = t->next;
		if (t->ns && !strcmp((const char *)t->ns->href, HVT_LV_NS)) {
			xmlUnlinkNode(t);
			xmlFreeNode(t);
		}
	}
	t = xmlNewChild(md, NULL, (const xmlChar *)"trace", NULL);
	ns = xmlNewNs(t, (const xmlChar *)HVT_LV_NS, (const xmlChar *)HVT_LV_NS_PREFIX);
	xmlSetNs(t, ns);
	snprintf(cpu, sizeof(cpu), "%d", o->cpu);
	xmlNewProp(t, (const xmlChar *)"interval", (const xmlChar *)o->interval);
	xmlNewProp(t, (const xmlChar *)"cpu", (const xmlChar *)cpu);
	xmlNewProp(t, (const xmlChar *)"mode", (const xmlChar *)o->mode);
	xmlNewProp(t, (const xmlChar *)"bandwidth", (const xmlChar *)o->bandwidth);
	if (o->jsonl)
		xmlNewProp(t, (const xmlChar *)"jsonl", (const xmlChar *)o->jsonl);
	xmlNewProp(t, (const xmlChar *)"output", (const xmlChar *)o->outdir);
	if (o->run_dir)
		xmlNewProp(t, (const xmlChar *)"run-dir", (const xmlChar *)o->run_dir);
	if (!o->chanmap && !o->extents)
		return 0;
	ram = xmlNewChild(t, ns, (const xmlChar *)"ram", NULL);
	if (o->chanmap) {
		char *copy = strdup(o->channels), *save = NULL;

		xmlNewProp(ram, (const xmlChar *)"chanmap", (const xmlChar *)o->chanmap);
		for (char *id = strtok_r(copy, ",", &save); id; id = strtok_r(NULL, ",", &save))
			xmlNewProp(xmlNewChild(ram, ns, (const xmlChar *)"channel", NULL),
				   (const xmlChar *)"id", (const xmlChar *)id);
		free(copy);
	} else if (add_extents(ram, ns, o->extents, e)) {
		return -EINVAL;
	}
	if (o->mem_path)
		xmlNewProp(ram, (const xmlChar *)"mem-path", (const xmlChar *)o->mem_path);
	if (o->iomem)
		xmlNewProp(ram, (const xmlChar *)"iomem", (const xmlChar *)o->iomem);
	return 0;
}

/* The request from the options into the document; then the domain as parsed back from it, which every
 * later step reads (so what is written is what the hook will read). */
static int make_traced(xmlDocPtr doc, const struct vx_opts *o, struct hvt_lv_domain *d, struct hvt_err *e)
{
	xmlNodePtr dom = xmlDocGetRootElement(doc), dev;
	xmlChar *text;
	int len, rc;

	if (!dom || strcmp((const char *)dom->name, "domain"))
		return hvt_err_set(e, -EINVAL, "not a libvirt domain: the root element is not <domain>");
	rc = set_metadata(dom, o, e);
	if (rc)
		return rc;
	xmlDocDumpMemory(doc, &text, &len);
	rc = hvt_lv_parse((const char *)text, (size_t)len, d, e);
	xmlFree(text);
	if (rc)
		return rc;
	dev = ensure_child(dom, "devices", NULL);
	xmlNodeSetContent(ensure_child(dev, "emulator", NULL), (const xmlChar *)o->emulator);
	rc = set_cputune(dom, d, o->cpu, e);
	if (rc)
		return rc;
	set_commandline(dom, d, o->emulator);
	set_owners_channel(dev, d, o->owners);
	struct hvt_range *x;
	size_t n;
	rc = hvt_lv_extents(d, &x, &n, e); /* the sizes agree with <memory> */
	free(x);
	return rc;
}

/* The domain's <devices><emulator>, or NULL (libvirt's default, never the patched QEMU). */
static char *emulator_of(const char *xml, size_t len)
{
	xmlDocPtr doc = xmlReadMemory(xml, (int)len, "domain.xml", NULL,
				      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	xmlNodePtr dom = doc ? xmlDocGetRootElement(doc) : NULL, dev, em;
	char *path = NULL;

	if (dom && (dev = child(dom, "devices", NULL)) && (em = child(dev, "emulator", NULL))) {
		xmlChar *text = xmlNodeGetContent(em);

		path = strdup((const char *)text);
		xmlFree(text);
	}
	xmlFreeDoc(doc);
	return path;
}

/* libvirt runs the hook only if its daemon found it when it started or reloaded. */
static int check_hook(const struct vx_opts *o, struct hvt_err *e)
{
	pid_t daemon;
	int rc = hvt_lv_hooks_check(o->hooks_dir, o->libvirt_run, &daemon, e);

	if (!rc)
		printf("the libvirt daemon (pid %d) has loaded the hvmtrace hook\n", (int)daemon);
	return rc;
}

static int check_existing(const struct vx_opts *o, const char *xml, size_t len, struct hvt_err *e)
{
	struct hvt_lv_domain d;
	char *emulator = NULL, others[1024];
	int rc = hvt_lv_parse(xml, len, &d, e);

	if (rc)
		return rc;
	if (!d.traced)
		rc = hvt_err_set(e, -EINVAL, "domain '%s' has no <hvmtrace:trace> in its <metadata>", d.name);
	if (!rc)
		rc = hvt_lv_check(&d, e);
	if (!rc)
		printf("domain '%s': the tracing request fits this host\n", d.name);
	if (!rc && d.owners_port)
		printf("domain '%s': the guest agent's snapshots come over %s (its channel %s)\n", d.name,
		       d.owners_port, HVT_LV_OWNERS_PORT);
	if (!rc && !(emulator = emulator_of(xml, len)))
		rc = hvt_err_set(
		    e, -EINVAL, "domain '%s' names no <emulator>: run hvmtrace virt-xml on it again", d.name);
	if (!rc)
		rc = hvt_lv_check_emulator(emulator, e);
	if (!rc && hvt_lv_cpu_sharers(&d, others, sizeof(others)))
		fprintf(
		    stderr,
		    "hvmtrace virt-xml: warning: tracer CPU %d is also the tracer CPU of running domain(s) "
		    "%s: the tracers share it, and one may not finish its harvest within the interval\n",
		    d.t.cpu, others);
	if (!rc)
		rc = check_hook(o, e);
	free(emulator);
	hvt_lv_free(&d);
	return rc;
}

int cmd_virt_xml(int argc, char **argv)
{
	struct vx_opts o = {.cpu = -1,
			    .interval = "1s",
			    .mode = "auto",
			    .bandwidth = "on",
			    .emulator = HVT_QEMU_DEFAULT,
			    .hooks_dir = HVT_LV_HOOKS_DIR,
			    .libvirt_run = HVT_LV_LIBVIRT_RUN};
	const struct hvt_option opts[] = {
	    HVT_OPT_STRING(0, "domain", &o.domain, "NAME",
			   "read the domain NAME from libvirt instead of a file"),
	    HVT_OPT_STRING(0, "connect", &o.connect, "URI", "libvirt's URI (default: libvirt's default)"),
	    HVT_OPT_PATH('o', "output", &o.output, "FILE",
			 "write the traced domain here (default: standard output)"),
	    HVT_OPT_FLAG(0, "check", &o.check,
			 "check the domain's tracing request, its emulator and the hook against this host;\n"
			 "write nothing"),
	    HVT_OPT_FLAG(0, "check-hook", &o.check_hook,
			 "only check that the libvirt daemon has loaded the hvmtrace hook"),
	    HVT_OPT_PATH(0, "hooks-dir", &o.hooks_dir, "DIR", "libvirt's hooks (default /etc/libvirt/hooks)"),
	    HVT_OPT_PATH(0, "libvirt-run", &o.libvirt_run, "DIR",
			 "the libvirt daemon's runtime directory (default /run/libvirt)"),
	    HVT_OPT_HEADING("The traced domain:"),
	    HVT_OPT_PATH(0, "emulator", &o.emulator, "PATH",
			 "the patched QEMU (default: make install-qemu's, " HVT_QEMU_DEFAULT ")"),
	    HVT_OPT_CPU(0, "cpu", &o.cpu, "N",
			"the tracer's host CPU; vCPUs and emulator threads are kept off it"),
	    HVT_OPT_STRING(0, "interval", &o.interval, "DUR", "harvest interval (default 1s)"),
	    HVT_OPT_PATH(0, "output-dir", &o.outdir, "DIR",
			 "where the trace files go (DIR/DOMAIN-<start time>.hvt)"),
	    HVT_OPT_STRING(0, "mode", &o.mode, "MODE", "auto (default), ad or dirty-log"),
	    HVT_OPT_STRING(0, "bandwidth", &o.bandwidth, "on|off", "record DRAM bandwidth (default on)"),
	    HVT_OPT_STRING(0, "jsonl", &o.jsonl, "on|off",
			   "also write DIR/DOMAIN-<start time>.jsonl, a line per interval (default off)"),
	    HVT_OPT_PATH(0, "chanmap", &o.chanmap, "FILE",
			 "guest RAM on reserved channels of this chanmap.json ..."),
	    HVT_OPT_STRING(0, "channels", &o.channels, "ID,...", "... these channels, in order"),
	    HVT_OPT_STRING(0, "extents", &o.extents, "PHYS:SIZE,...",
			   "or guest RAM on these reserved extents"),
	    HVT_OPT_PATH(0, "run-dir", &o.run_dir, "DIR", "sockets and pid files (default /run/hvmtrace)"),
	    HVT_OPT_FLAG(0, "owners", &o.owners,
			 "add the channel " HVT_LV_OWNERS_PORT " for the guest agent hvmtrace-guest, whose\n"
			 "snapshots of page owners record stores (docs/attribution.md)"),
	    HVT_OPT_PATH(0, "mem-path", &o.mem_path, "FILE",
			 "tests only: a regular file standing in for /dev/mem"),
	    HVT_OPT_PATH(0, "iomem", &o.iomem, "FILE", "tests only: a recorded /proc/iomem to check against"),
	    HVT_OPT_OPERAND(&o.input, "DOMAIN.xml", "the domain (- for standard input), unless --domain"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace virt-xml",
	    .synopsis = "DOMAIN.xml|--domain NAME --emulator PATH --cpu N --output-dir DIR [options]\n"
			"       hvmtrace virt-xml --check DOMAIN.xml|--domain NAME\n"
			"       hvmtrace virt-xml --check-hook",
	    .about = "Writes a complete traced libvirt domain (docs/libvirt.md): the patched emulator,\n"
		     "guest RAM from memory-backend-devmem through the devmem helper, the hvmtrace\n"
		     "object, <cputune> off the tracer's CPU, and <hvmtrace:trace> in <metadata>;\n"
		     "with --owners, the guest agent's virtio-serial channel.",
	    .options = opts,
	    .exits = vx_exits,
	    .usage_status = VX_USAGE,
	};
	struct hvt_lv_domain d = {0};
	struct hvt_err e = {{0}};
	char *xml = NULL;
	size_t len;
	xmlDocPtr doc = NULL;
	int rc = hvt_opts_parse(&cmd, argc, argv);

	if (rc != HVT_OPTS_RUN)
		return rc;
	if (o.check_hook) {
		if (o.input || o.domain) {
			fprintf(stderr, "hvmtrace virt-xml: --check-hook takes no domain\n");
			return VX_USAGE;
		}
		rc = check_hook(&o, &e);
		if (rc)
			fprintf(stderr, "hvmtrace virt-xml: %s\n", e.msg);
		return rc ? VX_REFUSED : VX_OK;
	}
	if (!o.input == !o.domain) {
		fprintf(stderr, "hvmtrace virt-xml: give a domain file or --domain NAME (one of them)\n");
		return VX_USAGE;
	}
	if (!o.check && (o.cpu < 0 || !o.outdir)) {
		fprintf(stderr, "hvmtrace virt-xml: --cpu and --output-dir are needed\n");
		return VX_USAGE;
	}
	if (!o.check && (!o.chanmap != !o.channels || (o.chanmap && o.extents))) {
		fprintf(stderr,
			"hvmtrace virt-xml: give --chanmap FILE with --channels, or --extents, or neither\n");
		return VX_USAGE;
	}
	virSetErrorFunc(NULL, NULL);
	rc = read_input(&o, &xml, &len, &e);
	if (rc) {
		fprintf(stderr, "hvmtrace virt-xml: %s\n", e.msg);
		return VX_USAGE;
	}
	if (o.check) {
		rc = check_existing(&o, xml, len, &e);
		if (rc)
			fprintf(stderr, "hvmtrace virt-xml: %s\n", e.msg);
		free(xml);
		return rc ? VX_REFUSED : VX_OK;
	}
	doc = xmlReadMemory(xml, (int)len, "domain.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOBLANKS | XML_PARSE_NOERROR);
	free(xml);
	if (!doc) {
		fprintf(stderr, "hvmtrace virt-xml: %s: not well-formed XML\n",
			o.domain ? o.domain : o.input);
		return VX_USAGE;
	}
	if (access(o.emulator, X_OK))
		fprintf(stderr,
			"hvmtrace virt-xml: warning: emulator %s: %s (make install-qemu installs the patched "
			"QEMU there; or give --emulator)\n",
			o.emulator, strerror(errno));
	rc = make_traced(doc, &o, &d, &e);
	if (!rc && d.t.ram == HVT_LV_RAM_NONE && d.t.bandwidth)
		fprintf(
		    stderr,
		    "hvmtrace virt-xml: warning: guest RAM is libvirt's own (no --chanmap or --extents): "
		    "bandwidth='on' gives at most the VM's total (resctrl, where the host has it), never per "
		    "channel; bandwidth per channel needs the guest's RAM on reserved channels "
		    "(docs/libvirt.md §1)\n");
	if (rc) {
		fprintf(stderr, "hvmtrace virt-xml: %s\n", e.msg);
	} else {
		const char *out = o.output ? o.output : "-";

		if (xmlSaveFormatFile(out, doc, 1) < 0) {
			fprintf(stderr, "hvmtrace virt-xml: cannot write %s\n", out);
			rc = -EIO;
		}
	}
	hvt_lv_free(&d);
	xmlFreeDoc(doc);
	return rc == -EINVAL ? VX_USAGE : rc ? VX_REFUSED : VX_OK;
}
