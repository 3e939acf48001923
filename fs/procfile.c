#include "procfile.h"

#include "cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int procfile_read_fd(int fd, GBytes **ret_content)
{
	g_autoptr(GByteArray) buf = g_byte_array_sized_new(4096);

	for (;;) {
		guint used = buf->len;
		g_byte_array_set_size(buf, used + 4096);
		ssize_t n = read(fd, buf->data + used, 4096);
		if (n < 0) {
			if (errno == EINTR) {
				g_byte_array_set_size(buf, used);
				continue;
			}
			return procfile_errno();
		}
		g_byte_array_set_size(buf, used + (guint)n);
		if (n == 0)
			break;
	}
	/* A copy of its length: the buffer is 4 KiB longer at least, and the
	 * smaps memo keeps thousands of such texts of about 1 KiB. An empty
	 * text keeps its buffer: its data is then not NULL, as callers expect. */
	*ret_content = buf->len ? g_bytes_new(buf->data, buf->len)
				: g_byte_array_free_to_bytes(g_steal_pointer(&buf));
	return 0;
}

/* The fd kept for an open that finds the process out of fds: -1 while
 * given up (taken again by the next open that can). */
static int reserve = -1;
static GMutex reserve_lock;

static void take_reserve_locked(void)
{
	if (reserve < 0)
		g_atomic_int_set(&reserve, open("/dev/null", O_RDONLY | O_CLOEXEC));
}

/* How long an open waits for a free fd before it fails with EMFILE. */
#define EMFILE_WAIT_US G_USEC_PER_SEC

int procfile_openat(int dirfd, const char *path, int flags)
{
	if (G_UNLIKELY(g_atomic_int_get(&reserve) < 0)) {
		G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&reserve_lock);
		take_reserve_locked();
	}
	int fd = openat(dirfd, path, flags | O_CLOEXEC | O_NOCTTY);
	gint64 until = 0;
	while (fd < 0 && errno == EMFILE) {
		/* Another thread may take the slot given up first: then wait
		 * for one, as other requests close theirs. */
		if (until && g_get_monotonic_time() > until)
			return -EMFILE;
		if (!until)
			until = g_get_monotonic_time() + EMFILE_WAIT_US;
		else
			g_usleep(1000);
		G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&reserve_lock);
		if (reserve >= 0) {
			close(reserve);
			g_atomic_int_set(&reserve, -1);
		}
		fd = openat(dirfd, path, flags | O_CLOEXEC | O_NOCTTY);
		int err = errno;
		take_reserve_locked();
		errno = err;
	}
	return fd < 0 ? procfile_errno() : fd;
}

int procfile_read_at(int dirfd, const char *path, GBytes **ret_content)
{
	_cleanup_close_ int fd = procfile_openat(dirfd, path, O_RDONLY);
	if (fd < 0)
		return fd;
	return procfile_read_fd(fd, ret_content);
}

int procfile_readlink_at(int dirfd, const char *path, char **ret_target)
{
	char buf[4097];
	ssize_t n = readlinkat(dirfd, path, buf, sizeof(buf) - 1);
	if (n < 0)
		return procfile_errno();
	*ret_target = g_strndup(buf, (gsize)n);
	return 0;
}

int procfile_read_text_at(int dirfd, const char *path, char **ret_text)
{
	g_autoptr(GBytes) b = NULL;
	int r = procfile_read_at(dirfd, path, &b);
	if (r < 0)
		return r;
	gsize len;
	const char *data = g_bytes_get_data(b, &len);
	if (memchr(data, '\0', len))
		return -EINVAL;
	*ret_text = g_strndup(data, len);
	return 0;
}

int procfile_parse_pid_stat(const char *text, size_t len, struct pid_stat *ret)
{
	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses,
	 * so fields are counted from the last ')'. */
	g_autofree char *copy = g_strndup(text, len);
	const char *p = strrchr(copy, ')');
	if (!p || p[1] != ' ' || p[2] == '\0')
		return -EINVAL;
	struct pid_stat st = { .state = p[2] };
	struct {
		int field;
		uint64_t *slot;
	} wanted[] = { { 10, &st.minflt }, { 12, &st.majflt }, { 22, &st.start_time },
		       { 23, &st.vsize }, { 24, &st.rss }, { 26, &st.start_code }, { 27, &st.end_code },
		       { 28, &st.start_stack } };
	size_t next = 0;
	p += 3;
	/* state is field 3; the numbers wanted follow. */
	for (int field = 4; next < G_N_ELEMENTS(wanted); field++) {
		while (*p == ' ')
			p++;
		if (*p == '\0')
			return -EINVAL;
		if (field == wanted[next].field) {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(p, &end, 10);
			if (errno || end == p || (*end != ' ' && *end != '\n' && *end != '\0'))
				return -EINVAL;
			*wanted[next++].slot = v;
		}
		p = strpbrk(p, " ");
		if (!p && next < G_N_ELEMENTS(wanted))
			return -EINVAL;
	}
	*ret = st;
	return 0;
}

int procfile_pid_stat(int proc_fd, pid_t pid, struct pid_stat *ret)
{
	char path[32];
	g_autoptr(GBytes) text = NULL;

	snprintf(path, sizeof(path), "%d/stat", (int)pid);
	int r = procfile_read_at(proc_fd, path, &text);
	if (r < 0)
		return r;
	gsize len;
	const char *data = g_bytes_get_data(text, &len);
	return procfile_parse_pid_stat(data, len, ret);
}

int procfile_nspid(int proc_fd, pid_t pid, guint *ret_levels, pid_t *ret_innermost)
{
	char path[32];
	g_autofree char *status = NULL;
	snprintf(path, sizeof(path), "%d/status", (int)pid);
	int r = procfile_read_text_at(proc_fd, path, &status);
	if (r < 0)
		return r;
	const char *line = strstr(status, "\nNSpid:");
	if (!line)
		return -EINVAL;
	line += strlen("\nNSpid:");
	g_autofree char *numbers = g_strndup(line, strcspn(line, "\n"));
	g_auto(GStrv) levels = g_strsplit_set(g_strstrip(numbers), " \t", -1);
	guint n = g_strv_length(levels);
	guint64 inner;
	if (n == 0 || !g_ascii_string_to_unsigned(levels[n - 1], 10, 1, G_MAXINT32, &inner, NULL))
		return -EINVAL;
	*ret_levels = n;
	*ret_innermost = (pid_t)inner;
	return 0;
}
