// SPDX-License-Identifier: MIT
/*
 * trace_patch IN OUT TYPE N OFFSET HEX: copies the trace IN to OUT with bytes HEX written at OFFSET in the
 * payload of the N-th record (from 0) of type TYPE (1 META, 2 LAYOUT, 3 INTERVAL, 4 INDEX), and that
 * record's CRC made right again: a record whose bytes arrived intact but whose content is not sane, for
 * testing readers. Exit 0 done, 1 no such record or the bytes do not fit its payload, 2 usage or I/O error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/format/trace_format.h"

int main(int argc, char **argv)
{
	unsigned long type, n, off;
	size_t flen, hlen, pos = HVT_FILE_HEADER_SIZE;
	uint8_t *file, bytes[64];
	FILE *f;

	if (argc != 7 || strlen(argv[6]) % 2 || (hlen = strlen(argv[6]) / 2) > sizeof(bytes)) {
		fprintf(stderr, "usage: trace_patch IN OUT TYPE N OFFSET HEX (at most %zu bytes)\n",
			sizeof(bytes));
		return 2;
	}
	type = strtoul(argv[3], NULL, 0);
	n = strtoul(argv[4], NULL, 0);
	off = strtoul(argv[5], NULL, 0);
	for (size_t i = 0; i < hlen; i++)
		if (sscanf(argv[6] + 2 * i, "%2hhx", &bytes[i]) != 1)
			return 2;
	if (!(f = fopen(argv[1], "rb")) || fseek(f, 0, SEEK_END) || (long)(flen = (size_t)ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(file = malloc(flen + 1)) || fread(file, 1, flen, f) != flen) {
		perror(argv[1]);
		return 2;
	}
	fclose(f);
	while (pos + HVT_REC_HEADER_SIZE <= flen) {
		uint8_t *rec = file + pos;
		uint32_t len = hvt_get_le32(rec + 4);

		if (hvt_get_le32(rec) == type && n-- == 0) {
			if (off + hlen > len || pos + HVT_REC_HEADER_SIZE + len > flen) {
				fprintf(stderr, "trace_patch: %zu bytes at %lu do not fit a payload of %u\n",
					hlen, off, len);
				return 1;
			}
			memcpy(rec + HVT_REC_HEADER_SIZE + off, bytes, hlen);
			hvt_put_le32(rec + HVT_REC_CRC_OFFSET,
				     hvt_rec_crc(rec, rec + HVT_REC_HEADER_SIZE, len));
			if (!(f = fopen(argv[2], "wb")) || fwrite(file, 1, flen, f) != flen || fclose(f)) {
				perror(argv[2]);
				return 2;
			}
			free(file);
			return 0;
		}
		pos += HVT_REC_HEADER_SIZE + hvt_rec_padded(len);
	}
	fprintf(stderr, "trace_patch: %s has no such record\n", argv[1]);
	free(file);
	return 1;
}
