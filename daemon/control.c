/* The control protocol (control.h): its words, one encoder, one decoder,
 * and the sockets it travels on. */
#include "control.h"

#include "cleanup.h"

#include <errno.h>
#include <linux/kcmp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* log.h's CGPROCFS_ERROR: the same quark, named here, because the OCI hook
 * links this file without log.c (and its libfuse). */
#define CONTROL_ERROR_DOMAIN g_quark_from_static_string("cgprocfs-error-quark")

/* Every word of the protocol: how many numbers and fds it takes. */
static const struct word_rule {
	const char *text;
	unsigned n_args;
	unsigned min_fds, max_fds;
	gboolean reason; /* the rest of the message is a text */
} rules[] = {
	[CONTROL_ATTACH] = { "attach", 1, 0, 0, FALSE },
	[CONTROL_HANDOVER] = { "handover", 0, 0, 0, FALSE },
	[CONTROL_OK] = { "ok", 0, 0, 1, FALSE },
	[CONTROL_ERROR] = { "error:", 0, 0, 0, TRUE },
	[CONTROL_SESSION] = { "session", 1, 1, 2, FALSE },
	[CONTROL_WATCH] = { "watch", 2, 1, 1, FALSE },
	[CONTROL_END] = { "end", 0, 0, 0, FALSE },
	[CONTROL_SERVING] = { "serving", 0, 0, 0, FALSE },
	[CONTROL_KEEP] = { "keep", 2, 1, 2, FALSE },
	[CONTROL_DROP] = { "drop", 1, 0, 0, FALSE },
	[CONTROL_QUIT] = { "quit", 0, 0, 0, FALSE },
	[CONTROL_LISTENER] = { "listener", 0, 1, 3, FALSE },
	[CONTROL_PUBLISH] = { "publish", 0, 0, 0, FALSE },
	[CONTROL_LEAVE] = { "leave", 0, 0, 0, FALSE },
	[CONTROL_NOTIFY] = { "notify", 0, 1, 1, FALSE },
	[CONTROL_INFLIGHT] = { "inflight", 0, 1, 1, FALSE },
};
G_STATIC_ASSERT(G_N_ELEMENTS(rules) == CONTROL_LAST_WORD + 1);

/* Room for more fds than any word takes: more than that is a message cut
 * off (MSG_CTRUNC), rejected whole. */
#define FDMSG_CMSG_FDS 8

/* Set *error to "<what>: <strerror>", code the errno; returns negative_errno. */
static int fail(GError **error, int negative_errno, const char *what)
{
	g_set_error(error, CONTROL_ERROR_DOMAIN, -negative_errno, "%s: %s", what, g_strerror(-negative_errno));
	return negative_errno;
}

const char *control_word_text(enum control_word word)
{
	return (unsigned)word < G_N_ELEMENTS(rules) ? rules[word].text : "(no word)";
}

static void close_fds(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

void control_close_fds(struct control_msg *msg)
{
	close_fds(msg->fds, MIN(msg->n_fds, CONTROL_MAX_FDS));
	msg->n_fds = 0;
}

gboolean control_same_file(int a, int b)
{
	const pid_t self = getpid();
	return syscall(SYS_kcmp, self, self, KCMP_FILE, a, b) == 0;
}

/* ------------------------------------------------------ the lower layer -- */

ssize_t fdmsg_sendv(int sock, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds)
{
	char control[CMSG_SPACE(sizeof(int) * FDMSG_CMSG_FDS)] = { 0 };
	struct msghdr msg = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n_iov };

	if (n_fds > FDMSG_CMSG_FDS)
		return -EINVAL;
	if (n_fds > 0) {
		msg.msg_control = control;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	return n < 0 ? -errno : n;
}

pid_t fdmsg_fork(int *ret_sock)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int err = errno;
		close(sv[0]);
		close(sv[1]);
		return -err;
	}
	close(sv[pid == 0 ? 0 : 1]);
	*ret_sock = sv[pid == 0 ? 1 : 0];
	return pid;
}

ssize_t fdmsg_send_bytes(int sock, const void *data, size_t len, const int *fds, size_t n_fds)
{
	const struct iovec iov = { (void *)data, len };
	return fdmsg_sendv(sock, &iov, 1, fds, n_fds);
}

ssize_t fdmsg_send(int sock, const char *text, const int *fds, size_t n_fds)
{
	return fdmsg_send_bytes(sock, text, strlen(text), fds, n_fds);
}

/* The fds that came with msg, into fds (room for *n_fds; all of them
 * closed if they do not fit): FALSE if some did not. */
static gboolean take_fds(struct msghdr *msg, int *fds, size_t *n_fds)
{
	int got[FDMSG_CMSG_FDS];
	size_t n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && n < G_N_ELEMENTS(got); i++)
			memcpy(&got[n++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	if (n > *n_fds || (msg->msg_flags & MSG_CTRUNC)) {
		close_fds(got, n);
		*n_fds = 0;
		return FALSE;
	}
	memcpy(fds, got, n * sizeof(int));
	*n_fds = n;
	return TRUE;
}

ssize_t fdmsg_receive(int sock, char *buf, size_t size, int *fds, size_t *n_fds)
{
	char control[CMSG_SPACE(sizeof(int) * FDMSG_CMSG_FDS)];
	struct iovec iov = { buf, size - 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
			      .msg_controllen = sizeof(control) };
	buf[0] = '\0';
	ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	if (!take_fds(&msg, fds, n_fds))
		return -ETOOMANYREFS;
	buf[n] = '\0';
	if (msg.msg_flags & MSG_TRUNC) {
		close_fds(fds, *n_fds);
		*n_fds = 0;
		return -EMSGSIZE;
	}
	return n;
}

/* ----------------------------------------------------------- messages -- */

static int encode(const struct control_msg *m, char *buf, size_t size, GError **error)
{
	if ((unsigned)m->word >= G_N_ELEMENTS(rules))
		return fail(error, -EINVAL, "cannot send a message of no known word");
	const struct word_rule *rule = &rules[m->word];
	if (m->n_fds < rule->min_fds || m->n_fds > rule->max_fds) {
		g_set_error(error, CONTROL_ERROR_DOMAIN, EINVAL, "cannot send \"%s\" with %u fds", rule->text, m->n_fds);
		return -EINVAL;
	}
	g_autoptr(GString) text = g_string_new(rule->text);
	for (unsigned i = 0; i < rule->n_args; i++) {
		if (m->args[i] > G_MAXINT)
			return fail(error, -ERANGE, "cannot send a number that large");
		g_string_append_printf(text, " %u", m->args[i]);
	}
	if (rule->reason) /* cut to what fits: a reason is never lost whole */
		g_string_append_printf(text, " %.*s", (int)MAX((gssize)size - (gssize)text->len - 2, 0), m->reason);
	if (text->len >= size)
		return fail(error, -EMSGSIZE, "cannot send a message that long");
	memcpy(buf, text->str, text->len + 1);
	return 0;
}

int control_send(int sock, const struct control_msg *msg, GError **error)
{
	char text[CONTROL_MAX_TEXT];

	int r = encode(msg, text, sizeof(text), error);
	if (r < 0)
		return r;
	ssize_t n = fdmsg_send(sock, text, msg->fds, msg->n_fds);
	if (n < 0) {
		g_set_error(error, CONTROL_ERROR_DOMAIN, (int)-n, "cannot send \"%s\": %s", rules[msg->word].text,
			    g_strerror((int)-n));
		return (int)n;
	}
	return 0;
}

int control_send_word(int sock, enum control_word word, GError **error)
{
	const struct control_msg m = { .word = word };
	return control_send(sock, &m, error);
}

int control_send_error(int sock, GError **error, const char *fmt, ...)
{
	struct control_msg m = { .word = CONTROL_ERROR };
	va_list ap;

	va_start(ap, fmt);
	g_vsnprintf(m.reason, sizeof(m.reason), fmt, ap);
	va_end(ap);
	return control_send(sock, &m, error);
}

G_GNUC_PRINTF(2, 3)
static int reject(GError **error, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *text = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(error, CONTROL_ERROR_DOMAIN, EPROTO, "a message rejected: %s", text);
	return -EPROTO;
}

static int word_of(const char *text, enum control_word *ret)
{
	for (unsigned w = 0; w < G_N_ELEMENTS(rules); w++) {
		if (strcmp(text, rules[w].text) == 0) {
			*ret = (enum control_word)w;
			return 0;
		}
	}
	return -ENOENT;
}

int control_decode(const char *text, size_t len, unsigned n_fds, struct control_msg *ret, GError **error)
{
	struct control_msg m = { .n_fds = 0 };

	if (len == 0 || len >= CONTROL_MAX_TEXT)
		return reject(error, "%zu bytes long", len);
	if (memchr(text, '\0', len))
		return reject(error, "a NUL byte in its text");
	g_autofree char *copy = g_strndup(text, len);
	char *rest = strchr(copy, ' ');
	if (rest)
		*rest++ = '\0';
	if (word_of(copy, &m.word) < 0) {
		g_autofree char *shown = g_strescape(copy, NULL);
		return reject(error, "unknown word \"%s\"", shown);
	}
	const struct word_rule *rule = &rules[m.word];
	if (n_fds < rule->min_fds || n_fds > rule->max_fds)
		return reject(error, "\"%s\" with %u fds", rule->text, n_fds);
	if (rule->reason) {
		g_strlcpy(m.reason, rest ? rest : "", sizeof(m.reason));
		*ret = m;
		return 0;
	}
	g_auto(GStrv) args = rest ? g_strsplit(rest, " ", -1) : g_new0(char *, 1);
	if (g_strv_length(args) != rule->n_args)
		return reject(error, "\"%s\" with %u numbers, not %u", rule->text, g_strv_length(args), rule->n_args);
	for (unsigned i = 0; i < rule->n_args; i++) {
		guint64 value;
		if (!g_ascii_string_to_unsigned(args[i], 10, 0, G_MAXINT, &value, NULL))
			return reject(error, "\"%s\" with a bad number", rule->text);
		m.args[i] = (unsigned)value;
	}
	*ret = m;
	return 0;
}

int control_receive(int sock, unsigned expected, struct control_msg *ret, GError **error)
{
	char text[CONTROL_MAX_TEXT];
	int fds[CONTROL_MAX_FDS];
	size_t n_fds = G_N_ELEMENTS(fds);
	struct control_msg m;

	ssize_t n = fdmsg_receive(sock, text, sizeof(text), fds, &n_fds);
	if (n == -ETOOMANYREFS)
		return reject(error, "more than %d fds", CONTROL_MAX_FDS);
	if (n == -EMSGSIZE)
		return reject(error, "longer than %d bytes", CONTROL_MAX_TEXT - 1);
	if (n < 0)
		return fail(error, (int)n, "cannot receive a message");
	if (n == 0) {
		close_fds(fds, n_fds);
		return fail(error, -EPIPE, "the peer is gone");
	}
	int r = control_decode(text, (size_t)n, (unsigned)n_fds, &m, error);
	if (r == 0 && !(expected & CONTROL_WORD(m.word)))
		r = reject(error, "\"%s\" out of place", rules[m.word].text);
	if (r < 0) {
		close_fds(fds, n_fds);
		return r;
	}
	memcpy(m.fds, fds, n_fds * sizeof(int));
	m.n_fds = (unsigned)n_fds;
	*ret = m;
	return 0;
}

/* ------------------------------------------------------------ sockets -- */

/* path as a socket address. FALSE if it does not fit. */
static gboolean socket_address(const char *path, struct sockaddr_un *ret)
{
	*ret = (struct sockaddr_un){ .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(ret->sun_path))
		return FALSE;
	strcpy(ret->sun_path, path);
	return TRUE;
}

int control_listen(const char *path, int backlog)
{
	return control_listen_type(path, SOCK_SEQPACKET, backlog);
}

int control_listen_type(const char *path, int type, int backlog)
{
	struct sockaddr_un addr;
	g_autofree char *dir = g_path_get_dirname(path);

	if (!socket_address(path, &addr))
		return -ENAMETOOLONG;
	if (g_mkdir_with_parents(dir, 0700) < 0)
		return -errno;
	_cleanup_close_ int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || chmod(path, 0600) < 0 || listen(fd, backlog) < 0)
		return -errno;
	return steal_fd(&fd);
}

int control_accept(int listen_fd, const char *refusal)
{
	struct ucred peer;
	socklen_t len = sizeof(peer);

	_cleanup_close_ int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (conn < 0)
		return -errno;
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0)
		return -ECONNABORTED;
	if (peer.uid != 0) {
		(void)!control_send_error(conn, NULL, "%s", refusal);
		return -EPERM;
	}
	return steal_fd(&conn);
}

int control_connect(const char *path, int timeout_s, GError **error)
{
	struct sockaddr_un addr;
	struct timeval timeout = { .tv_sec = timeout_s };
	g_autofree char *what = g_strdup_printf("cannot reach the daemon at %s", path);

	if (!socket_address(path, &addr))
		return fail(error, -ENAMETOOLONG, what);
	_cleanup_close_ int conn = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (conn < 0 || connect(conn, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    (timeout_s > 0 && setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) < 0))
		return fail(error, -errno, what);
	return steal_fd(&conn);
}

int control_ask_handover(const char *path, GError **error)
{
	struct control_msg reply;

	_cleanup_close_ int conn = control_connect(path, CONTROL_TIMEOUT_S, error);
	if (conn < 0)
		return conn;
	int r = control_send_word(conn, CONTROL_HANDOVER, error);
	if (r == 0)
		r = control_receive(conn, CONTROL_WORD(CONTROL_OK) | CONTROL_WORD(CONTROL_ERROR), &reply, error);
	if (r < 0)
		return r;
	if (reply.word == CONTROL_OK && reply.n_fds == 0)
		return steal_fd(&conn);
	control_close_fds(&reply);
	g_set_error(error, CONTROL_ERROR_DOMAIN, EPROTO, "refused: %s",
		    reply.word == CONTROL_ERROR ? reply.reason : "an fd with ok");
	return -EPROTO;
}

char *control_socket_of(const char *mountpoint, GError **error)
{
	g_autofree char *path = g_build_filename(mountpoint, ".cgprocfs", "control", NULL);
	g_autofree char *text = NULL;

	if (!g_file_get_contents(path, &text, NULL, error))
		return NULL;
	if (!*g_strstrip(text)) {
		g_set_error(error, CONTROL_ERROR_DOMAIN, ENOENT, "%s names no control socket", path);
		return NULL;
	}
	return g_steal_pointer(&text);
}
