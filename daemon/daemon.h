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
	gboolean cpu_quota;        /* --cpu-limit=cpuset+quota */
	struct memo_config smaps;  /* --smaps-max-age, --refresh-budget, ... */
	const char *control_socket; /* --control-socket */
	gboolean replace;          /* --replace: take over from the running daemon */
	int recover_fd;            /* >= 0: take over from the keeper of a dead daemon */
	const char *keeper_path;   /* where this daemon's keeper listens */
	int keeper_wait_s;         /* --keeper-wait */
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
	struct smaps *smaps;
	struct pidwatch *watch;
	struct server *server;
	struct session *host; /* the host view's session, for a handover */
	void (*handed_over)(void *data); /* all sessions are a new daemon's */
	void *handed_over_data;
	struct keeper *keeper;
};
struct containers;
int containers_start(const struct containers_config *cfg, struct containers **ret);
/* Serve a container's view that another daemon served until a handover:
 * fuse_fd (taken on success) of the pid namespace of ns_fd, with the
 * process watches it had (a GArray of struct session_watch, taken; or
 * NULL); resend: that daemon died. 0 or -errno (logged). */
int containers_resume(struct containers *cs, int fuse_fd, int ns_fd, unsigned proto_minor, gboolean resend,
		      GArray *watches);
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

/* After taking a view over from a dead daemon, whose process watches died
 * with it (recover.c): watch every live process of the view's procfs
 * (proc_fd) for session s again, and drop the kernel's entries of numbers
 * that name no process now. Only while s is served: dropping an entry
 * waits for the lookups under way in its directory. */
void recover_entries(struct session *s, int proc_fd);

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
/* Ask for the sessions: on conn (a keeper's, see keeper_connect), or, if
 * conn is -1, the daemon serving mountpoint. 0, or -errno with *ret_why;
 * the old daemon serves on until handover_done. Takes conn. */
int handover_take(const char *mountpoint, int conn, struct handover *ret, const char **ret_why);
/* Tell the old daemon that its sessions are served here: it stops. */
void handover_done(struct handover *h);
/* Close what was not taken. */
void handover_clear(struct handover *h);
/* The giving side, after "ok": each session (sessions[0] the host's, with
 * ns_fd -1), then optional "watch <session> <pid>" messages, then
 * handover_finish, which says "end" and waits for "serving": TRUE once the
 * new daemon serves them all. */
gboolean handover_send_session(int conn, unsigned proto_minor, int fuse_fd, int ns_fd);
gboolean handover_finish(int conn);

/* The keeper (keeper.c): a process holding a copy of every session's fd,
 * so that a new daemon can take the views over if this one dies. Started
 * before any thread (it forks); listens on path for that new daemon, and
 * waits wait_s for one. NULL is a valid keeper that keeps nothing. */
struct keeper;
int keeper_start(const char *path, int wait_s, struct keeper **ret);
/* Session id 0 is the host view's; a container's comes with its pid
 * namespace (ns_fd), the host's with -1; proto_minor: the FUSE protocol
 * minor version the kernel spoke (the same for all). The fds stay the
 * caller's. */
void keeper_keep(struct keeper *k, unsigned id, unsigned proto_minor, int fuse_fd, int ns_fd);
void keeper_drop(struct keeper *k, unsigned id);
/* A clean stop: the keeper lets go of everything and exits. */
void keeper_quit(struct keeper *k);
/* A connection to the keeper at path whose daemon died, ready to hand its
 * sessions over (handover_take), or -1 (none there, or its daemon lives). */
int keeper_connect(const char *path);

/* Messages with up to FDMSG_MAX_FDS file descriptors on unix sockets
 * (fdmsg.c). send is async-signal-safe; receive closes fds beyond *n_fds,
 * sets *n_fds to how many it stored, and NUL-terminates buf. */
#define FDMSG_MAX_FDS 4
ssize_t fdmsg_send(int sock, const char *text, const int *fds, size_t n_fds);
ssize_t fdmsg_receive(int sock, char *buf, size_t size, int *fds, size_t *n_fds);
/* A listening SEQPACKET socket at path (its directory made, 0600, any
 * old one replaced): the fd, or -errno. */
int fdmsg_listen(const char *path, int backlog);
/* Connect to path, send request, and read the first answer into reply
 * (waiting at most timeout_s): the connection, or -errno. */
int fdmsg_ask(const char *path, int timeout_s, const char *request, char *reply, size_t size);
/* How long one daemon waits for another's next message in a handover. */
#define HANDOVER_TIMEOUT_S 60

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
