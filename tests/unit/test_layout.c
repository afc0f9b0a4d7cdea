// SPDX-License-Identifier: MIT
/* Unit tests for lib/format/layout.c: validation, JSON round trips, copies, GFN lookup and bitmap geometry.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/layout.h"
#include "test_qemu_layout.h"

#define GiB (1ull << 30)
#define MiB (1ull << 20)

/* A QEMU-like 4 GiB guest: 3 GiB below the PCI hole, 1 GiB above it; the high slot is devmem-backed. */
static void make_layout(struct hvt_layout *l)
{
	qemu_layout(l, 7);
	l->slots[1] =
	    (struct hvt_memslot){.slot = 1u << 16 | 1, .gpa = 4 * GiB, .size = GiB, .backing = "devmem"};
	l->slots[1].nextents = 2;
	l->slots[1].extents = calloc(2, sizeof(struct hvt_extent));
	assert_non_null(l->slots[1].extents);
	/* hpa above 2^63 checks that full 64-bit values survive JSON. */
	l->slots[1].extents[0] = (struct hvt_extent){
	    .gpa = 4 * GiB, .hpa = 0x900000000ull, .size = 512 * MiB, .channel = "s0.mc1.ch0"};
	l->slots[1].extents[1] = (struct hvt_extent){
	    .gpa = 4 * GiB + 512 * MiB, .hpa = 0x8000000000001000ull, .size = 512 * MiB, .channel = ""};
}

static void assert_layout_equal(const struct hvt_layout *a, const struct hvt_layout *b)
{
	assert_int_equal(a->generation, b->generation);
	assert_int_equal(a->page_size, b->page_size);
	assert_int_equal(a->nslots, b->nslots);
	for (uint32_t i = 0; i < a->nslots; i++) {
		const struct hvt_memslot *x = &a->slots[i], *y = &b->slots[i];

		assert_int_equal(x->slot, y->slot);
		assert_int_equal(x->gpa, y->gpa);
		assert_int_equal(x->size, y->size);
		assert_string_equal(x->backing, y->backing);
		assert_string_equal(x->name, y->name);
		assert_int_equal(x->nextents, y->nextents);
		for (uint32_t e = 0; e < x->nextents; e++) {
			assert_int_equal(x->extents[e].gpa, y->extents[e].gpa);
			assert_true(x->extents[e].hpa == y->extents[e].hpa);
			assert_int_equal(x->extents[e].size, y->extents[e].size);
			assert_string_equal(x->extents[e].channel, y->extents[e].channel);
		}
	}
}

static void expect_invalid(const struct hvt_layout *l, const char *needle)
{
	struct hvt_err err = {{0}};

	assert_int_equal(hvt_layout_validate(l, &err), -EINVAL);
	if (!strstr(err.msg, needle))
		fail_msg("message \"%s\" does not mention \"%s\"", err.msg, needle);
}

static void test_valid_layout(void **state)
{
	struct hvt_layout l;
	struct hvt_err err = {{0}};

	(void)state;
	make_layout(&l);
	assert_int_equal(hvt_layout_validate(&l, &err), 0);
	hvt_layout_fini(&l);
	assert_null(l.slots);
	assert_int_equal(l.nslots, 0);
	hvt_layout_fini(&l); /* twice is harmless */
}

static void test_validate_page_size(void **state)
{
	struct hvt_layout l;

	(void)state;
	make_layout(&l);
	l.page_size = 6144;
	expect_invalid(&l, "page size 6144");
	l.page_size = 2048;
	expect_invalid(&l, "page size 2048");
	l.page_size = 0;
	expect_invalid(&l, "page size 0");
	hvt_layout_fini(&l);
}

static void test_validate_slots(void **state)
{
	struct hvt_layout l;

	(void)state;
	make_layout(&l);
	l.slots[1].size = 0;
	expect_invalid(&l, "slot 65537");
	l.slots[1].size = GiB;

	l.slots[0].gpa = 0x800;
	expect_invalid(&l, "slot 0");
	l.slots[0].gpa = 0;

	l.slots[0].size = 3 * GiB + 100;
	expect_invalid(&l, "not a multiple of the page size");
	l.slots[0].size = 3 * GiB;

	l.slots[1].slot = 0;
	expect_invalid(&l, "id used twice");
	l.slots[1].slot = 1u << 16 | 1;

	/* Overlap: the message names both slots. */
	l.slots[0].size = 4 * GiB + 4096;
	expect_invalid(&l, "slot 65537 (gpa 0x100000000) overlaps slot 0");
	l.slots[0].size = 3 * GiB;

	l.slots[1].gpa = UINT64_MAX - 4095;
	expect_invalid(&l, "overflows");
	l.slots[1].gpa = 4 * GiB;

	struct hvt_err err;
	assert_int_equal(hvt_layout_validate(&l, &err), 0);
	hvt_layout_fini(&l);
}

static void test_validate_extents(void **state)
{
	struct hvt_layout l;
	struct hvt_extent *x;

	(void)state;
	make_layout(&l);
	x = l.slots[1].extents;

	x[1].gpa = 4 * GiB + 768 * MiB; /* runs past the slot end */
	expect_invalid(&l, "slot 65537 extent 1");
	expect_invalid(&l, "not inside its slot");
	x[1].gpa = 4 * GiB + 256 * MiB; /* overlaps extent 0 */
	expect_invalid(&l, "extent 1 overlaps extent 0 in guest-physical");
	x[1].gpa = 4 * GiB + 512 * MiB;

	x[1].hpa = x[0].hpa + 4096; /* same host memory twice */
	expect_invalid(&l, "host-physical");
	x[1].hpa = 0x8000000000001000ull;

	x[0].hpa = 0x900000010ull;
	expect_invalid(&l, "extent 0");
	x[0].hpa = 0x900000000ull;

	x[0].gpa = 2 * GiB; /* outside, below the slot */
	expect_invalid(&l, "not inside its slot");
	x[0].gpa = 4 * GiB;

	x[0].size = 0;
	expect_invalid(&l, "empty");
	x[0].size = 512 * MiB;

	assert_int_equal(hvt_layout_validate(&l, NULL), 0);
	hvt_layout_fini(&l);
}

static void test_json_round_trip(void **state)
{
	struct hvt_layout l, back;
	struct hvt_err err = {{0}};
	struct json_object *o, *reparsed;

	(void)state;
	make_layout(&l);
	o = hvt_layout_to_json(&l);
	/* Through text, as on the wire. */
	reparsed = json_tokener_parse(json_object_to_json_string(o));
	assert_non_null(reparsed);
	assert_int_equal(hvt_layout_from_json(&back, reparsed, &err), 0);
	assert_layout_equal(&l, &back);
	/* Optional members: "name" only when set, "extents" only when present. */
	struct json_object *s0 = json_object_array_get_idx(json_object_object_get(o, "slots"), 0);
	assert_false(json_object_object_get_ex(s0, "extents", NULL));
	assert_true(json_object_object_get_ex(s0, "name", NULL));
	struct json_object *s1 = json_object_array_get_idx(json_object_object_get(o, "slots"), 1);
	assert_false(json_object_object_get_ex(s1, "name", NULL));
	json_object_put(o);
	json_object_put(reparsed);
	hvt_layout_fini(&back);
	hvt_layout_fini(&l);
}

/* Parses text and expects from_json to fail with a message that contains needle. */
static void expect_json_error(const char *text, const char *needle)
{
	struct hvt_layout l;
	struct hvt_err err = {{0}};
	struct json_object *o = json_tokener_parse(text);

	assert_non_null(o);
	assert_int_equal(hvt_layout_from_json(&l, o, &err), -EINVAL);
	if (!strstr(err.msg, needle))
		fail_msg("message \"%s\" does not mention \"%s\"", err.msg, needle);
	assert_null(l.slots);
	json_object_put(o);
}

static void test_json_errors(void **state)
{
	(void)state;
	expect_json_error("[]", "not a JSON object");
	expect_json_error("{\"page_size\":4096,\"slots\":[]}", "missing \"generation\"");
	expect_json_error("{\"generation\":1,\"slots\":[]}", "missing \"page_size\"");
	expect_json_error("{\"generation\":1,\"page_size\":4096}", "missing \"slots\"");
	expect_json_error("{\"generation\":1,\"page_size\":4096,\"slots\":{}}", "\"slots\" is not an array");
	expect_json_error("{\"generation\":-1,\"page_size\":4096,\"slots\":[]}",
			  "\"generation\" = -1 is out of range (0 to");
	expect_json_error("{\"generation\":1.5,\"page_size\":4096,\"slots\":[]}",
			  "\"generation\" is not an integer");
	expect_json_error("{\"generation\":1,\"page_size\":4294967296,\"slots\":[]}", "\"page_size\"");
	expect_json_error("{\"generation\":1,\"page_size\":4096,\"slots\":[7]}", "slots[0] is not an object");
	expect_json_error(
	    "{\"generation\":1,\"page_size\":4096,\"slots\":[{\"slot\":3,\"gpa\":0,\"size\":4096}]}",
	    "slots[0] (slot 3): missing \"backing\"");
	expect_json_error(
	    "{\"generation\":1,\"page_size\":4096,\"slots\":[{\"slot\":3,\"gpa\":0,\"backing\":\"anon\"}]}",
	    "slots[0] (slot 3): missing \"size\"");
	expect_json_error(
	    "{\"generation\":1,\"page_size\":4096,\"slots\":[{\"slot\":3,\"gpa\":0,\"size\":4096,\"backing\":\"a-backing-name-that-is-too-long\"}]}",
	    "\"backing\" is longer than 15");
	expect_json_error(
	    "{\"generation\":1,\"page_size\":4096,\"slots\":[{\"slot\":3,\"gpa\":0,\"size\":4096,\"backing\":\"devmem\",\"extents\":[{\"gpa\":0,\"size\":4096}]}]}",
	    "slots[0] (slot 3) extents[0]: missing \"hpa\"");
	/* from_json validates too. */
	expect_json_error(
	    "{\"generation\":1,\"page_size\":4096,\"slots\":[{\"slot\":3,\"gpa\":0,\"size\":4096,\"backing\":\"anon\"},{\"slot\":3,\"gpa\":8192,\"size\":4096,\"backing\":\"anon\"}]}",
	    "id used twice");
}

static void test_json_unknown_members_ignored(void **state)
{
	struct hvt_layout l;
	struct hvt_err err = {{0}};
	struct json_object *o = json_tokener_parse(
	    "{\"generation\":2,\"page_size\":4096,\"future\":[1,2],\"slots\":[{\"slot\":5,\"gpa\":8192,\"size\":12288,\"backing\":\"memfd\",\"numa\":1}]}");

	(void)state;
	assert_int_equal(hvt_layout_from_json(&l, o, &err), 0);
	assert_int_equal(l.nslots, 1);
	assert_int_equal(l.slots[0].slot, 5);
	assert_int_equal(l.slots[0].gpa, 8192);
	assert_int_equal(l.slots[0].size, 12288);
	assert_string_equal(l.slots[0].backing, "memfd");
	assert_string_equal(l.slots[0].name, "");
	assert_int_equal(l.slots[0].nextents, 0);
	json_object_put(o);
	hvt_layout_fini(&l);
}

static void test_copy_is_deep(void **state)
{
	struct hvt_layout l, c;

	(void)state;
	make_layout(&l);
	assert_int_equal(hvt_layout_copy(&c, &l), 0);
	assert_layout_equal(&l, &c);
	assert_ptr_not_equal(c.slots, l.slots);
	assert_ptr_not_equal(c.slots[1].extents, l.slots[1].extents);
	c.slots[1].extents[0].hpa = 42;
	strcpy(c.slots[0].name, "changed");
	assert_int_equal(l.slots[1].extents[0].hpa, 0x900000000ull);
	assert_string_equal(l.slots[0].name, "low");
	hvt_layout_fini(&l); /* the copy outlives its source */
	assert_int_equal(c.slots[1].extents[1].size, 512 * MiB);
	hvt_layout_fini(&c);
}

static void test_find_gfn(void **state)
{
	struct hvt_layout l;
	uint64_t page = 99;

	(void)state;
	make_layout(&l);
	assert_int_equal(hvt_layout_find_gfn(&l, 0, &page), 0);
	assert_int_equal(page, 0);
	assert_int_equal(hvt_layout_find_gfn(&l, 3 * GiB / 4096 - 1, &page), 0);
	assert_int_equal(page, 3 * GiB / 4096 - 1);
	assert_int_equal(hvt_layout_find_gfn(&l, 3 * GiB / 4096, &page), -1); /* the hole */
	assert_int_equal(hvt_layout_find_gfn(&l, 4 * GiB / 4096 - 1, NULL), -1);
	assert_int_equal(hvt_layout_find_gfn(&l, 4 * GiB / 4096, &page), 1);
	assert_int_equal(page, 0);
	assert_int_equal(hvt_layout_find_gfn(&l, 5 * GiB / 4096 - 1, &page), 1);
	assert_int_equal(page, GiB / 4096 - 1);
	assert_int_equal(hvt_layout_find_gfn(&l, 5 * GiB / 4096, &page), -1);
	assert_int_equal(hvt_layout_total_pages(&l), 4 * GiB / 4096);
	hvt_layout_fini(&l);
}

static void test_bitmap_geometry(void **state)
{
	struct hvt_layout l = {.generation = 1, .page_size = 4096, .nslots = 3};
	struct hvt_memslot slots[3] = {
	    {.slot = 0, .gpa = 0, .size = 65 * 4096, .backing = "anon"},       /* 2 words */
	    {.slot = 1, .gpa = 1 * GiB, .size = 64 * 4096, .backing = "anon"}, /* 1 word */
	    {.slot = 2, .gpa = 2 * GiB, .size = 1 * 4096, .backing = "anon"},  /* 1 word */
	};

	(void)state;
	l.slots = slots;
	assert_int_equal(hvt_layout_bitmap_offset(&l, 0), 0);
	assert_int_equal(hvt_layout_bitmap_offset(&l, 1), 16);
	assert_int_equal(hvt_layout_bitmap_offset(&l, 2), 24);
	assert_int_equal(hvt_layout_bitmap_bytes(&l), 32);

	/* Layout order, not address order, decides the packing. */
	struct hvt_memslot swapped[2] = {slots[2], slots[0]};
	l.slots = swapped;
	l.nslots = 2;
	assert_int_equal(hvt_layout_bitmap_offset(&l, 1), 8);
	assert_int_equal(hvt_layout_bitmap_bytes(&l), 24);

	struct hvt_layout big;
	make_layout(&big);
	assert_int_equal(hvt_layout_bitmap_offset(&big, 1), 3 * GiB / 4096 / 8);
	assert_int_equal(hvt_layout_bitmap_bytes(&big), 4 * GiB / 4096 / 8);
	hvt_layout_fini(&big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_layout),
	    cmocka_unit_test(test_validate_page_size),
	    cmocka_unit_test(test_validate_slots),
	    cmocka_unit_test(test_validate_extents),
	    cmocka_unit_test(test_json_round_trip),
	    cmocka_unit_test(test_json_errors),
	    cmocka_unit_test(test_json_unknown_members_ignored),
	    cmocka_unit_test(test_copy_is_deep),
	    cmocka_unit_test(test_find_gfn),
	    cmocka_unit_test(test_bitmap_geometry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
