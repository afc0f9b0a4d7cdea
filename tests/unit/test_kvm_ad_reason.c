// SPDX-License-Identifier: MIT
/*
 * kvm_ad_missing_reason (hvmtrace/record/host.c): the sentence `hvmtrace record` adds when mode ad is not
 * offered, from the KVM module parameters under a sysfs-like tree: only kvm_intel with ept=Y and eptad=N
 * explains it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#define TEST_TMPDIR_NAME "kvm_ad_reason"
#include "test_tmpdir.h"

#include "../../hvmtrace/record/host.h"

/* Writes DIR/kvm_intel/parameters/{ept,eptad}; a NULL value leaves that file out. */
static void params(const char *ept, const char *eptad)
{
	const char *names[] = {"ept", "eptad"}, *values[] = {ept, eptad};
	char path[256];

	snprintf(path, sizeof(path), "%s/kvm_intel", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/kvm_intel/parameters", dir);
	mkdir(path, 0755);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/kvm_intel/parameters/%s", dir, names[i]);
		remove(path);
		if (values[i]) {
			FILE *f = fopen(path, "w");

			assert_non_null(f);
			fputs(values[i], f);
			assert_int_equal(fclose(f), 0);
		}
	}
}

static void eptad_off_is_the_reason(void **state)
{
	(void)state;
	params("Y\n", "N\n");
	const char *why = kvm_ad_missing_reason(dir);

	assert_non_null(why);
	assert_non_null(strstr(why, "eptad=N"));
	assert_non_null(strstr(why, "eptad=1"));
}

static void eptad_on_or_no_ept_says_nothing(void **state)
{
	(void)state;
	params("Y\n", "Y\n");
	assert_null(kvm_ad_missing_reason(dir));
	/* ept=0: the shadow MMU keeps A/D bits of its own. */
	params("N\n", "N\n");
	assert_null(kvm_ad_missing_reason(dir));
	params("Y\n", NULL);
	assert_null(kvm_ad_missing_reason(dir));
}

static void no_kvm_intel_says_nothing(void **state)
{
	(void)state;
	assert_null(kvm_ad_missing_reason("/nonexistent-sysfs"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(eptad_off_is_the_reason),
	    cmocka_unit_test(eptad_on_or_no_ept_says_nothing),
	    cmocka_unit_test(no_kvm_intel_says_nothing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
