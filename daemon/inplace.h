/* Whether a caller reads its figures from the view (the seccomp listener,
 * sysinfo.c and affinity.c): for its memory, the topmost mount at
 * /proc/meminfo (a file bind: Docker's -v, LXC's hook), or else at /proc
 * (the OCI hook's), is a cgprocfs one in its mount table; for its CPUs,
 * the topmost at /sys/devices/system/cpu (the OCI hook's both modes and
 * LXC's hook bind the view's there). Found once a second per mount namespace (as an answer
 * serves its callers: sysinfo.c), kept for each namespace apart, so that
 * callers of alternating namespaces do not read their tables at each call
 * (one may hold 100,000 mounts). */
#pragma once

#include <glib.h>
#include <sys/types.h>

struct inplace;

enum inplace_what {
	INPLACE_MEMORY, /* sysinfo(2)'s figures: meminfo */
	INPLACE_CPU,    /* sched_getaffinity(2)'s: /sys/devices/system/cpu */
};

struct inplace *inplace_new(int proc_fd);
void inplace_free(struct inplace *p);
/* tid's: FALSE too if its mount table cannot be read. */
gboolean inplace_view(struct inplace *p, pid_t tid, enum inplace_what what);
