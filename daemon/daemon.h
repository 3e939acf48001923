/* The daemon: options, checks, mount, threads, signals, teardown. */
#pragma once

#include "cgroup.h"
#include "cpuview.h"
#include "pidwatch.h"
#include "smaps.h"

#include <glib.h>

#define DAEMON_DEFAULT_MOUNTPOINT "/var/lib/cgprocfs"
#define DAEMON_CONTROL_DIR "/run/cgprocfs"

struct daemon_config {
	const char *mountpoint;    /* absolute, canonical */
	const char *fuse_options;  /* extra -o options for the FUSE mount, or NULL */
	gboolean debug;
	gboolean cpu_quota;        /* --cpu-limit=cpuset+quota */
	struct memo_config smaps;  /* --smaps-max-age, --refresh-budget, ... */
	const char *control_socket; /* --control-socket */
	gboolean replace;          /* --replace: take over from the running daemon */
};

/* Containers: views of other pid namespaces, attached by the OCI hook
 * over a control socket. */
struct containers_config {
	const char *socket_path;
	int host_proc_fd;  /* the daemon's procfs: where callers are found */
	int sys_cpu_fd;
	struct cpuview *cpuview;
	struct smaps *smaps;
	struct pidwatch *watch;
	struct ops_state *host; /* the host view's session, for a handover */
	void (*handed_over)(void *data); /* all sessions are a new daemon's */
	void *handed_over_data;
};
struct containers;
struct ops_state;
int containers_start(const struct containers_config *cfg, struct containers **ret);
/* Serve a container's view that another daemon served until a handover:
 * fuse_fd (taken on success) of the pid namespace of ns_fd. *ret_owner:
 * the session's state, the owner of its process watches. 0 or -errno. */
int containers_resume(struct containers *cs, int fuse_fd, int ns_fd, unsigned proto_minor,
		      struct ops_state **ret_owner);
/* The containers' gauges and counters (Prometheus text). */
void containers_render_stats(struct containers *cs, GString *out);
/* Stop taking new containers. TRUE if containers' views are still served:
 * what they use (the CPU view, the memo, the watch) must then stay. */
gboolean containers_stop(struct containers *cs);

/* The background refresher of the smaps_rollup memo. */
struct refresher;
struct refresher *refresher_new(void);
void refresher_start(struct refresher *r, struct smaps *smaps);
void refresher_wake(void *data); /* data: the refresher */
void refresher_free(struct refresher *r); /* stops it at once */

/* The cgroup hierarchies the CPU view reads, and what keeps them open. */
struct daemon_cgroups {
	struct cgroup_config config;
	GPtrArray *roots; /* strings the config points to */
	GArray *fds;      /* int */
};

void cgroups_discover(struct daemon_cgroups *out);
void cgroups_log(const struct daemon_cgroups *c);
void cgroups_clear(struct daemon_cgroups *c);

/* Mount the view at cfg->mountpoint and serve until SIGINT or SIGTERM,
 * then unmount. Returns the process exit status. Signals must already
 * be blocked in every thread. */
int lifecycle_serve(const struct daemon_config *cfg);

/* Serving FUSE sessions (serve.c). serve_init once, before any session;
 * session_serve serves se with a pool of worker threads until the mount
 * goes away or serve_drain: 0 or -errno. serve_drain stops every session's
 * workers between requests, so that another daemon holding the same
 * /dev/fuse fds answers the rest; TRUE once no worker is left. */
struct fuse_session;
void serve_init(void);
int session_serve(struct fuse_session *se);
gboolean serve_drain(void);
/* cgprocfs_requests_total, by operation (Prometheus text). */
void serve_render_stats(GString *out);
/* Take up se, on the /dev/fuse fd of a session another daemon served until
 * now: the kernel's INIT was answered by that daemon, with protocol minor
 * version proto_minor (struct ops_state.proto_minor there). */
void session_resume(struct fuse_session *se, unsigned proto_minor);

/* Taking over from the daemon serving a mountpoint (handover.c). */
struct handover_session {
	int fuse_fd; /* its /dev/fuse fd; -1 once taken */
	int ns_fd;   /* a container's: its pid namespace; -1 for the host's */
	unsigned proto_minor;
};
struct handover_watch {
	unsigned session; /* index in sessions */
	pid_t pid;
	int pidfd; /* -1 once taken */
};
struct handover {
	int conn;          /* to the old daemon */
	GArray *sessions;  /* struct handover_session, the host's first */
	GArray *watches;   /* struct handover_watch */
};
/* Ask the daemon serving mountpoint for its sessions. 0, or -errno with
 * *ret_why; the old daemon serves on until handover_done. */
int handover_take(const char *mountpoint, struct handover *ret, const char **ret_why);
/* Tell the old daemon that its sessions are served here: it stops. */
void handover_done(struct handover *h);
/* Close what was not taken. */
void handover_clear(struct handover *h);

/* Messages with up to FDMSG_MAX_FDS file descriptors on unix sockets
 * (fdmsg.c). send is async-signal-safe; receive closes fds beyond *n_fds,
 * sets *n_fds to how many it stored, and NUL-terminates buf. */
#define FDMSG_MAX_FDS 4
ssize_t fdmsg_send(int sock, const char *text, const int *fds, size_t n_fds);
ssize_t fdmsg_receive(int sock, char *buf, size_t size, int *fds, size_t *n_fds);

/* Make dir ready to be mounted on: created if missing, a directory, not a
 * mount point (a stale cgprocfs mount left by a dead daemon is removed);
 * with replace, served by a running cgprocfs instead. Writes its canonical
 * path to *ret_path. FALSE after printing why not. */
gboolean mountpoint_prepare(const char *dir, gboolean replace, char **ret_path);
