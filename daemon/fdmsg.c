/* Messages with file descriptors on unix sockets (SCM_RIGHTS). */
#include "daemon.h"

#include <string.h>
#include <sys/socket.h>
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
