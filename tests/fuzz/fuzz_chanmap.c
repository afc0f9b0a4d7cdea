// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: chanmap.json as `chanmap show`, the probe and `record` read it. A map that parses must
 * survive writing and reading back unchanged, and answer lookups.
 */
#include "fuzz_common.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvt_chanmap m, back;
	struct hvt_err err = {{0}};
	char *text = malloc(size + 1), *again, diff[256];

	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = 0;
	hvt_chanmap_init(&m);
	if (hvt_chanmap_parse(text, "fuzz.json", &m, &err)) {
		hvt_chanmap_free(&m);
		free(text);
		return 0;
	}
	again = hvt_chanmap_to_string(&m);
	if (!again)
		abort();
	hvt_chanmap_init(&back);
	if (hvt_chanmap_parse(again, "written back", &back, &err)) {
		fprintf(stderr, "a map that parsed does not parse once written: %s\n", err.msg);
		abort();
	}
	if (hvt_chanmap_compare(&m, &back, diff, sizeof(diff))) {
		fprintf(stderr, "a map changed once written and read back: %s\n", diff);
		abort();
	}
	for (size_t i = 0; i < m.nchannels; i++) {
		if (hvt_chanmap_find(&m, m.channels[i].id) != (int)i)
			abort(); /* ids are unique */
		for (size_t k = 0; k < m.channels[i].nranges; k++) {
			const struct hvt_range *r = &m.channels[i].ranges[k];

			if (hvt_chanmap_channel_of(&m, r->start, r->size, &err) != (int)i)
				abort(); /* a channel's own range is that channel's */
		}
	}
	hvt_chanmap_channel_of(&m, 0, 4096, &err);
	hvt_chanmap_free(&back);
	free(again);
	hvt_chanmap_free(&m);
	free(text);
	return 0;
}
