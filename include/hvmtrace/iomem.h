/* SPDX-License-Identifier: MIT */
/*
 * The host-physical address map as Linux shows it, and the rules an extent must meet before anything maps
 * it through /dev/mem (chanmap verify/probe here, the QEMU devmem backend with the same rules):
 *   - page aligned and not empty;
 *   - inside one resource named "Reserved" in /proc/iomem (what memmap=nn$ss creates);
 *   - overlapping no "System RAM" at any level;
 *   - not busy: no resource nested in that Reserved entry overlaps it (a driver's claim; /proc/iomem does
 *     not print the BUSY flag, a claim shows as a child entry).
 * Also the firmware (BIOS e820) map of /sys/firmware/memmap, which lists RAM before memmap= changed it,
 * and the memmap=nn$ss kernel argument itself.
 */
#ifndef HVMTRACE_IOMEM_H
#define HVMTRACE_IOMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hvt_err;
struct hvt_range;

#define HVT_IOMEM_PATH "/proc/iomem"
#define HVT_FWMAP_PATH "/sys/firmware/memmap"
#define HVT_CMDLINE    "/proc/cmdline"
#define HVT_IOMEM_NAME 80
/* The most read of an iomem file: a large host's /proc/iomem is some 100 KiB. */
#define HVT_IOMEM_MAX_BYTES (16u << 20)
/* The most entries read of a firmware memory map: a real one has tens (one per e820 range). */
#define HVT_FWMAP_MAX_ENTRIES 4096

struct hvt_iomem_entry {
	uint64_t start, end; /* inclusive, as printed */
	unsigned depth;      /* 0 = top level (two spaces of indent per level) */
	int parent;          /* index of the enclosing entry, -1 at top level */
	char name[HVT_IOMEM_NAME];
};

struct hvt_iomem {
	size_t n;
	struct hvt_iomem_entry *entries; /* in file order (sorted, parents before children) */
	bool hidden;                     /* every address printed as 0: the reader lacks CAP_SYS_ADMIN */
	char source[256];
};

/* Parses /proc/iomem text; `name` is used in messages (the line number of a bad line is given). */
int hvt_iomem_parse(const char *text, const char *name, struct hvt_iomem *io, struct hvt_err *e);
/* Reads path (NULL: /proc/iomem); -EFBIG beyond HVT_IOMEM_MAX_BYTES. */
int hvt_iomem_read(const char *path, struct hvt_iomem *io, struct hvt_err *e);
void hvt_iomem_free(struct hvt_iomem *io);

/* The innermost entry containing addr, or -1. */
int hvt_iomem_find(const struct hvt_iomem *io, uint64_t addr);

/* The extent rules above. 0, or -EINVAL (alignment), -EPERM (addresses hidden), -ERANGE (System RAM,
 * not Reserved), -EBUSY (claimed); the message names the extent and the entry that breaks the rule. */
int hvt_iomem_check_extent(const struct hvt_iomem *io, uint64_t start, uint64_t size, struct hvt_err *e);

/*
 * The Reserved entries that were RAM in the firmware map (what memmap=$ took from the kernel), not busy and
 * above 1 MiB: the ranges the probe may map through /dev/mem. *out is malloc'd.
 */
struct hvt_fwmap;
int hvt_iomem_user_reserved(const struct hvt_iomem *io, const struct hvt_fwmap *fw, struct hvt_range **out,
			    size_t *n);

/* ---- /sys/firmware/memmap ---- */

struct hvt_fwmap_entry {
	uint64_t start, end; /* inclusive */
	char type[32];       /* "System RAM", "Reserved", "ACPI Tables", … */
};

struct hvt_fwmap {
	size_t n;
	struct hvt_fwmap_entry *entries; /* sorted by start */
};

/* Reads DIR/N/{start,end,type} (dir NULL: /sys/firmware/memmap). */
int hvt_fwmap_read(const char *dir, struct hvt_fwmap *fw, struct hvt_err *e);
void hvt_fwmap_free(struct hvt_fwmap *fw);
/* 0 if [start, start+size) is all "System RAM" in the firmware map (adjacent RAM entries join); else
 * -ERANGE naming the hole or the non-RAM entry in the way. */
int hvt_fwmap_check_ram(const struct hvt_fwmap *fw, uint64_t start, uint64_t size, struct hvt_err *e);

/* ---- memmap=nn$ss ---- */

/* "16G$0x900000000": the size in the largest binary unit that divides it, the start in hex. */
void hvt_memmap_format(uint64_t start, uint64_t size, char *buf, size_t len);
/* The nn$ss reservations of every memmap= argument of a kernel command line (comma lists allowed; the
 * @, #, ! and % forms are skipped). *out is malloc'd; -EINVAL names a malformed argument. */
int hvt_memmap_parse_cmdline(const char *cmdline, struct hvt_range **out, size_t *n, struct hvt_err *e);

#endif
