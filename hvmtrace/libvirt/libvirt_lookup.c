// SPDX-License-Identifier: MIT
/* The libvirt API calls: a domain's live XML from the libvirt daemon. */
#include <errno.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "libvirt_domain.h"
#include "libvirt_lookup.h"

static void quiet_libvirt(void *opaque, virErrorPtr err)
{
	(void)opaque;
	(void)err;
}

int hvt_lv_lookup(const char *uri, const char *name, struct hvt_lv_domain *d, struct hvt_err *e)
{
	virConnectPtr c;
	virDomainPtr dom;
	char *xml;
	int rc;

	virSetErrorFunc(NULL, quiet_libvirt);
	c = virConnectOpenReadOnly(uri);
	if (!c)
		return hvt_err_set(e, -ECONNREFUSED, "cannot connect to libvirt%s%s: %s", uri ? " at " : "",
				   uri ? uri : "", virGetLastErrorMessage());
	dom = virDomainLookupByName(c, name);
	if (!dom) {
		rc = hvt_err_set(e, -ENOENT, "libvirt has no domain '%s'", name);
		virConnectClose(c);
		return rc;
	}
	xml = virDomainGetXMLDesc(dom, 0);
	if (!xml)
		rc = hvt_err_set(e, -EIO, "domain '%s': cannot read its XML: %s", name,
				 virGetLastErrorMessage());
	else
		rc = hvt_lv_parse(xml, strlen(xml), d, e);
	free(xml);
	virDomainFree(dom);
	virConnectClose(c);
	return rc;
}
