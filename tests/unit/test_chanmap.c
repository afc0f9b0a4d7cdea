// SPDX-License-Identifier: MIT
/* chanmap.json: building, validation, lookups, and the JSON round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"

#define G (1ull << 30)

static void add(struct hvt_chanmap *m, const char *id, unsigned s, unsigned mc, unsigned ch)
{
	struct hvt_chanmap_channel c = {.socket = s, .controller = mc, .channel = ch};
	snprintf(c.id, sizeof(c.id), "%s", id);
	snprintf(c.pmu, sizeof(c.pmu), "uncore_imc_%u", mc * 3 + ch);
	assert_true(hvt_chanmap_add_channel(m, &c, NULL) >= 0);
}

static void sample(struct hvt_chanmap *m)
{
	hvt_chanmap_init(m);
	m->sockets = 2;
	snprintf(m->source, sizeof(m->source), "test");
	add(m, "s0.mc0.ch0", 0, 0, 0);
	add(m, "s0.mc0.ch1", 0, 0, 1);
	add(m, "s1.mc0.ch0", 1, 0, 0);
	add(m, "s1.mc0.ch1", 1, 0, 1);
	assert_int_equal(hvt_chanmap_add_range(m, 0, 1 * G, 2 * G), 0);
	assert_int_equal(hvt_chanmap_add_range(m, 0, 4 * G, 6 * G), 0);
	assert_int_equal(hvt_chanmap_add_range(m, 1, 10 * G, 4 * G), 0);
	assert_int_equal(hvt_chanmap_add_range(m, 1, 14 * G, 2 * G), 0); /* adjacent: merges */
	unsigned both[] = {2, 3};
	assert_int_equal(hvt_chanmap_add_interleave(m, 16 * G, 8 * G, both, 2), 0);
	m->channels[3].inferred = true;
}

static void test_build_and_lookup(void **state)
{
	struct hvt_chanmap m;
	struct hvt_err e;

	(void)state;
	sample(&m);
	assert_int_equal(m.channels[1].nranges, 1);
	assert_int_equal(m.channels[1].ranges[0].size, 6 * G);
	assert_int_equal(hvt_chanmap_validate(&m, &e), 0);
	assert_int_equal(hvt_chanmap_channel_of(&m, 5 * G, G, &e), 0);
	assert_int_equal(hvt_chanmap_channel_of(&m, 12 * G, 4 * G, &e), 1);
	assert_int_equal(hvt_chanmap_channel_of(&m, 9 * G, 2 * G, &e), -ERANGE); /* half in a channel */
	assert_non_null(strstr(e.msg, "cross channels"));
	assert_int_equal(hvt_chanmap_channel_of(&m, 17 * G, G, &e), -ERANGE);
	assert_non_null(strstr(e.msg, "interleaved"));
	assert_int_equal(hvt_chanmap_channel_of(&m, 3 * G, G / 2, &e), -ENOENT);
	assert_int_equal(hvt_chanmap_find(&m, "s1.mc0.ch1"), 3);
	assert_int_equal(hvt_chanmap_find(&m, "s9.mc0.ch0"), -1);
	hvt_chanmap_free(&m);
}

static void test_ids(void **state)
{
	unsigned s, c, h;
	(void)state;
	assert_true(hvt_chanmap_parse_id("s1.mc2.ch3", &s, &c, &h));
	assert_int_equal(s * 100 + c * 10 + h, 123);
	assert_false(hvt_chanmap_parse_id("s01.mc2.ch3", &s, &c, &h));
	assert_false(hvt_chanmap_parse_id("s1.mc2.ch3x", &s, &c, &h));
	assert_false(hvt_chanmap_parse_id("s1.mc2", &s, &c, &h));
	assert_false(hvt_chanmap_parse_id("", &s, &c, &h));
}

static void test_round_trip(void **state)
{
	struct hvt_chanmap m, back, again;
	struct hvt_err e;
	char diff[256];

	(void)state;
	sample(&m);
	m.probe.windows = 123;
	char *text = hvt_chanmap_to_string(&m);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"0x40000000\"")); /* addresses as hex strings */
	assert_non_null(strstr(text, "\"numbering\": \"inferred\""));
	assert_int_equal(hvt_chanmap_parse(text, "mem", &back, &e), 0);
	assert_int_equal(hvt_chanmap_compare(&m, &back, diff, sizeof(diff)), 0);
	assert_int_equal(back.probe.windows, 123);
	assert_true(back.channels[3].inferred);
	assert_false(back.channels[2].inferred);

	char path[] = "/tmp/test_chanmap.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(hvt_chanmap_write(&back, path, &e), 0);
	assert_int_equal(hvt_chanmap_read(path, &again, &e), 0);
	assert_int_equal(hvt_chanmap_compare(&m, &again, diff, sizeof(diff)), 0);
	unlink(path);
	free(text);
	hvt_chanmap_free(&m);
	hvt_chanmap_free(&back);
	hvt_chanmap_free(&again);
}

/* Each broken document is refused and the message names the problem. */
/* A range's confidence is optional, range by range: the ones without read as unknown. */
static void test_confidence(void **state)
{
	const char *text =
	    "{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"sockets\":1,\"channels\":[{\"id\":\"s0.mc0.ch0\",\"socket\":0,\"controller\":0,\"channel\":0,\"ranges\":[{\"start\":\"0x0\",\"size\":\"0x1000\"},{\"start\":\"0x2000\",\"size\":\"0x1000\",\"confidence\":0.75},{\"start\":\"0x4000\",\"size\":\"0x1000\"}]}]}";
	struct hvt_chanmap m;
	struct hvt_err e;

	(void)state;
	assert_int_equal(hvt_chanmap_parse(text, "doc.json", &m, &e), 0);
	assert_true(hvt_chanmap_confidence(&m.channels[0], 0) < 0);
	assert_true(hvt_chanmap_confidence(&m.channels[0], 1) == 0.75);
	assert_true(hvt_chanmap_confidence(&m.channels[0], 2) < 0);
	char *out = hvt_chanmap_to_string(&m);
	assert_non_null(strstr(out, "\"confidence\": 0.75"));
	assert_null(
	    strstr(strstr(out, "\"confidence\"") + 1, "\"confidence\"")); /* written only where known */
	free(out);
	hvt_chanmap_free(&m);
}

static void test_refusals(void **state)
{
	static const struct {
		const char *text, *says;
	} bad[] = {
	    {"{", "not valid JSON"},
	    {"{\"schema\":\"x\",\"version\":1}", "not a channel map"},
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":2,\"sockets\":1,\"channels\":[]}", "version 2"},
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"channels\":[]}", "\"sockets\""},
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"sockets\":1,\"channels\":[{\"id\":\"s0.mc0.ch0\",\"socket\":0,\"controller\":1,\"channel\":0,\"ranges\":[]}]}",
	     "does not read"},
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"sockets\":1,\"channels\":[{\"id\":\"s0.mc0.ch0\",\"socket\":0,\"controller\":0,\"channel\":0,\"ranges\":[{\"start\":\"0x1001\",\"size\":\"0x1000\"}]}]}",
	     "not 4 KiB aligned"},
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"sockets\":1,\"channels\":[{\"id\":\"s0.mc0.ch0\",\"socket\":0,\"controller\":0,\"channel\":0,\"ranges\":[{\"start\":\"0x0\",\"size\":\"0x2000\"}]},{\"id\":\"s0.mc0.ch1\",\"socket\":0,\"controller\":0,\"channel\":1,\"ranges\":[{\"start\":\"0x1000\",\"size\":\"0x1000\"}]}]}",
	     "overlaps channel s0.mc0.ch1"},
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"sockets\":1,\"channels\":[{\"id\":\"s1.mc0.ch0\",\"socket\":1,\"controller\":0,\"channel\":0,\"ranges\":[]}]}",
	     "has 1 sockets"},
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"sockets\":1,\"channels\":[{\"id\":\"s0.mc0.ch0\",\"socket\":0,\"controller\":0,\"channel\":0,\"ranges\":[]}],\"interleaved\":[{\"start\":\"0x0\",\"size\":\"0x1000\",\"channels\":[\"s0.mc0.ch0\",\"s0.mc0.ch7\"]}]}",
	     "s0.mc0.ch7"},
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"sockets\":1,\"channels\":[{\"id\":\"s0.mc0.ch0\",\"socket\":0,\"controller\":0,\"channel\":0,\"ranges\":[{\"start\":\"-1\",\"size\":\"0x1000\"}]}]}",
	     "\"start\""},
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"sockets\":1,\"channels\":[{\"id\":\"s0.mc0.ch0\",\"socket\":0,\"controller\":0,\"channel\":0,\"ranges\":[{\"start\":\"0x0\",\"size\":\"0x1000\",\"confidence\":1.5}]}]}",
	     "\"confidence\" = 1.5 is out of range (0 to 1)"},
	    /* drifts of the per-file readers, refused now: junk after "0x…" was read as the number before it
	     * (probed_bytes: strtoull unchecked), a leading 0 as octal (strtoull base 0: "010000" was
	     * 0x1000), a negative count as a huge one, a string where a name belongs as "" */
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"sockets\":1,\"channels\":[],\"probe\":{\"probed_bytes\":\"0x10zz\"}}",
	     "doc.json: probe: \"probed_bytes\" = \"0x10zz\" is not an address"},
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"sockets\":1,\"channels\":[{\"id\":\"s0.mc0.ch0\",\"socket\":0,\"controller\":0,\"channel\":0,\"ranges\":[{\"start\":\"010000\",\"size\":\"0x1000\"}]}]}",
	     "ranges[0]: \"start\" = \"010000\" is not an address"},
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"sockets\":1,\"channels\":[],\"probe\":{\"windows\":-1}}",
	     "doc.json: probe: \"windows\" = -1 is out of range"},
	    {"{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"sockets\":1,\"channels\":[],\"host\":{\"hostname\":7}}",
	     "doc.json: host: \"hostname\" is not a string (got an integer)"},
	};
	struct hvt_chanmap m;
	struct hvt_err e;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e.msg[0] = '\0';
		assert_int_equal(hvt_chanmap_parse(bad[i].text, "doc.json", &m, &e), -EINVAL);
		if (!strstr(e.msg, bad[i].says) || !strstr(e.msg, "doc.json"))
			fail_msg("case %zu: message '%s' does not say '%s' and name the file", i, e.msg,
				 bad[i].says);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_build_and_lookup), cmocka_unit_test(test_ids),
	    cmocka_unit_test(test_round_trip),       cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_confidence),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
