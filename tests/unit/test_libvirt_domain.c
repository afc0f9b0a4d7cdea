// SPDX-License-Identifier: MIT
/* A libvirt domain's tracing request as the hook, virt-xml and record --domain read it
 * (hvmtrace/libvirt/domain_xml.c and libvirt_domain.c, docs/libvirt.md §1): values, defaults, refusals naming
 * what is wrong, cpusets, and the RAM's extents from a chanmap or given. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "../../hvmtrace/libvirt/libvirt_domain.h"

#define NS "xmlns:hvmtrace='" HVT_LV_NS "'"

static char *domain(const char *trace, const char *extra)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf),
		 "<domain type='qemu'><name>vm</name><memory unit='MiB'>512</memory><vcpu>2</vcpu>%s"
		 "<seclabel type='dynamic' model='dac'><label>+64055:+107</label></seclabel>"
		 "<metadata>%s</metadata></domain>",
		 extra, trace);
	return buf;
}

static int parse(const char *xml, struct hvt_lv_domain *d, struct hvt_err *e)
{
	return hvt_lv_parse(xml, strlen(xml), d, e);
}

static void test_values_and_defaults(void **state)
{
	struct hvt_lv_domain d;
	struct hvt_err e = {{0}};

	(void)state;
	assert_int_equal(parse(domain("<hvmtrace:trace " NS " cpu='1' output='/o'/>", ""), &d, &e), 0);
	assert_true(d.traced);
	assert_string_equal(d.name, "vm");
	assert_int_equal(d.memory, 512ull << 20);
	assert_int_equal(d.vcpus, 2);
	assert_int_equal(d.uid, 64055);
	assert_int_equal(d.gid, 107);
	assert_int_equal(d.t.cpu, 1);
	assert_int_equal(d.t.interval_ns, 1000000000ull);
	assert_string_equal(d.t.mode, "auto");
	assert_true(d.t.bandwidth);
	assert_false(d.t.jsonl);
	assert_string_equal(d.t.run_dir, HVT_LV_RUN_DIR);
	assert_int_equal(d.t.ram, HVT_LV_RAM_NONE);
	assert_false(d.pinned);
	hvt_lv_free(&d);

	assert_int_equal(
	    parse(
		domain(
		    "<hvmtrace:trace " NS " cpu='3' output='/o' interval='100ms' mode='ad' "
		    "bandwidth='off' jsonl='on' run-dir='/r'><hvmtrace:ram><hvmtrace:extent phys='0x10000000' "
		    "size='0x20000000'/></hvmtrace:ram></hvmtrace:trace>",
		    "<cputune><vcpupin vcpu='0' cpuset='0-5,^2'/><emulatorpin cpuset='7'/></cputune>"),
		&d, &e),
	    0);
	assert_int_equal(d.t.interval_ns, 100000000ull);
	assert_string_equal(d.t.mode, "ad");
	assert_false(d.t.bandwidth);
	assert_true(d.t.jsonl);
	assert_int_equal(d.t.ram, HVT_LV_RAM_EXTENTS);
	assert_int_equal(d.t.nextents, 1);
	assert_int_equal(d.t.extents[0].start, 0x10000000);
	assert_string_equal(d.t.mem_path, "/dev/mem");
	assert_string_equal(d.t.iomem, "/proc/iomem");
	assert_true(d.pinned);
	assert_true(CPU_ISSET(0, &d.pin_set) && CPU_ISSET(5, &d.pin_set) && CPU_ISSET(7, &d.pin_set));
	assert_false(CPU_ISSET(2, &d.pin_set) || CPU_ISSET(6, &d.pin_set));
	char path[256];
	hvt_lv_path(&d, "qemu/vm.sock", path, sizeof(path));
	assert_string_equal(path, "/r/vm/qemu/vm.sock");
	hvt_lv_free(&d);

	/* no request: not traced, not an error */
	assert_int_equal(parse(domain("", ""), &d, &e), 0);
	assert_false(d.traced);
	hvt_lv_free(&d);
}

static void refused(const char *trace, const char *text)
{
	struct hvt_lv_domain d;
	struct hvt_err e = {{0}};

	assert_int_equal(parse(domain(trace, ""), &d, &e), -EINVAL);
	if (!strstr(e.msg, text))
		fail_msg("expected '%s' in '%s'", text, e.msg);
	hvt_lv_free(&d);
}

static void test_refusals(void **state)
{
	struct hvt_lv_domain d;
	struct hvt_err e = {{0}};

	(void)state;
	refused("<hvmtrace:trace " NS " output='/o'/>", "needs cpu='N'");
	refused("<hvmtrace:trace " NS " cpu='x' output='/o'/>", "cpu='x'");
	refused("<hvmtrace:trace " NS " cpu='1'/>", "needs output='DIR'");
	refused("<hvmtrace:trace " NS " cpu='1' output='rel'/>", "needs output='DIR'");
	refused("<hvmtrace:trace " NS " cpu='1' output='/o' mode='fast'/>", "mode='fast'");
	refused("<hvmtrace:trace " NS " cpu='1' output='/o' interval='soon'/>", "interval='soon'");
	refused("<hvmtrace:trace " NS " cpu='1' output='/o' bandwidth='yes'/>", "bandwidth='yes'");
	refused("<hvmtrace:trace " NS " cpu='1' output='/o' jsonl='1'/>", "jsonl='1'");
	refused("<hvmtrace:trace " NS " cpu='1' output='/o'><hvmtrace:ram chanmap='/c'/></hvmtrace:trace>",
		"names no <hvmtrace:channel>");
	refused("<hvmtrace:trace " NS
		" cpu='1' output='/o'><hvmtrace:ram chanmap='/c'><hvmtrace:channel id='a'/>"
		"<hvmtrace:extent phys='0' size='4096'/></hvmtrace:ram></hvmtrace:trace>",
		"both a chanmap and extents");
	refused("<hvmtrace:trace " NS
		" cpu='1' output='/o'><hvmtrace:ram><hvmtrace:extent phys='0x' size='1'/>"
		"</hvmtrace:ram></hvmtrace:trace>",
		"phys and size must be numbers");
	refused(
	    "<hvmtrace:trace " NS
	    " cpu='1' output='/o'><hvmtrace:ram><hvmtrace:extent phys='0xfffffffffffff000' size='0x2000'/>"
	    "</hvmtrace:ram></hvmtrace:trace>",
	    "the extent below 2^64");
	/* the hook makes RUN_DIR/NAME as root: a name is one path component */
	assert_int_equal(parse("<domain><name>../../etc</name><memory>1</memory></domain>", &d, &e), -EINVAL);
	assert_string_equal(e.msg, "domain name '../../etc' is not a file name");
	hvt_lv_free(&d);
	assert_int_equal(parse("<domain><name>..</name><memory>1</memory></domain>", &d, &e), -EINVAL);
	hvt_lv_free(&d);
	/* 2^54 KiB is 2^64 bytes: no wrap to 0 */
	assert_int_equal(parse("<domain><name>vm</name><memory>18014398509481984</memory></domain>", &d, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "is not a size"));
	hvt_lv_free(&d);
	assert_int_equal(
	    parse("<domain><name>vm</name><memory unit='TiB'>16777215</memory></domain>", &d, &e), 0);
	assert_int_equal(d.memory, 16777215ull << 40);
	hvt_lv_free(&d);
	assert_int_equal(hvt_lv_parse("<domain>", 8, &d, &e), -EINVAL);
	assert_string_equal(e.msg, "not well-formed XML");
	hvt_lv_free(&d);
	assert_int_equal(parse("<domain><memory>1</memory></domain>", &d, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "no /domain/name"));
	hvt_lv_free(&d);
}

static void test_cpuset(void **state)
{
	cpu_set_t s;

	(void)state;
	assert_int_equal(hvt_lv_parse_cpuset("0-3,^2,8", &s), 0);
	assert_int_equal(CPU_COUNT(&s), 4);
	assert_true(CPU_ISSET(8, &s) && !CPU_ISSET(2, &s));
	assert_int_equal(hvt_lv_parse_cpuset("3-1", &s), -EINVAL);
	assert_int_equal(hvt_lv_parse_cpuset("a", &s), -EINVAL);
	assert_int_equal(hvt_lv_parse_cpuset("1,", &s), 0);
}

/* A domain whose tracing request puts its RAM on these <hvmtrace:channel> elements of the chanmap at map. */
static void parse_on_channels(struct hvt_lv_domain *d, const char *map, const char *channels)
{
	char xml[2048];
	struct hvt_err e = {{0}};

	snprintf(xml, sizeof(xml),
		 "<hvmtrace:trace " NS " cpu='1' output='/o'><hvmtrace:ram chanmap='%s'>%s</hvmtrace:ram>"
		 "</hvmtrace:trace>",
		 map, channels);
	assert_int_equal(parse(domain(xml, ""), d, &e), 0);
}

static void test_extents(void **state)
{
	char map[] = "/tmp/hvt-test-lv-chanmap-XXXXXX";
	const char *text =
	    "{\"schema\":\"hvmtrace-chanmap\",\"version\":1,\"created\":\"2026-01-01T00:00:00Z\",\"source\":\"MODEL\","
	    "\"host\":{\"hostname\":\"h\",\"kernel\":\"k\",\"machine_id\":\"\"},\"cpu\":{\"vendor\":\"GenuineIntel\","
	    "\"family\":6,\"model\":85,\"name\":\"MODEL\",\"generation\":\"skx\"},\"sockets\":1,\"channels\":["
	    "{\"id\":\"s0.mc0.ch0\",\"socket\":0,\"controller\":0,\"channel\":0,\"pmu\":\"uncore_imc_0\","
	    "\"ranges\":[{\"start\":\"0x10000000\",\"size\":\"0x10000000\"}]},"
	    "{\"id\":\"s0.mc0.ch1\",\"socket\":0,\"controller\":0,\"channel\":1,\"pmu\":\"uncore_imc_1\","
	    "\"ranges\":[{\"start\":\"0x40000000\",\"size\":\"0x40000000\"}]}],\"interleaved\":[],\"advice\":\"\"}";
	struct hvt_lv_domain d;
	struct hvt_err e = {{0}};
	struct hvt_range *x;
	size_t n;
	int fd = mkstemp(map);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	/* 512 MiB over ch0 (256 MiB) then the first 256 MiB of ch1, in the order the request names them */
	parse_on_channels(&d, map, "<hvmtrace:channel id='s0.mc0.ch0'/><hvmtrace:channel id='s0.mc0.ch1'/>");
	assert_int_equal(hvt_lv_extents(&d, &x, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_int_equal(x[0].start, 0x10000000);
	assert_int_equal(x[0].size, 0x10000000);
	assert_int_equal(x[1].start, 0x40000000);
	assert_int_equal(x[1].size, 0x10000000);
	free(x);
	hvt_lv_free(&d);

	/* one channel of 256 MiB cannot hold 512 MiB */
	parse_on_channels(&d, map, "<hvmtrace:channel id='s0.mc0.ch0'/>");
	assert_int_equal(hvt_lv_extents(&d, &x, &n, &e), -ENOSPC);
	assert_non_null(strstr(e.msg, "hold 268435456 bytes, the domain's <memory> is 536870912 bytes"));
	hvt_lv_free(&d);

	/* a channel the map does not have */
	parse_on_channels(&d, map, "<hvmtrace:channel id='s1.mc0.ch0'/>");
	assert_int_equal(hvt_lv_extents(&d, &x, &n, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "channel s1.mc0.ch0 is not in the channel map"));
	hvt_lv_free(&d);
	unlink(map);

	/* explicit extents must add up to <memory> */
	assert_int_equal(
	    parse(domain("<hvmtrace:trace " NS " cpu='1' output='/o'><hvmtrace:ram><hvmtrace:extent "
			 "phys='0' size='4096'/></hvmtrace:ram></hvmtrace:trace>",
			 ""),
		  &d, &e),
	    0);
	assert_int_equal(hvt_lv_extents(&d, &x, &n, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "the extents hold 4096 bytes"));
	hvt_lv_free(&d);
}

/* The guest agent's channel (virt-xml --owners): its socket when a unix channel in bind mode targets the
 * port by name; nothing for another port, another chardev type, or a socket QEMU would connect to. */
static void owners_port(const char *devices, const char *want)
{
	struct hvt_lv_domain d;
	struct hvt_err e = {{0}};

	assert_int_equal(parse(domain("<hvmtrace:trace " NS " cpu='1' output='/o'/>", devices), &d, &e), 0);
	if (want)
		assert_string_equal(d.owners_port, want);
	else
		assert_null(d.owners_port);
	hvt_lv_free(&d);
}

static void test_owners_channel(void **state)
{
	(void)state;
	owners_port("<devices><channel type='unix'><source mode='bind' path='/r/vm/qemu/owners.sock'/>"
		    "<target type='virtio' name='" HVT_LV_OWNERS_PORT "'/></channel></devices>",
		    "/r/vm/qemu/owners.sock");
	owners_port("<devices><channel type='unix'><source mode='bind' path='/q.sock'/>"
		    "<target type='virtio' name='org.qemu.guest_agent.0'/></channel>"
		    "<channel type='unix'><source mode='bind' path='/o.sock'/>"
		    "<target type='virtio' name='" HVT_LV_OWNERS_PORT "'/></channel></devices>",
		    "/o.sock");
	owners_port("", NULL);
	owners_port("<devices><channel type='unix'><source mode='bind' path='/q.sock'/>"
		    "<target type='virtio' name='org.qemu.guest_agent.0'/></channel></devices>",
		    NULL);
	owners_port("<devices><channel type='pty'><target type='virtio' name='" HVT_LV_OWNERS_PORT
		    "'/></channel></devices>",
		    NULL);
	owners_port("<devices><channel type='unix'><source mode='connect' path='/c.sock'/>"
		    "<target type='virtio' name='" HVT_LV_OWNERS_PORT "'/></channel></devices>",
		    NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_values_and_defaults),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_cpuset),
	    cmocka_unit_test(test_extents),
	    cmocka_unit_test(test_owners_channel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
