/* sched_getaffinity(2) for containers whose CPU view is in place,
 * answered by the seccomp listener (sysinfo.c): a mask of the view's N
 * CPUs where the kernel's has more, else the kernel's own answer
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE), whose errors (EINVAL, ESRCH, EFAULT,
 * an LSM's EPERM) all stay the kernel's. */
#pragma once

#include "cgroup.h"
#include "inplace.h"
#include "scope.h"
#include "view.h"

#include <glib.h>
#include <linux/seccomp.h>
#include <stdint.h>

struct affinity_config {
	int proc_fd;          /* the daemon's procfs: callers and targets */
	struct view *view;    /* the callers' CPU maps */
	struct scope *scope;  /* a caller's container cgroup: where other pids are looked for */
	const struct cgroup_config *cgroups;
	struct inplace *in_place; /* whose CPU view is in place */
	gboolean off;         /* --no-affinity: every call the kernel's */
};

struct affinity;

/* Borrows what cfg points to. Probes the kernel's cpumask size and the
 * smallest length it accepts once. */
struct affinity *affinity_new(const struct affinity_config *cfg);
void affinity_free(struct affinity *a);

/* Whether req is a sched_getaffinity(2) of an x86 ABI (x86-64, x32, i386). */
gboolean affinity_is_call(const struct seccomp_notif *req);

/* Answer req, a sched_getaffinity(2) notified on notify_fd, into mem (the
 * caller's memory, opened before the request is checked to stand): 0 and
 * *ret_val (the bytes written, the kernel's return value); or -errno: the
 * kernel answers it (counted by why). */
int affinity_answer(struct affinity *a, int notify_fd, int mem, const struct seccomp_notif *req,
		    uint64_t *ret_val);

/* The counters (Prometheus text). */
void affinity_render_stats(struct affinity *a, GString *out);
