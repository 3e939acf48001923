/* The path registry on fixture trees: tests/fixtures/proc stands for a
 * procfs with one process (pid 100, start time 4242) and
 * tests/fixtures/sys-cpu for /sys/devices/system/cpu. */
#include "view.h"
#include "view-internal.h"

#include "cleanup.h"
#include "fakefuse.h"
#include "ops.h"
#include "scope.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int proc_fd = -1, sys_fd = -1, real_proc = -1, no_ns_fd = -1;
static struct view *v;
static struct cpuview *cv;
static struct scope *scope;
static struct smaps *sm;
static struct caller me;

/* No cgroup hierarchies: every caller sees the host's CPUs (its scope
 * found in proc, the real one). */
static struct cpuview *host_cpuview(int proc, int sys)
{
	struct cpuview *ret;
	const struct cgroup_config none = { { CGROUP_NONE, -1, NULL }, { CGROUP_NONE, -1, NULL },
					    { CGROUP_NONE, -1, NULL }, { CGROUP_NONE, -1, NULL },
					    { CGROUP_NONE, -1, NULL }, { CGROUP_NONE, -1, NULL } };
	scope = scope_new(&(struct scope_config){ proc, sys, none, SCOPE_CONTAINER });
	const struct cpuview_config cfg = {
		.proc_fd = -1,
		.scope = scope,
		.sys_cpu_fd = sys,
		.cgroups = none,
	};
	cr_assert_eq(cpuview_new(&cfg, &ret), 0);
	return ret;
}

static void setup(void)
{
	const char *fixtures = g_getenv("CGPROCFS_FIXTURES");
	cr_assert_not_null(fixtures, "CGPROCFS_FIXTURES must name tests/fixtures");
	g_autofree char *proc = g_build_filename(fixtures, "proc", NULL);
	g_autofree char *sys = g_build_filename(fixtures, "sys-cpu", NULL);
	proc_fd = open(proc, O_RDONLY | O_DIRECTORY);
	sys_fd = open(sys, O_RDONLY | O_DIRECTORY);
	real_proc = open("/proc", O_RDONLY | O_DIRECTORY);
	/* Not a pid namespace: no pidfds for the fixture's pids, as for a
	 * container's on a kernel that cannot translate pids. */
	no_ns_fd = open("/dev/null", O_RDONLY);
	cr_assert(proc_fd >= 0 && sys_fd >= 0 && real_proc >= 0 && no_ns_fd >= 0);
	cv = host_cpuview(real_proc, sys_fd);
	/* The fixture's pids are not this machine's: another pid namespace. */
	const struct smaps_config scfg = {
		.proc_fd = -1,
		.ns = 1,
		.memo = { .max_age_us = G_USEC_PER_SEC, .max_age_idle_us = G_USEC_PER_SEC,
			  .forget_after_us = G_USEC_PER_SEC, .max_entries = 16, .budget = 1 },
	};
	sm = smaps_new(&scfg);
	smaps_add_namespace(sm, 2, proc_fd, no_ns_fd);
	const struct view_config cfg = {
		.proc_fd = proc_fd, .sys_cpu_fd = sys_fd, .cpuview = cv, .smaps = sm,
		.pid_ns_fd = no_ns_fd, .pid_ns = 2,
	};
	cr_assert_eq(view_new(&cfg, &v), 0);
	me = (struct caller){ .tid = (pid_t)syscall(SYS_gettid), .uid = geteuid(), .gid = getegid(),
			      .proc_fd = real_proc, .pid_ns_fd = -1 };
}

static void teardown(void)
{
	view_free(v);
	cpuview_free(cv);
	scope_free(scope);
	smaps_free(sm);
	close(proc_fd);
	close(sys_fd);
	close(real_proc);
	close(no_ns_fd);
}

TestSuite(view, .init = setup, .fini = teardown);

static uint64_t lookup(uint64_t parent, const char *name)
{
	struct view_entry e;
	int r = view_lookup(v, &me, parent, name, &e);
	cr_assert_eq(r, 0, "lookup %s: %s", name, g_strerror(-r));
	if (e.pidfd >= 0)
		close(e.pidfd);
	cr_assert_eq(e.attr.st_ino, e.ino);
	return e.ino;
}

static int lookup_err(uint64_t parent, const char *name)
{
	struct view_entry e;
	int r = view_lookup(v, &me, parent, name, &e);
	if (r == 0 && e.pidfd >= 0)
		close(e.pidfd);
	return r;
}

static mode_t type_of(uint64_t ino)
{
	struct stat st;
	double t;
	cr_assert_eq(view_getattr(v, &me, ino, &st, &t), 0);
	return st.st_mode & S_IFMT;
}

static char *target_of(uint64_t ino)
{
	char *t = NULL;
	int r = view_readlink(v, &me, ino, &t);
	cr_assert_eq(r, 0, "readlink: %s", g_strerror(-r));
	return t;
}

/* view_open's version of a shared text: not what these tests check. */
static int64_t version;

static char *content_of(uint64_t ino)
{
	g_autoptr(GBytes) b = NULL;
	int r = view_open(v, &me, ino, O_RDONLY, &b, &version);
	cr_assert_eq(r, 0, "open: %s", g_strerror(-r));
	return g_strndup(g_bytes_get_data(b, NULL), g_bytes_get_size(b));
}

static gboolean listed(uint64_t dir, const char *name, uint64_t *ret_ino)
{
	g_autoptr(GArray) entries = NULL;
	cr_assert_eq(view_readdir(v, &me, dir, &entries), 0);
	for (guint i = 0; i < entries->len; i++) {
		struct view_dirent *e = &g_array_index(entries, struct view_dirent, i);
		if (strcmp(e->name, name) == 0) {
			if (ret_ino)
				*ret_ino = e->ino;
			return TRUE;
		}
	}
	return FALSE;
}

Test(view, root_is_inode_one_and_holds_proc_and_sys)
{
	cr_assert_eq(type_of(1), S_IFDIR);
	uint64_t proc = lookup(1, "proc");
	cr_assert_eq(proc, view_proc_ino());
	cr_assert_eq(type_of(proc), S_IFDIR);
	cr_assert(listed(1, "proc", NULL));
	cr_assert(listed(1, "sys", NULL));
	cr_assert(listed(1, ".", NULL) && listed(1, "..", NULL));
}

Test(view, real_is_looked_up_but_not_listed)
{
	uint64_t real = lookup(view_proc_ino(), ".real");
	cr_assert_eq(type_of(real), S_IFDIR);
	cr_assert_not(listed(view_proc_ino(), ".real", NULL));
}

Test(view, top_level_names_delegate_to_real)
{
	uint64_t self = lookup(view_proc_ino(), "self");
	uint64_t meminfo = lookup(view_proc_ino(), "meminfo");
	g_autofree char *t1 = target_of(self);
	g_autofree char *t2 = target_of(meminfo);
	cr_assert_eq(type_of(self), S_IFLNK);
	cr_assert_str_eq(t1, ".real/self");
	cr_assert_str_eq(t2, ".real/meminfo");
	struct stat st;
	double t;
	cr_assert_eq(view_getattr(v, &me, meminfo, &st, &t), 0);
	cr_assert_eq(st.st_size, (off_t)strlen(t2), "a link's size is its target's length");
	cr_assert(listed(view_proc_ino(), "meminfo", NULL));
	cr_assert(listed(view_proc_ino(), "100", NULL));
}

Test(view, served_files_are_served_not_delegated)
{
	uint64_t cpuinfo = lookup(view_proc_ino(), "cpuinfo");
	cr_assert_eq(type_of(cpuinfo), S_IFREG);
	g_autofree char *text = content_of(cpuinfo);
	cr_assert(strstr(text, "Fixture CPU") != NULL);
	char *t = NULL;
	cr_assert_eq(view_readlink(v, &me, cpuinfo, &t), -EINVAL);
	uint64_t listed_ino = 0;
	cr_assert(listed(view_proc_ino(), "cpuinfo", &listed_ino));
	cr_assert_eq(listed_ino, cpuinfo, "one row answers lookup and readdir alike");
}

/* A caller whose /proc/<tid>/cgroup cannot be read (here: no such thread,
 * past any pid_max) is of no content class: its served files are EIO, not
 * the host's (a container must never be shown the host's figures). */
Test(view, a_caller_whose_scope_cannot_be_found_gets_eio_not_the_hosts_files)
{
	struct caller unknown = me;
	unknown.tid = 0x7ffffff0;
	struct view_entry e;
	int r = view_lookup(v, &unknown, view_proc_ino(), "cpuinfo", &e);
	cr_assert_eq(r, -EIO, "lookup cpuinfo: %s (0: the host's inode, %#llx)", g_strerror(-r), r ? 0ULL : (unsigned long long)e.ino);
	g_autoptr(GArray) entries = NULL;
	r = view_readdir(v, &unknown, view_proc_ino(), &entries);
	cr_assert_eq(r, -EIO, "readdir proc: %s", g_strerror(-r));
}

Test(view, unknown_names_are_enoent)
{
	cr_assert_eq(lookup_err(view_proc_ino(), "nosuchfile"), -ENOENT);
	cr_assert_eq(lookup_err(view_proc_ino(), "101"), -ENOENT);
	cr_assert_eq(lookup_err(view_proc_ino(), "0100"), -ENOENT, "no leading zeros, as procfs");
	cr_assert_eq(lookup_err(view_proc_ino(), "-100"), -ENOENT);
	cr_assert_eq(lookup_err(view_proc_ino(), "99999999999"), -ENOENT);
	cr_assert_eq(lookup_err(1, "nothing"), -ENOENT);
}

Test(view, names_no_process_has_are_remembered_as_missing)
{
	uint64_t pid = lookup(view_proc_ino(), "100");
	struct view_entry e;
	cr_assert_eq(view_lookup(v, &me, pid, "ctty", &e), 0);
	cr_assert_eq(e.ino, 0, "a negative entry");
	cr_assert_gt(e.entry_timeout, 0);
}

Test(view, pid_entries_delegate_into_real)
{
	uint64_t pid = lookup(view_proc_ino(), "100");
	cr_assert_eq(type_of(pid), S_IFDIR);
	uint64_t status = lookup(pid, "status");
	uint64_t fd = lookup(pid, "fd");
	g_autofree char *t1 = target_of(status);
	g_autofree char *t2 = target_of(fd);
	cr_assert_str_eq(t1, "../.real/100/status");
	cr_assert_str_eq(t2, "../.real/100/fd");
	cr_assert_eq(type_of(fd), S_IFLNK, "directories are delegated too");
	cr_assert(listed(pid, "status", NULL));
	cr_assert(listed(pid, "smaps_rollup", NULL));
}

Test(view, magic_links_carry_the_real_text_and_a_new_inode_per_lookup)
{
	uint64_t pid = lookup(view_proc_ino(), "100");
	uint64_t exe1 = lookup(pid, "exe");
	uint64_t exe2 = lookup(pid, "exe");
	cr_assert_neq(exe1, exe2, "a cached link text would skip the caller's permission check");
	g_autofree char *exe = target_of(exe1);
	g_autofree char *cwd = target_of(lookup(pid, "cwd"));
	cr_assert_str_eq(exe, "/usr/bin/sleep");
	cr_assert_str_eq(cwd, "/tmp");
	struct view_entry e;
	cr_assert_eq(view_lookup(v, &me, pid, "root", &e), 0);
	cr_assert_eq(e.entry_timeout, 0);
	cr_assert_eq(e.attr_timeout, 0);
}

Test(view, smaps_rollup_is_served_from_the_real_file)
{
	uint64_t pid = lookup(view_proc_ino(), "100");
	uint64_t smaps = lookup(pid, "smaps_rollup");
	cr_assert_eq(type_of(smaps), S_IFREG);
	g_autofree char *text = content_of(smaps);
	g_autofree char *real = NULL;
	g_autofree char *path = g_build_filename(g_getenv("CGPROCFS_FIXTURES"), "proc/100/smaps_rollup", NULL);
	cr_assert(g_file_get_contents(path, &real, NULL, NULL));
	cr_assert_str_eq(text, real);
}

Test(view, writes_are_refused)
{
	uint64_t pid = lookup(view_proc_ino(), "100");
	uint64_t targets[] = { lookup(view_proc_ino(), "cpuinfo"), lookup(pid, "smaps_rollup"),
			       lookup(lookup(lookup(lookup(lookup(1, "sys"), "devices"), "system"), "cpu"),
				      "online") };
	int modes[] = { O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC };
	for (size_t i = 0; i < G_N_ELEMENTS(targets); i++) {
		for (size_t j = 0; j < G_N_ELEMENTS(modes); j++) {
			GBytes *b = NULL;
			cr_assert_eq(view_open(v, &me, targets[i], modes[j], &b, &version), -EACCES);
			cr_assert_null(b);
		}
	}
}

Test(view, opening_directories_and_links_fails_cleanly)
{
	GBytes *b = NULL;
	cr_assert_eq(view_open(v, &me, view_proc_ino(), O_RDONLY, &b, &version), -EISDIR);
	cr_assert_eq(view_open(v, &me, lookup(view_proc_ino(), "self"), O_RDONLY, &b, &version), -ELOOP);
	cr_assert_null(b);
	g_autoptr(GArray) entries = NULL;
	cr_assert_eq(view_readdir(v, &me, lookup(view_proc_ino(), "cpuinfo"), &entries), -ENOTDIR);
	struct view_entry e;
	cr_assert_eq(view_lookup(v, &me, lookup(view_proc_ino(), "cpuinfo"), "x", &e), -ENOTDIR);
}

Test(view, inodes_never_handed_out_are_stale)
{
	struct stat st;
	double t;
	char *target = NULL;
	uint64_t bogus[] = { 0, UINT64_C(0xf) << 60, (UINT64_C(0) << 60) | 999 };
	for (size_t i = 0; i < G_N_ELEMENTS(bogus); i++) {
		cr_assert_eq(view_getattr(v, &me, bogus[i], &st, &t), -ESTALE);
		cr_assert_eq(view_readlink(v, &me, bogus[i], &target), -ESTALE);
	}
}

Test(view, sys_cpu_is_a_read_only_mirror)
{
	uint64_t cpu = lookup(lookup(lookup(lookup(1, "sys"), "devices"), "system"), "cpu");
	g_autofree char *online = content_of(lookup(cpu, "online"));
	cr_assert_str_eq(online, "0-1\n");
	uint64_t cpu0 = lookup(cpu, "cpu0");
	cr_assert_eq(type_of(cpu0), S_IFDIR);
	g_autofree char *core = content_of(lookup(lookup(cpu0, "topology"), "core_id"));
	cr_assert_str_eq(core, "0\n");
	g_autofree char *subsystem = target_of(lookup(cpu0, "subsystem"));
	cr_assert_str_eq(subsystem, "../../../../bus/cpu", "links keep their relative text");
	cr_assert(listed(cpu, "cpufreq", NULL));
	cr_assert(listed(cpu0, "topology", NULL));
	cr_assert_eq(lookup_err(cpu, "cpu7"), -ENOENT);
	struct stat st;
	double t;
	cr_assert_eq(view_getattr(v, &me, lookup(cpu, "online"), &st, &t), 0);
	cr_assert_eq(st.st_mode & 0222, 0, "no write bits");
	/* One inode per CPU class, page-cached: its size is its text's, so that
	 * sendfile and splice, which stop at the size, read all of it. */
	cr_assert_eq(st.st_size, (off_t)strlen(online), "the size of the text served");
}

/* A copy of the fixture procfs in which the test can replace the process. */
static char *copy_fixture_proc(void)
{
	g_autofree char *tmp = g_dir_make_tmp("cgprocfs-view-XXXXXX", NULL);
	g_autofree char *cmd = g_strdup_printf("cp -a '%s/proc' '%s/'", g_getenv("CGPROCFS_FIXTURES"), tmp);
	cr_assert_eq(system(cmd), 0);
	return g_build_filename(tmp, "proc", NULL);
}

Test(view, a_recycled_pid_does_not_answer_for_the_old_process)
{
	g_autofree char *proc = copy_fixture_proc();
	_cleanup_close_ int fd = open(proc, O_RDONLY | O_DIRECTORY);
	struct view *w;
	const struct view_config cfg = { .proc_fd = fd, .sys_cpu_fd = sys_fd, .cpuview = cv, .smaps = sm };
	cr_assert_eq(view_new(&cfg, &w), 0);

	struct view_entry dir, smaps;
	cr_assert_eq(view_lookup(w, &me, view_proc_ino(), "100", &dir), 0);
	cr_assert_eq(view_lookup(w, &me, dir.ino, "smaps_rollup", &smaps), 0);
	if (dir.pidfd >= 0)
		close(dir.pidfd);

	/* Same pid, another process: a later start time. */
	g_autofree char *stat = g_build_filename(proc, "100", "stat", NULL);
	cr_assert(g_file_set_contents(stat,
		"100 (other) S 1 100 100 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9999 1 1 18446744073709551615 1 2 3\n", -1, NULL));

	struct stat st;
	double t;
	GBytes *b = NULL;
	struct view_entry e;
	/* ESTALE: the kernel walks the path again, and finds the new one. */
	cr_assert_eq(view_getattr(w, &me, dir.ino, &st, &t), -ESTALE);
	cr_assert_eq(view_lookup(w, &me, dir.ino, "status", &e), -ESTALE);
	cr_assert_eq(view_open(w, &me, smaps.ino, O_RDONLY, &b, &version), -ESTALE);
	cr_assert_null(b);
	g_autoptr(GArray) entries = NULL;
	cr_assert_eq(view_readdir(w, &me, dir.ino, &entries), -ENOENT, "a directory read is not walked again");
	/* A fresh lookup finds the new process under new inodes. */
	struct view_entry again;
	cr_assert_eq(view_lookup(w, &me, view_proc_ino(), "100", &again), 0);
	if (again.pidfd >= 0)
		close(again.pidfd);
	cr_assert_neq(again.ino, dir.ino);
	view_free(w);
	g_autofree char *tmp = g_path_get_dirname(proc);
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", tmp);
	cr_assert_eq(system(cmd), 0);
}

Test(view, a_process_that_is_gone_is_enoent)
{
	g_autofree char *proc = copy_fixture_proc();
	_cleanup_close_ int fd = open(proc, O_RDONLY | O_DIRECTORY);
	struct view *w;
	const struct view_config cfg = { .proc_fd = fd, .sys_cpu_fd = sys_fd, .cpuview = cv, .smaps = sm };
	cr_assert_eq(view_new(&cfg, &w), 0);
	struct view_entry dir;
	cr_assert_eq(view_lookup(w, &me, view_proc_ino(), "100", &dir), 0);
	if (dir.pidfd >= 0)
		close(dir.pidfd);
	g_autofree char *stat = g_build_filename(proc, "100", "stat", NULL);
	cr_assert_eq(unlink(stat), 0);
	g_autoptr(GArray) entries = NULL;
	cr_assert_eq(view_readdir(w, &me, dir.ino, &entries), -ENOENT);
	cr_assert_eq(view_lookup(w, &me, view_proc_ino(), "100", &dir), -ENOENT);
	view_free(w);
	g_autofree char *tmp = g_path_get_dirname(proc);
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", tmp);
	cr_assert_eq(system(cmd), 0);
}

Test(view, every_kind_has_the_operations_its_type_needs)
{
	int kind = view_kind_incomplete();
	cr_assert_eq(kind, -1, "node kind %d lacks an operation its type needs", kind);
}

/* fs/ops.c under libfuse: answers of OPEN the kernel refuses (ENOENT, as
 * for a request resent meanwhile, whose copy is answered), and those
 * answered, counted. */
static unsigned opens_refused, opens_answered;

static ssize_t refuse_opens(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *h = iov[0].iov_base;
	if (fakefuse_len(iov, count) == sizeof(*h) + sizeof(struct fuse_open_out) && h->error == 0) {
		opens_refused++;
		errno = ENOENT;
		return -1;
	}
	opens_answered++;
	return (ssize_t)fakefuse_len(iov, count);
}

/* The answer frees the request even when the kernel refuses it: the open's
 * handle goes, and nothing is read from the freed request for that (the
 * ASan soak's SEGV in fuse_req_userdata under op_open, after a failed
 * handover had a request answered twice). */
Test(view, an_open_whose_answer_the_kernel_refuses_leaves_no_handle)
{
	struct ops_state st = { .view = v, .proc_fd = real_proc };
	ops_state_init(&st);
	struct fuse_session *se = fakefuse_new(&ops_table, sizeof(ops_table), &st, refuse_opens);
	st.session = se;
	uint64_t cpuinfo = lookup(view_proc_ino(), "cpuinfo");
	const struct fuse_open_in open_in = { .flags = O_RDONLY };
	for (unsigned i = 0; i < 3; i++)
		fakefuse_send(se, FUSE_OPEN, cpuinfo, me.tid, &open_in, sizeof(open_in));
	cr_assert_eq(opens_refused, 3, "the opens were answered (%u refused, %u other answers)", opens_refused,
		     opens_answered);
	cr_assert_eq(g_hash_table_size(st.handles.table), 0, "handles left of refused opens");
	fuse_session_destroy(se);
	ops_state_clear(&st);
}

/* The last answer's error and payload (fs/ops.c under libfuse). */
static int last_error;
static size_t last_len;
static char last_payload[8192];

static ssize_t keep_answer(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *h = iov[0].iov_base;
	last_error = h->error;
	last_len = 0;
	for (int i = 1; i < count && last_len + iov[i].iov_len <= sizeof(last_payload); i++) {
		memcpy(last_payload + last_len, iov[i].iov_base, iov[i].iov_len);
		last_len += iov[i].iov_len;
	}
	return (ssize_t)fakefuse_len(iov, count);
}

/* A directory offset past the listing is its end, however large: 2^32 + 1
 * (lseek, seekdir) is not entry 1. */
Test(view, a_directory_offset_past_the_end_reads_nothing)
{
	struct ops_state st = { .view = v, .proc_fd = real_proc };
	ops_state_init(&st);
	struct fuse_session *se = fakefuse_new(&ops_table, sizeof(ops_table), &st, keep_answer);
	st.session = se;
	const struct fuse_open_in open_in = { .flags = O_RDONLY | O_DIRECTORY };
	fakefuse_send(se, FUSE_OPENDIR, view_proc_ino(), me.tid, &open_in, sizeof(open_in));
	cr_assert_eq(last_error, 0, "opendir: %s", g_strerror(-last_error));
	const uint64_t fh = ((const struct fuse_open_out *)last_payload)->fh;
	const uint64_t offsets[] = { 0, (UINT64_C(1) << 32) + 1, UINT64_C(1) << 32, INT64_MAX, UINT64_MAX };
	for (size_t i = 0; i < G_N_ELEMENTS(offsets); i++) {
		const struct fuse_read_in in = { .fh = fh, .offset = offsets[i], .size = 4096 };
		fakefuse_send(se, FUSE_READDIR, view_proc_ino(), me.tid, &in, sizeof(in));
		cr_assert_eq(last_error, 0, "readdir at %" G_GUINT64_FORMAT ": %s", offsets[i], g_strerror(-last_error));
		if (i == 0)
			cr_assert_gt(last_len, 0, "the listing from its start");
		else
			cr_assert_eq(last_len, 0, "readdir at %" G_GUINT64_FORMAT ": %zu bytes of entries, not the end",
				     offsets[i], last_len);
	}
	const struct fuse_release_in rel = { .fh = fh };
	fakefuse_send(se, FUSE_RELEASEDIR, view_proc_ino(), me.tid, &rel, sizeof(rel));
	fuse_session_destroy(se);
	ops_state_clear(&st);
}
