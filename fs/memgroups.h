/* Which memory cgroup a caller's memory files come from, and their texts
 * (/proc/meminfo, swaps, vmstat) for it: the memory view's state. The
 * renderers are fs/memview's, the cgroup files fs/cgroup's. */
#pragma once

#include "cgroup.h"
#include "served.h"

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

struct memgroups_config {
	int proc_fd; /* where callers' /proc/<tid>/cgroup and the host's files are read */
	struct scope *scope; /* which cgroup a caller's figures come from */
	struct cgroup_hierarchy memory;
	gboolean swap_view; /* FALSE: the host's swap figures (--no-swap-view) */
	/* Called once per cgroup file that could not be used (the caller then
	 * gets the host's files): data, the file, and the errno. */
	void (*report)(void *data, const char *file, int err);
	void *report_data;
};

struct memgroups;

struct memgroups *memgroups_new(const struct memgroups_config *cfg);
void memgroups_free(struct memgroups *m);

/* Callers' memory cgroups, by thread and by class (fs/deciders.h): each a
 * string that is the same in every process for the same cgroup ("" when
 * the host has no memory controller or the caller's cannot be told: the
 * host's files). */
struct deciders *memgroups_deciders(struct memgroups *m);
/* The content class of a group's files (fs/ino.h): a hash, never 0. */
uint64_t memgroups_class(gconstpointer group);
/* The text of proc/<name> (meminfo, swaps, vmstat) for group: 0, or
 * SERVED_HOST (fs/served.h) with the host's when the group has no memory
 * limit or its files cannot be used; or -errno. */
int memgroups_render(struct memgroups *m, const char *group, const char *name, GBytes **ret);
