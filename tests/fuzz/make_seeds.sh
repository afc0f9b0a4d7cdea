#!/bin/bash
# Writes the seed corpora (tests/fuzz/corpus/NAME/) from the repository's fixtures and a few hand-written
# inputs, in each harness's input form (see the comment at the top of tests/fuzz/fuzz_NAME.c). Run from
# anywhere; needs python3 and, for the chanmap seeds, build/bin/chanmap (`make`).
set -euo pipefail
cd "$(dirname "$0")/../.."
C=tests/fuzz/corpus
F=tests/fixtures
rm -rf "$C" && mkdir -p "$C"/{trace_file,trace_records,attach,chanmap,iomem,pmu_sysfs,units,libvirt_meta,damon_record,dirty_rate,owners,owners_stream}

# fields F1 F2 …: the arguments joined by NUL bytes
fields() {
	local first=1
	for f in "$@"; do
		[ $first = 1 ] || printf '\0'
		printf '%s' "$f"
		first=0
	done
}

for t in "$F"/trace/*.hvt; do
	cp "$t" "$C/trace_file/"
	python3 tests/fuzz/hvt2records.py "$t" "$C/trace_records/$(basename "$t" .hvt)"
done

layout='{"generation":1,"page_size":4096,"slots":[{"slot":0,"gpa":0,"size":16777216,"backing":"memfd","name":"ram"}]}'
hello='{"type":"hello","protocol":1,"vmm":"hvmtrace-vmm 0.1.0","vm":{"name":"fuzz","uuid":"","pid":42},"accel":"kvm","page_size":4096,"modes":["dirty-log","ad"],"default_cpu":-1,"vcpu_tids":[43],"layout":'"$layout"'}'
attach='{"type":"attach","protocol":1,"mode":"dirty-log","cpu":1,"tracer":{"name":"hvmtrace 0.1.0","pid":7}}'
attached='{"type":"attached","mode":"ad","cpu":-1,"generation":1,"t_armed_ns":1000,"bitmap_bytes":0}'
lay='{"type":"layout","layout":'"${layout/\"generation\":1/\"generation\":2}"',"bitmap_bytes":0}'
harvest='{"type":"harvest","seq":1}'
harvested='{"type":"harvested","seq":1,"generation":1,"t_start_ns":1000,"t_end_ns":2000,"t_done_ns":2100,"dirty_pages":3,"lost_pages":0,"final":false}'
final='{"type":"harvested","seq":2,"generation":2,"t_start_ns":2100,"t_end_ns":3000,"t_done_ns":3100,"dirty_pages":0,"lost_pages":5,"final":true}'
bye='{"type":"bye","reason":"guest stopped"}'
error='{"type":"error","code":"busy","message":"another tracer is attached"}'
{ printf '\1'; fields "$hello" "$attached" "$lay" "$harvested" "$final" "$bye"; } >"$C/attach/vmm-side"
{ printf '\1'; fields "$attach" "$harvest" "$bye"; } >"$C/attach/tracer-side"
{ printf '\1'; fields "$error"; } >"$C/attach/error"
# the raw form: byte 0 even, then frames as they travel (u32 little-endian length, JSON)
python3 - "$C/attach/raw" "$hello" "$harvested" <<'PY'
import struct, sys
with open(sys.argv[1], "wb") as f:
    f.write(b"\0")
    for m in sys.argv[2:]:
        f.write(struct.pack("<I", len(m)) + m.encode())
PY

cp "$F/chanmap/tcg-3g.json" "$C/chanmap/"
for m in 2s8c-interleaved 3way; do
	build/bin/chanmap probe --model "$F/probe/model-$m.json" -o "$C/chanmap/$m.json" -q
done

fw() { # N: the fields of firmware map entry N of the fixture
	fields "$(cat "$F/iomem/fwmap/$1/start")" "$(cat "$F/iomem/fwmap/$1/end")" "$(cat "$F/iomem/fwmap/$1/type")"
}
{ fields "$(cat "$F/iomem/booted-8g.iomem")" 'ro memmap=8G$0x7b4000000 memmap=1G$0xa40000000,4G@8G quiet'; printf '\0'; fw 0; printf '\0'; fw 1; printf '\0'; fw 2; printf '\0'; fw 3; } >"$C/iomem/booted-8g"
fields "$(cat "$F/iomem/hidden.iomem")" 'memmap=64K$0x18690000' >"$C/iomem/hidden"

pmu() { # NAME DIR FORMAT3 ALIAS: a PMU of a fixture host, CPUs 0 and 1 in sockets 0 and 1
	local d=$F/sysfs/$2/sys/devices/$1
	fields "$1" "$(cat "$F/sysfs/$2/proc/cpuinfo")" "$(cat "$d/type")" "0,1" \
		"$(cat "$d/format/event")" "$(cat "$d/format/umask" 2>/dev/null || true)" \
		"$(cat "$d/format/rdwrmask" 2>/dev/null || true)" "$4" "${4/0x03/0x0c}" 0 1 "$3"
}
pmu uncore_imc_0 skx "event=0x04,umask=0x03" "$(cat "$F/sysfs/skx/sys/devices/uncore_imc_0/events/cas_count_read")" >"$C/pmu_sysfs/skx"
pmu uncore_imc_0 spr "event=0x05,umask=0xcf" "$(cat "$F/sysfs/spr/sys/devices/uncore_imc_0/events/cas_count_read")" >"$C/pmu_sysfs/spr"
pmu amd_umc_4 amd-zen4 "event=0x0a,rdwrmask=0x1" "" >"$C/pmu_sysfs/amd-zen4"

fields 10ms 512M 0-3,8 --interval 1.5s -s 1G --cpu 3 -q --mode=ad out.hvt >"$C/units/typical"
fields 5m 2TiB 0,2-3 -i10ms --count=7 --name fuzz -- -file >"$C/units/short-forms"
fields 250us 4K 0 --size 4095 --mode x >"$C/units/refused"

# libvirt_meta: domain XML, then a cpuset. The shapes virt-xml writes (docs/libvirt.md §1-2): channels of a
# chanmap with the QEMU command line, explicit extents with pins, and a plain domain.
ns="xmlns:hvmtrace='urn:x-hvmtrace:libvirt:trace:1'"
qns="xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'"
fields "<domain type='kvm' $qns><name>vm</name><memory unit='KiB'>1048576</memory><vcpu placement='static'>2</vcpu>
<cputune><vcpupin vcpu='0' cpuset='0'/><vcpupin vcpu='1' cpuset='2-3,^3'/><emulatorpin cpuset='0,2'/></cputune>
<seclabel type='dynamic' model='dac' relabel='yes'><label>+64055:+64055</label></seclabel>
<metadata><hvmtrace:trace $ns interval='100ms' cpu='1' output='/var/lib/hvmtrace' mode='ad' bandwidth='on' jsonl='on'>
<hvmtrace:ram chanmap='/etc/hvmtrace/chanmap.json'><hvmtrace:channel id='s0.mc1.ch0'/><hvmtrace:channel id='s0.mc1.ch1'/></hvmtrace:ram>
</hvmtrace:trace></metadata>
<qemu:commandline><qemu:arg value='-object'/><qemu:arg value='{\"qom-type\":\"memory-backend-devmem\",\"id\":\"hvt-ram\",\"size\":1073741824,\"helper\":\"/run/hvmtrace/vm/devmem.sock\"}'/>
<qemu:arg value='-object'/><qemu:arg value='hvmtrace,id=hvt0,path=/run/hvmtrace/vm/hvmtrace.sock,mode=auto'/></qemu:commandline></domain>" \
	"0-3,^2,8" >"$C/libvirt_meta/chanmap"
fields "<domain type='qemu'><name>vm2</name><memory unit='MiB'>512</memory><vcpu cpuset='4-7'>1</vcpu>
<metadata><hvmtrace:trace $ns cpu='3' output='/o' run-dir='/r' interval='1s' mode='dirty-log' bandwidth='off'>
<hvmtrace:ram mem-path='/dev/shm/t' iomem='/tmp/iomem'><hvmtrace:extent phys='0x10000000' size='0x10000000'/>
<hvmtrace:extent phys='0x40000000' size='0x10000000'/></hvmtrace:ram></hvmtrace:trace></metadata></domain>" \
	"1" >"$C/libvirt_meta/extents"
fields "<domain type='kvm'><name>plain</name><memory>4194304</memory><vcpu>4</vcpu><os><type>hvm</type></os></domain>" \
	"0-1023" >"$C/libvirt_meta/plain"

# damon_record: the file hvmtrace score reads (docs/score.md): hvmtrace-damon 1 text, with and without
# aggr_us, damo's JSON in both nr_accesses shapes, and the JSON compressed as damo's json_compressed
printf 'hvmtrace-damon 1\n# guest clock\naggr_us 100000\n1000000 0x1000 0x3000 2\n1000000 0x3000 0x8000 0\n2000000 4096 8192 1\n' >"$C/damon_record/text"
printf 'hvmtrace-damon 1\n100 0x1000 0x2000 1\n200 0x1000 0x2000 0\n300 0x2000 0x3000 7\n' >"$C/damon_record/text-no-aggr"
json='[{"kdamond_idx": 0, "context_idx": 0, "intervals": {"sample_us": 5000, "aggr_us": 100000, "ops_update_us": 1000000}, "target_id": 0, "snapshots": [{"start_time": 10, "end_time": 20, "regions": [{"start": 4096, "end": 8192, "nr_accesses": {"samples": 3, "percent": null}, "age": {"usec": null, "aggr_intervals": 1}}], "total_bytes": 4096}, {"start_time": 20, "end_time": 30, "regions": [{"start": 4096, "end": 12288, "nr_accesses": 0, "age": 2}]}]}]'
printf '%s' "$json" >"$C/damon_record/damo-json"
printf '%s' "$json" | python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read()))' >"$C/damon_record/damo-json-compressed"
# dirty_rate: QEMU's query-dirty-rate replies as QMP tools print them, a line each (hvmtrace score
# --dirty-rate): the greeting, calc-dirty-rate's acknowledgement, each mode, a reply queried twice
{
	echo '{"QMP": {"version": {"qemu": {"micro": 13, "minor": 0, "major": 10}}, "capabilities": []}}'
	echo '{"return": {}}'
	echo '{"return": {"status": "measured", "sample-pages": 512, "dirty-rate": 108, "mode": "page-sampling", "start-time": 1693900454, "calc-time": 10, "calc-time-unit": "second"}}'
	echo '{"return": {"status": "measured", "sample-pages": 512, "dirty-rate": 108, "mode": "page-sampling", "start-time": 1693900454, "calc-time": 10, "calc-time-unit": "second"}}'
	echo '{"status": "measured", "sample-pages": 0, "dirty-rate": 61, "mode": "dirty-bitmap", "start-time": 1693900470, "calc-time": 1003, "calc-time-unit": "millisecond"}'
	echo '{"return": {"status": "measured", "sample-pages": 0, "dirty-rate": 500, "mode": "dirty-ring", "start-time": 1693900480, "calc-time": 1, "vcpu-dirty-rate": [{"id": 0, "dirty-rate": 300}, {"id": 1, "dirty-rate": 200}]}}'
} >"$C/dirty_rate/replies"
echo '{"error": {"class": "GenericError", "desc": "the dirty rate is already being measured."}}' >"$C/dirty_rate/error"

# owners: snapshots of the guest agent (docs/attribution.md), written by tests/tools/owners_snap.py: the six
# kinds and two processes (one partial, one sharing a page), a stream of two snapshots, a truncated one
snap() { python3 tests/tools/owners_snap.py encode; }
kinds='{"type":"kind","kind":"free","runs":[[0,16]]},{"type":"kind","kind":"slab","runs":[[16,2],[40,1]]},
{"type":"kind","kind":"pagetable","runs":[[18,1]]},{"type":"kind","kind":"anon","runs":[[19,5],[100,300]]},
{"type":"kind","kind":"cache","runs":[[24,10]]},{"type":"kind","kind":"other","runs":[[34,6],[41,59]]}'
procs='{"type":"process","pid":1,"name":"init","cgroup":"/init.scope","runs":[[19,2],[100,10]]},
{"type":"process","pid":42,"name":"array","cgroup":"/user.slice/a","flags":1,"runs":[[20,1],[110,290]]}'
echo '{"time_ns":1000,"owners":['"$kinds,$procs"']}' | snap >"$C/owners/kinds-and-processes"
{ echo '{"owners":['"$procs"']}' | snap; echo '{"page_size":65536,"time_ns":2,"owners":[]}' | snap; } >"$C/owners/stream"
echo '{"flags":1,"owners":[{"type":"process","pid":7,"name":"x","runs":[[1099511627775,1]]}]}' | snap >"$C/owners/truncated-last-pfn"

# owners_stream: a port's bytes (the first byte: the body bound 20 << (b & 15), reads of 1 + 7 * (b >> 4)
# bytes): snapshots between garbage, a lone magic, a header claiming a huge body, a magic cut at the end
{ printf '\x4c'; printf 'noise before'; cat "$C/owners/stream"; printf 'HVTOWNRS'; printf 'HVTOWNRS\1\0\0\0\0\20\0\0'
  printf '\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\377\377\377\377\0\0\0\0'; cat "$C/owners/kinds-and-processes"; printf 'HVTOW'; } >"$C/owners_stream/garbage-around"
{ printf '\x05'; cat "$C/owners/kinds-and-processes"; } >"$C/owners_stream/bound-too-small"
