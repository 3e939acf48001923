/* cgroup_read_limits (fs/cgroup.h): the parsers of cpu.max, cpu.cfs_quota_us,
 * cpu.cfs_period_us and the cpuset files, with the walk up the hierarchy.
 * Those parsers are static in fs/cgroup.c and read files below a directory
 * fd, so the harness writes the input as a cgroup tree in a private
 * temporary directory (tmpfs /dev/shm where there is one) and reads it as
 * v1 and as v2 hierarchies, with the cgroup at several depths.
 *
 * Input: chunks separated by NUL bytes (a NUL in a real cgroup file makes
 * it garbage anyway). Chunk i becomes files[i]; a chunk that is exactly
 * "\x01", and every chunk past the last one, leaves the file out; a byte
 * 0x02 is written as a NUL (which the kernel never writes). A text
 * seed (one chunk) is a/b/cpu.max and nothing else. The tree is read as
 * v1 and as v2 with the cgroup at a/b, and once more as the hierarchy
 * kinds and cgroup place the last byte of the input picks. */
#include "fuzz.h"
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const files[] = {
	"a/b/cpu.max",
	"a/b/cpuset.cpus.effective",
	"a/b/cpu.cfs_quota_us",
	"a/b/cpu.cfs_period_us",
	"a/b/cpuset.effective_cpus",
	"a/b/cpuset.cpus",
	"a/cpu.max",
	"a/cpu.cfs_quota_us",
	"a/cpu.cfs_period_us",
	"a/cpuset.cpus",
	"a/cpuset.cpus.effective",
	"cpu.max",
	"cpuset.cpus",
};

static char *root_path;
static int root_fd = -1;
/* What each file holds now (NULL: absent), to write only what changed. */
static GBytes *current[G_N_ELEMENTS(files)];

static void remove_tree(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++)
		unlinkat(root_fd, files[i], 0);
	unlinkat(root_fd, "a/b", AT_REMOVEDIR);
	unlinkat(root_fd, "a", AT_REMOVEDIR);
	rmdir(root_path);
}

static void setup(void)
{
	const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : g_get_tmp_dir();
	root_path = g_build_filename(tmp, "cgprocfs-fuzz-XXXXXX", NULL);
	FUZZ_CHECK(g_mkdtemp(root_path) != NULL);
	root_fd = open(root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(root_fd >= 0);
	FUZZ_CHECK(mkdirat(root_fd, "a", 0700) == 0 && mkdirat(root_fd, "a/b", 0700) == 0);
	atexit(remove_tree);
}

static void check_limits(int r, const struct cgroup_limits *l, const char *culprit)
{
	if (r == -EINVAL) {
		/* "then *ret_culprit names the file" */
		FUZZ_CHECK(culprit != NULL);
		return;
	}
	FUZZ_CHECK(culprit == NULL);
	if (r < 0)
		return;
	if (l->has_cpuset) {
		unsigned n = cpuset_count(&l->cpuset);
		FUZZ_CHECK(n >= 1 && n <= CPUSET_MAX);
	}
	if (l->has_quota) {
		FUZZ_CHECK(l->quota_us >= 1 && l->period_us >= 1);
		FUZZ_CHECK(l->quota_us <= G_MAXINT64 && l->period_us <= G_MAXINT64);
		unsigned n = cgroup_quota_cpus(l->quota_us, l->period_us);
		FUZZ_CHECK(n >= 1 && n <= CPUSET_MAX);
	}
	/* and what the daemon makes of them */
	struct cpuset online;
	FUZZ_CHECK(cpuset_parse_list("0-63", &online) == 0);
	g_autoptr(cpu_map) m = cpu_map_new(&online, l, TRUE);
	FUZZ_CHECK(m->count >= 1 && m->count <= 64);
	for (unsigned i = 0; i < m->count; i++)
		FUZZ_CHECK(cpu_map_view_cpu(m, m->host[i]) == (int)i);
}

static void put_file(size_t i, const char *data, size_t len)
{
	g_autoptr(GBytes) want = data ? g_bytes_new(data, len) : NULL;
	if (want ? current[i] && g_bytes_equal(want, current[i]) : !current[i])
		return;
	g_clear_pointer(&current[i], g_bytes_unref);
	if (!data) {
		FUZZ_CHECK(unlinkat(root_fd, files[i], 0) == 0);
		return;
	}
	g_autofree char *bytes = g_memdup2(data, len);
	for (size_t j = 0; j < len; j++)
		if (bytes[j] == '\x02')
			bytes[j] = '\0';
	int fd = openat(root_fd, files[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(write(fd, bytes, len) == (ssize_t)len);
	close(fd);
	current[i] = g_steal_pointer(&want);
}

static void read_limits(enum cgroup_version cpu, enum cgroup_version cpuset, const char *mount_root,
			const char *path)
{
	struct cgroup_config cfg = {
		.cpu = { cpu, root_fd, mount_root },
		.cpuset = { cpuset, root_fd, mount_root },
	};
	struct cgroup_paths paths = { .cpu = (char *)path, .cpuset = (char *)path };
	struct cgroup_limits l;
	char *culprit = NULL;
	int r = cgroup_read_limits(&cfg, &paths, &l, &culprit);
	check_limits(r, &l, culprit);
	g_free(culprit);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (root_fd < 0)
		setup();

	/* the tree */
	size_t at = 0;
	gboolean more = size > 0;
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
		if (!more) {
			put_file(i, NULL, 0);
			continue;
		}
		const char *chunk = (const char *)data + at;
		const char *nul = memchr(chunk, '\0', size - at);
		size_t len = nul ? (size_t)(nul - chunk) : size - at;
		put_file(i, len == 1 && chunk[0] == '\x01' ? NULL : chunk, len);
		more = nul != NULL; /* a chunk follows each NUL, if only an empty one */
		at += len + (nul != NULL);
	}

	read_limits(CGROUP_V1, CGROUP_V1, "/", "/a/b");
	read_limits(CGROUP_V2, CGROUP_V2, "/", "/a/b");

	/* and as the last byte says */
	static const struct {
		enum cgroup_version cpu, cpuset;
	} kinds[] = { { CGROUP_V1, CGROUP_V2 }, { CGROUP_V2, CGROUP_V1 }, { CGROUP_NONE, CGROUP_V1 },
		      { CGROUP_V2, CGROUP_NONE } };
	static const struct {
		const char *mount_root, *path;
	} places[] = {
		{ "/", "/a" }, { NULL, "//a//b/" }, { "/x/y", "/x/y/a/b" }, { "/", "/" }, { "/a", "/a" },
		{ "/x", "/xa/b" }, /* outside what is mounted */
		{ "/", "/a/b/c" }, /* vanished */
		{ "/a/b", "/a/b/c/d" }, /* vanished below a mount */
	};
	uint8_t pick = size ? data[size - 1] : 0;
	read_limits(kinds[pick % 4].cpu, kinds[pick % 4].cpuset, places[pick / 4 % 8].mount_root,
		    places[pick / 4 % 8].path);
	return 0;
}
