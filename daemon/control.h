/* The control protocol: every message between the OCI hook, the daemon, a
 * new daemon taking over (--replace) and the keeper, on SEQPACKET unix
 * sockets, one message a packet, file descriptors passed with SCM_RIGHTS.
 *
 * A message is a word, up to CONTROL_MAX_ARGS unsigned numbers, up to
 * CONTROL_MAX_FDS fds, and, for CONTROL_ERROR only, a reason. On the wire
 * it is text: "attach 1234", "session 31" (+ fds), "error: no such
 * process". The table in control.c says, once, which word takes how many
 * numbers and fds; control_send and control_receive enforce it.
 *
 *   hook -> daemon        attach <pid>            ok + the view's mount | error
 *   new daemon -> daemon  handover                ok, then the sessions:
 *     or -> keeper          session <minor> + fuse fd [+ pid ns fd]
 *                           watch <session> <pid> + pidfd   (a daemon's only)
 *                           notify + a container's seccomp notification fd
 *                           listener + the control socket's listening fd
 *                             [+ the seccomp listeners' two (daemon/sysinfo.c)]
 *                           end            -> the new daemon: serving
 *   daemon -> keeper      keep <id> <minor> + fuse fd [+ pid ns fd]
 *                         listener + fd, notify + fd, drop <id>, quit, leave
 *                         publish                 ok | error
 *
 * This file and control.c are all the OCI hook links of the daemon: glib,
 * no libfuse. */
#pragma once

#include <glib.h>
#include <sys/types.h>
#include <sys/uio.h>

#define CONTROL_MAX_ARGS 2
#define CONTROL_MAX_FDS 3
/* The longest message on the wire, and the longest reason of an error. */
#define CONTROL_MAX_TEXT 256
/* How long one side waits for the other's next message in a handover. */
#define CONTROL_TIMEOUT_S 60

enum control_word {
	CONTROL_ATTACH,   /* hook: attach <pid> */
	CONTROL_HANDOVER, /* new daemon: handover */
	CONTROL_OK,       /* ok, + the view's mount after an attach */
	CONTROL_ERROR,    /* error: <reason> */
	CONTROL_SESSION,  /* session <proto minor> + fuse fd [+ pid ns fd] */
	CONTROL_WATCH,    /* watch <session index> <pid> + pidfd */
	CONTROL_END,      /* every session and watch was sent */
	CONTROL_SERVING,  /* the new daemon serves them all */
	CONTROL_KEEP,     /* to the keeper: keep <id> <proto minor> + fuse fd [+ pid ns fd] */
	CONTROL_DROP,     /* to the keeper: drop <id> */
	CONTROL_QUIT,     /* to the keeper: let go of everything */
	CONTROL_LISTENER, /* the control socket's listening socket, + its fd [+ the seccomp listeners' two] */
	CONTROL_PUBLISH,  /* to the keeper: listen at your path now; ok | error */
	CONTROL_LEAVE,    /* to the keeper: the views are another's; go, leaving the path */
	CONTROL_NOTIFY,   /* a container's seccomp notification fd (daemon/sysinfo.c), + the fd */
	CONTROL_INFLIGHT, /* the daemon's requests in hand (daemon/inflight.h), + their memfd */
};
#define CONTROL_LAST_WORD CONTROL_INFLIGHT

struct control_msg {
	enum control_word word;
	unsigned args[CONTROL_MAX_ARGS]; /* as many as the word takes */
	int fds[CONTROL_MAX_FDS];        /* n_fds of them; received ones are the receiver's */
	unsigned n_fds;
	char reason[CONTROL_MAX_TEXT]; /* CONTROL_ERROR's */
};

/* Send msg on sock; its fds stay the caller's. 0, or -errno with *error
 * (-EINVAL: a message the table does not allow). */
int control_send(int sock, const struct control_msg *msg, GError **error);
/* Shorthands: a word with no fds, or an error with a printf reason. */
int control_send_word(int sock, enum control_word word, GError **error);
G_GNUC_PRINTF(3, 4)
int control_send_error(int sock, GError **error, const char *fmt, ...);
/* The words a receiver takes: CONTROL_WORD(CONTROL_OK) | ... */
#define CONTROL_WORD(word) (1u << (word))
#define CONTROL_ANY_WORD (~0u)
/* Receive one message, one of the words of expected: 0, or -errno with
 * *error: -EPIPE when the peer is gone, -EPROTO for a message the table
 * does not allow (too long, an unknown word, wrong numbers or fds) or a
 * word not expected; its fds are then closed. *ret is left untouched on
 * failure. */
int control_receive(int sock, unsigned expected, struct control_msg *ret, GError **error);
/* Decode text (len bytes, not NUL-terminated), which came with n_fds fds,
 * into *ret (fds not set): the pure half of control_receive. */
int control_decode(const char *text, size_t len, unsigned n_fds, struct control_msg *ret, GError **error);
/* The word as it is on the wire. */
const char *control_word_text(enum control_word word);
/* Close the fds of msg, and forget them. */
void control_close_fds(struct control_msg *msg);
/* Whether fds a and b of this process are one open file (a file passed
 * twice comes as two fds): FALSE where the kernel cannot tell (no kcmp). */
gboolean control_same_file(int a, int b);

/* A listening socket at path (its directory made, 0600, any old one
 * replaced): the fd, or -errno. */
int control_listen(const char *path, int backlog);
/* The same with a socket of type (SOCK_STREAM, SOCK_SEQPACKET). */
int control_listen_type(const char *path, int type, int backlog);
/* The next connection on listen_fd: the connection, or -errno. A peer
 * that is not root is answered "error: <refusal>" and -EPERM returned. */
int control_accept(int listen_fd, const char *refusal);
/* Connect to path; with timeout_s > 0, receiving waits at most that long.
 * The connection, or -errno with *error. */
int control_connect(const char *path, int timeout_s, GError **error);
/* Connect to path, say "handover" and read the answer, which must be ok:
 * the connection, or -errno with *error (-EPROTO: another answer). */
int control_ask_handover(const char *path, GError **error);
/* The control socket of the daemon serving mountpoint, as its
 * .cgprocfs/control says; NULL with *error if it says nothing. */
char *control_socket_of(const char *mountpoint, GError **error);

/* The lower layer: a message of len bytes (a text, or n_iov pieces) with up to 8 fds.
 * The senders are async-signal-safe (for a forked child); all return the
 * length or -errno. receive NUL-terminates buf and sets *n_fds to how many
 * fds it stored; -EMSGSIZE for a message longer than buf, -ETOOMANYREFS
 * for more fds than *n_fds (all closed). */
/* Fork a child joined to this process by a SEQPACKET socket: the
 * child's pid in the parent, 0 in the child, or -errno; *ret_sock is this
 * side's end of the socket (the other side's is closed here). */
pid_t fdmsg_fork(int *ret_sock);
ssize_t fdmsg_sendv(int sock, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds);
ssize_t fdmsg_send_bytes(int sock, const void *data, size_t len, const int *fds, size_t n_fds);
ssize_t fdmsg_send(int sock, const char *text, const int *fds, size_t n_fds);
ssize_t fdmsg_receive(int sock, char *buf, size_t size, int *fds, size_t *n_fds);

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
	int listener;      /* the control socket's listening socket; -1 if none came (or once taken) */
	int seccomp_listeners[2]; /* the seccomp listeners' (daemon/sysinfo.c); the same */
	GArray *notify;    /* int: containers' seccomp notification fds; -1 once taken */
	int inflight;      /* a keeper's: its dead daemon's requests in hand; -1 if none came (or once taken) */
};
/* Take the sessions on conn, a daemon's or a keeper's that answered "ok"
 * to "handover" (control_ask_handover, keeper_connect). 0, or -errno with
 * *error (-EPROTO or -EINVAL: the other side refused, or made no sense,
 * and serves on); the old daemon serves on until handover_done. Takes
 * conn. */
int handover_take(int conn, struct handover *ret, GError **error);
/* Tell the old daemon that its sessions are served here: it stops. */
void handover_done(struct handover *h);
/* Close what was not taken. */
void handover_clear(struct handover *h);
/* The giving side, after "ok": each session (sessions[0] the host's, with
 * ns_fd -1), then optional watches (handover_send_watch), then
 * then containers' seccomp notification fds (handover_send_notify), then
 * the control socket's listening socket (handover_send_listener), then
 * handover_finish, which says "end" and waits for "serving". 0 once the
 * new daemon serves them all, or -errno with *error. */
int handover_send_session(int conn, unsigned proto_minor, int fuse_fd, int ns_fd, GError **error);
int handover_send_watch(int conn, unsigned session, pid_t pid, int pidfd, GError **error);
int handover_send_listener(int conn, int listen_fd, const int seccomp_fds[2], GError **error);
int handover_send_notify(int conn, int notify_fd, GError **error);
int handover_send_inflight(int conn, int inflight_fd, GError **error);
int handover_finish(int conn, GError **error);
/* After a handover on conn failed: SIGKILL the new daemon if it is still
 * connected, and wait until it is gone, so that nothing it took up is
 * served by it while this side (or the next taker) serves it. */
void handover_stop_taker(int conn);

/* The keeper (keeper.c): a process holding a copy of every session's fd
 * and of the control socket's listening socket, so that a new daemon can
 * take the views over if this one dies. It runs this executable with
 * KEEPER_ARG (main calls keeper_run); once published, it listens at path
 * for that new daemon, and waits wait_s for one; moved to the cgroup path
 * of every hierarchy if cgroup is not NULL. The fds given to it stay the
 * caller's. NULL is a valid keeper that keeps nothing. */
#define KEEPER_ARG "--be-keeper"
struct keeper_config {
	const char *path;       /* where it listens once published */
	const char *mountpoint; /* its last argument, for ps */
	int wait_s;
	const char *cgroup;     /* or NULL */
};
struct keeper;
/* Never NULL: one whose process could not be started (said in the log)
 * starts it with keeper_needs_everything. */
struct keeper *keeper_start(const struct keeper_config *cfg);
/* Session id 0 is the host view's; a container's comes with its pid
 * namespace (ns_fd), the host's with -1; proto_minor: the FUSE protocol
 * minor version the kernel spoke to it. Keeping an id again replaces it. */
void keeper_keep(struct keeper *k, unsigned id, unsigned proto_minor, int fuse_fd, int ns_fd);
void keeper_keep_listener(struct keeper *k, int listen_fd, const int seccomp_fds[2]);
/* A container's seccomp notification fd: the keeper holds a copy (never
 * reading from it) until every process of its filter is gone. */
void keeper_keep_notify(struct keeper *k, int notify_fd);
/* The daemon's requests in hand (inflight.h): the keeper holds their memfd
 * (the last one given), for the next daemon if this one dies. */
void keeper_keep_inflight(struct keeper *k, int inflight_fd);
void keeper_drop(struct keeper *k, unsigned id);
/* Have the keeper listen at its path (again), where a new daemon finds
 * it, once it holds every view (it has read what was sent before): 0, or
 * -errno with *error (a keeper that did not answer is killed, and another
 * is started by keeper_needs_everything). */
int keeper_publish(struct keeper *k, GError **error);
/* From TRUE to FALSE, a handover is under way: no keeper is started (one
 * published meanwhile could take the path from the new daemon's). */
void keeper_hold(struct keeper *k, gboolean holding);
/* TRUE if the keeper must be given every view and published: another one
 * was started as it was gone (or never started), or its last publish
 * failed. FALSE while a handover is under way (keeper_hold) or once it
 * was let go. */
gboolean keeper_needs_everything(struct keeper *k);
/* A clean stop: the keeper lets go of everything, removes its path and
 * exits; k's keep and drop do nothing from then on. */
void keeper_quit(struct keeper *k);
/* Handed over: the same, but the path (the new daemon's keeper's now)
 * stays. */
void keeper_leave(struct keeper *k);
/* Free k (quitting first), once nothing can call keeper_keep or keeper_drop. */
void keeper_free(struct keeper *k);
/* A connection to the keeper at path whose daemon died, ready to hand its
 * sessions over (handover_take), or -errno (none there, or its daemon
 * lives: -EPROTO). */
int keeper_connect(const char *path);
/* The keeper process: main() with argv[1] KEEPER_ARG. The exit status. */
int keeper_run(int argc, char **argv);
