/* The daemon: options, checks, mount, threads, signals, teardown. */
#pragma once

#include "cgroup.h"
#include "control.h"
#include "cpuview.h"
#include "cputime.h"
#include "pidwatch.h"
#include "scope.h"
#include "smaps.h"

#include <glib.h>

#define DAEMON_DEFAULT_MOUNTPOINT "/var/lib/cgprocfs"
#define DAEMON_CONTROL_DIR "/run/cgprocfs"

/* The content classes' key of the mountpoint whose key file is path
 * (classkey.c): read, or made and kept there; none if there is no file
 * and views_exist (a daemon before keys mounted them). */
void classkey_load(const char *path, gboolean views_exist);
/* The key file beside control_socket, once the views end with this
 * daemon: the next views get a key of their own. */
void classkey_forget(const char *control_socket);

/* A procfs of the pid namespace of ns (an fd), the daemon's own, with
 * restrictions (nsprocfs_restrictions: NULL for none): 0 and *ret_fd, or
 * -errno. The options of the procfs at pid's /proc that restrict what a
 * reader sees (hidepid, gid), or NULL (nsprocfs.c). */
int nsprocfs_make(int host_proc_fd, int ns, const char *restrictions, int *ret_fd);
char *nsprocfs_restrictions(int host_proc_fd, pid_t pid);

struct daemon_config {
	const char *mountpoint;    /* absolute, canonical */
	const char *fuse_options;  /* extra -o options for the FUSE mount, or NULL */
	gboolean cpu_quota;        /* --cpu-limit=cpuset+quota */
	enum cpuview_placement cpu_placement; /* --cpu-placement */
	gboolean memory_view;      /* not --no-memory-view */
	gboolean swap_view;        /* not --no-swap-view */
	gboolean loadavg;          /* not --no-loadavg */
	gboolean io_view;          /* not --no-io-view */
	gboolean affinity;         /* not --no-affinity: containers' sched_getaffinity(2) answered */
	gboolean files_only;       /* --files-only: proc/ lists the served files alone */
	struct memo_config smaps;  /* --smaps-max-age, --refresh-budget, ... */
	const char *control_socket; /* --control-socket */
	gboolean replace;          /* --replace: take over from the running daemon */
	int recover_fd;            /* >= 0: take over from the keeper of a dead daemon */
	const char *keeper_path;   /* where this daemon's keeper listens */
	int keeper_wait_s;         /* --keeper-wait */
	const char *keeper_cgroup; /* --keeper-cgroup, or NULL */
	gboolean stop_keeps_views; /* --keep-views-on-stop */
	enum scope_rule scope;     /* --scope */
};

/* Containers: views of other pid namespaces, attached by the OCI hook
 * over a control socket. */
struct session;
struct server;
struct containers_config {
	const char *socket_path;
	int host_proc_fd;  /* the daemon's procfs: where callers are found */
	int sys_cpu_fd;
	struct cpuview *cpuview;
	struct memgroups *memgroups; /* NULL: no memory view */
	struct cputimes *cputimes;
	struct iogroups *iogroups; /* NULL: no I/O view */
	struct smaps *smaps;
	struct pidwatch *watch;
	struct server *server;
	struct session *host; /* the host view's session, for a handover */
	void (*handed_over)(void *data); /* all sessions are a new daemon's */
	void *handed_over_data;
	struct keeper *keeper;
	struct scope *scope; /* where each container's cgroups are recorded */
	struct sysinfo_listener *sysinfo; /* its fds go with a handover; or NULL */
};
struct containers;
/* On listen_fd, the control socket handed over by the daemon taken over
 * from (taken), or, if -1, one made at cfg->socket_path. Nothing is
 * accepted there before containers_ready. */
int containers_start(const struct containers_config *cfg, int listen_fd, struct containers **ret);
/* Serve the container's view that another daemon served until handover h
 * as its session number index: its fuse fd (taken once a session has it) and pid
 * namespace, with the process watches it had (taken); resend: that daemon
 * died. 0 or -errno (logged). */
int containers_resume(struct containers *cs, struct handover *h, unsigned index, gboolean resend);
/* Every view taken over is served: containers may attach, and a
 * handover to a newer daemon may start. */
void containers_ready(struct containers *cs);
/* Give the keeper every container's session, and the control socket. */
void containers_keep_all(struct containers *cs);
/* The control socket's listening socket, or -1. */
int containers_listen_fd(struct containers *cs);
/* The containers' gauges and counters (Prometheus text). */
void containers_render_stats(struct containers *cs, GString *out);
/* Stop taking requests, once the one under way is answered (a handover
 * ends first): TRUE if the views were handed over to a new daemon. */
gboolean containers_stop_accepting(struct containers *cs);
/* Stop taking new containers. TRUE if containers' views are still served:
 * what they use (the CPU view, the memo, the watch) must then stay. */
gboolean containers_stop(struct containers *cs);
/* The views end with this daemon: what was recorded of the containers for
 * the next one (<socket>.scopes) goes. */
void containers_views_end(struct containers *cs);
/* Free what containers_stop left, once it said no view is served. */
void containers_free(struct containers *cs);

/* The control socket's acceptor (acceptor.c): a thread that accepts
 * connections on listen_fd (the caller's), refusing peers that are not
 * root with refusal, and gives each, once its request has come, to
 * handle(data, conn), which returns TRUE to stop accepting (handed over).
 * 0 or -errno. acceptor_stop ends it once the request it is handling is
 * done (a handover under way ends first), and frees a; the socket is
 * left as it is (a new daemon may share it). */
typedef gboolean (*acceptor_handle_fn)(void *data, int conn);
struct acceptor;
int acceptor_start(int listen_fd, const char *refusal, acceptor_handle_fn handle, void *data,
		   struct acceptor **ret);
void acceptor_stop(struct acceptor *a);

/* The seccomp listener (sysinfo.c), at base.seccomp and base.lxc (base:
 * the control socket's path; root only), or on listen_fds (both listening
 * there, handed over). A container's seccomp notification fd comes on the
 * first as an OCI runtime sends it (linux.seccomp.listenerPath: the
 * container's state as JSON, the fds named in its "fds"); an LXC monitor
 * connects to the second (lxc.seccomp.notify.proxy) and sends each
 * notification of its containers there. A thread answers each
 * sysinfo(2) with the caller's view (its meminfo, uptime and loadavg),
 * written into the caller once the kernel confirms the call still
 * waits, and each sched_getaffinity(2) of a caller whose CPU view is in
 * place as affinity.h says (calls: what it needs; its in_place is the
 * listener's); any other call, a 32-bit caller or any failure gets the
 * kernel's own answer. reuse: an answer serves the container's callers
 * of the same pid and cgroup namespaces for up to a second, its uptime
 * moved on (the container rule gives them the same figures). 0 or -errno
 * (listen_fds are taken whatever comes of it). */
struct sysinfo_listener;
struct affinity_config;
struct keeper;
struct inflight;
struct listener_kept {
	struct keeper *keeper; /* holds a copy of each fd and connection (NULL: none) */
	GArray *taken;         /* those of a handover (int), answered from now on (each set to -1) */
	struct inflight *in_hand; /* where the notifications taken are kept until answered (NULL: not kept) */
	struct inflight *dead;    /* a dead daemon's: those it kept are answered first (NULL: none) */
};
int sysinfo_listener_start(const char *base, const int listen_fds[2], const struct affinity_config *calls,
			   gboolean reuse, const struct listener_kept *kept, struct sysinfo_listener **ret);
/* Its two listening sockets (the keeper holds copies, a handover passes
 * them on), or two -1 for NULL. */
const int *sysinfo_listener_fds(struct sysinfo_listener *l);
/* Give the keeper a copy of every notification fd (a new keeper); NULL: nothing. */
void sysinfo_listener_keep_all(struct sysinfo_listener *l);
/* Send every notification fd on conn, in a handover (handover_send_notify),
 * and stop taking or answering anything: a notification received and not
 * answered would wait for ever, the new daemon cannot receive it again. */
int sysinfo_listener_hand_over(struct sysinfo_listener *l, int conn, GError **error);
/* Take and answer nothing more, once the answers under way are sent (a
 * daemon leaving its views to the keeper). NULL: nothing. */
void sysinfo_listener_pause(struct sysinfo_listener *l);
/* The handover failed: take and answer again. NULL: nothing. */
void sysinfo_listener_resume(struct sysinfo_listener *l);
/* At <control socket>.seccomp, for the daemon's host view; NULL (logged) if it cannot listen. */
struct daemon;
struct sysinfo_listener *sysinfo_listener_for(struct daemon *d);
void sysinfo_listener_render_stats(struct sysinfo_listener *l, GString *out);
/* Stop answering (the fds taken close: their containers' sysinfo(2) and
 * sched_getaffinity(2) fail with ENOSYS from then on, unless the keeper
 * holds them) and remove the socket, unless a newer
 * daemon's is there. NULL: nothing. */
void sysinfo_listener_stop(struct sysinfo_listener *l);

/* The background refresher of the smaps_rollup memo. */
struct refresher;
struct refresher *refresher_new(void);
void refresher_start(struct refresher *r, struct smaps *smaps, struct cputimes *cputimes);
void refresher_wake(void *data); /* data: the refresher */
void refresher_stop(struct refresher *r); /* at once; refresher_wake may still be called */
void refresher_free(struct refresher *r); /* stops it, once nothing can wake it */

/* The cgroup hierarchies the CPU view reads, and what keeps them open. */
struct daemon_cgroups {
	struct cgroup_config config;
	GPtrArray *roots; /* strings the config points to */
	GArray *fds;      /* int */
};

void cgroups_discover(struct daemon_cgroups *out);
void cgroups_log(const struct daemon_cgroups *c);
void cgroups_clear(struct daemon_cgroups *c);
/* Move process pid into the cgroup path ("/" the top, as /proc/<pid>/cgroup
 * names cgroups) of every cgroup hierarchy mounted. FALSE with *error set
 * at the first that failed. */
gboolean cgroups_move(pid_t pid, const char *path, GError **error);

/* Mount the view at cfg->mountpoint and serve until SIGINT or SIGTERM,
 * then unmount. Returns the process exit status. Signals must already
 * be blocked in every thread. */
int lifecycle_serve(const struct daemon_config *cfg);

/* cgprocfs --reload PID (daemon/reload.c): the exit status. args: the new
 * daemon's options and mountpoint, or NULL for those of PID. */
int reload_run(pid_t pid, char **args);

/* After taking a view over from a dead daemon, whose process watches died
 * with it (recover.c): watch every live process of the view's procfs
 * (proc_fd) for session s again, and drop the kernel's entries of numbers
 * that name no process now. Only while s is served: dropping an entry
 * waits for the lookups under way in its directory. */
void recover_entries(struct session *s, int proc_fd);

/* The handover, the keeper and the control socket's messages: control.h. */

/* Make dir ready to be mounted on: created if missing, a directory, not a
 * mount point (a stale cgprocfs mount left by a dead daemon is removed);
 * or, by mode, one to take over. Writes its canonical path to *ret_path.
 * FALSE with *error set (why not, for a person to read). */
enum mountpoint_mode {
	MOUNTPOINT_NEW,     /* to mount on */
	MOUNTPOINT_REPLACE, /* served by a running cgprocfs (--replace) */
	MOUNTPOINT_RECOVER, /* held by the keeper of a dead one */
};
gboolean mountpoint_prepare(const char *dir, enum mountpoint_mode mode, char **ret_path, GError **error);
/* dir's canonical path (its parent resolved), or NULL if the parent is
 * missing. */
char *mountpoint_canonical(const char *dir);

/* The containers' cgroups (daemon/scopes.c), in a file at path for the
 * daemon after this one: recorded from a container's init at its attach;
 * forgotten with its pid namespace's last view; the whole record written
 * again (s NULL: nothing; path NULL: no file, the views having ended). */
void scopes_attached(struct scope *s, const char *path, int proc_fd, pid_t init, uint64_t ns);
void scopes_ended(struct scope *s, const char *path, uint64_t ns);
void scopes_save(struct scope *s, const char *path);
/* What the daemon before this one recorded ("" if nothing): for
 * scope_add_from, as each view taken over is resumed. */
char *scopes_inherited(const char *path);
