/* One daemon's state, shared by lifecycle.c (start-up, serving, teardown)
 * and takeover.c (taking the views over, and keeping a keeper that holds
 * them all). Nothing outside daemon/'s lifecycle uses it. */
#pragma once

#include "daemon.h"
#include "session.h"

/* Everything one daemon runs, owned by lifecycle_serve's thread. Other
 * threads read: containers (atomically, for .cgprocfs/stats) and
 * handed_over (atomic); loop_done under loop_lock. On the heap, and freed
 * only once no session is served: where lifecycle_serve returns with
 * workers still answering (handed over, or binds elsewhere), it stays. */
struct daemon {
	const struct daemon_config *cfg;
	int proc_fd, sys_cpu_fd;
	struct daemon_cgroups cgroups;
	struct scope *scope; /* which cgroup a caller's figures come from */
	struct cpuview *cpuview;
	struct memgroups *memgroups; /* NULL: --no-memory-view */
	struct nsinits *nsinits;
	struct cputimes *cputimes;
	struct iogroups *iogroups; /* NULL: --no-io-view */
	struct smaps *smaps;
	struct view *view;
	struct pidwatch *watch;
	struct refresher *refresher;
	struct keeper *keeper;
	struct notifier *notifier; /* NULL: notifications are written directly */
	struct server *server;
	struct session *host;
	struct containers *containers;
	struct sysinfo_listener *sysinfo; /* NULL until served, or if it cannot listen */
	struct handover ho;
	gboolean from_keeper; /* the views were taken over from a dead daemon's keeper */
	GThread *loop_th, *watch_th;
	GMutex loop_lock; /* guards loop_done */
	GCond loop_cond;
	gboolean loop_done;
	char *real_path; /* <mountpoint>/proc/.real */
	char *real_opts; /* the restricting options of the daemon's /proc, or NULL */
	char *counters_path; /* stat's counters, kept for a daemon after this one */
	char *placement_path; /* the CPU view's placements, likewise */
	gboolean real_mounted;
	gint handed_over; /* set once this daemon's sessions are another's */
};

/* Taking over from a running daemon (--replace) or a dead one's keeper. */
gboolean taking_over(const struct daemon_config *cfg);
/* Take the views into d->ho: from the keeper cfg->recover_fd leads to,
 * or from the daemon serving the mountpoint, or, if that one dies
 * meanwhile, from its keeper. Sets d->from_keeper. FALSE with *error. */
gboolean takeover_take(struct daemon *d, GError **error);
/* Once the host view is served here: the containers' views, each with
 * the watches of its cached processes. */
void takeover_resume(struct daemon *d);
/* Every view is served here and held by this daemon's keeper, which a
 * new daemon finds: tell the one taken from that it may go. */
void takeover_done(struct daemon *d);
/* No keeper of this daemon's could be published: stop serving and exit,
 * leaving the views to the one taken from (which serves on, or holds on:
 * it sees the handover's connection closed). */
G_GNUC_NORETURN void takeover_abandon(struct daemon *d);
/* Give d's keeper every view and the control socket, and have it listen
 * where a new daemon looks for it (starting another keeper if it is
 * gone). FALSE if it could not (said in the log). */
gboolean daemon_keep_all(struct daemon *d);
/* If d's keeper is gone, start another; if it does not hold everything
 * (a new one, or a publish that failed), give it everything. Not while a
 * handover is under way. */
void daemon_mind_keeper(struct daemon *d);
