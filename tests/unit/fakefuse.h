/* A libfuse session fed by the test: requests made up here go through
 * fuse_session_process_buf, and its answers and notifications go to the
 * test's writev (libfuse's custom I/O). */
#pragma once

#include <criterion/criterion.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

typedef ssize_t (*fakefuse_writev_fn)(int fd, struct iovec *iov, int count, void *userdata);

static ssize_t fakefuse_read(int fd, void *buf, size_t len, void *userdata)
{
	return 0;
}

/* Bytes in iov[0 .. count-1]. */
static inline size_t fakefuse_len(const struct iovec *iov, int count)
{
	size_t len = 0;
	for (int i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}

/* Request opcode of nodeid from the thread tid, with in (len bytes). */
static inline void fakefuse_send(struct fuse_session *se, uint32_t opcode, uint64_t nodeid, pid_t tid,
				 const void *in, size_t len)
{
	static uint64_t unique;
	char msg[512] = { 0 };
	cr_assert(sizeof(struct fuse_in_header) + len <= sizeof(msg));
	struct fuse_in_header h = { .len = (uint32_t)(sizeof(h) + len), .opcode = opcode, .unique = unique += 2,
				    .nodeid = nodeid, .uid = geteuid(), .gid = getegid(), .pid = (uint32_t)tid };
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), in, len);
	const struct fuse_buf buf = { .size = h.len, .mem = msg };
	fuse_session_process_buf(se, &buf);
}

/* A session of ops with userdata, past its INIT, writing through writev. */
static inline struct fuse_session *fakefuse_new(const struct fuse_lowlevel_ops *ops, size_t ops_size, void *userdata,
						fakefuse_writev_fn writev)
{
	static struct fuse_custom_io io = { .read = fakefuse_read };
	io.writev = writev;
	char *argv[] = { "test", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct fuse_session *se = fuse_session_new(&args, ops, ops_size, userdata);
	cr_assert(se);
	cr_assert_eq(fuse_session_custom_io(se, &io, open("/dev/null", O_RDWR | O_CLOEXEC)), 0);
	const struct fuse_init_in init = { .major = FUSE_KERNEL_VERSION, .minor = 31 };
	fakefuse_send(se, FUSE_INIT, 0, 0, &init, sizeof(init));
	return se;
}
