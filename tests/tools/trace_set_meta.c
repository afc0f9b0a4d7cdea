// SPDX-License-Identifier: MIT
/*
 * trace_set_meta IN OUT: copies the trace IN to OUT with its META record's JSON replaced by the text on
 * standard input, with a valid CRC, for testing readers on metadata no writer of ours would produce. The new
 * text is padded with spaces before its closing brace to the old length, so every later record, the index
 * and the trailer stay where they were. Exit 0 done, 1 the new text is longer than the old or not an object,
 * 2 usage or I/O error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/format/trace_format.h"

static uint8_t *slurp(FILE *f, size_t *len)
{
	size_t cap = 1 << 16;
	uint8_t *buf = malloc(cap);

	*len = 0;
	while (buf) {
		size_t n = fread(buf + *len, 1, cap - *len, f);

		*len += n;
		if (n == 0)
			return buf;
		if (*len == cap && !(buf = realloc(buf, cap *= 2)))
			break;
	}
	fprintf(stderr, "trace_set_meta: out of memory\n");
	exit(2);
}

int main(int argc, char **argv)
{
	FILE *in, *out;
	uint8_t *file, *text, *rec;
	size_t flen, tlen;
	uint32_t old;
	int rc = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: trace_set_meta IN OUT < new-meta.json\n");
		return 2;
	}
	if (!(in = fopen(argv[1], "rb"))) {
		perror(argv[1]);
		return 2;
	}
	file = slurp(in, &flen);
	fclose(in);
	text = slurp(stdin, &tlen);
	while (tlen && (text[tlen - 1] == '\n' || text[tlen - 1] == ' '))
		tlen--;
	rec = file + HVT_FILE_HEADER_SIZE;
	if (flen < HVT_FILE_HEADER_SIZE + HVT_REC_HEADER_SIZE || hvt_get_le32(rec) != HVT_REC_META) {
		fprintf(stderr, "trace_set_meta: %s does not start with a META record\n", argv[1]);
		rc = 2;
		goto out;
	}
	old = hvt_get_le32(rec + 4);
	if (tlen == 0 || text[tlen - 1] != '}' || tlen > old ||
	    HVT_FILE_HEADER_SIZE + 16 + (size_t)old > flen) {
		fprintf(
		    stderr,
		    "trace_set_meta: the new META (%zu bytes) is not an object or is longer than the old (%u bytes)\n",
		    tlen, old);
		rc = 1;
		goto out;
	}
	memcpy(rec + HVT_REC_HEADER_SIZE, text, tlen - 1);
	memset(rec + HVT_REC_HEADER_SIZE + tlen - 1, ' ', old - tlen);
	rec[HVT_REC_HEADER_SIZE + old - 1] = '}';
	hvt_put_le32(rec + HVT_REC_CRC_OFFSET, hvt_rec_crc(rec, rec + HVT_REC_HEADER_SIZE, old));
	if (!(out = fopen(argv[2], "wb")) || fwrite(file, 1, flen, out) != flen || fclose(out)) {
		perror(argv[2]);
		rc = 2;
	}
out:
	free(file);
	free(text);
	return rc;
}
