#include "caller.h"

#include "cleanup.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534
#define EXTRA_GROUP 4242

Test(caller, parses_groups_and_effective_caps)
{
	const char *text = "Name:\tx\nUid:\t0\t0\t0\t0\nGroups:\t4 24 27 \nCapInh:\t0\n"
			   "CapEff:\t000001ffffffffff\n";
	struct caller_status st;
	cr_assert_eq(caller_parse_status(text, strlen(text), &st), 0);
	cr_assert_eq(st.cap_effective, 0x1ffffffffffULL);
	cr_assert_eq(st.groups->len, 3);
	cr_assert_eq(g_array_index(st.groups, gid_t, 2), 27);
	g_array_unref(st.groups);
}

Test(caller, parses_the_filesystem_ids_of_the_objective_credentials)
{
	const char *text = "Uid:\t1000\t0\t0\t65534\nGid:\t5\t6\t7\t8\nGroups:\t\nCapEff:\t0\n";
	struct caller_status st;
	cr_assert_eq(caller_parse_status(text, strlen(text), &st), 0);
	cr_assert_eq(st.fsuid, 65534);
	cr_assert_eq(st.fsgid, 8);
	g_array_unref(st.groups);
	const char *none = "Groups:\t\nCapEff:\t0\n";
	cr_assert_eq(caller_parse_status(none, strlen(none), &st), 0);
	cr_assert_eq(st.fsuid, (uid_t)-1, "no Uid line: no fsuid to match a request's");
	g_array_unref(st.groups);
	const char *cut = "Uid:\t1\t2\t3\nGroups:\t\nCapEff:\t0\n";
	cr_assert_eq(caller_parse_status(cut, strlen(cut), &st), -EINVAL);
}

Test(caller, empty_groups_line_is_no_groups)
{
	const char *text = "Groups:\t\nCapEff:\t0000000000000000\n";
	struct caller_status st;
	cr_assert_eq(caller_parse_status(text, strlen(text), &st), 0);
	cr_assert_eq(st.groups->len, 0);
	cr_assert_eq(st.cap_effective, 0);
	g_array_unref(st.groups);
}

Test(caller, missing_or_garbage_fields_are_einval)
{
	struct caller_status st;
	const char *bad[] = { "", "Groups:\t1\n", "CapEff:\t0\n", "Groups:\tx\nCapEff:\t0\n",
			      "Groups:\t1\nCapEff:\tzz\n" };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		cr_assert_eq(caller_parse_status(bad[i], strlen(bad[i]), &st), -EINVAL, "%s", bad[i]);
}

/* A real process with the given credentials, alive until reaped. With
 * exec_sleep it execs sleep after taking them, as a login would; without,
 * it makes itself not dumpable (as a process that changed its ids without
 * exec is), which the kernel shields from others. */
static pid_t spawn_process(uid_t uid, gid_t gid, gid_t extra_group, gboolean exec_sleep)
{
	int ready[2];
	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		gid_t groups[] = { extra_group };
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setgroups(extra_group ? 1 : 0, groups) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			_exit(1);
		if (exec_sleep)
			execl("/bin/sleep", "sleep", "600", (char *)NULL);
		else if (prctl(PR_SET_DUMPABLE, 0) == 0 && close(ready[1]) == 0)
			pause();
		_exit(1);
	}
	char c;
	close(ready[1]);
	/* EOF once exec, or the process itself, closed the pipe */
	cr_assert_eq(read(ready[0], &c, 1), 0, "the process could not start");
	close(ready[0]);
	return pid;
}

/* A process to stand as the caller. */
static pid_t spawn_caller(uid_t uid, gid_t gid, gid_t extra_group)
{
	return spawn_process(uid, gid, extra_group, TRUE);
}

/* pid, once it runs sleep (within 2 s; else the test fails saying why). */
static pid_t once_sleeping(pid_t pid, const char *why)
{
	for (int i = 0; i < 200; i++) {
		char path[64], exe[64] = "";
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
		ssize_t n = readlink(path, exe, sizeof(exe) - 1);
		if (n > 0 && strstr(exe, "sleep"))
			return pid;
		g_usleep(10000);
	}
	cr_assert_fail("%s", why);
	return -1;
}

/* As spawn_caller, but the process runs in a user namespace of its own in
 * which it is root (a rootless container). */
static pid_t spawn_userns_caller(void)
{
	int ready[2];
	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(1);
		execl("/usr/bin/unshare", "unshare", "--user", "--map-root-user", "/bin/sleep", "600",
		      (char *)NULL);
		_exit(1);
	}
	char c;
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 0);
	close(ready[0]);
	/* unshare execs sleep once the namespace is set up */
	return once_sleeping(pid, "unshare --user did not start sleep");
}

/* A process of an unprivileged container: root of a user namespace that
 * root made, mapping 0 to host uid 1000000, which execs sleep as its root
 * (so it runs as host uid 1000000, as an Incus container's init does). */
static pid_t spawn_rootmade_userns_process(void)
{
	int made[2], mapped[2];
	cr_assert_eq(pipe2(made, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(mapped, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char c;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWUSER) < 0 || write(made[1], "u", 1) != 1 || read(mapped[0], &c, 1) != 1 ||
		    setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
			_exit(1);
		execl("/bin/sleep", "sleep", "600", (char *)NULL);
		_exit(1);
	}
	char c;
	close(made[1]);
	close(mapped[0]);
	cr_assert_eq(read(made[0], &c, 1), 1, "the process could not make its user namespace");
	const char *files[][2] = { { "setgroups", "deny" }, { "uid_map", "0 1000000 65536" },
				   { "gid_map", "0 1000000 65536" } };
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
		g_autofree char *path = g_strdup_printf("/proc/%d/%s", (int)pid, files[i][0]);
		_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
		size_t n = strlen(files[i][1]);
		cr_assert_eq(write(fd, files[i][1], n), (ssize_t)n, "%s", path);
	}
	cr_assert_eq(write(mapped[1], "g", 1), 1);
	close(made[0]);
	close(mapped[1]);
	return once_sleeping(pid, "the user namespace's process did not exec sleep");
}

/* A root process (euid 0, in the host's user namespace) with no effective
 * capabilities, as a container's root without CAP_SYS_PTRACE. */
static pid_t spawn_capless_root(void)
{
	int ready[2];
	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = { 0 };
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (syscall(SYS_capset, &hdr, none) == 0 && close(ready[1]) == 0)
			pause();
		_exit(1);
	}
	char c;
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 0, "the process could not start");
	close(ready[0]);
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void require_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("acting as another user needs root");
}

static char *make_file(mode_t mode, gid_t gid)
{
	char *path = g_strdup("/tmp/cgprocfs-caller-XXXXXX");
	_cleanup_close_ int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "secret", 6), 6);
	cr_assert_eq(fchown(fd, 0, gid), 0);
	cr_assert_eq(fchmod(fd, mode), 0);
	return path;
}

struct creds_snapshot {
	uid_t euid;
	uid_t fsuid;
	gid_t fsgid;
	struct __user_cap_data_struct caps[2];
	int ngroups;
};

static struct creds_snapshot snapshot(void)
{
	struct creds_snapshot s = { 0 };
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	s.euid = geteuid();
	s.fsuid = (uid_t)setfsuid((uid_t)-1);
	s.fsgid = (gid_t)setfsgid((gid_t)-1);
	cr_assert_eq(syscall(SYS_capget, &hdr, s.caps), 0);
	s.ngroups = getgroups(0, NULL);
	return s;
}

/* This thread's credentials are as they were in before. */
static void assert_restored(const struct creds_snapshot *before)
{
	struct creds_snapshot after = snapshot();
	cr_assert_eq(after.euid, before->euid, "euid restored");
	cr_assert_eq(after.fsuid, before->fsuid, "fsuid restored");
	cr_assert_eq(after.fsgid, before->fsgid, "fsgid restored");
	cr_assert(memcmp(after.caps, before->caps, sizeof(before->caps)) == 0, "capabilities restored");
	cr_assert_eq(after.ngroups, before->ngroups, "groups restored");
}

Test(caller, open_as_another_user_is_checked_by_the_kernel)
{
	require_root();
	_cleanup_close_ int proc = open("/proc", O_RDONLY | O_DIRECTORY);
	g_autofree char *secret = make_file(0600, 0);
	pid_t nobody = spawn_caller(NOBODY, NOBODY, 0);
	struct caller c = { .tid = nobody, .uid = NOBODY, .gid = NOBODY, .proc_fd = proc, .pid_ns_fd = -1 };
	struct caller me = { .tid = (pid_t)syscall(SYS_gettid), .uid = 0, .gid = 0, .proc_fd = proc, .pid_ns_fd = -1 };
	struct creds_snapshot before = snapshot();
	int fd = -7;

	cr_assert_eq(caller_openat(&c, 0, AT_FDCWD, secret, O_RDONLY, &fd), -EACCES);
	cr_assert_eq(fd, -7, "untouched on failure");
	cr_assert_eq(caller_openat(&me, 0, AT_FDCWD, secret, O_RDONLY, &fd), 0);
	close(fd);

	assert_restored(&before);
	reap(nobody);
	unlink(secret);
}

Test(caller, a_process_that_is_not_dumpable_still_gets_at_its_own_files)
{
	require_root();
	_cleanup_close_ int proc = open("/proc", O_RDONLY | O_DIRECTORY);
	pid_t self = spawn_process(NOBODY, NOBODY, 0, FALSE);
	pid_t other = spawn_caller(NOBODY, NOBODY, 0);
	struct caller c = { .tid = self, .uid = NOBODY, .gid = NOBODY, .proc_fd = proc, .pid_ns_fd = -1 };
	struct caller o = { .tid = other, .uid = NOBODY, .gid = NOBODY, .proc_fd = proc, .pid_ns_fd = -1 };
	char path[48];
	int fd = -1;
	g_autofree char *target = NULL;

	snprintf(path, sizeof(path), "%d/smaps_rollup", (int)self);
	cr_assert_eq(caller_openat(&c, self, proc, path, O_RDONLY, &fd), 0, "its own smaps_rollup");
	close(fd);
	/* Another process of the same user may not: the kernel asks for
	 * CAP_SYS_PTRACE where the target is not dumpable. */
	cr_assert_eq(caller_openat(&o, self, proc, path, O_RDONLY, &fd), -EACCES, "another's");
	snprintf(path, sizeof(path), "%d/exe", (int)self);
	cr_assert_eq(caller_readlinkat(&c, self, proc, path, &target), 0, "its own exe link");
	reap(self);
	reap(other);
}

Test(caller, supplementary_groups_of_the_caller_count)
{
	require_root();
	_cleanup_close_ int proc = open("/proc", O_RDONLY | O_DIRECTORY);
	g_autofree char *shared = make_file(0640, EXTRA_GROUP);
	pid_t member = spawn_caller(NOBODY, NOBODY, EXTRA_GROUP);
	pid_t outsider = spawn_caller(NOBODY, NOBODY, 0);
	struct caller m = { .tid = member, .uid = NOBODY, .gid = NOBODY, .proc_fd = proc, .pid_ns_fd = -1 };
	struct caller o = { .tid = outsider, .uid = NOBODY, .gid = NOBODY, .proc_fd = proc, .pid_ns_fd = -1 };
	int fd = -1;

	cr_assert_eq(caller_openat(&m, 0, AT_FDCWD, shared, O_RDONLY, &fd), 0);
	close(fd);
	cr_assert_eq(caller_openat(&o, 0, AT_FDCWD, shared, O_RDONLY, &fd), -EACCES);
	reap(member);
	reap(outsider);
	unlink(shared);
}

Test(caller, another_users_process_memory_is_refused_and_own_is_allowed)
{
	require_root();
	_cleanup_close_ int proc = open("/proc", O_RDONLY | O_DIRECTORY);
	pid_t rootproc = spawn_caller(0, 0, 0);
	pid_t nobody = spawn_caller(NOBODY, NOBODY, 0);
	struct caller c = { .tid = nobody, .uid = NOBODY, .gid = NOBODY, .proc_fd = proc, .pid_ns_fd = -1 };
	char theirs[64], mine[64];
	int fd = -1;

	snprintf(theirs, sizeof(theirs), "%d/smaps_rollup", (int)rootproc);
	snprintf(mine, sizeof(mine), "%d/smaps_rollup", (int)nobody);
	cr_assert_eq(caller_openat(&c, rootproc, proc, theirs, O_RDONLY, &fd), -EACCES);
	cr_assert_eq(caller_openat(&c, nobody, proc, mine, O_RDONLY, &fd), 0);
	close(fd);
	g_autofree char *target = NULL;
	snprintf(theirs, sizeof(theirs), "%d/exe", (int)rootproc);
	cr_assert_eq(caller_readlinkat(&c, rootproc, proc, theirs, &target), -EACCES);
	cr_assert_null(target);
	reap(rootproc);
	reap(nobody);
}

Test(caller, a_caller_that_is_gone_gets_nothing)
{
	require_root();
	_cleanup_close_ int proc = open("/proc", O_RDONLY | O_DIRECTORY);
	pid_t gone = spawn_caller(0, 0, 0);
	reap(gone);
	struct caller c = { .tid = gone, .uid = 0, .gid = 0, .proc_fd = proc, .pid_ns_fd = -1 };
	int fd = -1;
	cr_assert_eq(caller_openat(&c, 0, proc, "self/status", O_RDONLY, &fd), -EACCES);
}

Test(caller, a_caller_in_a_user_namespace_reaches_its_own_processes_only)
{
	require_root();
	_cleanup_close_ int proc = open("/proc", O_RDONLY | O_DIRECTORY);
	pid_t inside = spawn_userns_caller();
	pid_t outside = spawn_caller(NOBODY, NOBODY, 0);
	struct caller c = { .tid = inside, .uid = NOBODY, .gid = NOBODY, .proc_fd = proc, .pid_ns_fd = -1 };
	char mine[64], theirs[64];
	int fd = -1;

	snprintf(mine, sizeof(mine), "%d/smaps_rollup", (int)inside);
	snprintf(theirs, sizeof(theirs), "%d/smaps_rollup", (int)outside);
	/* The real procfs, asked by the caller itself, decides the same way. */
	cr_assert_eq(caller_openat(&c, inside, proc, mine, O_RDONLY, &fd), 0);
	close(fd);
	cr_assert_eq(caller_openat(&c, outside, proc, theirs, O_RDONLY, &fd), -EACCES,
		     "same uid, but outside the caller's user namespace");
	reap(inside);
	reap(outside);
}

Test(caller, an_unprivileged_containers_process_is_refused_to_others_as_the_kernel_refuses_it)
{
	require_root();
	_cleanup_close_ int proc = open("/proc", O_RDONLY | O_DIRECTORY);
	pid_t contained = spawn_rootmade_userns_process();
	pid_t nobody = spawn_caller(NOBODY, NOBODY, 0);
	pid_t capless = spawn_capless_root();
	struct caller n = { .tid = nobody, .uid = NOBODY, .gid = NOBODY, .proc_fd = proc, .pid_ns_fd = -1 };
	struct caller r = { .tid = capless, .uid = 0, .gid = 0, .proc_fd = proc, .pid_ns_fd = -1 };
	struct creds_snapshot before = snapshot();
	char smaps[64], exe[64];
	g_autofree char *target = NULL;
	int fd = -1;

	snprintf(smaps, sizeof(smaps), "%d/smaps_rollup", (int)contained);
	snprintf(exe, sizeof(exe), "%d/exe", (int)contained);
	/* The kernel gives the namespace's owner (root, by euid) every
	 * capability in it: an acting thread that kept euid 0 got in. */
	cr_assert_eq(caller_openat(&n, contained, proc, smaps, O_RDONLY, &fd), -EACCES, "nobody's open");
	cr_assert_eq(caller_readlinkat(&n, contained, proc, exe, &target), -EACCES, "nobody's readlink");
	assert_restored(&before);
	/* Which is why root without capabilities does get in. */
	cr_assert_eq(caller_openat(&r, contained, proc, smaps, O_RDONLY, &fd), 0, "the owner's open");
	close(fd);
	assert_restored(&before);
	reap(contained);
	reap(nobody);
	reap(capless);
}

Test(caller, a_failed_restore_is_eio_and_retried_before_acting_as_anyone_again)
{
	require_root();
	_cleanup_close_ int proc = open("/proc", O_RDONLY | O_DIRECTORY);
	g_autofree char *open_to_all = make_file(0644, 0);
	pid_t nobody = spawn_caller(NOBODY, NOBODY, 0);
	struct caller c = { .tid = nobody, .uid = NOBODY, .gid = NOBODY, .proc_fd = proc, .pid_ns_fd = -1 };
	struct creds_snapshot before = snapshot();
	uint64_t failures = caller_restore_failures();
	int fd = -7;

	caller_inject_restore_failures(1);
	cr_assert_eq(caller_openat(&c, 0, AT_FDCWD, open_to_all, O_RDONLY, &fd), -EIO);
	cr_assert_eq(fd, -7, "untouched on failure");
	cr_assert_eq(caller_restore_failures(), failures + 1);
	cr_assert_eq(snapshot().fsuid, NOBODY, "still the caller's: fewer rights, never more");

	/* The next call gets the daemon's credentials back first. */
	cr_assert_eq(caller_openat(&c, 0, AT_FDCWD, open_to_all, O_RDONLY, &fd), 0);
	close(fd);
	assert_restored(&before);

	/* A retry that fails too: nobody is acted as, until one succeeds. */
	caller_inject_restore_failures(2);
	cr_assert_eq(caller_openat(&c, 0, AT_FDCWD, open_to_all, O_RDONLY, &fd), -EIO);
	cr_assert_eq(caller_restored(), -EIO);
	cr_assert_eq(caller_restore_failures(), failures + 3);
	cr_assert_eq(caller_restored(), 0);
	cr_assert_eq(snapshot().fsuid, before.fsuid);
	cr_assert_eq(caller_restored(), 0, "nothing left to restore");
	reap(nobody);
	unlink(open_to_all);
}
