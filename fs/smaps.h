/* /proc/<pid>/smaps_rollup as the view serves it: the kernel's own text,
 * from a memo kept fresh in the background, to callers the kernel would let
 * read the real file. */
#pragma once

#include "caller.h"
#include "memo.h"

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

struct smaps_config {
	int proc_fd;     /* the procfs whose processes are served */
	uint64_t ns;     /* its pid namespace (the memo key's first part) */
	struct memo_config memo;
	void (*wake_refresher)(void *data); /* a stale entry wants a refresh */
	void *wake_data;
};

struct smaps;

struct smaps *smaps_new(const struct smaps_config *cfg);
void smaps_free(struct smaps *s);

/* The smaps_rollup text of the process (pid, start_time), which the
 * function's caller has found alive, if the requesting caller may read it
 * (the kernel's own check, made with the caller's credentials). -EACCES if
 * it may not, -ENOENT if that process is gone, else 0. */
int smaps_read(struct smaps *s, const struct caller *c, pid_t pid, uint64_t start_time,
	       GBytes **ret_content);

/* One step of the background refresher (see memo_refresh_step). */
gboolean smaps_refresh_step(struct smaps *s, gint64 *ret_wait_us);

/* The memo's counters in Prometheus text format. */
GString *smaps_render_stats(struct smaps *s);
