// SPDX-License-Identifier: MIT
/* Where the doctor looks (struct doc_env): the running host unless a test points it at recorded trees. */
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"

void doc_env_defaults(struct doc_env *env)
{
	*env = (struct doc_env){
	    .sysfs_root = "/sys",
	    .proc_root = "/proc",
	    .mem_path = "/dev/mem",
	    .kvm_path = "/dev/kvm",
	    .resctrl_root = "/sys/fs/resctrl",
	    .output_dir = "/var/lib/hvmtrace",
	    .hooks_dir = "/etc/libvirt/hooks/qemu.d",
	    .units_dir = "/etc/systemd/system",
	    .selftest = true,
	};
}

void doc_proc_path(const struct doc_env *env, const char *leaf, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", env->proc_root, leaf);
}

void doc_sys_path(const struct doc_env *env, const char *leaf, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", env->sysfs_root, leaf);
}

bool doc_has_word(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = strstr(text, word); p; p = strstr(p + 1, word))
		if ((p == text || strchr(" \t\n", p[-1])) && (!p[n] || strchr(" \t\n", p[n])))
			return true;
	return false;
}
