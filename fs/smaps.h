/* /proc/<pid>/smaps_rollup as the view serves it. */
#pragma once

#include "caller.h"

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

/* The kernel's smaps_rollup text of the process (pid, start_time) under
 * proc_fd, which the caller of this function has found alive, if the
 * caller of the request may read it (the kernel's own check, made with the
 * caller's credentials). -EACCES if it may not, -ENOENT if that process is
 * gone (a recycled pid is gone too), else 0. */
int smaps_read(const struct caller *c, int proc_fd, pid_t pid, uint64_t start_time,
	       GBytes **ret_content);
