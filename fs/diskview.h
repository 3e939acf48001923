/* /proc/diskstats of a cgroup: the host's text in, the cgroup's out. Pure:
 * no file is read here. */
#pragma once

#include "cgroup.h"

#include <glib.h>

/* The lines of devices the cgroup's counters do not name. */
enum diskview_others {
	DISKVIEW_OTHERS_HOST, /* kept as they are (v1: devices whose I/O its files do not count) */
	DISKVIEW_OTHERS_ZERO, /* 0s: it did no I/O there (v2, whose io.stat counts every device) */
};

/* The host's diskstats with the line of each device of devs (struct
 * cgroup_io_device) made the cgroup's: requests completed and sectors
 * (bytes / 512) read, written and discarded, every other field 0, as many
 * fields as the host's line has; the other devices' lines as others says.
 * A partition's line (one that follows its disk's, named the disk's name
 * and a number, or 'p' and a number after a name that ends in a digit)
 * goes with its disk: dropped where the disk's line is the cgroup's (the
 * cgroup counts whole disks only). A device of devs that the host's text
 * lacks has no name: left out. 0 or -EINVAL (the host's text not
 * understood). */
int diskview_render(const char *host, const GArray *devs, enum diskview_others others, GString **ret);

/* diskview_render in two steps, for a host's text rendered for many
 * cgroups: its lines parsed once (0 or -EINVAL), then rendered for each. */
typedef struct diskview_host diskview_host;
int diskview_host_parse(const char *host, struct diskview_host **ret);
GString *diskview_render_host(const struct diskview_host *host, const GArray *devs, enum diskview_others others);
void diskview_host_free(struct diskview_host *host);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(diskview_host, diskview_host_free)
