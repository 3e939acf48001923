/* Messages with file descriptors on unix sockets (SCM_RIGHTS). */
#include "daemon.h"

#include "cleanup.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

ssize_t fdmsg_send(int sock, const char *text, const int *fds, size_t n_fds)
{
	char control[CMSG_SPACE(sizeof(int) * FDMSG_MAX_FDS)] = { 0 };
	struct iovec iov = { (void *)text, strlen(text) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (n_fds > FDMSG_MAX_FDS)
		return -1;
	if (n_fds > 0) {
		msg.msg_control = control;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL);
}

ssize_t fdmsg_receive(int sock, char *buf, size_t size, int *fds, size_t *n_fds)
{
	char control[CMSG_SPACE(sizeof(int) * FDMSG_MAX_FDS)];
	struct iovec iov = { buf, size - 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
			      .msg_controllen = sizeof(control) };
	ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	size_t got = 0;

	for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < *n_fds)
				fds[got++] = fd;
			else
				close(fd); /* more than asked for */
		}
	}
	*n_fds = got;
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* path as a socket address. FALSE if it does not fit. */
static gboolean socket_address(const char *path, struct sockaddr_un *ret)
{
	*ret = (struct sockaddr_un){ .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(ret->sun_path))
		return FALSE;
	strcpy(ret->sun_path, path);
	return TRUE;
}

int fdmsg_listen(const char *path, int backlog)
{
	struct sockaddr_un addr;
	g_autofree char *dir = g_path_get_dirname(path);

	if (!socket_address(path, &addr))
		return -ENAMETOOLONG;
	if (g_mkdir_with_parents(dir, 0700) < 0)
		return -errno;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || chmod(path, 0600) < 0 || listen(fd, backlog) < 0)
		return -errno;
	return steal_fd(&fd);
}

int fdmsg_ask(const char *path, int timeout_s, const char *request, char *reply, size_t size)
{
	struct sockaddr_un addr;
	struct timeval timeout = { .tv_sec = timeout_s };
	size_t no_fds = 0;

	if (!socket_address(path, &addr))
		return -ENAMETOOLONG;
	_cleanup_close_ int conn = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (conn < 0 || connect(conn, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) < 0 ||
	    fdmsg_send(conn, request, NULL, 0) < 0)
		return -errno;
	if (fdmsg_receive(conn, reply, size, NULL, &no_fds) <= 0)
		return -EPROTO;
	return steal_fd(&conn);
}
