// SPDX-License-Identifier: MIT
/*
 * The energy what-if's model (energy.h): the default figures, derived here from the published values that
 * docs/energy.md cites, and the JSON file that overrides them. Units: mA x V x ns = pJ.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "hvmtrace/energy.h"
#include "hvmtrace/error.h"
#include "hvmtrace/json_read.h"
#include "hvmtrace/util.h"

#define LINE_BYTES 64.0 /* a BL8 burst on a 64-bit rank */

/*
 * DRAM (derived): Micron 8 Gb x16 DDR4 (MT40A512M16), as four devices of the 4 GB UDIMM MTA4ATF51264AZ,
 * its datasheet's Table 13 (die revision B), DDR4-2400 column; the currents are the four devices' sum.
 * VDD 1.2 V, tCK 1/1200 MHz, a burst is 4 tCK. Refresh: 8 Gb tRFC1 350 ns, tREFI 7.8 us (Micron DDR4
 * data sheets). Energy above active standby (IDD3N) per burst; background IDD2N all the time.
 */
#define DRAM_VDD      1.2
#define DRAM_BURST_NS (4 * 1000.0 / 1200)
#define DRAM_IDD2N    136.0
#define DRAM_IDD3N    188.0
#define DRAM_IDD4R    972.0
#define DRAM_IDD4W    912.0
#define DRAM_IDD5B    1120.0
#define DRAM_GIB      4.0 /* four 8 Gb devices */
#define DRAM_TRFC_NS  350.0
#define DRAM_TREFI_NS 7800.0

/*
 * STT-MRAM (derived): Everspin EMD4E001G16G2, 1 Gb x16 ST-DDR4-1333, datasheet rev. 1.2, as four devices
 * on a 64-bit rank; per-device currents IDD2N 90, IDD3N 95, IDD4R 180, IDD4W 230 mA, VDD 1.2 V, tCK
 * 1.5 ns. Non-volatile: no refresh.
 */
#define MRAM_DEVICES  4.0
#define MRAM_VDD      1.2
#define MRAM_BURST_NS (4 * 1.5)
#define MRAM_IDD2N    90.0
#define MRAM_IDD3N    95.0
#define MRAM_IDD4R    180.0
#define MRAM_IDD4W    230.0
#define MRAM_GIB      (1.0 / 8) /* one 1 Gb device */

/*
 * PCM: Lee, Ipek, Mutlu, Burger, ISCA 2009: array read 2.47 pJ/bit, array write 16.82 pJ/bit. The paper
 * gives no standby figure: 0 (array non-volatile; the periphery's background power is not modelled).
 */
#define PCM_READ_PJ_PER_BIT  2.47
#define PCM_WRITE_PJ_PER_BIT 16.82

const struct hvt_energy_model hvt_energy_defaults = {
    .tech =
	{
	    [HVT_TECH_DRAM] =
		{
		    .read_pj_per_byte = (DRAM_IDD4R - DRAM_IDD3N) * DRAM_VDD * DRAM_BURST_NS / LINE_BYTES,
		    .write_pj_per_byte = (DRAM_IDD4W - DRAM_IDD3N) * DRAM_VDD * DRAM_BURST_NS / LINE_BYTES,
		    .standby_mw_per_gib = (DRAM_IDD2N * DRAM_VDD + (DRAM_IDD5B - DRAM_IDD3N) * DRAM_VDD *
								       DRAM_TRFC_NS / DRAM_TREFI_NS) /
					  DRAM_GIB,
		},
	    [HVT_TECH_MRAM] =
		{
		    .read_pj_per_byte =
			MRAM_DEVICES * (MRAM_IDD4R - MRAM_IDD3N) * MRAM_VDD * MRAM_BURST_NS / LINE_BYTES,
		    .write_pj_per_byte =
			MRAM_DEVICES * (MRAM_IDD4W - MRAM_IDD3N) * MRAM_VDD * MRAM_BURST_NS / LINE_BYTES,
		    .standby_mw_per_gib = MRAM_IDD2N * MRAM_VDD / MRAM_GIB,
		},
	    [HVT_TECH_PCM] =
		{
		    .read_pj_per_byte = PCM_READ_PJ_PER_BIT * 8,
		    .write_pj_per_byte = PCM_WRITE_PJ_PER_BIT * 8,
		    .standby_mw_per_gib = 0,
		},
	},
    .bytes_per_written_page = 4096,
    .bytes_per_accessed_page = 4096,
};

static const char *const tech_names[HVT_TECH_COUNT] = {"dram", "mram", "pcm"};

const char *hvt_tech_name(enum hvt_mem_tech t)
{
	return (unsigned)t < HVT_TECH_COUNT ? tech_names[t] : "?";
}

/* Every figure is optional (the default stays) and a finite number >= 0; no other member is taken. */
static const char *const tech_keys[] = {"read_pj_per_byte", "write_pj_per_byte", "standby_mw_per_gib", NULL};
static const char *const top_keys[] = {
    "dram", "mram", "pcm", "bytes_per_written_page", "bytes_per_accessed_page", NULL};

static int figure(const struct hvt_json_in *in, const char *key, double *v)
{
	return HVT_JSON_OPT(hvt_json_double, in, key, 0, HUGE_VAL, v);
}

static int tech_object(const struct hvt_json_in *in, const char *name, struct hvt_tech_energy *e)
{
	struct hvt_json_in t;
	int rc;

	if (!hvt_json_has(in, name))
		return 0;
	if ((rc = hvt_json_object(in, name, &t)) || (rc = hvt_json_only(&t, tech_keys)) ||
	    (rc = figure(&t, "read_pj_per_byte", &e->read_pj_per_byte)) ||
	    (rc = figure(&t, "write_pj_per_byte", &e->write_pj_per_byte)))
		return rc;
	return figure(&t, "standby_mw_per_gib", &e->standby_mw_per_gib);
}

int hvt_energy_model_load(struct hvt_energy_model *m, const char *path, struct hvt_err *err)
{
	struct hvt_energy_model out = *m;
	struct hvt_json_in in;
	struct json_tokener *tok;
	struct json_object *o;
	char *text = NULL;
	size_t len;
	int rc;

	rc = hvt_read_file(path, "energy model", 1 << 20, &text, &len, err);
	if (rc)
		return -EINVAL;
	tok = json_tokener_new();
	if (!tok) {
		free(text);
		return hvt_err_set(err, -ENOMEM, "out of memory");
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (!o || json_tokener_get_parse_end(tok) < len) {
		rc = hvt_err_set(err, -EINVAL, "%s: not a JSON object: %s", path,
				 o ? "text after its end"
				   : json_tokener_error_desc(json_tokener_get_error(tok)));
		goto out;
	}
	if (!json_object_is_type(o, json_type_object)) {
		rc = hvt_err_set(err, -EINVAL, "%s: not a JSON object", path);
		goto out;
	}
	hvt_json_in_init(&in, o, -EINVAL, err, "%s", path);
	if ((rc = hvt_json_only(&in, top_keys)))
		goto out;
	for (int t = 0; t < HVT_TECH_COUNT && !rc; t++)
		rc = tech_object(&in, tech_names[t], &out.tech[t]);
	if (rc || (rc = figure(&in, "bytes_per_written_page", &out.bytes_per_written_page)) ||
	    (rc = figure(&in, "bytes_per_accessed_page", &out.bytes_per_accessed_page)))
		goto out;
	*m = out;
out:
	json_object_put(o);
	json_tokener_free(tok);
	free(text);
	return rc;
}
