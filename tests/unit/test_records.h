/* SPDX-License-Identifier: MIT */
/*
 * Writing records by hand into a trace file, for the reader's tests: a record whose CRC is right, so that
 * the reader must judge it by its type and content. Include after cmocka.h.
 */
#ifndef HVMTRACE_TEST_RECORDS_H
#define HVMTRACE_TEST_RECORDS_H

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvmtrace/util.h"
#include "../../lib/format/trace_format.h"

/* Appends a record of type and payload, CRC right, to the file p. */
static void append_record(const char *p, uint32_t type, const uint8_t *payload, uint32_t plen)
{
	size_t padded = (plen + 7u) & ~7u;
	uint8_t *rec = calloc(1, 16 + padded);
	int fd = open(p, O_WRONLY | O_APPEND);

	assert_non_null(rec);
	assert_true(fd >= 0);
	hvt_put_le32(rec, type);
	hvt_put_le32(rec + 4, plen);
	memcpy(rec + 16, payload, plen);
	hvt_put_le32(rec + 8, hvt_rec_crc(rec, rec + 16, plen));
	assert_int_equal(write(fd, rec, 16 + padded), (ssize_t)(16 + padded));
	close(fd);
	free(rec);
}

#endif
