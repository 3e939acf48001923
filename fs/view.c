#include "view.h"

#include "cleanup.h"
#include "delegate.h"
#include "names.h"
#include "pidns.h"
#include "procfile.h"
#include "smaps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long the kernel may keep what does not change for a node's lifetime. */
#define TIMEOUT_STABLE 86400.0
/* A pid directory's attributes are never cached: stat(/proc/<pid>) is how
 * psutil and others ask whether a process still exists, right after reaping
 * it (before the exit watch can drop the entry), and ps reads the owner from
 * it. Paths through the directory do not need its attributes. */
#define TIMEOUT_PID_ATTR 0.0

enum node_kind {
	NODE_STATIC_DIR, /* a directory of the static table */
	NODE_REAL_DIR,   /* proc/.real, where the real procfs is mounted */
	NODE_HOST_FILE,  /* a file of the static table served by a renderer */
	NODE_TOP_LINK,   /* proc/<name> -> .real/<name> */
	NODE_PID_DIR,    /* proc/<pid> */
	NODE_PID_LINK,   /* proc/<pid>/<entry> -> ../.real/<pid>/<entry> */
	NODE_PID_MAGIC,  /* proc/<pid>/{exe,cwd,root}: the real link's text */
	NODE_PID_FILE,   /* proc/<pid>/smaps_rollup: served by the daemon */
	NODE_SYS_MIRROR, /* sys/devices/system/cpu/<path>: the host's, read-only */
	NODE_SYS_VCPU,   /* sys/devices/system/cpu/cpu<N>[/<path>]: the caller's CPU N */
	NODE_KIND_COUNT
};

/* Inode numbers carry all that is needed to serve a node, so the daemon
 * keeps no inode table and FUSE forget has nothing to do:
 *   bits 60-63  kind
 *   pid kinds   bits 38-59 pid, 30-37 entry name, 0-29 process tag (the
 *               low bits of its start time; a recycled pid gets other
 *               inodes) or, for magic links, a per-lookup generation
 *   vcpu kind   bits 25-37 the caller's CPU number, 0-24 the names.h number of
 *               the path inside its directory (0: the directory)
 *   other kinds bits 0-37 a row of the static table, or the names.h number of a
 *               path (0 stands for the mirror's root)
 * The root row is 1 in a kind-0 node, so the root is inode 1 as FUSE wants. */
#define INO_KIND_SHIFT 60
#define INO_PID_SHIFT 38
#define INO_PID_MASK ((UINT64_C(1) << 22) - 1)
#define INO_NAME_SHIFT 30
#define INO_NAME_MASK UINT64_C(0xff)
#define INO_LOW_MASK ((UINT64_C(1) << 30) - 1)
#define INO_AUX_MASK ((UINT64_C(1) << 38) - 1)

static uint64_t ino_pid_node(enum node_kind kind, pid_t pid, unsigned name, uint64_t low)
{
	return (uint64_t)kind << INO_KIND_SHIFT | ((uint64_t)pid & INO_PID_MASK) << INO_PID_SHIFT |
	       ((uint64_t)name & INO_NAME_MASK) << INO_NAME_SHIFT | (low & INO_LOW_MASK);
}

static uint64_t ino_node(enum node_kind kind, uint64_t aux)
{
	return (uint64_t)kind << INO_KIND_SHIFT | (aux & INO_AUX_MASK);
}

#define INO_VCPU_SHIFT 25
#define INO_VCPU_MASK ((UINT64_C(1) << 13) - 1)
#define INO_SUB_MASK ((UINT64_C(1) << 25) - 1)

static uint64_t ino_vcpu_node(unsigned cpu, uint64_t sub)
{
	return ino_node(NODE_SYS_VCPU, ((uint64_t)cpu & INO_VCPU_MASK) << INO_VCPU_SHIFT | (sub & INO_SUB_MASK));
}

static unsigned ino_vcpu(uint64_t ino) { return (unsigned)((ino >> INO_VCPU_SHIFT) & INO_VCPU_MASK); }
static uint64_t ino_sub(uint64_t ino) { return ino & INO_SUB_MASK; }

static enum node_kind ino_kind(uint64_t ino) { return (enum node_kind)(ino >> INO_KIND_SHIFT); }
static pid_t ino_pid(uint64_t ino) { return (pid_t)((ino >> INO_PID_SHIFT) & INO_PID_MASK); }
static unsigned ino_name(uint64_t ino) { return (unsigned)((ino >> INO_NAME_SHIFT) & INO_NAME_MASK); }
static uint64_t ino_low(uint64_t ino) { return ino & INO_LOW_MASK; }
static uint64_t ino_aux(uint64_t ino) { return ino & INO_AUX_MASK; }

/* Renders the file called name for the caller. */
typedef int (*render_fn)(struct view *v, const struct caller *c, const char *name, GBytes **ret_content);

static int render_cpuinfo(struct view *v, const struct caller *c, const char *name, GBytes **ret);
static int render_stat(struct view *v, const struct caller *c, const char *name, GBytes **ret);
static int render_cpu_set(struct view *v, const struct caller *c, const char *name, GBytes **ret);
static int render_stats(struct view *v, const struct caller *c, const char *name, GBytes **ret);
static int render_control(struct view *v, const struct caller *c, const char *name, GBytes **ret);

enum row {
	ROW_NONE,
	ROW_ROOT,
	ROW_PROC,
	ROW_PROC_REAL,
	ROW_PROC_CPUINFO,
	ROW_PROC_STAT,
	ROW_SYS,
	ROW_SYS_DEVICES,
	ROW_SYS_SYSTEM,
	ROW_SYS_CPU,
	ROW_CPU_ONLINE,
	ROW_CPU_POSSIBLE,
	ROW_CPU_PRESENT,
	ROW_CPU_OFFLINE,
	ROW_META,
	ROW_META_STATS,
	ROW_META_CONTROL,
	ROW_COUNT
};

/* The static part of the view. Adding a daemon-served file is one row
 * here and one renderer. */
static const struct row_def {
	const char *name;
	enum row parent;
	enum node_kind kind;
	gboolean hidden; /* can be looked up, is not listed */
	render_fn render;
} rows[ROW_COUNT] = {
	[ROW_ROOT] = { "", ROW_NONE, NODE_STATIC_DIR, FALSE, NULL },
	[ROW_PROC] = { "proc", ROW_ROOT, NODE_STATIC_DIR, FALSE, NULL },
	[ROW_PROC_REAL] = { DELEGATE_REAL_NAME, ROW_PROC, NODE_REAL_DIR, TRUE, NULL },
	[ROW_PROC_CPUINFO] = { "cpuinfo", ROW_PROC, NODE_HOST_FILE, FALSE, render_cpuinfo },
	[ROW_PROC_STAT] = { "stat", ROW_PROC, NODE_HOST_FILE, FALSE, render_stat },
	[ROW_SYS] = { "sys", ROW_ROOT, NODE_STATIC_DIR, FALSE, NULL },
	[ROW_SYS_DEVICES] = { "devices", ROW_SYS, NODE_STATIC_DIR, FALSE, NULL },
	[ROW_SYS_SYSTEM] = { "system", ROW_SYS_DEVICES, NODE_STATIC_DIR, FALSE, NULL },
	[ROW_SYS_CPU] = { "cpu", ROW_SYS_SYSTEM, NODE_SYS_MIRROR, FALSE, NULL },
	[ROW_CPU_ONLINE] = { "online", ROW_SYS_CPU, NODE_HOST_FILE, FALSE, render_cpu_set },
	[ROW_CPU_POSSIBLE] = { "possible", ROW_SYS_CPU, NODE_HOST_FILE, FALSE, render_cpu_set },
	[ROW_CPU_PRESENT] = { "present", ROW_SYS_CPU, NODE_HOST_FILE, FALSE, render_cpu_set },
	[ROW_CPU_OFFLINE] = { "offline", ROW_SYS_CPU, NODE_HOST_FILE, FALSE, render_cpu_set },
	[ROW_META] = { ".cgprocfs", ROW_ROOT, NODE_STATIC_DIR, FALSE, NULL },
	[ROW_META_STATS] = { "stats", ROW_META, NODE_HOST_FILE, FALSE, render_stats },
	[ROW_META_CONTROL] = { "control", ROW_META, NODE_HOST_FILE, FALSE, render_control },
};

/* Files in a CPU's directory that name CPUs, translated to view numbers. */
static const char *const cpu_mask_files[] = {
	"core_cpus", "thread_siblings", "core_siblings", "package_cpus", "die_cpus",
	"cluster_cpus", "book_siblings", "drawer_siblings", "shared_cpu_map", NULL,
};

/* Per-pid entries the daemon does not simply delegate. */
static const struct {
	const char *name;
	enum node_kind kind;
} pid_entry_kinds[] = {
	{ "exe", NODE_PID_MAGIC },
	{ "cwd", NODE_PID_MAGIC },
	{ "root", NODE_PID_MAGIC },
	{ "smaps_rollup", NODE_PID_FILE },
};

struct view {
	struct view_config cfg;
	struct timespec born; /* times of the nodes that have no times of their own */
	/* The names in a /proc/<pid> directory, fixed by the kernel build and
	 * read once from the procfs at start (from pid 1's directory); frozen after view_new, so read
	 * without a lock. name -> index, index -> name; index 0 is unused. */
	GHashTable *pid_entry_index;
	GPtrArray *pid_entry_names;
	gint magic_generation; /* atomic */
};

static int vcpu_host_path(struct view *v, const struct caller *c, uint64_t ino, char **ret);

static uint64_t row_ino(enum row r)
{
	/* The mirror's root is the mirror node of path ".". */
	return rows[r].kind == NODE_SYS_MIRROR ? ino_node(NODE_SYS_MIRROR, 0) : ino_node(rows[r].kind, r);
}

int view_pid_ns_fd(const struct view *v)
{
	return v->cfg.pid_ns_fd;
}

/* The row named name under parent, or ROW_NONE. */
static enum row find_row(enum row parent, const char *name)
{
	for (enum row r = ROW_ROOT; r < ROW_COUNT; r++)
		if (rows[r].parent == parent && strcmp(rows[r].name, name) == 0)
			return r;
	return ROW_NONE;
}

uint64_t view_proc_ino(void)
{
	return row_ino(ROW_PROC);
}

static enum node_kind pid_entry_kind(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(pid_entry_kinds); i++)
		if (strcmp(pid_entry_kinds[i].name, name) == 0)
			return pid_entry_kinds[i].kind;
	return NODE_PID_LINK;
}

static uint64_t process_tag(uint64_t start_time)
{
	return start_time & INO_LOW_MASK;
}

/* Calls fn for every entry of dirfd/path but "." and "..". 0 or -errno. */
static int for_each_dirent(int dirfd, const char *path,
			   void (*fn)(const struct dirent *de, void *data), void *data)
{
	int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return procfile_errno();
	DIR *dir = fdopendir(fd);
	if (!dir) {
		int err = errno;
		close(fd);
		return -err;
	}
	struct dirent *de;
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			fn(de, data);
	closedir(dir);
	return 0;
}

/* Done as the caller where the view's procfs hides processes from some
 * (hidepid): the kernel then answers as it would answer the caller. */
struct proc_call {
	struct view *v;
	const char *path;
	void (*fn)(const struct dirent *de, void *data); /* for a listing */
	void *data;
	struct stat *st;                                 /* for a stat */
};

static int proc_call_list(void *p)
{
	const struct proc_call *pc = p;
	return for_each_dirent(pc->v->cfg.proc_fd, pc->path, pc->fn, pc->data);
}

static int proc_call_stat(void *p)
{
	const struct proc_call *pc = p;
	return fstatat(pc->v->cfg.proc_fd, pc->path, pc->st, 0) < 0 ? procfile_errno() : 0;
}

static int proc_as_caller(struct view *v, const struct caller *c, pid_t owner, int (*fn)(void *p),
			  struct proc_call *pc)
{
	return v->cfg.hidepid ? caller_run(c, owner, v->cfg.proc_fd, fn, pc) : fn(pc);
}

/* for_each_dirent of the view's procfs, as the caller (see proc_call). */
static int list_proc(struct view *v, const struct caller *c, pid_t owner, const char *path,
		     void (*fn)(const struct dirent *de, void *data), void *data)
{
	struct proc_call pc = { v, path, fn, data, NULL };
	return proc_as_caller(v, c, owner, proc_call_list, &pc);
}

static void index_pid_entry(const struct dirent *de, void *data)
{
	struct view *v = data;
	if (v->pid_entry_names->len > INO_NAME_MASK)
		return;
	g_hash_table_insert(v->pid_entry_index, g_strdup(de->d_name),
			    GUINT_TO_POINTER(v->pid_entry_names->len));
	g_ptr_array_add(v->pid_entry_names, g_strdup(de->d_name));
}

static gboolean parse_pid(const char *name, pid_t *ret);

/* Intern dir/<entries> (sorted, depth levels down) as paths under prefix;
 * what is not a name (a pid) is skipped. */
static void intern_tree(int dirfd, const char *dir, const char *prefix, int depth)
{
	struct dirent **list;
	int fd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	g_autofree char *self = g_strdup_printf("/proc/self/fd/%d", fd);
	int n = scandir(self, &list, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		const char *name = list[i]->d_name;
		pid_t pid;
		if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && !parse_pid(name, &pid)) {
			g_autofree char *path = *prefix ? g_strconcat(prefix, "/", name, NULL) : g_strdup(name);
			names_intern(path);
			if (depth > 1 && list[i]->d_type == DT_DIR) {
				g_autofree char *sub = g_strconcat(dir, "/", name, NULL);
				intern_tree(dirfd, sub, path, depth - 1);
			}
		}
		free(list[i]);
	}
	if (n >= 0)
		free(list);
	close(fd);
}

/* The names inodes carry, interned once, sorted: a daemon taking over
 * from another knows the numbers of the inodes the kernel cached before
 * it sees their names, and two names of one hash get the same numbers in
 * both. The top of the procfs, the CPU directory, and a CPU's own. */
static void intern_known_names(const struct view_config *cfg)
{
	static gsize done;
	if (!g_once_init_enter(&done))
		return;
	intern_tree(cfg->proc_fd, ".", "", 1);
	intern_tree(cfg->sys_cpu_fd, ".", "", 4);
	intern_tree(cfg->sys_cpu_fd, "cpu0", "", 3);
	g_once_init_leave(&done, 1);
}

int view_new(const struct view_config *cfg, struct view **ret_view)
{
	g_autofree struct view *v = g_new0(struct view, 1);

	v->cfg = *cfg;
	clock_gettime(CLOCK_REALTIME, &v->born);
	intern_known_names(cfg);
	v->pid_entry_index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	v->pid_entry_names = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(v->pid_entry_names, NULL);
	/* Pid 1 is in every pid namespace; "self" is not, for a daemon
	 * outside the one the procfs shows. */
	int r = for_each_dirent(cfg->proc_fd, "1", index_pid_entry, v);
	if (r < 0)
		r = for_each_dirent(cfg->proc_fd, "self", index_pid_entry, v);
	if (r < 0 || v->pid_entry_names->len < 2) {
		g_hash_table_unref(v->pid_entry_index);
		g_ptr_array_unref(v->pid_entry_names);
		return r < 0 ? r : -ENOENT;
	}
	*ret_view = g_steal_pointer(&v);
	return 0;
}

void view_free(struct view *v)
{
	if (!v)
		return;
	g_hash_table_unref(v->pid_entry_index);
	g_ptr_array_unref(v->pid_entry_names);
	g_free(v);
}

static const char *mirror_path(uint64_t aux)
{
	return aux == 0 ? "." : names_lookup(aux);
}

/* name under the directory interned as parent (0: the top). */
static char *child_path(uint64_t parent, const char *name)
{
	return parent == 0 ? g_strdup(name) : g_strconcat(mirror_path(parent), "/", name, NULL);
}

static void attr_fill(const struct view *v, struct stat *st, uint64_t ino, mode_t mode, off_t size)
{
	*st = (struct stat){
		.st_ino = ino,
		.st_mode = mode,
		.st_nlink = S_ISDIR(mode) ? 2 : 1,
		.st_size = size,
		.st_blksize = 4096,
		.st_atim = v->born,
		.st_mtim = v->born,
		.st_ctim = v->born,
	};
}

/* The process behind a pid node, if it is still the one the node names. */
static int pid_node_process(struct view *v, uint64_t ino, struct pid_stat *ret)
{
	struct pid_stat st;
	int r = procfile_pid_stat(v->cfg.proc_fd, ino_pid(ino), &st);
	if (r < 0)
		return r;
	if (process_tag(st.start_time) != ino_low(ino))
		return -ENOENT;
	*ret = st;
	return 0;
}

static const char *pid_entry_name(const struct view *v, uint64_t ino)
{
	unsigned i = ino_name(ino);
	return i > 0 && i < v->pid_entry_names->len ? g_ptr_array_index(v->pid_entry_names, i) : NULL;
}

/* A thread of the daemon's own process. */
static gboolean is_daemon_thread(struct view *v, pid_t pid)
{
	char path[32];
	snprintf(path, sizeof(path), "self/task/%d", (int)pid);
	return faccessat(v->cfg.proc_fd, path, F_OK, 0) == 0;
}

/* proc_fd/<pid> as the procfs shows it to the caller: a process hidden
 * from the caller (hidepid) does not exist. A process always sees itself,
 * so of the daemon's own process the caller is asked about init instead,
 * root's as the daemon is. */
static int stat_pid(struct view *v, const struct caller *c, pid_t pid, struct stat *ret)
{
	char path[16];
	snprintf(path, sizeof(path), "%d", (int)pid);
	struct proc_call pc = { v, path, .st = ret };
	if (v->cfg.hidepid && is_daemon_thread(v, pid)) {
		struct proc_call init = { v, "1", .st = ret };
		int r = proc_as_caller(v, c, 1, proc_call_stat, &init);
		if (r < 0)
			return r;
		return proc_call_stat(&pc);
	}
	return proc_as_caller(v, c, pid, proc_call_stat, &pc);
}

static int pid_dir_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret)
{
	struct stat real;
	int r = stat_pid(v, c, ino_pid(ino), &real);
	if (r < 0)
		return r;
	attr_fill(v, ret, ino, S_IFDIR | 0555, 0);
	ret->st_uid = real.st_uid;
	ret->st_gid = real.st_gid;
	ret->st_nlink = real.st_nlink;
	ret->st_atim = real.st_atim;
	ret->st_mtim = real.st_mtim;
	ret->st_ctim = real.st_ctim;
	return 0;
}

/* Attributes of a node that stands for the host's sys cpu file at path. */
static int mirror_attr(struct view *v, uint64_t ino, const char *path, struct stat *ret)
{
	struct stat real;

	if (fstatat(v->cfg.sys_cpu_fd, path, &real, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISDIR(real.st_mode))
		attr_fill(v, ret, ino, S_IFDIR | (real.st_mode & 0555), 0);
	else if (S_ISLNK(real.st_mode))
		attr_fill(v, ret, ino, S_IFLNK | 0777, real.st_size);
	else /* served read-only, through direct_io: no size */
		attr_fill(v, ret, ino, S_IFREG | (real.st_mode & 0444), 0);
	ret->st_uid = real.st_uid;
	ret->st_gid = real.st_gid;
	ret->st_mtim = real.st_mtim;
	ret->st_ctim = real.st_ctim;
	return 0;
}

/* Attributes of a node already known to exist, and how long they hold. */
static int node_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret,
		     double *ret_timeout)
{
	enum node_kind kind = ino_kind(ino);
	const char *name;
	g_autofree char *path = NULL;
	int r;

	*ret_timeout = TIMEOUT_STABLE;
	switch (kind) {
	case NODE_STATIC_DIR:
	case NODE_REAL_DIR:
		attr_fill(v, ret, ino, S_IFDIR | 0555, 0);
		return 0;
	case NODE_HOST_FILE:
		attr_fill(v, ret, ino, S_IFREG | 0444, 0);
		return 0;
	case NODE_TOP_LINK:
		name = names_lookup(ino_aux(ino));
		attr_fill(v, ret, ino, S_IFLNK | 0777, (off_t)(strlen(DELEGATE_REAL_NAME "/") + strlen(name)));
		return 0;
	case NODE_PID_DIR:
		*ret_timeout = TIMEOUT_PID_ATTR;
		return pid_dir_attr(v, c, ino, ret);
	case NODE_PID_LINK: {
		g_autofree char *target = delegate_pid_target(ino_pid(ino), pid_entry_name(v, ino));
		attr_fill(v, ret, ino, S_IFLNK | 0777, (off_t)strlen(target));
		return 0;
	}
	case NODE_PID_MAGIC:
		/* Never cached: each lookup makes a new inode, so the kernel
		 * asks for the text, with the caller's rights, every time. */
		*ret_timeout = 0;
		attr_fill(v, ret, ino, S_IFLNK | 0777, 0);
		return 0;
	case NODE_PID_FILE:
		attr_fill(v, ret, ino, S_IFREG | 0444, 0);
		return 0;
	case NODE_SYS_MIRROR:
		return mirror_attr(v, ino, mirror_path(ino_aux(ino)), ret);
	case NODE_SYS_VCPU:
		/* Which host CPU cpu<N> is differs per caller: never cached. */
		if (ino_sub(ino) == 0)
			*ret_timeout = 0;
		r = vcpu_host_path(v, c, ino, &path);
		return r < 0 ? r : mirror_attr(v, ino, path, ret);
	case NODE_KIND_COUNT:
		break;
	}
	return -ESTALE;
}

/* Is ino one this view could have handed out? */
static gboolean ino_valid(const struct view *v, uint64_t ino)
{
	enum node_kind kind = ino_kind(ino);

	switch (kind) {
	case NODE_STATIC_DIR:
	case NODE_REAL_DIR:
	case NODE_HOST_FILE:
		return ino_aux(ino) > ROW_NONE && ino_aux(ino) < ROW_COUNT &&
		       rows[ino_aux(ino)].kind == kind;
	case NODE_TOP_LINK:
		return names_lookup(ino_aux(ino)) != NULL;
	case NODE_PID_DIR:
		return ino_name(ino) == 0;
	case NODE_PID_LINK:
	case NODE_PID_MAGIC:
	case NODE_PID_FILE:
		return pid_entry_name(v, ino) != NULL &&
		       pid_entry_kind(pid_entry_name(v, ino)) == kind;
	case NODE_SYS_MIRROR:
		return ino_aux(ino) == 0 || names_lookup(ino_aux(ino)) != NULL;
	case NODE_SYS_VCPU:
		return ino_sub(ino) == 0 || names_lookup(ino_sub(ino)) != NULL;
	case NODE_KIND_COUNT:
		break;
	}
	return FALSE;
}

static gboolean parse_pid(const char *name, pid_t *ret)
{
	guint64 pid;
	/* As procfs: decimal, no sign, no leading zero. */
	if (name[0] < '1' || name[0] > '9' ||
	    !g_ascii_string_to_unsigned(name, 10, 1, INO_PID_MASK, &pid, NULL))
		return FALSE;
	*ret = (pid_t)pid;
	return TRUE;
}

static int lookup_pid_dir(struct view *v, const struct caller *c, pid_t pid, struct view_entry *ret)
{
	/* The pidfd is taken before the process is checked: if it exits
	 * after the check, the pidfd reports it and the entry is dropped.
	 * Where processes are hidden from some callers, the kernel's entry
	 * would be shared by all: none is cached, each walk asks. */
	_cleanup_close_ int pidfd = v->cfg.hidepid ? -1 : MAX(pidns_pidfd_open(v->cfg.pid_ns_fd, pid, 0), -1);
	struct pid_stat st;
	int r = procfile_pid_stat(v->cfg.proc_fd, pid, &st);
	if (r < 0)
		return r;
	uint64_t ino = ino_pid_node(NODE_PID_DIR, pid, 0, process_tag(st.start_time));
	r = pid_dir_attr(v, c, ino, &ret->attr);
	if (r < 0)
		return r;
	ret->ino = ino;
	/* A zombie's directory goes when it is reaped, which no pidfd tells;
	 * a thread that is not a group leader gets no pidfd. Neither is cached. */
	gboolean watched = pidfd >= 0 && st.state != 'Z' && st.state != 'X';
	ret->entry_timeout = watched ? TIMEOUT_STABLE : 0;
	ret->attr_timeout = TIMEOUT_PID_ATTR;
	if (watched) {
		ret->pid = pid;
		ret->pidfd = steal_fd(&pidfd);
	}
	return 0;
}

static int lookup_pid_entry(struct view *v, uint64_t parent, const char *name, struct view_entry *ret)
{
	struct pid_stat st;
	int r = pid_node_process(v, parent, &st);
	if (r < 0)
		return r;
	unsigned index = GPOINTER_TO_UINT(g_hash_table_lookup(v->pid_entry_index, name));
	if (index == 0) {
		/* No process has this entry (ps tries names other kernels have,
		 * such as ctty): let the kernel remember the miss; it goes with
		 * the pid directory's entry when the process exits. */
		ret->ino = 0;
		ret->entry_timeout = TIMEOUT_STABLE;
		return 0;
	}
	enum node_kind kind = pid_entry_kind(name);
	uint64_t low = kind == NODE_PID_MAGIC ? (uint64_t)(guint)g_atomic_int_add(&v->magic_generation, 1)
					       : ino_low(parent);
	ret->ino = ino_pid_node(kind, ino_pid(parent), index, low);
	return 0;
}

static int lookup_top_entry(struct view *v, const struct caller *c, const char *name,
			    struct view_entry *ret)
{
	struct stat st;
	pid_t pid;

	if (parse_pid(name, &pid))
		return lookup_pid_dir(v, c, pid, ret);
	if (fstatat(v->cfg.proc_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	/* Interned only once the kernel has shown the name exists. */
	ret->ino = ino_node(NODE_TOP_LINK, names_intern(name));
	return 0;
}

static int lookup_mirror_entry(struct view *v, uint64_t parent, const char *name, struct view_entry *ret)
{
	g_autofree char *path = child_path(ino_aux(parent), name);
	struct stat st;

	if (fstatat(v->cfg.sys_cpu_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	ret->ino = ino_node(NODE_SYS_MIRROR, names_intern(path));
	return 0;
}

/* "cpu<N>" as the kernel names CPU directories. */
static gboolean parse_cpu_dir(const char *name, unsigned *ret)
{
	guint64 n;
	if (!g_str_has_prefix(name, "cpu") || !g_ascii_isdigit(name[3]) || (name[3] == '0' && name[4]) ||
	    !g_ascii_string_to_unsigned(name + 3, 10, 0, INO_VCPU_MASK, &n, NULL))
		return FALSE;
	*ret = (unsigned)n;
	return TRUE;
}

/* An entry of sys/devices/system/cpu that no row names. */
static int lookup_cpu_dir_entry(struct view *v, const char *name, struct view_entry *ret)
{
	unsigned cpu;
	if (parse_cpu_dir(name, &cpu)) {
		/* Whether it exists for this caller is node_attr's answer. */
		ret->ino = ino_vcpu_node(cpu, 0);
		return 0;
	}
	return lookup_mirror_entry(v, ino_node(NODE_SYS_MIRROR, 0), name, ret);
}

static int lookup_vcpu_entry(struct view *v, const struct caller *c, uint64_t parent, const char *name,
			     struct view_entry *ret)
{
	g_autofree char *dir = NULL;
	struct stat st;
	int r = vcpu_host_path(v, c, parent, &dir);
	if (r < 0)
		return r;
	g_autofree char *host = g_build_filename(dir, name, NULL);
	if (fstatat(v->cfg.sys_cpu_fd, host, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	g_autofree char *path = child_path(ino_sub(parent), name);
	ret->ino = ino_vcpu_node(ino_vcpu(parent), names_intern(path));
	return 0;
}

static int lookup_row_entry(struct view *v, const struct caller *c, enum row parent, const char *name,
			    struct view_entry *ret)
{
	enum row r = find_row(parent, name);
	if (r != ROW_NONE) {
		ret->ino = row_ino(r);
		return 0;
	}
	if (parent == ROW_PROC)
		return lookup_top_entry(v, c, name, ret);
	if (parent == ROW_SYS_CPU)
		return lookup_cpu_dir_entry(v, name, ret);
	return -ENOENT;
}

int view_lookup(struct view *v, const struct caller *c, uint64_t parent, const char *name,
		struct view_entry *ret)
{
	struct view_entry e = { .pidfd = -1 };
	enum node_kind kind = ino_kind(parent);
	int r = -ENOTDIR;

	if (!ino_valid(v, parent))
		return -ESTALE;
	if (strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	switch (kind) {
	case NODE_STATIC_DIR:
		r = lookup_row_entry(v, c, (enum row)ino_aux(parent), name, &e);
		break;
	case NODE_REAL_DIR:
		r = -ENOENT;
		break;
	case NODE_PID_DIR:
		r = lookup_pid_entry(v, parent, name, &e);
		break;
	case NODE_SYS_MIRROR:
		r = ino_aux(parent) == 0 ? lookup_row_entry(v, c, ROW_SYS_CPU, name, &e)
					 : lookup_mirror_entry(v, parent, name, &e);
		break;
	case NODE_SYS_VCPU:
		r = lookup_vcpu_entry(v, c, parent, name, &e);
		break;
	case NODE_HOST_FILE:
	case NODE_TOP_LINK:
	case NODE_PID_LINK:
	case NODE_PID_MAGIC:
	case NODE_PID_FILE:
	case NODE_KIND_COUNT:
		break;
	}
	if (r < 0)
		return r;
	if (e.ino != 0 && ino_kind(e.ino) != NODE_PID_DIR) {
		/* pid directories came with their attributes */
		r = node_attr(v, c, e.ino, &e.attr, &e.attr_timeout);
		if (r < 0)
			return r;
		e.entry_timeout = e.attr_timeout;
	}
	*ret = e;
	return 0;
}

static gboolean is_pid_kind(enum node_kind kind)
{
	return kind == NODE_PID_DIR || kind == NODE_PID_LINK || kind == NODE_PID_FILE;
}

int view_getattr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret_attr,
		 double *ret_timeout)
{
	struct pid_stat st;

	if (!ino_valid(v, ino))
		return -ESTALE;
	if (is_pid_kind(ino_kind(ino))) {
		int r = pid_node_process(v, ino, &st);
		if (r < 0)
			return r;
	}
	return node_attr(v, c, ino, ret_attr, ret_timeout);
}

int view_readlink(struct view *v, const struct caller *c, uint64_t ino, char **ret_target)
{
	enum node_kind kind = ino_kind(ino);
	g_autofree char *path = NULL;
	int r;

	if (!ino_valid(v, ino))
		return -ESTALE;
	switch (kind) {
	case NODE_TOP_LINK:
		*ret_target = delegate_top_target(names_lookup(ino_aux(ino)));
		return 0;
	case NODE_PID_LINK:
		*ret_target = delegate_pid_target(ino_pid(ino), pid_entry_name(v, ino));
		return 0;
	case NODE_PID_MAGIC:
		return delegate_magic_target(c, v->cfg.proc_fd, ino_pid(ino), pid_entry_name(v, ino),
					     ret_target);
	case NODE_SYS_MIRROR:
		return procfile_readlink_at(v->cfg.sys_cpu_fd, mirror_path(ino_aux(ino)), ret_target);
	case NODE_SYS_VCPU:
		r = vcpu_host_path(v, c, ino, &path);
		return r < 0 ? r : procfile_readlink_at(v->cfg.sys_cpu_fd, path, ret_target);
	case NODE_STATIC_DIR:
	case NODE_REAL_DIR:
	case NODE_HOST_FILE:
	case NODE_PID_DIR:
	case NODE_PID_FILE:
	case NODE_KIND_COUNT:
		break;
	}
	return -EINVAL;
}

static void dirent_clear(gpointer p)
{
	g_free(((struct view_dirent *)p)->name);
}

static void dirent_add(GArray *entries, const char *name, uint64_t ino, mode_t type)
{
	struct view_dirent e = { g_strdup(name), ino, type };
	g_array_append_val(entries, e);
}

static mode_t dtype_to_mode(unsigned char d_type)
{
	return d_type == DT_DIR ? S_IFDIR : d_type == DT_LNK ? S_IFLNK : S_IFREG;
}

struct listing {
	struct view *v;
	GArray *entries;
	uint64_t parent;
	const struct cpu_map *map; /* in sys/devices/system/cpu */
	pid_t skip;                /* a pid not to list */
};


static void list_rows(GArray *entries, enum row parent)
{
	for (enum row r = ROW_ROOT; r < ROW_COUNT; r++)
		if (rows[r].parent == parent && !rows[r].hidden)
			dirent_add(entries, rows[r].name, row_ino(r),
				   rows[r].kind == NODE_HOST_FILE ? S_IFREG : S_IFDIR);
}

static void list_top_entry(const struct dirent *de, void *data)
{
	struct listing *l = data;
	pid_t pid;

	if (find_row(ROW_PROC, de->d_name) != ROW_NONE)
		return; /* listed from the table */
	if (parse_pid(de->d_name, &pid)) {
		/* d_ino without the tag: reading every process's start time
		 * would cost a file read per process per listing. */
		if (pid != l->skip)
			dirent_add(l->entries, de->d_name, ino_pid_node(NODE_PID_DIR, pid, 0, 0), S_IFDIR);
	} else {
		dirent_add(l->entries, de->d_name, ino_node(NODE_TOP_LINK, names_intern(de->d_name)),
			   S_IFLNK);
	}
}

static void list_pid_entry(const struct dirent *de, void *data)
{
	struct listing *l = data;
	unsigned index = GPOINTER_TO_UINT(g_hash_table_lookup(l->v->pid_entry_index, de->d_name));
	if (index == 0)
		return;
	enum node_kind kind = pid_entry_kind(de->d_name);
	uint64_t low = kind == NODE_PID_MAGIC ? 0 : ino_low(l->parent);
	dirent_add(l->entries, de->d_name, ino_pid_node(kind, ino_pid(l->parent), index, low),
		   kind == NODE_PID_FILE ? S_IFREG : S_IFLNK);
}

static void list_mirror_entry(const struct dirent *de, void *data)
{
	struct listing *l = data;
	unsigned cpu;

	if (ino_aux(l->parent) == 0) {
		if (find_row(ROW_SYS_CPU, de->d_name) != ROW_NONE)
			return;
		if (parse_cpu_dir(de->d_name, &cpu)) {
			/* the host's CPU directories for a caller with no limit;
			 * the caller's own are listed after */
			if (l->map->is_host)
				dirent_add(l->entries, de->d_name, ino_vcpu_node(cpu, 0), S_IFDIR);
			return;
		}
	}
	g_autofree char *path = child_path(ino_aux(l->parent), de->d_name);
	dirent_add(l->entries, de->d_name, ino_node(NODE_SYS_MIRROR, names_intern(path)),
		   dtype_to_mode(de->d_type));
}

static void list_vcpu_entry(const struct dirent *de, void *data)
{
	struct listing *l = data;
	g_autofree char *path = child_path(ino_sub(l->parent), de->d_name);
	dirent_add(l->entries, de->d_name, ino_vcpu_node(ino_vcpu(l->parent), names_intern(path)),
		   dtype_to_mode(de->d_type));
}

static int list_cpu_dir(struct view *v, const struct caller *c, struct listing *l)
{
	g_autoptr(cpu_map) map = cpuview_map_for(v->cfg.cpuview, c->tid);

	l->map = map;
	list_rows(l->entries, ROW_SYS_CPU);
	int r = for_each_dirent(v->cfg.sys_cpu_fd, ".", list_mirror_entry, l);
	if (!map->is_host) {
		for (unsigned cpu = 0; cpu < map->count; cpu++) {
			char name[16];
			snprintf(name, sizeof(name), "cpu%u", cpu);
			dirent_add(l->entries, name, ino_vcpu_node(cpu, 0), S_IFDIR);
		}
	}
	return r;
}

/* proc/ as the procfs lists it for the caller (see stat_pid). */
static int list_top(struct view *v, const struct caller *c, struct listing *l)
{
	struct stat st;
	char name[16];

	l->skip = v->cfg.hidepid ? getpid() : 0;
	int r = list_proc(v, c, 0, ".", list_top_entry, l);
	if (r == 0 && l->skip && stat_pid(v, c, l->skip, &st) == 0) {
		snprintf(name, sizeof(name), "%d", (int)l->skip);
		dirent_add(l->entries, name, ino_pid_node(NODE_PID_DIR, l->skip, 0, 0), S_IFDIR);
	}
	return r;
}

int view_readdir(struct view *v, const struct caller *c, uint64_t ino, GArray **ret_entries)
{
	g_autoptr(GArray) entries = g_array_new(FALSE, FALSE, sizeof(struct view_dirent));
	struct listing l = { v, entries, ino, NULL, 0 };
	enum node_kind kind = ino_kind(ino);
	g_autofree char *host = NULL;
	char path[16];
	struct pid_stat st;
	int r = 0;

	g_array_set_clear_func(entries, dirent_clear);
	if (!ino_valid(v, ino))
		return -ESTALE;
	dirent_add(entries, ".", ino, S_IFDIR);
	dirent_add(entries, "..", ino, S_IFDIR);
	switch (kind) {
	case NODE_STATIC_DIR:
		list_rows(entries, (enum row)ino_aux(ino));
		if (ino_aux(ino) == ROW_PROC)
			r = list_top(v, c, &l);
		break;
	case NODE_REAL_DIR:
		break;
	case NODE_PID_DIR:
		r = pid_node_process(v, ino, &st);
		if (r < 0)
			return r;
		snprintf(path, sizeof(path), "%d", (int)ino_pid(ino));
		r = list_proc(v, c, ino_pid(ino), path, list_pid_entry, &l);
		break;
	case NODE_SYS_MIRROR:
		r = ino_aux(ino) == 0 ? list_cpu_dir(v, c, &l)
				      : for_each_dirent(v->cfg.sys_cpu_fd, mirror_path(ino_aux(ino)),
							list_mirror_entry, &l);
		break;
	case NODE_SYS_VCPU:
		r = vcpu_host_path(v, c, ino, &host);
		if (r < 0)
			return r;
		r = for_each_dirent(v->cfg.sys_cpu_fd, host, list_vcpu_entry, &l);
		break;
	case NODE_HOST_FILE:
	case NODE_TOP_LINK:
	case NODE_PID_LINK:
	case NODE_PID_MAGIC:
	case NODE_PID_FILE:
	case NODE_KIND_COUNT:
		return -ENOTDIR;
	}
	if (r < 0)
		return r;
	*ret_entries = g_steal_pointer(&entries);
	return 0;
}

/* What a renderer made of the host text, or the host text itself when
 * the host text was not of the expected shape: never a blank file. */
static int serve_rendered(int r, GString *out, char *host, GBytes **ret)
{
	if (r < 0) {
		g_debug("host text not understood (%s): serving it unchanged", g_strerror(-r));
		*ret = g_bytes_new_take(host, strlen(host));
		return 0;
	}
	g_free(host);
	*ret = g_string_free_to_bytes(out);
	return 0;
}

typedef int (*rewrite_fn)(const char *host, const struct cpu_map *m, GString **ret);

/* Host text, rewritten for the caller's CPUs. */
static int rewrite_for(const struct cpu_map *map, GBytes *host_bytes, rewrite_fn rewrite, GBytes **ret)
{
	char *host = g_strndup(g_bytes_get_data(host_bytes, NULL), g_bytes_get_size(host_bytes));
	GString *out = NULL;
	int r = rewrite(host, map, &out);
	return serve_rendered(r, out, host, ret);
}

/* Read dirfd/path and rewrite it for the caller's CPUs. */
static int render_rewritten(struct view *v, const struct caller *c, int dirfd, const char *path,
			    rewrite_fn rewrite, GBytes **ret)
{
	g_autoptr(GBytes) host = NULL;
	int r = procfile_read_at(dirfd, path, &host);
	if (r < 0)
		return r;
	g_autoptr(cpu_map) map = cpuview_map_for(v->cfg.cpuview, c->tid);
	return rewrite_for(map, host, rewrite, ret);
}

static int render_cpuinfo(struct view *v, const struct caller *c, const char *name, GBytes **ret)
{
	return render_rewritten(v, c, v->cfg.proc_fd, name, cpuview_render_cpuinfo, ret);
}

static int render_stat(struct view *v, const struct caller *c, const char *name, GBytes **ret)
{
	return render_rewritten(v, c, v->cfg.proc_fd, name, cpuview_render_stat, ret);
}

/* online, possible, present: the caller's CPUs are 0..N-1; offline (possible
 * but not online, which the view makes the same): none. */
static int render_cpu_set(struct view *v, const struct caller *c, const char *name, GBytes **ret)
{
	g_autoptr(cpu_map) map = cpuview_map_for(v->cfg.cpuview, c->tid);
	if (map->is_host)
		return procfile_read_at(v->cfg.sys_cpu_fd, name, ret);
	*ret = strcmp(name, "offline") == 0 ? g_bytes_new_static("\n", 1)
					    : g_string_free_to_bytes(cpuview_render_range(map));
	return 0;
}

static int render_stats(struct view *v, const struct caller *c, const char *name, GBytes **ret)
{
	GString *out = smaps_render_stats(v->cfg.smaps);
	if (v->cfg.more_stats)
		v->cfg.more_stats(out, v->cfg.more_stats_data);
	*ret = g_string_free_to_bytes(out);
	return 0;
}

static int render_control(struct view *v, const struct caller *c, const char *name, GBytes **ret)
{
	if (!v->cfg.control_socket)
		return -ENOENT;
	*ret = g_bytes_new_take(g_strconcat(v->cfg.control_socket, "\n", NULL), strlen(v->cfg.control_socket) + 1);
	return 0;
}

/* The host file behind a vcpu node, for a caller with map: "cpu<H>[/<path>]". */
static int vcpu_map_path(const struct cpu_map *map, uint64_t ino, char **ret)
{
	unsigned cpu = ino_vcpu(ino), host;
	uint64_t sub = ino_sub(ino);

	if (map->is_host)
		host = cpu; /* every host CPU directory, online or not */
	else if (cpu < map->count)
		host = map->host[cpu];
	else
		return -ENOENT;
	*ret = sub ? g_strdup_printf("cpu%u/%s", host, names_lookup(sub))
		   : g_strdup_printf("cpu%u", host);
	return 0;
}

static int vcpu_host_path(struct view *v, const struct caller *c, uint64_t ino, char **ret)
{
	g_autoptr(cpu_map) map = cpuview_map_for(v->cfg.cpuview, c->tid);
	return vcpu_map_path(map, ino, ret);
}

/* A sysfs file read as the caller: a root-only file stays root-only. */
/* A sysfs file as the caller could read it. Most are readable by all,
 * and then opening them as the caller would decide nothing: only the
 * others are opened again with the caller's credentials. */
static int read_as_caller(const struct caller *c, int dirfd, const char *path, GBytes **ret)
{
	struct stat st;
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!(st.st_mode & S_IROTH)) {
		close(steal_fd(&fd));
		int r = caller_openat(c, 0, dirfd, path, O_RDONLY | O_NOFOLLOW, &fd);
		if (r < 0)
			return r;
	}
	return procfile_read_fd(fd, ret);
}

static int open_vcpu_file(struct view *v, const struct caller *c, uint64_t ino, GBytes **ret)
{
	g_autoptr(cpu_map) map = cpuview_map_for(v->cfg.cpuview, c->tid);
	g_autofree char *path = NULL;
	g_autoptr(GBytes) content = NULL;
	int r = vcpu_map_path(map, ino, &path);
	if (r < 0)
		return r;
	r = read_as_caller(c, v->cfg.sys_cpu_fd, path, &content);
	if (r < 0)
		return r;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	rewrite_fn rewrite = g_str_has_suffix(base, "_list") ? cpuview_render_list
			     : g_strv_contains((const char *const *)cpu_mask_files, base) ? cpuview_render_mask
			     : NULL;
	if (!rewrite) {
		*ret = g_steal_pointer(&content);
		return 0;
	}
	return rewrite_for(map, content, rewrite, ret);
}

static int open_mirror_file(struct view *v, const struct caller *c, uint64_t ino, GBytes **ret)
{
	struct stat st;
	const char *path = mirror_path(ino_aux(ino));

	if (fstatat(v->cfg.sys_cpu_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	return read_as_caller(c, v->cfg.sys_cpu_fd, path, ret);
}

int view_open(struct view *v, const struct caller *c, uint64_t ino, int flags, GBytes **ret_content)
{
	enum node_kind kind = ino_kind(ino);
	struct pid_stat st;
	int r;

	if (!ino_valid(v, ino))
		return -ESTALE;
	switch (kind) {
	case NODE_STATIC_DIR:
	case NODE_REAL_DIR:
	case NODE_PID_DIR:
		return -EISDIR;
	case NODE_TOP_LINK:
	case NODE_PID_LINK:
	case NODE_PID_MAGIC:
		return -ELOOP;
	case NODE_HOST_FILE:
	case NODE_PID_FILE:
	case NODE_SYS_MIRROR:
	case NODE_SYS_VCPU:
		break;
	case NODE_KIND_COUNT:
		return -ESTALE;
	}
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC))
		return -EACCES;
	switch (kind) {
	case NODE_HOST_FILE:
		return rows[ino_aux(ino)].render(v, c, rows[ino_aux(ino)].name, ret_content);
	case NODE_PID_FILE:
		r = pid_node_process(v, ino, &st);
		if (r < 0)
			return r;
		return smaps_read(v->cfg.smaps, c, v->cfg.pid_ns, ino_pid(ino), st.start_time, ret_content);
	case NODE_SYS_MIRROR:
		return open_mirror_file(v, c, ino, ret_content);
	case NODE_SYS_VCPU:
		return open_vcpu_file(v, c, ino, ret_content);
	case NODE_STATIC_DIR:
	case NODE_REAL_DIR:
	case NODE_PID_DIR:
	case NODE_TOP_LINK:
	case NODE_PID_LINK:
	case NODE_PID_MAGIC:
	case NODE_KIND_COUNT:
		break;
	}
	return -ESTALE;
}
