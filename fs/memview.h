/* The memory view: /proc/meminfo, /proc/swaps and /proc/vmstat as a
 * caller's memory cgroup makes them. This part is pure: the cgroup's
 * figures (fs/cgroup.h reads them, v1 and v2, into v2's names) and the
 * host's text in, the caller's text out. */
#pragma once

#include <glib.h>
#include <stdint.h>

/* What a memory cgroup says, in cgroup v2's words whatever the version. */
struct mem_figures {
	uint64_t limit;  /* bytes: the smallest memory limit over the cgroup and its
	                  * ancestors (v2 memory.max, v1 memory.limit_in_bytes) */
	uint64_t usage;  /* bytes: v2 memory.current, v1 memory.usage_in_bytes */
	gboolean swap_accounted; /* the kernel counts the cgroup's swap */
	gboolean swap_limited;   /* ... and some level limits it */
	uint64_t swap_limit;     /* bytes, the smallest, when swap_limited */
	uint64_t swap_usage;     /* bytes, when swap_accounted */
	/* memory.stat, by v2 name ("anon", "file", "file_mapped", "pgfault",
	 * ...) -> guint64 * (sizes in bytes, events in counts); v1's total_*
	 * fields under the v2 name they stand for. Owned. */
	GHashTable *stat;
};

void mem_figures_clear(struct mem_figures *f);

/* The value of a memory.stat key, or FALSE if the cgroup has none. */
gboolean mem_figures_stat(const struct mem_figures *f, const char *key, uint64_t *ret);

/* Renderers, for a caller with a memory limit. host: the host's file.
 * swap_view FALSE: the host's swap figures (--no-swap-view). 0 or -EINVAL
 * when the host text does not have the expected shape. */
int memview_render_meminfo(const char *host, const struct mem_figures *f, gboolean swap_view, GString **ret);
/* host_meminfo: for the host's SwapTotal. */
int memview_render_swaps(const char *host, const char *host_meminfo, const struct mem_figures *f,
			 GString **ret);
int memview_render_vmstat(const char *host, const struct mem_figures *f, GString **ret);
