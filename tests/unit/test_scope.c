/* The container rule (fs/scope) on a fake procfs and a v2 tree in a
 * temporary directory: which cgroup a caller's figures come from, for a
 * caller in a container told of (rule 1), and for any other (rule 3: its
 * own cgroup if it or an ancestor limits it, else the host's files); the
 * caller rule; a cgroup namespace's root (rule 2's arithmetic, which the
 * mount tests check with real namespaces); the record a next daemon reads. */
#include "scope.h"

#include "tmptree.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static int proc_fd = -1, tree_fd = -1, sys_fd = -1;
static uint64_t ns_a, ns_b; /* pid namespaces: 100-102 and 300 are in a, 200-205 in b */

/* A pid namespace for tids: proc/<tid>/ns/pid, one file linked into each,
 * whose inode the daemon takes for the namespace. */
static uint64_t pid_ns(const char *name, const int *tids)
{
	g_autofree char *file = g_strdup_printf("proc/%s", name);
	tmptree_put(file, "");
	struct stat st;
	cr_assert_eq(fstatat(proc_fd, name, &st, 0), 0);
	for (; *tids; tids++) {
		g_autofree char *dir = g_strdup_printf("%d/ns", *tids);
		g_autofree char *link_path = g_strdup_printf("%d/ns/pid", *tids);
		mkdirat(proc_fd, dir, 0755);
		cr_assert_eq(linkat(proc_fd, name, proc_fd, link_path, 0), 0, "%s", link_path);
	}
	return (uint64_t)st.st_ino;
}

static void setup(void)
{
	tmptree_make();
	proc_fd = tmptree_open_dir("proc");
	tree_fd = tmptree_open_dir("cgroup");
	sys_fd = tmptree_open_dir("cpu");
	tmptree_put("cpu/online", "0-3\n");
	tmptree_put("cgroup/cpuset.cpus.effective", "0-3\n");
	tmptree_put("proc/100/cgroup", "0::/lxc/c1/init.scope\n");
	tmptree_put("proc/101/cgroup", "0::/lxc/c1/system.slice/x.service\n");
	tmptree_put("proc/102/cgroup", "0::/lxc/c1/nested/inner\n");
	tmptree_put("proc/200/cgroup", "0::/user.slice\n");
	tmptree_put("proc/201/cgroup", "0::/quota\n");
	tmptree_put("proc/202/cgroup", "0::/narrow\n");
	tmptree_put("proc/203/cgroup", "0::/limited/child\n");
	tmptree_put("proc/204/cgroup", "garbage\n");
	tmptree_put("proc/205/cgroup", "0::/limited/.lxc\n");
	/* The memory controller's files where it is enabled: memory.current
	 * with memory.max. */
	const char *memory[][2] = { { "user.slice", "max" },	{ "quota", "max" },
				    { "narrow", "max" },	{ "limited", "268435456" },
				    { "limited/child", "max" }, { "lxc/c1/init.scope", "max" } };
	for (size_t i = 0; i < G_N_ELEMENTS(memory); i++) {
		g_autofree char *max = g_strdup_printf("cgroup/%s/memory.max", memory[i][0]);
		g_autofree char *current = g_strdup_printf("cgroup/%s/memory.current", memory[i][0]);
		g_autofree char *text = g_strdup_printf("%s\n", memory[i][1]);
		tmptree_put(max, text);
		tmptree_put(current, "4096\n");
	}
	tmptree_put("cgroup/user.slice/cpu.max", "max 100000\n");
	tmptree_put("cgroup/quota/cpu.max", "150000 100000\n");
	tmptree_put("cgroup/narrow/cpuset.cpus.effective", "0-1\n");
	/* LXC's attach leaf: beside the container's init, no controller */
	tmptree_put("cgroup/limited/.lxc/cgroup.procs", "205\n");
	tmptree_put("proc/300/cgroup", "0::/other/x\n");
	ns_a = pid_ns("ns-a", (const int[]){ 100, 101, 102, 300, 0 });
	ns_b = pid_ns("ns-b", (const int[]){ 200, 201, 202, 203, 204, 205, 0 });
}

static void teardown(void)
{
	close(proc_fd);
	close(tree_fd);
	close(sys_fd);
	tmptree_remove();
}

TestSuite(scope, .init = setup, .fini = teardown);

static struct scope *make(enum scope_rule rule)
{
	const struct cgroup_hierarchy v2 = { CGROUP_V2, tree_fd, "/" };
	const struct scope_config cfg = {
		.proc_fd = proc_fd,
		.sys_cpu_fd = sys_fd,
		.cgroups = { .cpu = v2, .cpuset = v2, .memory = v2, .io = v2, .unified = v2 },
		.rule = rule,
	};
	return scope_new(&cfg);
}

/* What tid's figures come from: its memory cgroup, or "host". */
static char *found(struct scope *s, pid_t tid)
{
	struct scope_found f;
	cr_assert_eq(scope_find(s, tid, &f), 0, "tid %d", (int)tid);
	char *what = g_strdup(f.host ? "host" : f.paths.memory);
	scope_found_clear(&f);
	return what;
}

#define assert_found(s, tid, expected)                                                                             \
	do {                                                                                                       \
		g_autofree char *got_ = found(s, tid);                                                             \
		cr_assert_str_eq(got_, expected, "tid %d", (int)(tid));                                             \
	} while (0)

Test(scope, a_container_told_of_is_every_caller_below_it_wherever_its_init_went)
{
	struct scope *s = make(SCOPE_CONTAINER);
	cr_assert_eq(scope_add(s, ns_a, "0::/lxc/c1\n"), 0);
	assert_found(s, 100, "/lxc/c1");
	assert_found(s, 101, "/lxc/c1");
	assert_found(s, 102, "/lxc/c1");
	/* a second container of the namespace (a pod's), in a cgroup below */
	cr_assert_eq(scope_add(s, ns_a, "0::/lxc/c1/nested\n"), 0);
	assert_found(s, 102, "/lxc/c1/nested");
	assert_found(s, 100, "/lxc/c1");
	/* only callers of that namespace: one of another, in the same
	 * cgroup, follows rule 3 */
	tmptree_put("proc/200/cgroup", "0::/lxc/c1/init.scope\n");
	assert_found(s, 200, "host");
	/* the containers of a pid namespace go together */
	scope_remove(s, ns_a);
	assert_found(s, 100, "host");
	assert_found(s, 102, "host");
	scope_free(s);
}

Test(scope, another_caller_gets_its_own_cgroup_only_under_a_limit)
{
	struct scope *s = make(SCOPE_CONTAINER);
	assert_found(s, 200, "host");           /* no limit: the host */
	assert_found(s, 201, "/quota");         /* 1.5 CPUs of 4 */
	assert_found(s, 202, "/narrow");        /* CPUs 0-1 of 0-3 */
	assert_found(s, 203, "/limited/child"); /* a memory limit above */
	/* charged to the level above, which is limited (it was the host's) */
	assert_found(s, 205, "/limited/.lxc");
	scope_free(s);
}

Test(scope, the_caller_rule_gives_each_its_own_cgroup)
{
	struct scope *s = make(SCOPE_CALLER);
	cr_assert_eq(scope_add(s, ns_a, "0::/lxc/c1\n"), 0);
	assert_found(s, 100, "/lxc/c1/init.scope");
	assert_found(s, 200, "/user.slice");
	cr_assert_not(scope_decides_host(s));
	scope_free(s);
}

/* A caller whose scope cannot be found (gone, garbled, or its cgroup file
 * unreadable: EMFILE after the wait, say; here a directory: EISDIR) has
 * an error, not the host's files. */
Test(scope, a_gone_caller_a_garbled_and_an_unreadable_cgroup_file_are_errors)
{
	struct scope *s = make(SCOPE_CONTAINER);
	const struct cgroup_hierarchy v2 = { CGROUP_V2, tree_fd, "/" };
	struct scope_found f;
	tmptree_put("proc/206/cgroup/unreadable", "");
	cr_assert_eq(scope_find(s, 999, &f), -ENOENT);
	cr_assert_eq(scope_find(s, 204, &f), -EINVAL);
	cr_assert_eq(scope_find(s, 206, &f), -EISDIR);
	cr_assert_eq(scope_add(s, ns_a, "garbage\n"), -EINVAL);
	const pid_t tids[] = { 999, 204, 206 };
	for (size_t i = 0; i < G_N_ELEMENTS(tids); i++) {
		g_autofree char *dir = NULL;
		int r = scope_dir(s, tids[i], &v2, &dir);
		cr_assert_eq(r, -EIO, "tid %d: %d, \"%s\" (\"\": the host's files)", (int)tids[i], r, dir ? dir : "(none)");
	}
	scope_free(s);
}

Test(scope, scope_dir_names_the_directory_in_the_hierarchy)
{
	struct scope *s = make(SCOPE_CONTAINER);
	const struct cgroup_hierarchy v2 = { CGROUP_V2, tree_fd, "/" };
	cr_assert_eq(scope_add(s, ns_a, "0::/lxc/c1\n"), 0);
	g_autofree char *in_container = NULL, *host = NULL;
	cr_assert_eq(scope_dir(s, 101, &v2, &in_container), 0);
	cr_assert_eq(scope_dir(s, 200, &v2, &host), 0);
	cr_assert_str_eq(in_container, "lxc/c1");
	cr_assert_str_eq(host, "");
	scope_free(s);
}

Test(scope, the_record_gives_a_next_daemon_the_containers_of_each_namespace)
{
	struct scope *s = make(SCOPE_CONTAINER);
	cr_assert_eq(scope_add(s, ns_a, "0::/lxc/c1\n"), 0);
	cr_assert_eq(scope_add(s, ns_a, "0::/pod/second\n"), 0); /* a pod's second container */
	cr_assert_eq(scope_add(s, ns_a, "0::/lxc/c1\n"), 0);     /* known: once */
	cr_assert_eq(scope_add(s, ns_b, "0::/other\n"), 0);
	g_autofree char *dump = scope_dump(s);
	scope_free(s);

	struct scope *next = make(SCOPE_CONTAINER);
	cr_assert_eq(scope_add_from(next, dump, ns_a), 2);
	g_autofree char *garbage = g_strdup_printf("not a record\n%" G_GUINT64_FORMAT "\n", ns_a);
	cr_assert_eq(scope_add_from(next, garbage, ns_a), 0);
	assert_found(next, 100, "/lxc/c1");
	tmptree_put("proc/200/cgroup", "0::/other/x\n");
	assert_found(next, 200, "host"); /* namespace b was not taken over */
	scope_free(next);
}

Test(scope, a_cgroup_namespace_root_is_the_callers_path_at_the_depth_the_daemon_sees_it)
{
	const struct cgroup_hierarchy none = { CGROUP_NONE, -1, NULL };
	const struct cgroup_config v1 = {
		.cpu = { CGROUP_V1, 3, "/" }, .cpuset = none, .memory = { CGROUP_V1, 4, "/" },
		.cpuacct = none, .io = none, .unified = none,
	};
	/* The daemon in /sys.slice/d: inside a namespace rooted at /t/c, it is
	 * /../../sys.slice/d (memory); at / (cpu), /sys.slice/d. */
	const char *own = "4:memory:/sys.slice/d\n1:cpu:/sys.slice/d\n";
	const char *own_in = "4:memory:/../../sys.slice/d\n1:cpu:/sys.slice/d\n";
	struct cgroup_paths root = { 0 };
	cr_assert_eq(scope_ns_root("4:memory:/t/c/b\n1:cpu:/k\n", own, own_in, &v1, &root), 0);
	cr_assert_str_eq(root.memory, "/t/c");
	cr_assert_str_eq(root.cpu, "/");
	cgroup_paths_clear(&root);
	/* Wherever below the root the caller is: c/c/b, or the root itself. A
	 * root found as the caller's path less its path inside, read at
	 * another moment (in c/c/b, /c/b), was /t for c/b: a move between the
	 * two reads made the container's parent its root. */
	const char *const callers[] = { "4:memory:/t/c/c/b\n1:cpu:/\n", "4:memory:/t/c\n1:cpu:/\n" };
	for (size_t i = 0; i < G_N_ELEMENTS(callers); i++) {
		cr_assert_eq(scope_ns_root(callers[i], own, own_in, &v1, &root), 0);
		cr_assert_str_eq(root.memory, "/t/c", "%s", callers[i]);
		cgroup_paths_clear(&root);
	}
	/* The daemon inside the root: its path inside has no "..". */
	cr_assert_eq(scope_ns_root("4:memory:/sys.slice/x\n1:cpu:/\n", own, "4:memory:/d\n1:cpu:/sys.slice/d\n",
				   &v1, &root), 0);
	cr_assert_str_eq(root.memory, "/sys.slice");
	cgroup_paths_clear(&root);
	/* A caller not below the root's depth, or not sharing the daemon's
	 * side of it; a daemon path inside that does not end as its own. */
	cr_assert_eq(scope_ns_root("4:memory:/t\n1:cpu:/\n", own, own_in, &v1, &root), -EINVAL);
	cr_assert_eq(scope_ns_root("4:memory:/t/c\n1:cpu:/\n", own, "4:memory:/../../x/d\n1:cpu:/\n", &v1, &root),
		     -EINVAL);
	cr_assert_eq(scope_ns_root("4:memory:/t/c\n1:cpu:/\n", own, "4:memory:/../../sys.slice/d\n", &v1, &root),
		     -EINVAL);
}
