/* sched_getaffinity(2) for containers whose CPU view is in place
 * (affinity.h). The rule (issue 55): the kernel's own checks and errors
 * first (a length it refuses, a pid it does not know, a buffer it cannot
 * write: each left to it); then the kernel's mask K of the target thread,
 * read by the daemon, and the caller's view of N CPUs: where K has more
 * than N, the answer is N CPUs of K (fs/affinity-mask.h), as many bytes as
 * the kernel would copy, and its return value. */
#include "affinity.h"

#include "affinity-mask.h"
#include "cleanup.h"
#include "metrics.h"
#include "procfile.h"
#include "seccomp-state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KERNEL_MASK_MAX 1024 /* bytes: 8192 CPUs, the largest NR_CPUS */
#define I386_SCHED_GETAFFINITY 242
/* Tasks whose status is read at most to find one pid of a caller's
 * container: its own threads, then its container cgroup's tasks. Each
 * one read is kept (and checked again at its use), and not read again
 * for SEEN_S: a caller asking for pids that are not there over and over
 * costs a read of its cgroup's task list, and of its new tasks' status
 * (a host tid reused within SEEN_S is found only after it). */
#define SCAN_MAX 4096
#define SEEN_S 10
/* Tids kept as read at most (a node's tasks): past it the table starts over. */
#define SEEN_MAX 65536
/* Pids kept at most: past it the table starts over. */
#define FOUND_MAX 4096

/* Why a call was left to the kernel. */
enum reason {
	R_OFF,          /* --no-affinity */
	R_ARCH,         /* i386, x32: the kernel's */
	R_EINVAL,       /* a length the kernel refuses (or the kernel's size unknown) */
	R_NOT_IN_PLACE, /* the caller's /sys/devices/system/cpu is not the view's */
	R_OUTSIDE,      /* a pid not found in the caller's container (ESRCH, or not ours) */
	R_NO_MASK,      /* the target's mask or the caller's CPUs could not be had */
	R_UNLIMITED,    /* the caller's view is the host's */
	R_PINNED,       /* the kernel's mask has N CPUs or fewer */
	R_FAULT,        /* the buffer is not writable, or the caller went */
	R_ANSWER,       /* none: answered */
};
static const char *const reason_names[R_ANSWER] = { "off",     "arch",      "einval", "not_in_place", "outside",
						     "no_mask", "unlimited", "pinned", "fault" };

struct affinity {
	struct affinity_config cfg;
	size_t mask_size; /* the kernel's cpumask_size(): the most it copies; 0 unknown */
	size_t min_len;   /* the smallest length it accepts; 0 unknown */
	GMutex lock;      /* guards found and seen */
	GHashTable *found; /* pid ns inode << 32 | pid in it -> host tid (as a pointer) */
	GHashTable *seen;  /* host tid -> monotonic s its status was read, + 1 (as pointers) */
	gint answered;
	gint continued[R_ANSWER];
};

struct affinity *affinity_new(const struct affinity_config *cfg)
{
	struct affinity *a = g_new0(struct affinity, 1);
	uint8_t buf[KERNEL_MASK_MAX];
	a->cfg = *cfg;
	g_mutex_init(&a->lock);
	a->found = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	a->seen = g_hash_table_new(g_direct_hash, g_direct_equal);
	/* Measured, never computed: cpumask_size() depends on the kernel's
	 * build (NR_CPUS, CPUMASK_OFFSTACK). */
	long n = syscall(SYS_sched_getaffinity, 0, sizeof(buf), buf);
	a->mask_size = n > 0 ? (size_t)n : 0;
	for (size_t len = 8; len <= sizeof(buf) && a->min_len == 0; len += 8)
		if (syscall(SYS_sched_getaffinity, 0, len, buf) >= 0 || errno != EINVAL)
			a->min_len = len;
	if (a->mask_size == 0 || a->min_len == 0)
		g_warning("cannot measure the kernel's CPU mask (%s): containers' sched_getaffinity(2) stays the kernel's",
			  g_strerror(errno));
	return a;
}

void affinity_free(struct affinity *a)
{
	if (!a)
		return;
	g_hash_table_unref(a->found);
	g_hash_table_unref(a->seen);
	g_mutex_clear(&a->lock);
	g_free(a);
}

gboolean affinity_is_call(const struct seccomp_notif *req)
{
	if (req->data.arch == AUDIT_ARCH_I386)
		return req->data.nr == I386_SCHED_GETAFFINITY;
	return req->data.arch == AUDIT_ARCH_X86_64 &&
	       (req->data.nr & ~(int)__X32_SYSCALL_BIT) == __NR_sched_getaffinity;
}

/* A caller's pid namespace, and its depth: where its pids are numbered. */
struct pidns {
	uint64_t ino;
	guint levels;
};

/* tid's pid namespace, 0 if it cannot be told. */
static uint64_t pid_ns_of(int proc_fd, pid_t tid)
{
	char path[40];
	struct stat st;
	snprintf(path, sizeof(path), "%d/ns/pid", (int)tid);
	return fstatat(proc_fd, path, &st, 0) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Whether host thread h is numbered pid in ns (and lives in ns itself,
 * not in a namespace below it). */
static gboolean is_pid(const struct affinity *a, pid_t h, const struct pidns *ns, pid_t pid)
{
	guint levels;
	pid_t inner;
	return procfile_nspid(a->cfg.proc_fd, h, &levels, &inner) == 0 && levels == ns->levels && inner == pid &&
	       pid_ns_of(a->cfg.proc_fd, h) == ns->ino;
}

static gint64 key_of(const struct pidns *ns, pid_t pid)
{
	return (gint64)(ns->ino << 32 | (uint32_t)pid);
}

/* Keep h as pid of ns. Under the lock. */
static void remember_locked(struct affinity *a, const struct pidns *ns, pid_t pid, pid_t h)
{
	gint64 key = key_of(ns, pid);
	if (g_hash_table_size(a->found) >= FOUND_MAX)
		g_hash_table_remove_all(a->found);
	g_hash_table_replace(a->found, g_memdup2(&key, sizeof(key)), GINT_TO_POINTER(h));
}

/* Whether host tid h's status is to be read (not read in the last
 * SEEN_S); marked read now. */
static gboolean first_seen(struct affinity *a, pid_t h)
{
	const int now = (int)(g_get_monotonic_time() / G_USEC_PER_SEC) + 1;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&a->lock);
	int at = GPOINTER_TO_INT(g_hash_table_lookup(a->seen, GINT_TO_POINTER(h)));
	if (at > 0 && now - at < SEEN_S)
		return FALSE;
	if (at == 0 && g_hash_table_size(a->seen) >= SEEN_MAX)
		g_hash_table_remove_all(a->seen);
	g_hash_table_replace(a->seen, GINT_TO_POINTER(h), GINT_TO_POINTER(now));
	return TRUE;
}

/* Look at the host tids in names not seen before (at most *budget of
 * them): each of ns is kept; the one numbered pid there, or 0. */
static pid_t scan(struct affinity *a, char **names, const struct pidns *ns, pid_t pid, guint *budget)
{
	pid_t hit = 0;
	for (; *names && *budget > 0; names++) {
		guint64 h;
		guint levels;
		pid_t inner;
		if (!g_ascii_string_to_unsigned(*names, 10, 1, G_MAXINT32, &h, NULL) || !first_seen(a, (pid_t)h))
			continue;
		--*budget;
		if (procfile_nspid(a->cfg.proc_fd, (pid_t)h, &levels, &inner) < 0 || levels != ns->levels ||
		    pid_ns_of(a->cfg.proc_fd, (pid_t)h) != ns->ino)
			continue;
		G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&a->lock);
		remember_locked(a, ns, inner, (pid_t)h);
		if (inner == pid)
			hit = (pid_t)h;
	}
	return hit;
}

/* The host tids of caller's thread group (its /proc/<tid>/task). */
static GStrv threads_of(const struct affinity *a, pid_t caller)
{
	char path[40];
	snprintf(path, sizeof(path), "%d/task", (int)caller);
	int fd = openat(a->cfg.proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return g_strv_builder_end(b);
	}
	for (struct dirent *e; (e = readdir(dir));)
		if (e->d_name[0] != '.')
			g_strv_builder_add(b, e->d_name);
	closedir(dir);
	return g_strv_builder_end(b);
}

/* The host tids of caller's container cgroup (the scope its CPUs come
 * from), in the CPU hierarchy; none for a caller with the host's. */
static GStrv cgroup_tasks_of(const struct affinity *a, pid_t caller)
{
	const struct cgroup_hierarchy *h = &a->cfg.cgroups->cpu;
	if (h->version == CGROUP_NONE)
		h = &a->cfg.cgroups->unified;
	g_autofree char *dir = NULL, *text = NULL;
	if (h->version == CGROUP_NONE || scope_dir(a->cfg.scope, caller, h, &dir) < 0 || !*dir)
		return g_new0(char *, 1);
	g_autofree char *path = g_build_filename(dir, h->version == CGROUP_V2 ? "cgroup.threads" : "tasks", NULL);
	if (procfile_read_text_at(h->root_fd, path, &text) < 0)
		return g_new0(char *, 1);
	return g_strsplit_set(text, "\n", -1);
}

/* The host tid of pid, numbered in caller's pid namespace (0: caller
 * itself), found only among the threads of caller's process and of its
 * container cgroup: 0 and *ret, or -ESRCH (the kernel answers). */
static int translate(struct affinity *a, pid_t caller, int32_t pid, struct pidns *ns, pid_t *ret)
{
	pid_t own;
	if (pid == 0) /* the one most callers ask for: nothing read */
		return *ret = caller, 0;
	*ns = (struct pidns){ .ino = pid_ns_of(a->cfg.proc_fd, caller) };
	if (pid < 0 || ns->ino == 0 || procfile_nspid(a->cfg.proc_fd, caller, &ns->levels, &own) < 0)
		return -ESRCH;
	if (pid == own) {
		*ret = caller;
		return 0;
	}
	gint64 key = key_of(ns, pid);
	g_mutex_lock(&a->lock);
	pid_t known = GPOINTER_TO_INT(g_hash_table_lookup(a->found, &key));
	g_mutex_unlock(&a->lock);
	if (known > 0 && is_pid(a, known, ns, pid))
		return *ret = known, 0;
	guint budget = SCAN_MAX;
	g_auto(GStrv) threads = threads_of(a, caller);
	pid_t h = scan(a, threads, ns, pid, &budget);
	if (h == 0) {
		g_auto(GStrv) tasks = cgroup_tasks_of(a, caller);
		h = scan(a, tasks, ns, pid, &budget);
	}
	return h > 0 ? (*ret = h, 0) : -ESRCH;
}

/* The answer to req in bytes[0 .. *ret_len): R_ANSWER, or why the kernel
 * answers. */
static enum reason make_answer(struct affinity *a, const struct seccomp_notif *req, uint8_t *bytes, size_t *ret_len)
{
	const uint32_t len = (uint32_t)req->data.args[1];
	if (a->cfg.off)
		return R_OFF;
	if (req->data.arch != AUDIT_ARCH_X86_64 || req->data.nr != __NR_sched_getaffinity)
		return R_ARCH;
	/* The kernel's check, len * 8 >= nr_cpu_ids in 32 bits: with the
	 * smallest length it accepts, exactly so below 2^29; above, a
	 * length it may accept is left to it. */
	if (a->mask_size == 0 || a->min_len == 0 || len % 8 != 0 || (uint32_t)(len * 8) < (uint32_t)(a->min_len * 8))
		return R_EINVAL;
	const pid_t caller = (pid_t)req->pid;
	if (!inplace_view(a->cfg.in_place, caller, INPLACE_CPU))
		return R_NOT_IN_PLACE;
	struct pidns ns;
	pid_t target;
	const int32_t pid = (int32_t)req->data.args[0];
	if (translate(a, caller, pid, &ns, &target) < 0)
		return R_OUTSIDE;
	uint8_t raw[KERNEL_MASK_MAX];
	long got = syscall(SYS_sched_getaffinity, target, sizeof(raw), raw);
	/* Still that pid of the caller's (not a tid reused meanwhile). */
	if (got > 0 && target != caller && !is_pid(a, target, &ns, pid))
		return R_OUTSIDE;
	g_autoptr(cpu_map) map = NULL;
	if (got <= 0 || view_cpu_map(a->cfg.view, caller, &map) < 0)
		return R_NO_MASK;
	if (map->is_host)
		return R_UNLIMITED;
	struct cpuset k, answer;
	affinity_mask_parse(raw, (size_t)got, &k);
	if (!affinity_mask_for(&k, map->host, map->count, &answer))
		return R_PINNED;
	*ret_len = MIN((size_t)len, a->mask_size);
	affinity_mask_bytes(&answer, bytes, *ret_len);
	return R_ANSWER;
}

/* Write bytes into the caller at req's buffer, where its maps say it may
 * write (else the kernel's EFAULT), once the kernel confirms the call
 * still waits, and again just before the write. */
static gboolean write_answer(struct affinity *a, int notify_fd, int mem, const struct seccomp_notif *req,
			     const uint8_t *bytes, size_t len)
{
	char path[32];
	const uint64_t addr = req->data.args[2];
	snprintf(path, sizeof(path), "%u/maps", req->pid);
	_cleanup_close_ int maps = openat(a->cfg.proc_fd, path, O_RDONLY | O_CLOEXEC);
	return maps >= 0 && addr + len > addr && ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == 0 &&
	       seccomp_writable(maps, addr, len) && ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == 0 &&
	       pwrite(mem, bytes, len, (off_t)addr) == (ssize_t)len;
}

int affinity_answer(struct affinity *a, int notify_fd, int mem, const struct seccomp_notif *req,
		    uint64_t *ret_val)
{
	uint8_t bytes[KERNEL_MASK_MAX];
	size_t len = 0;
	enum reason why = make_answer(a, req, bytes, &len);
	if (why == R_ANSWER && !write_answer(a, notify_fd, mem, req, bytes, len))
		why = R_FAULT;
	if (why != R_ANSWER) {
		g_atomic_int_inc(&a->continued[why]);
		return -EAGAIN;
	}
	g_atomic_int_inc(&a->answered);
	*ret_val = len;
	return 0;
}

void affinity_render_stats(struct affinity *a, GString *out)
{
	static const char *const continued = "cgprocfs_affinity_continued_total";
	metrics_u64(out, "cgprocfs_affinity_answered_total", "counter",
		    "sched_getaffinity(2) calls of containers answered with the N CPUs of the caller's view.",
		    (uint64_t)g_atomic_int_get(&a->answered));
	metrics_header(out, continued, "counter",
		       "sched_getaffinity(2) calls left to the kernel, by why (pinned: the kernel's mask has N CPUs "
		       "or fewer; outside: a pid not of the caller's container).");
	for (int i = 0; i < R_ANSWER; i++) {
		char labels[40];
		snprintf(labels, sizeof(labels), "reason=\"%s\"", reason_names[i]);
		metrics_sample(out, continued, labels, (uint64_t)g_atomic_int_get(&a->continued[i]));
	}
}
