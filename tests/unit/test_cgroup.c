/* Reading limits from fixture hierarchies in tests/fixtures/cgroup:
 * v1-cpu, v1-cpuset, v1-cpuset-old (no effective_cpus), v1-cpuset-empty, v2. */
#include "cgroup.h"

#include "cleanup.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static int open_fixture(const char *name)
{
	g_autofree char *path = g_build_filename(g_getenv("CGPROCFS_FIXTURES"), "cgroup", name, NULL);
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(fd, 0, "%s", path);
	return fd;
}

static struct cgroup_hierarchy v1(int fd)
{
	return (struct cgroup_hierarchy){ CGROUP_V1, fd, "/" };
}

static struct cgroup_hierarchy v2(int fd)
{
	return (struct cgroup_hierarchy){ CGROUP_V2, fd, "/" };
}

static const struct cgroup_hierarchy none = { CGROUP_NONE, -1, NULL };

/* Limits of the cgroups (cpu path, cpuset path); r is the return value. */
static int limits(struct cgroup_hierarchy cpu, const char *cpu_path, struct cgroup_hierarchy cpuset,
		  const char *cpuset_path, struct cgroup_limits *ret, char **culprit)
{
	const struct cgroup_config cfg = { .cpu = cpu, .cpuset = cpuset, .memory = none, .cpuacct = none };
	struct cgroup_paths p = { .cpu = (char *)cpu_path, .cpuset = (char *)cpuset_path };
	return cgroup_read_limits(&cfg, &p, ret, culprit);
}

static unsigned quota_cpus(const struct cgroup_limits *l)
{
	cr_assert(l->has_quota);
	return cgroup_quota_cpus(l->quota_us, l->period_us);
}

static char *cpus(const struct cgroup_limits *l)
{
	cr_assert(l->has_cpuset);
	return cpuset_format_list(&l->cpuset);
}

Test(cgroup, v1_quota_is_the_smallest_over_ancestors)
{
	_cleanup_close_ int fd = open_fixture("v1-cpu");
	struct cgroup_limits l;
	/* a: 1 CPU, a/b: 3 CPUs: the ancestor wins */
	cr_assert_eq(limits(v1(fd), "/a/b", none, NULL, &l, NULL), 0);
	cr_assert_eq(quota_cpus(&l), 1);
	cr_assert_eq(limits(v1(fd), "/unlimited", none, NULL, &l, NULL), 0);
	cr_assert_not(l.has_quota, "-1 everywhere is no limit");
	cr_assert_not(l.has_cpuset);
}

Test(cgroup, fractional_quotas_round_up)
{
	_cleanup_close_ int fd = open_fixture("v1-cpu");
	struct cgroup_limits l;
	cr_assert_eq(limits(v1(fd), "/half", none, NULL, &l, NULL), 0);
	cr_assert_eq(quota_cpus(&l), 1);
	cr_assert_eq(limits(v1(fd), "/oneandhalf", none, NULL, &l, NULL), 0);
	cr_assert_eq(quota_cpus(&l), 2);
	cr_assert_eq(cgroup_quota_cpus(1, 1000000), 1, "never 0");
}

Test(cgroup, v1_bad_quota_files_are_einval_and_named)
{
	_cleanup_close_ int fd = open_fixture("v1-cpu");
	const char *bad[] = { "/bad-zero", "/bad-period", "/bad-garbage", "/bad-negative", "/bad-overflow" };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct cgroup_limits l = { .has_quota = 77 };
		g_autofree char *culprit = NULL;
		cr_assert_eq(limits(v1(fd), bad[i], none, NULL, &l, &culprit), -EINVAL, "%s", bad[i]);
		cr_assert_not_null(culprit);
		cr_assert(strstr(culprit, bad[i] + 1) != NULL, "%s names %s", culprit, bad[i]);
		cr_assert_eq(l.has_quota, 77, "untouched on failure");
	}
}

Test(cgroup, a_vanished_cgroup_is_enoent)
{
	_cleanup_close_ int fd = open_fixture("v1-cpu");
	struct cgroup_limits l;
	cr_assert_eq(limits(v1(fd), "/gone/away", none, NULL, &l, NULL), -ENOENT);
	cr_assert_eq(limits(none, NULL, v1(fd), "/gone", &l, NULL), -ENOENT);
}

Test(cgroup, a_cgroup_outside_the_namespace_is_enoent_not_above_the_mount)
{
	/* "/../v2/a/b" would lead out of the mount and back into this very
	 * fixture: it must not be followed. */
	_cleanup_close_ int fd = open_fixture("v2");
	struct cgroup_limits l;
	cr_assert_eq(limits(v2(fd), "/a/b", v2(fd), "/a/b", &l, NULL), 0);
	cr_assert_eq(limits(v2(fd), "/../v2/a/b", none, NULL, &l, NULL), -ENOENT);
	cr_assert_eq(limits(none, NULL, v2(fd), "/a/../../v2/a/b", &l, NULL), -ENOENT);
}

Test(cgroup, v1_cpusets_with_holes)
{
	_cleanup_close_ int fd = open_fixture("v1-cpuset");
	struct cgroup_limits l;
	cr_assert_eq(limits(none, NULL, v1(fd), "/holes", &l, NULL), 0);
	g_autofree char *got = cpus(&l);
	cr_assert_str_eq(got, "0,2-3,7");
	cr_assert_not(l.has_quota);
}

Test(cgroup, v1_empty_cpuset_levels_inherit_from_ancestors)
{
	_cleanup_close_ int fd = open_fixture("v1-cpuset-old");
	struct cgroup_limits l;
	cr_assert_eq(limits(none, NULL, v1(fd), "/parent/child", &l, NULL), 0);
	g_autofree char *got = cpus(&l);
	cr_assert_str_eq(got, "1-2");
}

Test(cgroup, an_empty_or_garbage_cpuset_is_einval)
{
	_cleanup_close_ int empty = open_fixture("v1-cpuset-empty");
	_cleanup_close_ int set = open_fixture("v1-cpuset");
	struct cgroup_limits l;
	cr_assert_eq(limits(none, NULL, v1(empty), "/x", &l, NULL), -EINVAL);
	cr_assert_eq(limits(none, NULL, v1(set), "/bad-garbage", &l, NULL), -EINVAL);
}

Test(cgroup, v2_cpu_max_and_effective_cpus)
{
	_cleanup_close_ int fd = open_fixture("v2");
	struct cgroup_limits l;
	cr_assert_eq(limits(v2(fd), "/a/b", v2(fd), "/a/b", &l, NULL), 0);
	g_autofree char *got = cpus(&l);
	cr_assert_str_eq(got, "2-3");
	cr_assert_eq(quota_cpus(&l), 1);
	cr_assert_eq(limits(v2(fd), "/a", v2(fd), "/a", &l, NULL), 0);
	cr_assert_not(l.has_quota, "max is no limit");
	/* nested: the parent's 1 CPU wins over the child's 2.5 */
	cr_assert_eq(limits(v2(fd), "/nested/inner", v2(fd), "/nested/inner", &l, NULL), 0);
	cr_assert_eq(quota_cpus(&l), 1);
	/* no cpuset.cpus.effective at the level: the nearest ancestor's */
	cr_assert_eq(limits(v2(fd), "/nocpuset", v2(fd), "/nocpuset", &l, NULL), 0);
	g_autofree char *inherited = cpus(&l);
	cr_assert_str_eq(inherited, "0-3");
	cr_assert_eq(limits(v2(fd), "/", v2(fd), "/", &l, NULL), 0);
	cr_assert_not(l.has_quota, "the root has no cpu.max");
}

Test(cgroup, v2_bad_cpu_max_is_einval)
{
	_cleanup_close_ int fd = open_fixture("v2");
	const char *bad[] = { "/bad-garbage", "/bad-period", "/bad-fields" };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct cgroup_limits l;
		g_autofree char *culprit = NULL;
		cr_assert_eq(limits(v2(fd), bad[i], none, NULL, &l, &culprit), -EINVAL, "%s", bad[i]);
		cr_assert(g_str_has_suffix(culprit, "cpu.max"));
	}
}

Test(cgroup, hybrid_quota_from_v1_cpuset_from_v2)
{
	_cleanup_close_ int cpu = open_fixture("v1-cpu");
	_cleanup_close_ int unified = open_fixture("v2");
	struct cgroup_limits l;
	cr_assert_eq(limits(v1(cpu), "/half", v2(unified), "/a/b", &l, NULL), 0);
	cr_assert_eq(quota_cpus(&l), 1);
	g_autofree char *got = cpus(&l);
	cr_assert_str_eq(got, "2-3");
}

Test(cgroup, a_mounted_subtree_strips_its_root)
{
	_cleanup_close_ int fd = open_fixture("v1-cpu");
	/* the hierarchy mounted from /kubepods: /kubepods/a/b is a/b here */
	struct cgroup_hierarchy sub = { CGROUP_V1, fd, "/kubepods" };
	struct cgroup_limits l;
	cr_assert_eq(limits(sub, "/kubepods/a/b", none, NULL, &l, NULL), 0);
	cr_assert_eq(quota_cpus(&l), 1);
	cr_assert_eq(limits(sub, "/elsewhere", none, NULL, &l, NULL), -ENOENT);
	cr_assert_eq(limits(sub, "/kubepodsX/a", none, NULL, &l, NULL), -ENOENT);
}

Test(cgroup, membership_lines_pick_each_controllers_hierarchy)
{
	const struct cgroup_config cfg = { { CGROUP_V1, 3, "/" }, { CGROUP_V1, 4, "/" }, { CGROUP_V1, 5, "/" },
					   { CGROUP_V1, 6, "/" }, { CGROUP_V1, 7, "/" }, { CGROUP_V2, 8, "/" } };
	const char *text = "12:pids:/x\n7:blkio:/disk\n6:cpuacct:/acct\n5:memory:/m\n4:cpuset:/holes\n3:cpu,cpuacct:/a/b\n"
			   "1:name=systemd:/\n0::/unified\n";
	struct cgroup_paths p;
	cr_assert_eq(cgroup_parse_membership(text, &cfg, &p), 0);
	cr_assert_str_eq(p.cpu, "/a/b");
	cr_assert_str_eq(p.cpuset, "/holes");
	cr_assert_str_eq(p.memory, "/m");
	cr_assert_str_eq(p.cpuacct, "/acct");
	cr_assert_str_eq(p.io, "/disk", "v1's blkio");
	cr_assert_str_eq(p.unified, "/unified", "a hybrid's v2 hierarchy");
	cgroup_paths_clear(&p);

	const struct cgroup_config unified = { { CGROUP_V2, 3, "/" }, { CGROUP_V2, 3, "/" }, { CGROUP_V2, 3, "/" },
					       { CGROUP_NONE, -1, NULL }, { CGROUP_V2, 3, "/" }, { CGROUP_V2, 3, "/" } };
	cr_assert_eq(cgroup_parse_membership("0::/system.slice/x:y.scope\n", &unified, &p), 0);
	cr_assert_str_eq(p.cpu, "/system.slice/x:y.scope", "paths may hold ':'");
	cr_assert_str_eq(p.cpuset, "/system.slice/x:y.scope");
	cr_assert_str_eq(p.memory, "/system.slice/x:y.scope");
	cr_assert_str_eq(p.io, "/system.slice/x:y.scope");
	cgroup_paths_clear(&p);

	const struct cgroup_config neither = { none, none, none, none, none, none };
	cr_assert_eq(cgroup_parse_membership(text, &neither, &p), 0);
	cr_assert_null(p.cpu);
	cr_assert_eq(cgroup_parse_membership("garbage\n", &cfg, &p), -EINVAL);
	cr_assert_eq(cgroup_parse_membership("1:cpu:relative\n", &cfg, &p), -EINVAL);
}
