# hvmtrace build. `make` builds optimised programs into build/; `make check` builds an AddressSanitizer +
# UBSan variant into build/check/ and runs every test tier this machine can run against it.

-include config.mk

BUILD ?= build
SAN ?= 0

WARN    = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla
PREFIX ?= /usr/local
# make install-qemu's patched QEMU, virt-xml's default emulator (hvmtrace/libvirt/emulator.h)
QEMU_DIR ?= $(PREFIX)/lib/hvmtrace/qemu
CFLAGS_ALL = -std=c11 -D_GNU_SOURCE -g -Iinclude -DHVT_QEMU_DIR='"$(QEMU_DIR)"' $(WARN) $(JSONC_CFLAGS) $(ZSTD_CFLAGS) $(CAPNG_CFLAGS) \
	     $(ISAL_CFLAGS) $(ROARING_CFLAGS) $(PFM_CFLAGS) $(CAIRO_CFLAGS) $(ZLIB_CFLAGS) $(VIRT_CFLAGS) \
	     $(XML_CFLAGS) $(MHD_CFLAGS) -MMD -MP
ifeq ($(SAN),1)
OPT = -O1 $(SANITIZE)
else
OPT = -O2
endif
LIBS_ALL = $(JSONC_LIBS) $(ZSTD_LIBS) $(CAPNG_LIBS) $(ISAL_LIBS) $(ROARING_LIBS) $(PFM_LIBS) $(MHD_LIBS) -lpthread -lm

# Every folder is built by rule, never by a list of its objects: lib/<concern>/ is libhvmtrace; each engine
# of the hvmtrace command (hvmtrace/<engine>/) is an archive under the subcommands (hvmtrace/*.c) that use
# it; the test VMM's parts (tests/vmm/ but its main) are one archive for the VMM, tests and tools.
# Private headers stay in their folder: lib/ is on the include path of lib's files only, hvmtrace/ of the
# command's only, so a layer reaches another's internals only by a path that says so.
LIB_SRCS     = $(wildcard lib/*/*.c)
CMD_SRCS     = $(wildcard hvmtrace/*.c)
ENGINES      = $(patsubst hvmtrace/%/,%,$(wildcard hvmtrace/*/))
CHANMAP_SRCS = $(wildcard chanmap/*.c)
PLOT_SRCS    = $(wildcard plot/*.c)
TESTVMM_SRCS = $(filter-out tests/vmm/main.c,$(wildcard tests/vmm/*.c tests/vmm/*.S))
UNIT_SRCS    = $(wildcard tests/unit/test_*.c)
TOOL_SRCS    = $(wildcard tests/tools/*.c)
BENCH_SRCS   = $(wildcard bench/*.c)
GUEST_PVH    = $(patsubst tests/guest/%.S,$(BUILD)/guest/%.elf,$(wildcard tests/guest/*.S))
GUEST_PROGS  = $(patsubst tests/guest/%.c,$(BUILD)/guest/%,$(wildcard tests/guest/*.c))
AGENT_SRCS   = $(wildcard guest-agent/*.c)

obj = $(patsubst %.S,$(BUILD)/obj/%.o,$(patsubst %.c,$(BUILD)/obj/%.o,$(1)))

LIBHVT      = $(BUILD)/lib/libhvmtrace.a
ENGINE_LIBS = $(patsubst %,$(BUILD)/lib/libhvt-%.a,$(ENGINES))
TESTVMM     = $(BUILD)/lib/libtestvmm.a
PROGRAMS = $(BUILD)/bin/hvmtrace $(BUILD)/bin/hvmtrace-plot $(BUILD)/bin/hvmtrace-vmm $(BUILD)/bin/hvmtrace-guest \
	   $(if $(CHANMAP_SRCS),$(BUILD)/bin/chanmap)
UNITS    = $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))
TOOLS    = $(patsubst tests/tools/%.c,$(BUILD)/tests/tools/%,$(TOOL_SRCS))
BENCHES  = $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
PRELOADS = $(patsubst tests/preload/%.c,$(BUILD)/tests/preload/%.so,$(wildcard tests/preload/*.c))

# What a test, tool, benchmark or fuzzer links: every archive, in one group so that their order does not
# matter, and every library, as needed; the linker takes the members and libraries the program uses.
TEST_ARCHIVES = $(ENGINE_LIBS) $(TESTVMM) $(LIBHVT)
TEST_LINK     = -Wl,--start-group $(TEST_ARCHIVES) -Wl,--end-group -Wl,--as-needed $(CMOCKA_LIBS) $(LIBS_ALL) \
		$(ZLIB_LIBS) $(VIRT_LIBS) $(XML_LIBS) $(CAIRO_LIBS)

.PHONY: all tests check bench bench-parts install clean format format-check
# Objects are made on the way to archives and programs; make would delete them as intermediate files and
# rebuild every one next time.
.SECONDARY:
all: $(PROGRAMS) $(BENCHES)
tests: $(BUILD)/tests/lab/ad_check $(UNITS) $(TOOLS) $(PRELOADS) $(GUEST_PVH) $(GUEST_PROGS)

config.mk: configure
	./configure

$(BUILD)/obj/lib/%.o: DIR_CFLAGS = -Ilib
$(BUILD)/obj/hvmtrace/%.o: DIR_CFLAGS = -Ihvmtrace
# tests of an engine include its headers, which name their engine's siblings as "engine/file.h"
$(BUILD)/obj/tests/unit/%.o $(BUILD)/obj/tests/fuzz/%.o: DIR_CFLAGS = -Ihvmtrace

$(BUILD)/obj/%.o: %.c config.mk
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DIR_CFLAGS) $(OPT) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/%.o: %.S config.mk
	@mkdir -p $(@D)
	$(CC) -MMD -MP -Iinclude -c -o $@ $<

$(LIBHVT): $(call obj,$(LIB_SRCS))
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# One archive per engine of the hvmtrace command.
.SECONDEXPANSION:
$(BUILD)/lib/libhvt-%.a: $$(call obj,$$(wildcard hvmtrace/$$*/*.c hvmtrace/$$*/*.S))
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(TESTVMM): $(call obj,$(TESTVMM_SRCS))
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/hvmtrace: $(call obj,$(CMD_SRCS)) $(ENGINE_LIBS) $(LIBHVT)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDFLAGS) -o $@ $(call obj,$(CMD_SRCS)) -Wl,--start-group $(ENGINE_LIBS) $(LIBHVT) \
		-Wl,--end-group $(LIBS_ALL) $(ZLIB_LIBS) $(VIRT_LIBS) $(XML_LIBS)

# `hvmtrace plot` runs it: cairo stays out of hvmtrace, whose record mlockall()s every page it maps.
$(BUILD)/bin/hvmtrace-plot: $(call obj,$(PLOT_SRCS)) $(LIBHVT)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDFLAGS) -o $@ $^ $(LIBS_ALL) $(CAIRO_LIBS)

# The guest agent (docs/attribution.md) runs in a guest, not here: static, so that it needs nothing but a
# kernel, and without sanitizers, which do not link statically.
$(BUILD)/bin/hvmtrace-guest: $(AGENT_SRCS) $(wildcard guest-agent/*.h) include/hvmtrace/owners_format.h
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -Iinclude -static -O2 $(WARN) -o $@ $(AGENT_SRCS)

# The HTML report's page and script, which the assembler includes (.incbin) and the compiler cannot list.
$(BUILD)/obj/hvmtrace/report/report_html_assets.o: hvmtrace/report/report_page.html hvmtrace/report/report_view.js

$(BUILD)/bin/chanmap: $(call obj,$(CHANMAP_SRCS)) $(LIBHVT)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDFLAGS) -o $@ $^ $(LIBS_ALL)

$(BUILD)/bin/hvmtrace-vmm: $(call obj,tests/vmm/main.c) $(TESTVMM) $(LIBHVT)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDFLAGS) -o $@ $^ $(LIBS_ALL)

$(BUILD)/tests/unit/%: $(BUILD)/obj/tests/unit/%.o $(TEST_ARCHIVES)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDFLAGS) -o $@ $< $(TEST_LINK)

$(BUILD)/tests/tools/%: $(BUILD)/obj/tests/tools/%.o $(TEST_ARCHIVES)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDFLAGS) -o $@ $< $(TEST_LINK)

# Stand-ins preloaded into the programs under test (LD_PRELOAD): no sanitizers of their own, since the
# programs they go into bring theirs.
$(BUILD)/tests/preload/%.so: tests/preload/%.c include/hvmtrace/kvm_ad.h config.mk
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -O2 -fPIC -shared $(CFLAGS) -o $@ $< -ldl

# Guest payloads: PVH ELF images for QEMU -kernel, and static programs for Linux guests' initramfs.
$(BUILD)/guest/%.elf: tests/guest/%.S tests/guest/pvh.ld $(wildcard tests/guest/*.h tests/guest/*.inc) tests/vmm/phase_loop.inc tests/vmm/guest_abi.h
	@mkdir -p $(@D)
	$(CC) -Itests/vmm -c -o $(BUILD)/guest/$*.o $<
	ld -m elf_x86_64 --no-warn-rwx-segments -T tests/guest/pvh.ld -o $@ $(BUILD)/guest/$*.o

$(BUILD)/guest/%: tests/guest/%.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -static -O2 $(WARN) -Wno-missing-prototypes -o $@ $<

# The nested KVM lab (tests/lib/lab.bash): replacement KVM modules for a kernel, and the in-L1 test program.
# make lab runs both tiers, LAB_VENDOR=amd or LAB_VENDOR=intel one: amd boots L1 under the QEMU 10.0 that
# make qemu builds (cached), like every AMD lab test, and runs ad_check (tests/lab/run.sh) and lab_qemu's
# owners scenario (a Linux L2 with the guest agent in mode ad, docs/attribution.md); intel boots L1
# under Bochs and runs the Intel matrix (docs/lab.md): ad_check and the record scenario, ept=1 and ept=0,
# 1 s and 100 ms, both kernels, patched QEMU's phases scenario (lab/test_intel_qemu) at 1 s, and the libvirt
# route (lab/test_intel_libvirt) on 6.12 with ept=1.
LAB_VENDOR ?= amd intel
KVER ?= $(shell uname -r)
.PHONY: kvm-modules lab
kvm-modules:
	scripts/kvm-modules.sh $(KVER)

$(BUILD)/tests/lab/ad_check: tests/lab/ad_check.c include/hvmtrace/kvm_ad.h
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -Iinclude -static -O2 $(WARN) -o $@ $<

lab: $(BUILD)/tests/lab/ad_check all tests
	@for v in $(LAB_VENDOR); do case $$v in amd | intel) ;; \
		*) echo "make lab: LAB_VENDOR=$$v: expected amd, intel or both" >&2; exit 2 ;; esac; done
ifneq ($(filter amd,$(LAB_VENDOR)),)
	scripts/build-qemu.sh >/dev/null
	LAB_VENDOR=amd BUILD=$(BUILD) tests/lab/run.sh 6.1
	LAB_VENDOR=amd BUILD=$(BUILD) tests/lab/run.sh 6.12
	LAB_QEMU_SCENARIOS=owners,damon,damon-host BUILD=$(BUILD) tests/lab/test_qemu.sh
endif
ifneq ($(filter intel,$(LAB_VENDOR)),)
	LAB_KERNELS="6.1 6.12" BUILD=$(BUILD) tests/lab/test_intel_ad.sh
	LAB_KERNELS="6.1 6.12" LAB_TDP="1 0" LAB_INTERVALS="1s 100ms" LAB_EPTAD0=1 BUILD=$(BUILD) \
		tests/lab/test_intel_record.sh
	scripts/build-qemu.sh >/dev/null
	LAB_KERNELS="6.1 6.12" LAB_TDP="1 0" BUILD=$(BUILD) tests/lab/test_intel_qemu.sh
	LAB_INTEL_LIBVIRT=1 LAB_KERNELS=6.12 BUILD=$(BUILD) tests/lab/test_intel_libvirt.sh
endif

# libFuzzer harnesses (tests/fuzz/fuzz_*.c; docs/reliability.md, "Fuzzing"), built with clang, ASan and UBSan
# into build/fuzz. `make fuzz` runs each for FUZZ_SECONDS (or FUZZ_RUNS inputs, if sooner) from its seed
# corpus (tests/fuzz/corpus/NAME); what it finds goes to build/fuzz/corpus and build/fuzz/findings.
FUZZ_CC ?= clang
FUZZ_BUILD ?= build/fuzz
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?=
FUZZ_SAN = -fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZERS = $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
.PHONY: fuzzers fuzz-harnesses fuzz
fuzzers:
	$(MAKE) BUILD=$(FUZZ_BUILD) SAN=1 CC=$(FUZZ_CC) SANITIZE='$(FUZZ_SAN)' fuzz-harnesses
fuzz-harnesses: $(FUZZERS)
$(BUILD)/fuzz/%: $(BUILD)/obj/tests/fuzz/%.o $(TEST_ARCHIVES)
	@mkdir -p $(@D)
	$(CC) $(OPT) -fsanitize=fuzzer $(LDFLAGS) -o $@ $< $(TEST_LINK)
fuzz: fuzzers
	FUZZ_RUNS=$(FUZZ_RUNS) tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(TEST_ARCHIVES)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDFLAGS) -o $@ $< $(TEST_LINK)

# Patched QEMU 10.0 (qemu-patches/qemu/), built and cached outside the clone by scripts/build-qemu.sh.
.PHONY: qemu
qemu:
	scripts/build-qemu.sh

# Every tier against the sanitizer build, then the integration and e2e tiers again against the optimised
# build that `make` installs (tests/run.sh says which tests one build is enough for).
# The builds use every core (CHECK_JOBS); tests/run.sh runs the lab tier beside the others (TEST_LANES).
CHECK_JOBS ?= $(shell nproc)
check: config.mk format-check
	$(MAKE) -j$(CHECK_JOBS) BUILD=build/check SAN=1 all tests
	$(MAKE) -j$(CHECK_JOBS) BUILD=build all tests
	$(MAKE) -j$(CHECK_JOBS) fuzzers
	scripts/build-qemu.sh >/dev/null
	tests/run.sh build/check build

# The one table of issue 12 (bench/table.sh; BENCH_LAB=0 skips the lab, BENCH_QEMU=0 the peer), and every
# benchmark besides it (bench/run.sh).
BENCH_TABLE_NEEDS = $(BUILD)/tests/tools/qmp $(BUILD)/tests/tools/maxrss $(BUILD)/tests/tools/qemu_phases $(BUILD)/guest/phases.elf
bench: all $(BENCHES) $(BENCH_TABLE_NEEDS)
	bench/table.sh $(BUILD)
bench-parts: all $(BENCHES) $(BUILD)/tests/tools/synth_trace $(BUILD)/tests/tools/synth_arrays \
	$(BUILD)/tests/tools/huge_slot_trace $(BUILD)/tests/tools/trace_patch $(BUILD)/tests/tools/maxrss
	bench/run.sh $(BUILD)

# How wrong DAMON is (docs/score.md): DAMON inside a traced TCG Linux guest, scored against the trace in
# mode dirty-log (scripts/score-damon.sh; DAMON="S,A,MIN,MAX ..." chooses its attributes, LOADS the loads),
# then in mode ad with precision in the nested AMD lab, guest and host side (scripts/score-damon-lab.sh:
# skipped, saying why, where the lab cannot run). Not in make check: it needs root and the patched QEMU
# (tests/e2e/qemu_damon_score.sh checks the first part); the first part takes ~20 s a run (4 min for the
# three sets on both loads), the lab's one boot for the same twelve L2 runs (guest and host side) 11 min.
.PHONY: score
score: all tests $(BUILD)/tests/tools/stamp_lines $(BUILD)/guest/array $(BUILD)/guest/buildload
	scripts/score-damon.sh $(BUILD)
	scripts/score-damon-lab.sh $(BUILD)

# The user's programs only: hvmtrace-vmm (tests/vmm) is the tests' VMM, run from $(BUILD)/bin.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/bin/hvmtrace $(DESTDIR)$(PREFIX)/bin/hvmtrace
	install -m 0755 $(BUILD)/bin/hvmtrace-plot $(DESTDIR)$(PREFIX)/bin/hvmtrace-plot
	install -m 0755 $(BUILD)/bin/hvmtrace-guest $(DESTDIR)$(PREFIX)/bin/hvmtrace-guest
	$(if $(CHANMAP_SRCS),install -m 0755 $(BUILD)/bin/chanmap $(DESTDIR)$(PREFIX)/bin/chanmap)

# libvirt integration (docs/libvirt.md §4): the qemu and daemon hooks, the tracer's systemd template unit,
# the traces' directory. libvirt finds hooks only when its daemon starts or reloads: said when one runs.
LIBVIRT_HOOKS_DIR ?= /etc/libvirt/hooks
SYSTEMD_UNITS ?= /etc/systemd/system
TRACE_DIR ?= /var/lib/hvmtrace
.PHONY: install-libvirt uninstall-libvirt install-qemu uninstall
install-libvirt: install
	install -d $(DESTDIR)$(LIBVIRT_HOOKS_DIR)/qemu.d $(DESTDIR)$(LIBVIRT_HOOKS_DIR)/daemon.d $(DESTDIR)$(SYSTEMD_UNITS)
	install -d -m 0750 $(DESTDIR)$(TRACE_DIR)
	sed 's|@BINDIR@|$(PREFIX)/bin|g' hvmtrace/libvirt/qemu-hook >$(DESTDIR)$(LIBVIRT_HOOKS_DIR)/qemu.d/hvmtrace
	chmod 0755 $(DESTDIR)$(LIBVIRT_HOOKS_DIR)/qemu.d/hvmtrace
	sed 's|@BINDIR@|$(PREFIX)/bin|g' hvmtrace/libvirt/daemon-hook >$(DESTDIR)$(LIBVIRT_HOOKS_DIR)/daemon.d/hvmtrace
	chmod 0755 $(DESTDIR)$(LIBVIRT_HOOKS_DIR)/daemon.d/hvmtrace
	sed 's|@BINDIR@|$(PREFIX)/bin|g' 'hvmtrace/libvirt/hvmtrace@.service' >'$(DESTDIR)$(SYSTEMD_UNITS)/hvmtrace@.service'
	@[ -n "$(DESTDIR)" ] || $(MAKE) -s libvirt-daemon-note

# What to do when a libvirt daemon runs: it finds hooks only when it starts or reloads (docs/libvirt.md §4.1).
.PHONY: libvirt-daemon-note
libvirt-daemon-note:
	@if pgrep -x 'libvirtd|virtqemud' >/dev/null; then \
		echo "install-libvirt: a libvirt daemon runs; it loads the hooks only when it starts or reloads:"; \
		echo "    systemctl restart libvirtd (or virtqemud); without systemd: kill -HUP \$$(pgrep -x 'libvirtd|virtqemud')"; \
		echo "  then 'hvmtrace virt-xml --check-hook' says whether it has"; \
	fi

uninstall-libvirt:
	rm -f $(DESTDIR)$(LIBVIRT_HOOKS_DIR)/qemu.d/hvmtrace $(DESTDIR)$(LIBVIRT_HOOKS_DIR)/daemon.d/hvmtrace \
		'$(DESTDIR)$(SYSTEMD_UNITS)/hvmtrace@.service'
	@echo "uninstall-libvirt: the traces in $(TRACE_DIR) are kept"

# The patched QEMU and its option ROMs, from the build cache (which scripts/cache-prune.sh prunes) to a
# path that stays: virt-xml's default emulator. QEMU_BUILD: another build's directory (tests).
install-qemu:
	dir=$${QEMU_BUILD:-$$(scripts/build-qemu.sh --check)} || { echo "install-qemu: no patched QEMU is built: make qemu" >&2; exit 2; }; \
	install -d $(DESTDIR)$(QEMU_DIR)/optionrom && \
	install -m 0755 "$$dir/qemu-system-x86_64" $(DESTDIR)$(QEMU_DIR)/qemu-system-x86_64 && \
	install -m 0644 "$$dir"/optionrom/*.bin $(DESTDIR)$(QEMU_DIR)/optionrom/

uninstall: uninstall-libvirt
	rm -f $(DESTDIR)$(PREFIX)/bin/hvmtrace $(DESTDIR)$(PREFIX)/bin/hvmtrace-plot $(DESTDIR)$(PREFIX)/bin/hvmtrace-guest $(DESTDIR)$(PREFIX)/bin/chanmap
	rm -rf $(DESTDIR)$(QEMU_DIR)

clean:
	rm -rf build

# kvm_ad.h is the kernel's uAPI header byte for byte (kernel style), so it is left as it is.
FORMAT_SRCS = $(filter-out include/hvmtrace/kvm_ad.h,$(shell git ls-files '*.c' '*.h' 2>/dev/null))
format:
	clang-format -i $(FORMAT_SRCS)
format-check:
	@clang-format --dry-run -Werror $(FORMAT_SRCS)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
