/* What the seccomp listener (sysinfo.c) reads from its peers: a runtime's
 * state, a caller's mappings. */
#include "seccomp-state.h"

#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define STATE_MAX (1 << 20) /* the runtime's JSON: a few kB */
#define FDS_MAX 8           /* fds one message may carry */

/* The fd named "seccompFd" among fds, by the state's "fds" list; the rest
 * closed. -1 if there is none. */
int seccomp_fd_of(const char *state, gsize len, GArray *fds)
{
	g_autoptr(JsonParser) parser = json_parser_new();
	int found = -1;
	JsonNode *root = json_parser_load_from_data(parser, state, (gssize)len, NULL) ? json_parser_get_root(parser)
										       : NULL;
	if (root && JSON_NODE_HOLDS_OBJECT(root)) {
		JsonObject *o = json_node_get_object(root);
		JsonNode *list = json_object_get_member(o, "fds");
		JsonArray *names = list && JSON_NODE_HOLDS_ARRAY(list) ? json_node_get_array(list) : NULL;
		for (guint i = 0; names && i < json_array_get_length(names) && i < fds->len; i++) {
			JsonNode *n = json_array_get_element(names, i);
			if (found < 0 && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING &&
			    strcmp(json_node_get_string(n), "seccompFd") == 0)
				found = g_array_index(fds, int, i);
		}
	}
	for (guint i = 0; i < fds->len; i++)
		if (g_array_index(fds, int, i) != found)
			close(g_array_index(fds, int, i));
	return found;
}

/* Are the len bytes at addr in mappings the process may write, as maps
 * (its /proc/<pid>/maps) says? /proc/<pid>/mem writes read-only private
 * pages as well (FOLL_FORCE), where the kernel's own sysinfo(2) fails
 * with EFAULT: such a call is left to the kernel. */
gboolean seccomp_writable(int maps, uint64_t addr, size_t len)
{
	int fd = dup(maps);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return FALSE;
	}
	g_autofree char *line = NULL;
	size_t size = 0;
	uint64_t want = addr, end = addr + len; /* the first byte not yet found writable */
	while (want < end && getline(&line, &size, f) > 0) {
		unsigned long long from, to;
		char perms[5];
		if (sscanf(line, "%llx-%llx %4s", &from, &to, perms) != 3 || from > want)
			break; /* past want: a hole (the lines are in order) */
		if (to > want && perms[1] != 'w')
			break;
		if (to > want)
			want = to;
	}
	fclose(f);
	return want >= end;
}

gboolean seccomp_peer_is_root(int conn)
{
	struct ucred peer;
	socklen_t plen = sizeof(peer);
	return getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &plen) == 0 && peer.uid == 0;
}

int seccomp_runtime_fd(int conn)
{
	if (!seccomp_peer_is_root(conn))
		return -1;
	/* A second for the whole state, however it trickles in: the listener
	 * answers every container's calls meanwhile. */
	const gint64 deadline = g_get_monotonic_time() + G_USEC_PER_SEC;
	g_autoptr(GString) state = g_string_new(NULL);
	g_autoptr(GArray) fds = g_array_new(FALSE, FALSE, sizeof(int));
	for (gint64 left; (left = deadline - g_get_monotonic_time()) > 0;) {
		struct timeval limit = { .tv_sec = left / G_USEC_PER_SEC, .tv_usec = left % G_USEC_PER_SEC };
		setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
		char data[4096];
		union {
			struct cmsghdr h;
			char space[CMSG_SPACE(sizeof(int) * FDS_MAX)];
		} control;
		struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
				      .msg_controllen = sizeof(control) };
		ssize_t n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
		for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				g_array_append_vals(fds, CMSG_DATA(c), (c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		if (n <= 0 || state->len + (gsize)n > STATE_MAX)
			break;
		g_string_append_len(state, data, n);
	}
	if (state->len == 0 && fds->len == 0)
		return -1; /* a probe: is anyone there (cgprocfs-runtime) */
	int fd = seccomp_fd_of(state->str, state->len, fds);
	if (fd < 0)
		g_warning("seccomp listener: a runtime sent no seccompFd: its container's sysinfo and sched_getaffinity "
			  "stay the kernel's");
	return fd;
}
