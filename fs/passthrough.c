#include "passthrough.h"

#include "cleanup.h"

#include <errno.h>
#include <linux/fuse.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

/* Protocol 7.40 (kernel 6.9): not in the kernel headers Debian 12 ships. */
#define PT_INIT_FLAG (UINT64_C(1) << 37)  /* FUSE_PASSTHROUGH, in flags2 */
#define PT_OPEN_FLAG (1U << 7)            /* FOPEN_PASSTHROUGH */
#define PT_MAX_STACK_DEPTH_WORD 0         /* fuse_init_out.unused[0] */
struct pt_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#define PT_IOC_BACKING_OPEN _IOW(229, 1, struct pt_backing_map)
#define PT_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

/* The backing id for the OPEN reply this thread is about to send. */
static __thread int pending_id = -1;

void passthrough_reply_with(int id)
{
	pending_id = id;
}

static ssize_t pt_read(int fd, void *buf, size_t len, void *userdata)
{
	struct passthrough *pt = userdata;
	ssize_t n = read(fd, buf, len);
	if (n >= (ssize_t)(sizeof(struct fuse_in_header) + sizeof(struct fuse_init_in))) {
		const struct fuse_in_header *h = buf;
		const struct fuse_init_in *in = (const void *)(h + 1);
		if (h->opcode == FUSE_INIT && (in->flags & FUSE_INIT_EXT) &&
		    ((uint64_t)in->flags2 << 32 & PT_INIT_FLAG))
			pt->init_unique = h->unique;
	}
	return n;
}

static ssize_t pt_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct passthrough *pt = userdata;
	const struct fuse_out_header *h = iov[0].iov_base;
	struct fuse_init_out init;
	struct fuse_open_out open;
	struct iovec patched[2];

	if (count != 2 || h->error != 0)
		return writev(fd, iov, count);
	if (pending_id >= 0 && iov[1].iov_len == sizeof(open)) {
		memcpy(&open, iov[1].iov_base, sizeof(open));
		open.open_flags |= PT_OPEN_FLAG;
		open.padding = (uint32_t)pending_id; /* backing_id */
		pending_id = -1;
		patched[0] = iov[0];
		patched[1] = (struct iovec){ &open, sizeof(open) };
		return writev(fd, patched, 2);
	}
	if (pt->init_unique && h->unique == pt->init_unique && iov[1].iov_len == sizeof(init)) {
		pt->init_unique = 0;
		memcpy(&init, iov[1].iov_base, sizeof(init));
		if (init.major == FUSE_KERNEL_VERSION) {
			init.flags |= FUSE_INIT_EXT;
			init.flags2 |= (uint32_t)(PT_INIT_FLAG >> 32);
			init.unused[PT_MAX_STACK_DEPTH_WORD] = 1;
			pt->enabled = TRUE;
			patched[0] = iov[0];
			patched[1] = (struct iovec){ &init, sizeof(init) };
			return writev(fd, patched, 2);
		}
	}
	return writev(fd, iov, count);
}

const struct fuse_custom_io passthrough_io = {
	.read = pt_read,
	.writev = pt_writev,
};

int passthrough_backing_open(struct passthrough *pt, GBytes *content, int *ret_id)
{
	gsize len;
	const char *data = g_bytes_get_data(content, &len);

	if (!pt->enabled)
		return -EOPNOTSUPP;
	_cleanup_close_ int fd = memfd_create("cgprocfs", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (gsize done = 0; done < len;) {
		ssize_t n = write(fd, data + done, len - done);
		if (n < 0)
			return -errno;
		done += (gsize)n;
	}
	struct pt_backing_map map = { .fd = fd };
	int id = ioctl(pt->dev_fd, PT_IOC_BACKING_OPEN, &map);
	if (id < 0)
		return -errno;
	*ret_id = id;
	return 0;
}

void passthrough_backing_close(struct passthrough *pt, int id)
{
	uint32_t u = (uint32_t)id;
	ioctl(pt->dev_fd, PT_IOC_BACKING_CLOSE, &u);
}
