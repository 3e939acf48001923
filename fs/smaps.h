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
	int proc_fd;     /* a procfs of the daemon's own pid namespace */
	uint64_t ns;     /* that namespace (the memo key's first part) */
	struct memo_config memo;
	void (*wake_refresher)(void *data); /* a stale entry wants a refresh */
	void *wake_data;
};

struct smaps;

struct smaps *smaps_new(const struct smaps_config *cfg);
void smaps_free(struct smaps *s);

/* Serve the processes of another pid namespace ns too, read in proc_fd (a
 * procfs of it) and found through ns_fd (the namespace). The fds are
 * duplicated: the caller keeps its own; a read or walk under way when the
 * namespace is removed finishes with the copies. */
void smaps_add_namespace(struct smaps *s, uint64_t ns, int proc_fd, int ns_fd);
void smaps_remove_namespace(struct smaps *s, uint64_t ns);

/* The smaps_rollup text of the process (pid, start_time) of pid namespace
 * ns, which the function's caller has found alive, if the requesting
 * caller may read it (the kernel's own check, made with the caller's
 * credentials). -EACCES if it may not, -ENOENT if that process is gone. */
int smaps_read(struct smaps *s, const struct caller *c, uint64_t ns, pid_t pid, uint64_t start_time,
	       GBytes **ret_content);

/* One step of the background refresher (see memo_refresh_step). */
gboolean smaps_refresh_step(struct smaps *s, gint64 *ret_wait_us);

/* The memo's counters in Prometheus text format. */
GString *smaps_render_stats(struct smaps *s);
