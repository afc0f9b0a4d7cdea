#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a trace (.hvt) in the input form of tests/fuzz/fuzz_trace_records.c: for each record, u8 kind (its
type), u16 length, payload; a trailer as kind 5 with its interval count. Usage: hvt2records.py IN.hvt OUT"""
import struct
import sys


def main():
    data = open(sys.argv[1], "rb").read()
    out = bytearray()
    off = 16  # file header
    while off + 16 <= len(data):
        rtype, length = struct.unpack_from("<II", data, off)
        if off + 16 + length > len(data):
            break
        kind = 0x80 if rtype == 0x8001 else 0x40 | (rtype & 0x3F) if rtype >= 0x8000 else rtype
        out += struct.pack("<BH", kind, min(length, 0xFFFF)) + data[off + 16:off + 16 + min(length, 0xFFFF)]
        off += 16 + ((length + 7) & ~7)
        if rtype == 4 and off + 32 == len(data):  # INDEX, then the trailer
            out += struct.pack("<BH", 5, 8) + data[off + 8:off + 16]
            break
    open(sys.argv[2], "wb").write(out)


if __name__ == "__main__":
    main()
