// SPDX-License-Identifier: MIT
/*
 * The trace metadata type: struct -> JSON -> struct gives the struct back; every field is type- and
 * range-checked with a message naming it; members from newer writers survive; and traces written by
 * hvmtrace 0.1.0 (tests/fixtures/trace, recorded before this type existed) read through it, their META JSON
 * equal byte for byte to what the type writes back.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/trace_meta.h"

#define FIX "tests/fixtures/trace/"

static void set(char **dst, const char *s)
{
	assert_int_equal(hvt_meta_set_str(dst, s), 0);
}

/* Every item given, a PMU channel and a resctrl domain, and members no row knows. */
static void make_full(struct hvt_trace_meta *m)
{
	static const char *const argv[] = {"hvmtrace", "record", "--attach", "/run/vm.sock"};
	struct hvt_meta_channel *c;

	*m = (struct hvt_trace_meta){.vm_pid = 4242,
				     .tracer_cpu = 7,
				     .harvest_cpu = -1,
				     .mode = HVT_MODE_AD,
				     .interval_ns = 250000000,
				     .page_size = 4096,
				     .written_available = true,
				     .accessed_available = true,
				     .bandwidth_available = true,
				     .bandwidth_source = HVT_BW_SOURCE_PMU,
				     .t_armed_ns = UINT64_MAX - 1};
	m->present = 1ull << HVT_META_HOST_KERNEL | 1ull << HVT_META_HOST_MACHINE;
	hvt_trace_meta_set_present(m, HVT_META_BANDWIDTH_SOURCE);
	set(&m->tool, "hvmtrace 9.9.9");
	set(&m->created, "2026-11-23T16:00:00.123456789Z");
	set(&m->host_name, "host-1");
	set(&m->host_kernel, "6.12.0");
	set(&m->host_machine, "x86_64");
	set(&m->vm_name, "vm \"quoted\" é");
	set(&m->vm_uuid, "3e1b6c9a-0000-4000-8000-000000000001");
	set(&m->vm_vmm, "QEMU 10.0.2");
	set(&m->vm_accel, "kvm");
	set(&m->tracer_version, "9.9.9");
	m->command.n = 4;
	m->command.v = calloc(4, sizeof(char *));
	assert_non_null(m->command.v);
	for (int i = 0; i < 4; i++)
		set(&m->command.v[i], argv[i]);
	m->channels.n = 2;
	m->channels.v = calloc(2, sizeof(*m->channels.v));
	assert_non_null(m->channels.v);
	c = &m->channels.v[0];
	*c = (struct hvt_meta_channel){.socket = 1,
				       .controller = 2,
				       .channel = 3,
				       .cpu = 40,
				       .inferred = true,
				       .reads_writes_split = true};
	c->present = 1ull << HVT_MCH_SOCKET | 1ull << HVT_MCH_CONTROLLER | 1ull << HVT_MCH_CHANNEL |
		     1ull << HVT_MCH_PMU | 1ull << HVT_MCH_CPU | 1ull << HVT_MCH_INFERRED;
	set(&c->id, "s1.mc2.ch3");
	set(&c->source, "uncore IMC");
	set(&c->pmu, "uncore_imc_5");
	c->unknown = json_tokener_parse("{\"rank\": 2}");
	c = &m->channels.v[1];
	c->present = 1ull << HVT_MCH_GROUP | 1ull << HVT_MCH_NOTE;
	set(&c->id, "resctrl.mon_L3_01");
	set(&c->source, "resctrl mbm_total_bytes");
	set(&c->group, "/sys/fs/resctrl/mon_groups/g");
	set(&c->note, "totals");
	m->unknown = json_tokener_parse("{\"vm\": {\"numa\": 0}, \"future\": {\"a\": [1, 2]}}");
	assert_non_null(m->unknown);
}

static void assert_str(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

static void assert_json_equal(struct json_object *a, struct json_object *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN),
				    json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN));
}

static void assert_channel_equal(const struct hvt_meta_channel *a, const struct hvt_meta_channel *b)
{
	assert_int_equal(a->present, b->present);
	assert_str(a->id, b->id);
	assert_str(a->source, b->source);
	assert_int_equal(a->socket, b->socket);
	assert_int_equal(a->controller, b->controller);
	assert_int_equal(a->channel, b->channel);
	assert_str(a->pmu, b->pmu);
	assert_int_equal(a->cpu, b->cpu);
	assert_int_equal(a->inferred, b->inferred);
	assert_str(a->group, b->group);
	assert_int_equal(a->reads_writes_split, b->reads_writes_split);
	assert_str(a->note, b->note);
	assert_json_equal(a->unknown, b->unknown);
}

static void assert_meta_equal(const struct hvt_trace_meta *a, const struct hvt_trace_meta *b)
{
	assert_int_equal(a->present, b->present);
	assert_str(a->tool, b->tool);
	assert_str(a->created, b->created);
	assert_str(a->host_name, b->host_name);
	assert_str(a->host_kernel, b->host_kernel);
	assert_str(a->host_machine, b->host_machine);
	assert_str(a->vm_name, b->vm_name);
	assert_str(a->vm_uuid, b->vm_uuid);
	assert_int_equal(a->vm_pid, b->vm_pid);
	assert_str(a->vm_vmm, b->vm_vmm);
	assert_str(a->vm_accel, b->vm_accel);
	assert_str(a->tracer_version, b->tracer_version);
	assert_int_equal(a->tracer_cpu, b->tracer_cpu);
	assert_int_equal(a->harvest_cpu, b->harvest_cpu);
	assert_int_equal(a->command.n, b->command.n);
	for (uint32_t i = 0; i < a->command.n; i++)
		assert_str(a->command.v[i], b->command.v[i]);
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->interval_ns, b->interval_ns);
	assert_int_equal(a->page_size, b->page_size);
	assert_int_equal(a->written_available, b->written_available);
	assert_int_equal(a->accessed_available, b->accessed_available);
	assert_int_equal(a->bandwidth_available, b->bandwidth_available);
	assert_int_equal(a->bandwidth_source, b->bandwidth_source);
	assert_int_equal(a->channels.n, b->channels.n);
	for (uint32_t i = 0; i < a->channels.n; i++)
		assert_channel_equal(&a->channels.v[i], &b->channels.v[i]);
	assert_int_equal(a->t_armed_ns, b->t_armed_ns);
	assert_json_equal(a->unknown, b->unknown);
}

static void test_round_trip(void **state)
{
	struct hvt_trace_meta m, back;
	struct hvt_err err = {{0}};
	struct json_object *o, *again;

	(void)state;
	make_full(&m);
	o = hvt_trace_meta_to_json(&m);
	assert_non_null(o);
	if (hvt_trace_meta_from_json(&back, o, &err))
		fail_msg("%s", err.msg);
	assert_meta_equal(&m, &back);
	/* and the JSON again is the same text */
	again = hvt_trace_meta_to_json(&back);
	assert_json_equal(o, again);
	/* the unknown members went where they were: inside "vm", and at the end */
	assert_int_equal(json_object_get_int(json_object_object_get(json_object_object_get(o, "vm"), "numa")),
			 0);
	assert_non_null(json_object_object_get(json_object_object_get(o, "future"), "a"));
	json_object_put(again);
	json_object_put(o);
	hvt_trace_meta_fini(&back);

	/* without the optional items: they stay out of the JSON and read back absent */
	m.present = 0;
	m.bandwidth_available = false;
	m.bandwidth_source = HVT_BW_SOURCE_NONE;
	o = hvt_trace_meta_to_json(&m);
	assert_false(json_object_object_get_ex(o, "bandwidth_source", NULL));
	assert_false(json_object_object_get_ex(json_object_object_get(o, "host"), "kernel", NULL));
	assert_int_equal(hvt_trace_meta_from_json(&back, o, &err), 0);
	assert_null(back.host_kernel);
	assert_false(hvt_trace_meta_has(&back, HVT_META_BANDWIDTH_SOURCE));
	assert_int_equal(back.bandwidth_source, HVT_BW_SOURCE_NONE);
	/* make_full's host_kernel is not in the JSON any more, so compare item by item with that in mind */
	free(m.host_kernel);
	free(m.host_machine);
	m.host_kernel = m.host_machine = NULL;
	assert_meta_equal(&m, &back);
	json_object_put(o);
	hvt_trace_meta_fini(&back);
	hvt_trace_meta_fini(&m);
}

static void test_bw_source_names(void **state)
{
	(void)state;
	for (int s = HVT_BW_SOURCE_PMU; s <= HVT_BW_SOURCE_RESCTRL_TOTAL; s++)
		assert_int_equal(hvt_bw_source_from_name(hvt_bw_source_name((enum hvt_bw_source)s)), s);
	assert_string_equal(hvt_bw_source_name(HVT_BW_SOURCE_PMU_STAND_IN), "pmu-stand-in");
	assert_null(hvt_bw_source_name(HVT_BW_SOURCE_NONE));
	assert_null(hvt_bw_source_name((enum hvt_bw_source)99));
	assert_int_equal(hvt_bw_source_from_name("resctrl"), HVT_BW_SOURCE_NONE);
	assert_int_equal(hvt_bw_source_from_name(NULL), HVT_BW_SOURCE_NONE);
}

/* ---- checks ---- */

/* Sets (or with value NULL removes) the member at path ("vm.pid", "channels.0.cpu") of o. */
static void edit(struct json_object *o, const char *path, const char *value)
{
	char buf[128], *key, *next;
	struct json_object *at = o;

	snprintf(buf, sizeof(buf), "%s", path);
	key = buf;
	while ((next = strchr(key, '.'))) {
		*next = '\0';
		at = json_object_is_type(at, json_type_array) ? json_object_array_get_idx(at, atoi(key))
							      : json_object_object_get(at, key);
		assert_non_null(at);
		key = next + 1;
	}
	if (json_object_is_type(at, json_type_array)) {
		struct json_object *v = json_tokener_parse(value);

		assert_non_null(v);
		json_object_array_put_idx(at, (size_t)atoi(key), v);
	} else if (!value) {
		json_object_object_del(at, key);
	} else {
		struct json_object *v = json_tokener_parse(value);

		/* json_tokener_parse gives NULL for "null" as for bad text: only "null" may. */
		assert_true(v || !strcmp(value, "null"));
		json_object_object_add(at, key, v);
	}
}

static void test_field_checks(void **state)
{
	static const struct {
		const char *path, *value, *msg;
	} cases[] = {
	    /* the two that crashed `hvmtrace report` */
	    {"bandwidth_source", "null", "META: \"bandwidth_source\" is not a string (got null)"},
	    {"channels", "3", "META: \"channels\" is not an array (got an integer)"},
	    {"channels", "{}", "\"channels\" is not an array (got an object)"},
	    {"tool", NULL, "META: missing \"tool\""},
	    {"tool", "[]", "\"tool\" is not a string (got an array)"},
	    {"tool", "\"a\\u0000b\"", "\"tool\" holds a NUL byte"},
	    {"vm", "\"x\"", "\"vm\" is not an object (got a string)"},
	    {"vm", NULL, "META: missing \"vm\""},
	    {"vm.pid", "0", "META: vm: \"pid\" = 0 is out of range (1 to 2147483647)"},
	    {"vm.pid", "2147483648", "vm: \"pid\" = 2147483648 is out of range"},
	    {"vm.pid", "\"12\"", "vm: \"pid\" is not an integer (got a string)"},
	    {"vm.pid", "1.5", "vm: \"pid\" is not an integer (got a fractional number)"},
	    {"tracer.harvest_cpu", "-2", "tracer: \"harvest_cpu\" = -2 is out of range (-1 to"},
	    {"tracer.cpu", "-1", "tracer: \"cpu\" = -1 is out of range (0 to"},
	    {"tracer.command", "\"hvmtrace\"", "tracer: \"command\" is not an array (got a string)"},
	    {"tracer.command.1", "7", "tracer: command[1] is not a string (got an integer)"},
	    {"mode", "\"fast\"", "\"mode\" = \"fast\" is not a harvest mode (dirty-log or ad)"},
	    {"mode", "\"none\"", "\"mode\" = \"none\" is not a harvest mode"},
	    {"mode", "1", "\"mode\" is not a string (got an integer)"},
	    {"interval_ns", "0", "\"interval_ns\" = 0 is out of range (1 to 18446744073709551615)"},
	    {"interval_ns", "-5", "\"interval_ns\" = -5 is out of range"},
	    {"page_size", "4095", "\"page_size\" is not a power of two of at least 4096"},
	    {"page_size", "4294967296", "\"page_size\" = 4294967296 is out of range (0 to 4294967295)"},
	    {"written_available", "1", "\"written_available\" is not true or false (got an integer)"},
	    {"bandwidth_source", "\"dram\"",
	     "\"bandwidth_source\" = \"dram\" is not a bandwidth source (pmu, pmu-stand-in or resctrl-total)"},
	    {"bandwidth_source", NULL,
	     "missing \"bandwidth_source\", though \"bandwidth_available\" is true"},
	    {"bandwidth_available", "false",
	     "\"bandwidth_source\" is given, though \"bandwidth_available\" is false"},
	    {"channels.1", "5", "META: channels[1] is not an object (got an integer)"},
	    {"channels.0.id", NULL, "META: channels[0]: missing \"id\""},
	    {"channels.1.reads_writes_split", "null",
	     "channels[1]: \"reads_writes_split\" is not true or false (got null)"},
	    {"channels.0.cpu", "-2", "channels[0]: \"cpu\" = -2 is out of range (-1 to"},
	    {"channels.0.socket", "\"0\"", "channels[0]: \"socket\" is not an integer (got a string)"},
	    {"t_armed_ns", "true", "\"t_armed_ns\" is not an integer (got a boolean)"},
	};
	struct hvt_trace_meta full, m;
	struct json_object *base;
	char *long_str;

	(void)state;
	make_full(&full);
	base = hvt_trace_meta_to_json(&full);
	hvt_trace_meta_fini(&full);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *o = NULL;
		struct hvt_err err = {{0}};

		assert_int_equal(json_object_deep_copy(base, &o, NULL), 0);
		edit(o, cases[i].path, cases[i].value);
		if (hvt_trace_meta_from_json(&m, o, &err) != -EINVAL || !strstr(err.msg, cases[i].msg))
			fail_msg("%s = %s: expected \"%s\", got \"%s\"", cases[i].path,
				 cases[i].value ? cases[i].value : "(removed)", cases[i].msg, err.msg);
		/* a refusal leaves nothing behind */
		assert_null(m.tool);
		assert_null(m.channels.v);
		json_object_put(o);
	}

	/* a string longer than any item may be */
	long_str = malloc(4100);
	assert_non_null(long_str);
	memset(long_str, 'x', 4099);
	long_str[4099] = '\0';
	json_object_object_add(base, "created", json_object_new_string(long_str));
	{
		struct hvt_err err = {{0}};
		struct json_object *a = json_object_new_array();

		assert_int_equal(hvt_trace_meta_from_json(&m, base, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "META: \"created\" is longer than 4096 bytes"));
		assert_int_equal(hvt_trace_meta_from_json(&m, NULL, &err), -EINVAL);
		assert_int_equal(hvt_trace_meta_from_json(&m, a, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "META: expected a JSON object, got an array"));
		json_object_put(a);
	}
	free(long_str);
	json_object_put(base);
}

/* The writer refuses what the reader would, naming the field, and leaves no file. */
static void test_writer_checks(void **state)
{
	char dir[] = "/tmp/hvt-test-meta-XXXXXX", path[64];
	struct hvt_trace_writer *w;
	struct hvt_trace_meta m;
	struct hvt_err err = {{0}};

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.hvt", dir);
	make_full(&m);
	m.page_size = 0;
	assert_int_equal(hvt_trace_create(&w, path, &m, &err), -EINVAL);
	assert_null(w);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "\"page_size\""));
	m.page_size = 4096;
	m.bandwidth_source = HVT_BW_SOURCE_NONE; /* present, but no name to write */
	assert_int_equal(hvt_trace_create(&w, path, &m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "\"bandwidth_source\" is not a string (got null)"));
	assert_int_equal(hvt_trace_create(&w, path, NULL, &err), -EINVAL);
	assert_int_equal(access(path, F_OK), -1);
	hvt_trace_meta_fini(&m);
	assert_int_equal(rmdir(dir), 0);
}

/* ---- traces written by hvmtrace 0.1.0, before this type ---- */

/* The META record's JSON text, as the file holds it (it is the first record, right after the header). */
static char *raw_meta(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t hdr[32];
	uint32_t len;
	char *text;

	assert_non_null(f);
	assert_int_equal(fread(hdr, 1, 32, f), 32);
	len = (uint32_t)hdr[20] | (uint32_t)hdr[21] << 8 | (uint32_t)hdr[22] << 16 | (uint32_t)hdr[23] << 24;
	text = calloc(1, len + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, len, f), len);
	fclose(f);
	return text;
}

/* Opens an old trace and checks what every one of them holds; the caller checks the rest, then closes. */
static struct hvt_trace_reader *open_old(const char *name, const struct hvt_trace_meta **mp)
{
	char path[128];
	struct hvt_trace_reader *r;
	struct hvt_err err = {{0}};
	const struct hvt_trace_meta *m;
	struct json_object *o;
	char *raw;

	snprintf(path, sizeof(path), FIX "%s", name);
	if (hvt_trace_open(&r, path, &err))
		fail_msg("%s", err.msg);
	m = hvt_trace_meta(r);
	assert_string_equal(m->tool, "hvmtrace 0.1.0");
	assert_string_equal(m->tracer_version, "0.1.0");
	assert_non_null(strstr(m->created, "2026-"));
	assert_true(m->host_name[0]);
	assert_true(hvt_trace_meta_has(m, HVT_META_HOST_KERNEL) && m->host_kernel[0]);
	assert_string_equal(m->host_machine, "x86_64");
	assert_true(m->vm_pid > 0);
	assert_string_equal(m->command.v[0], "record");
	assert_string_equal(m->command.v[1], "--attach");
	assert_int_equal(m->mode, HVT_MODE_DIRTY_LOG);
	assert_int_equal(m->interval_ns, 100000000);
	assert_int_equal(m->page_size, 4096);
	assert_true(m->written_available);
	assert_false(m->accessed_available);
	assert_true(m->t_armed_ns > 0);
	assert_null(m->unknown);
	assert_true(hvt_trace_interval_count(r) >= 2);
	/* what the type writes back is what the old writer wrote, byte for byte */
	o = hvt_trace_meta_to_json(m);
	raw = raw_meta(path);
	assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), raw);
	free(raw);
	json_object_put(o);
	*mp = m;
	return r;
}

static void test_old_trace_without_bandwidth(void **state)
{
	const struct hvt_trace_meta *m;
	struct hvt_trace_reader *r = open_old("dirtylog-nobw.hvt", &m);

	(void)state;
	assert_string_equal(m->vm_name, "fake");
	assert_string_equal(m->vm_vmm, "fakepeer");
	assert_string_equal(m->vm_accel, "kvm");
	assert_int_equal(m->harvest_cpu, -1);
	assert_false(m->bandwidth_available);
	assert_false(hvt_trace_meta_has(m, HVT_META_BANDWIDTH_SOURCE));
	assert_int_equal(m->bandwidth_source, HVT_BW_SOURCE_NONE);
	assert_int_equal(m->channels.n, 0);
	hvt_trace_reader_close(r);
}

static void test_old_trace_pmu_channels(void **state)
{
	const struct hvt_trace_meta *m;
	struct hvt_trace_reader *r = open_old("pmu-standin.hvt", &m);
	const struct hvt_meta_channel *c;

	(void)state;
	assert_string_equal(m->vm_name, "fake");
	assert_true(m->bandwidth_available);
	assert_int_equal(m->bandwidth_source, HVT_BW_SOURCE_PMU_STAND_IN);
	assert_int_equal(m->channels.n, 2);
	c = &m->channels.v[0];
	assert_string_equal(c->id, "s0.mc0.ch1");
	assert_non_null(strstr(c->source, "stand-in"));
	assert_true(hvt_trace_meta_has(m, HVT_META_BANDWIDTH_SOURCE));
	assert_true(c->present & 1ull << HVT_MCH_PMU);
	assert_false(c->present & 1ull << HVT_MCH_GROUP);
	assert_int_equal(c->socket, 0);
	assert_int_equal(c->channel, 1);
	assert_true(c->reads_writes_split);
	assert_string_equal(m->channels.v[1].id, "s1.mc0.ch0");
	assert_int_equal(m->channels.v[1].socket, 1);
	hvt_trace_reader_close(r);
}

static void test_old_trace_resctrl(void **state)
{
	const struct hvt_trace_meta *m;
	struct hvt_trace_reader *r = open_old("resctrl-total.hvt", &m);
	const struct hvt_meta_channel *c;

	(void)state;
	assert_true(m->bandwidth_available);
	assert_int_equal(m->bandwidth_source, HVT_BW_SOURCE_RESCTRL_TOTAL);
	assert_int_equal(m->channels.n, 2);
	c = &m->channels.v[0];
	assert_string_equal(c->id, "resctrl.mon_L3_00");
	assert_string_equal(c->source, "resctrl mbm_total_bytes");
	assert_false(c->reads_writes_split);
	assert_true(c->present & 1ull << HVT_MCH_GROUP);
	assert_false(c->present & 1ull << HVT_MCH_PMU);
	assert_non_null(strstr(c->note, "TOTAL bytes"));
	assert_string_equal(m->channels.v[1].id, "resctrl.mon_L3_01");
	hvt_trace_reader_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_bw_source_names),
	    cmocka_unit_test(test_field_checks),
	    cmocka_unit_test(test_writer_checks),
	    cmocka_unit_test(test_old_trace_without_bandwidth),
	    cmocka_unit_test(test_old_trace_pmu_channels),
	    cmocka_unit_test(test_old_trace_resctrl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
