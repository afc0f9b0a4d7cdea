// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: trace records, one at a time, with their frames made valid by the harness so that the
 * fuzzer works on what the reader does with record contents (META, LAYOUT, INTERVAL, OWNERS, INDEX and
 * trailer, and optional types it does not know).
 *
 * Input: a sequence of records, each  u8 kind, u16 length (little-endian), then that many payload bytes
 * (fewer if the input ends). kind % 8: 0-4 a record of that type (0 and 5-7 are not types: the reader must
 * refuse them), 5 a trailer pointing at the last record written, with the payload's first 8 bytes as its
 * interval count, 6 raw bytes appended as they are (a torn tail), 7 a record whose CRC is left wrong. Kind 0
 * with bit 7 of its byte set is an OWNERS record (0x8001), with bit 6 an optional type 0x8000 + bits 0-5. The
 * file header is added first. tests/fuzz/corpus/trace_records/ holds the fixtures in this form
 * (tests/fuzz/hvt2records.py).
 */
#include "../../lib/format/trace_format.h"
#include "fuzz_common.h"
#include "fuzz_trace_read.h"

/* The file is built in memory and written with one write(): many small writes would cost more than the
 * reading being tested. */
static void put(struct hvt_buf *b, const void *p, size_t n)
{
	uint8_t *d = hvt_buf_append(b, n);

	if (!d)
		abort();
	if (n)
		memcpy(d, p, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[PATH_MAX];
	static const uint8_t zeros[HVT_REC_ALIGN];
	uint8_t hdr[HVT_FILE_HEADER_SIZE] = HVT_FILE_MAGIC;
	uint64_t off = HVT_FILE_HEADER_SIZE, last = 0;
	struct hvt_buf b = {0};
	int fd;

	if (!path[0])
		snprintf(path, sizeof(path), "%s/records.hvt", fuzz_tmpdir());
	hvt_put_le32(hdr + 8, HVT_TRACE_VERSION);
	put(&b, hdr, sizeof(hdr));
	while (size >= 3) {
		unsigned kind = data[0] % 8;
		size_t len = (size_t)data[1] | (size_t)data[2] << 8;
		const uint8_t *p = data + 3;

		size -= 3;
		if (len > size)
			len = size;
		data = p + len;
		size -= len;
		if (kind == 5) {
			uint8_t t[HVT_TRAILER_SIZE] = {0};
			uint64_t count = 0;

			memcpy(&count, p, len < 8 ? len : 8);
			hvt_put_le64(t, last);
			hvt_put_le64(t + 8, le64toh(count));
			memcpy(t + 24, HVT_TRAILER_MAGIC, 8);
			hvt_put_le32(t + HVT_TRAILER_CRC_OFFSET, hvt_crc32c(0, t, sizeof(t)));
			put(&b, t, sizeof(t));
			off += sizeof(t);
		} else if (kind == 6) {
			put(&b, p, len);
			off += len;
		} else {
			uint8_t h[HVT_REC_HEADER_SIZE] = {0};
			uint32_t crc;

			uint32_t type = kind == 7 ? HVT_REC_INTERVAL : kind;

			if (!kind && (p[-3] & 0x80))
				type = HVT_REC_OWNERS;
			else if (!kind && (p[-3] & 0x40))
				type = HVT_REC_OPTIONAL + (p[-3] & 0x3f);
			hvt_put_le32(h, type);
			hvt_put_le32(h + 4, (uint32_t)len);
			crc = hvt_rec_crc(h, p, len);
			hvt_put_le32(h + HVT_REC_CRC_OFFSET, kind == 7 ? ~crc : crc);
			put(&b, h, sizeof(h));
			put(&b, p, len);
			put(&b, zeros, hvt_rec_padded(len) - len);
			last = off;
			off += sizeof(h) + hvt_rec_padded(len);
		}
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, b.p, b.len) != (ssize_t)b.len)
		abort();
	close(fd);
	free(b.p);
	fuzz_read_trace(path);
	return 0;
}
