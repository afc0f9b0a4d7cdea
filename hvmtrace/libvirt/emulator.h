// SPDX-License-Identifier: MIT
/*
 * The patched QEMU a traced domain runs (docs/libvirt.md §2): where make install-qemu puts it, and whether
 * an emulator is one (it has the hvmtrace object). The build cache's copy is pruned when unused
 * (scripts/cache-prune.sh), so a domain points at the installed one.
 */
#ifndef HVT_LIBVIRT_EMULATOR_H
#define HVT_LIBVIRT_EMULATOR_H

struct hvt_err;

#ifndef HVT_QEMU_DIR
#define HVT_QEMU_DIR "/usr/local/lib/hvmtrace/qemu" /* $(PREFIX)/lib/hvmtrace/qemu, from the Makefile */
#endif
#define HVT_QEMU_DEFAULT HVT_QEMU_DIR "/qemu-system-x86_64"

/* 0 when `EMULATOR -object help` lists the hvmtrace object; else one line in e. */
int hvt_lv_check_emulator(const char *emulator, struct hvt_err *e);

#endif
