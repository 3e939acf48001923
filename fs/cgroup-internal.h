/* What fs/cgroup.c and fs/cgroup-io.c share. Not for use elsewhere. */
#pragma once

#include "cgroup.h"

#include <glib.h>
#include <stdint.h>

/* The text of dir/name in h, stripped; -ENOENT if the file does not exist. */
int cgroup_read_text(const struct cgroup_hierarchy *h, const char *dir, const char *name, char **ret);
/* -EINVAL, with dir/name as the culprit (if ret_culprit). */
int cgroup_bad(const char *dir, const char *name, char **ret_culprit);
/* A whole decimal number. */
gboolean cgroup_parse_u64(const char *text, uint64_t *ret);
/* For the cgroup at dir, which has no file (one that only a level with a
 * controller has): the level the kernel charges its use of that
 * controller to, where v2's controller is not enabled for it (LXC's
 * attach leaf .lxc, beside the container's init): its nearest ancestor
 * with file. A cgroup with the file is its own level: ask only on a
 * miss. 0 and *ret ("." if none has it); -ENOENT if the cgroup is gone. */
int cgroup_charged_level(const struct cgroup_hierarchy *h, const char *dir, const char *file, char **ret);
