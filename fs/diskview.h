/* /proc/diskstats of a cgroup: the host's text in, the cgroup's out. Pure:
 * no file is read here. */
#pragma once

#include "cgroup.h"

#include <glib.h>

/* The host's diskstats with the line of each device of devs (struct
 * cgroup_io_device) made the cgroup's: requests completed and sectors
 * (bytes / 512) read, written and discarded, every other field 0, as many
 * fields as the host's line has. A partition's line (one that follows its
 * disk's, named the disk's name and a number, or 'p' and a number after a
 * name that ends in a digit) goes with its disk: dropped where the disk's
 * line is the cgroup's (the cgroup counts whole disks only). The lines of
 * other devices are kept as they are if keep_others (v1: devices whose
 * I/O the cgroup's files do not count), else dropped (v2: devices the
 * cgroup never used). A device of devs that the host's text lacks has no
 * name: left out. 0 or -EINVAL (the host's text not understood). */
int diskview_render(const char *host, const GArray *devs, gboolean keep_others, GString **ret);
