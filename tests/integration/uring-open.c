/* Opens argv[1] through io_uring with the credentials of argv[2]'s uid
 * (a personality registered while this root process had that uid), its
 * own credentials being root's meanwhile: the subjective and objective
 * credentials of a caller differ, as under override_creds. Prints the
 * first line read, or the errno name of the open. For test_security. */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int fail(const char *what)
{
	fprintf(stderr, "uring-open: %s: %s\n", what, strerror(errno));
	return 2;
}

/* The open's result (an fd, or -errno) through ring fd. */
static int uring_openat(int fd, const struct io_uring_params *p, const char *path, int personality)
{
	size_t sq_len = p->sq_off.array + p->sq_entries * sizeof(unsigned);
	size_t cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, IORING_OFF_SQ_RING);
	char *cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, IORING_OFF_CQ_RING);
	struct io_uring_sqe *sqes = mmap(NULL, p->sq_entries * sizeof(*sqes), PROT_READ | PROT_WRITE, MAP_SHARED,
					 fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
		return -errno;
	memset(&sqes[0], 0, sizeof(sqes[0]));
	sqes[0].opcode = IORING_OP_OPENAT;
	sqes[0].fd = AT_FDCWD;
	sqes[0].addr = (unsigned long)path;
	sqes[0].open_flags = O_RDONLY;
	sqes[0].personality = (unsigned short)personality;
	unsigned *tail = (unsigned *)(sq + p->sq_off.tail);
	unsigned *array = (unsigned *)(sq + p->sq_off.array);
	array[*tail & *(unsigned *)(sq + p->sq_off.ring_mask)] = 0;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
		return -errno;
	unsigned head = __atomic_load_n((unsigned *)(cq + p->cq_off.head), __ATOMIC_ACQUIRE);
	struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p->cq_off.cqes);
	return cqes[head & *(unsigned *)(cq + p->cq_off.ring_mask)].res;
}

int main(int argc, char **argv)
{
	if (argc != 3 || geteuid() != 0) {
		fprintf(stderr, "usage (as root): uring-open PATH UID\n");
		return 2;
	}
	uid_t uid = (uid_t)atoi(argv[2]);
	struct io_uring_params p = { 0 };
	int fd = (int)syscall(__NR_io_uring_setup, 4, &p);
	if (fd < 0)
		return fail("io_uring_setup");
	/* The personality: uid's, with no capability (the saved uid stays 0). */
	if (setresuid(uid, uid, 0) < 0)
		return fail("setresuid");
	int personality = (int)syscall(__NR_io_uring_register, fd, IORING_REGISTER_PERSONALITY, NULL, 0);
	if (personality < 0)
		return fail("IORING_REGISTER_PERSONALITY");
	if (setresuid(0, 0, 0) < 0)
		return fail("setresuid back");
	int r = uring_openat(fd, &p, argv[1], personality);
	if (r < 0) {
		printf("%s\n", strerrorname_np(-r) ? strerrorname_np(-r) : "?");
		return 0;
	}
	char line[256] = "";
	ssize_t n = read(r, line, sizeof(line) - 1);
	line[n > 0 ? n : 0] = '\0';
	printf("read %s\n", strtok(line, "\n") ? line : "");
	return 0;
}
