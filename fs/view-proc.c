/* proc/: the names delegated to the real procfs, and the pid directories
 * with their delegated entries, magic links and served files. Where the
 * procfs hides processes from some callers (hidepid), it is asked as the
 * caller. */
#include "view-internal.h"

#include "classhash.h"
#include "cleanup.h"
#include "delegate.h"
#include "dirwalk.h"
#include "names.h"
#include "pidns.h"
#include "smaps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static enum node_kind pid_entry_kind(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(pid_entry_kinds); i++)
		if (strcmp(pid_entry_kinds[i].name, name) == 0)
			return pid_entry_kinds[i].kind;
	return NODE_PID_LINK;
}

gboolean proc_parse_pid(const char *name, pid_t *ret)
{
	guint64 pid;
	/* As procfs: decimal, no sign, no leading zero. */
	if (name[0] < '1' || name[0] > '9' ||
	    !g_ascii_string_to_unsigned(name, 10, 1, (guint64)INO_PID_MAX, &pid, NULL))
		return FALSE;
	*ret = (pid_t)pid;
	return TRUE;
}

/* Done as the caller where the view's procfs hides processes from some
 * (hidepid): the kernel then answers as it would answer the caller. */
struct proc_call {
	struct view *v;
	const char *path;
	dirwalk_fn fn;   /* for a listing */
	void *data;
	struct stat *st; /* for a stat */
};

static int proc_call_list(void *p)
{
	const struct proc_call *pc = p;
	return dirwalk(pc->v->cfg.proc_fd, pc->path, pc->fn, pc->data);
}

static int proc_call_stat(void *p)
{
	const struct proc_call *pc = p;
	return fstatat(pc->v->cfg.proc_fd, pc->path, pc->st, 0) < 0 ? procfile_errno() : 0;
}

/* A process the kernel gives the caller no access to at all (caller_run's
 * -EXDEV: outside its user namespace) is one the procfs hides from it: not
 * there (invisible), or there but closed (noaccess: its directory stats,
 * and opens EPERM). */
static int proc_as_caller(struct view *v, const struct caller *c, pid_t owner, int (*fn)(void *p),
			  struct proc_call *pc)
{
	if (!v->cfg.hidepid)
		return fn(pc);
	int r = caller_run(c, owner, v->cfg.proc_fd, fn, pc);
	if (r != -EXDEV)
		return r;
	if (v->cfg.hidepid == VIEW_HIDEPID_INVISIBLE)
		return -ENOENT;
	return fn == proc_call_stat ? fn(pc) : -EPERM;
}

/* dirwalk of the view's procfs, as the caller (see proc_call). */
static int list_proc(struct view *v, const struct caller *c, pid_t owner, const char *path, dirwalk_fn fn,
		     void *data)
{
	struct proc_call pc = { v, path, fn, data, NULL };
	return proc_as_caller(v, c, owner, proc_call_list, &pc);
}

static void index_pid_entry(const struct dirent *de, void *data)
{
	struct view *v = data;
	if (v->pid_entry_names->len > INO_ENTRY_MAX)
		return;
	g_hash_table_insert(v->pid_entry_index, g_strdup(de->d_name),
			    GUINT_TO_POINTER(v->pid_entry_names->len));
	g_ptr_array_add(v->pid_entry_names, g_strdup(de->d_name));
}

int proc_index_pid_entries(struct view *v)
{
	/* Pid 1 is in every pid namespace; "self" is not, for a daemon
	 * outside the one the procfs shows. */
	int r = dirwalk(v->cfg.proc_fd, "1", index_pid_entry, v);
	if (r < 0)
		r = dirwalk(v->cfg.proc_fd, "self", index_pid_entry, v);
	if (r < 0)
		return r;
	return v->pid_entry_names->len < 2 ? -ENOENT : 0;
}

/* What an exec changes of who may read pid's served files: the owner of
 * its directory, its euid and egid if it is dumpable, else root (a setuid
 * or setgid program, one that gains capabilities, one it may not read).
 * Such an exec gives its files other inodes, so that the page cache an
 * old reader's fd reads through (a private map, sendfile) never holds a
 * text of the program the reader may no longer read. 0 if it is gone. */
static uint64_t access_tag(struct view *v, pid_t pid)
{
	char path[16];
	struct stat dir;
	snprintf(path, sizeof(path), "%d", (int)pid);
	if (fstatat(v->cfg.proc_fd, path, &dir, 0) < 0)
		return 0;
	const uint64_t owner[] = { dir.st_uid, dir.st_gid };
	return classhash("access:", owner, sizeof(owner), NULL, 0) & ((UINT64_C(1) << INO_TAG_BITS) - 1);
}

/* The tag of a pid directory's entry of kind. */
static uint64_t entry_tag(struct view *v, enum node_kind kind, pid_t pid, uint64_t dir_tag)
{
	if (kind == NODE_PID_MAGIC)
		return (uint64_t)(guint)g_atomic_int_add(&v->magic_generation, 1);
	return kind == NODE_PID_FILE ? dir_tag ^ access_tag(v, pid) : dir_tag;
}

/* The process behind a pid node, if it is still the one the node names:
 * -ENOENT once it is gone, -ESTALE once its pid is another process's. The
 * kernel then walks the path again, asking every name afresh (a walk that
 * met a stale node is redone with LOOKUP_REVAL), so a caller whose cached
 * entry still names the old process (its end not told to the kernel yet,
 * or while no daemon ran) gets the new one, as the procfs would give it. */
static int pid_node_process(struct view *v, uint64_t ino, struct pid_stat *ret)
{
	struct pid_stat st;
	int r = procfile_pid_stat(v->cfg.proc_fd, ino_pid(ino), &st);
	if (r < 0)
		return r;
	uint64_t tag = ino_process_tag(st.start_time);
	if (ino_kind(ino) == NODE_PID_FILE)
		tag ^= access_tag(v, ino_pid(ino));
	if (tag != ino_tag(ino))
		return -ESTALE;
	*ret = st;
	return 0;
}

static int pid_node_current(struct view *v, uint64_t ino)
{
	struct pid_stat st;
	return pid_node_process(v, ino, &st);
}

static const char *pid_entry_name(const struct view *v, uint64_t ino)
{
	unsigned i = ino_entry(ino);
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

static int pid_dir_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret,
			double *ret_timeout)
{
	struct stat real;
	int r = stat_pid(v, c, ino_pid(ino), &real);
	if (r < 0)
		return r;
	view_attr_fill(v, ret, ino, S_IFDIR | 0555, 0);
	ret->st_uid = real.st_uid;
	ret->st_gid = real.st_gid;
	ret->st_nlink = real.st_nlink;
	ret->st_atim = real.st_atim;
	ret->st_mtim = real.st_mtim;
	ret->st_ctim = real.st_ctim;
	*ret_timeout = TIMEOUT_PID_ATTR;
	return 0;
}

static int lookup_pid_dir(struct view *v, const struct caller *c, pid_t pid, struct view_entry *ret)
{
	/* The pidfd is taken before the process is checked: if it exits
	 * after the check, the pidfd reports it and the entry is dropped.
	 * Where processes are hidden from some callers, the kernel's entry
	 * would be shared by all: none is cached, each walk asks. */
	_cleanup_close_ int pidfd = v->cfg.hidepid ? -1 : pidns_pidfd_open(v->cfg.pid_ns_fd, pid, 0);
	if (pidfd < 0)
		pidfd = -1; /* unwatched: not cached */
	struct pid_stat st;
	int r = procfile_pid_stat(v->cfg.proc_fd, pid, &st);
	if (r < 0)
		return r;
	uint64_t ino = ino_pid_make(NODE_PID_DIR, pid, 0, ino_process_tag(st.start_time));
	r = pid_dir_attr(v, c, ino, &ret->attr, &ret->attr_timeout);
	if (r < 0)
		return r;
	ret->ino = ino;
	/* A zombie's directory goes when it is reaped, which no pidfd tells;
	 * a thread that is not a group leader gets no pidfd. Neither is cached. */
	gboolean watched = pidfd >= 0 && st.state != 'Z' && st.state != 'X';
	ret->entry_timeout = watched ? TIMEOUT_STABLE : 0;
	if (watched) {
		ret->pid = pid;
		ret->pidfd = steal_fd(&pidfd);
	}
	return 0;
}

int proc_lookup_top(struct view *v, const struct caller *c, const char *name, struct view_entry *ret)
{
	struct stat st;
	pid_t pid;

	if (v->cfg.files_only)
		return -ENOENT;
	if (proc_parse_pid(name, &pid))
		return lookup_pid_dir(v, c, pid, ret);
	if (fstatat(v->cfg.proc_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	/* Interned only once the kernel has shown the name exists. */
	ret->ino = ino_named_make(NODE_TOP_LINK, names_intern(name));
	return 0;
}

struct top_listing {
	struct view *v;
	GArray *entries;
	pid_t skip; /* a pid not to list */
	/* Where set, each pid is listed only if stat_pid as this caller
	 * finds it (a listing as the daemon, asked per pid). */
	const struct caller *each;
};

static void list_top_entry(const struct dirent *de, void *data)
{
	struct top_listing *l = data;
	pid_t pid;

	if (files_find_row(l->v, ROW_PROC, de->d_name) != ROW_NONE)
		return; /* listed from the table */
	if (proc_parse_pid(de->d_name, &pid)) {
		/* d_ino without the tag: reading every process's start time
		 * would cost a file read per process per listing. */
		struct stat st;
		if (pid != l->skip && (!l->each || stat_pid(l->v, l->each, pid, &st) == 0))
			view_dirent_add(l->entries, de->d_name, ino_pid_make(NODE_PID_DIR, pid, 0, 0), S_IFDIR);
	} else {
		view_dirent_add(l->entries, de->d_name, ino_named_make(NODE_TOP_LINK, names_intern(de->d_name)),
				S_IFLNK);
	}
}

/* proc/ as the procfs lists it for the caller (see stat_pid). A caller in
 * another user namespace than the daemon's has capabilities there that the
 * acting thread cannot hold, so a listing as the thread would hide the
 * processes of its namespace that the kernel shows it: it is listed as
 * the daemon and asked per pid, where capabilities are decided per owner
 * (one check per process, for such callers of a view with hidepid only). */
int proc_list_top(struct view *v, const struct caller *c, GArray *entries)
{
	gboolean each = v->cfg.hidepid == VIEW_HIDEPID_INVISIBLE && caller_user_ns_foreign(c) != 0;
	struct top_listing l = { v, entries, v->cfg.hidepid ? getpid() : 0, each ? c : NULL };
	struct stat st;
	char name[16];

	if (v->cfg.files_only)
		return 0;
	int r = each ? dirwalk(v->cfg.proc_fd, ".", list_top_entry, &l) : list_proc(v, c, 0, ".", list_top_entry, &l);
	if (r == 0 && l.skip && stat_pid(v, c, l.skip, &st) == 0) {
		snprintf(name, sizeof(name), "%d", (int)l.skip);
		view_dirent_add(entries, name, ino_pid_make(NODE_PID_DIR, l.skip, 0, 0), S_IFDIR);
	}
	return r;
}

static gboolean top_link_valid(const struct view *v, uint64_t ino)
{
	return names_lookup(ino_id(ino)) != NULL;
}

/* The target of a link into the real procfs (proc/<name> or
 * proc/<pid>/<entry>). */
static char *delegated_target(const struct view *v, uint64_t ino)
{
	return ino_kind(ino) == NODE_TOP_LINK ? delegate_top_target(names_lookup(ino_id(ino)))
					      : delegate_pid_target(ino_pid(ino), pid_entry_name(v, ino));
}

static int delegated_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret,
			  double *ret_timeout)
{
	g_autofree char *target = delegated_target(v, ino);
	*ret_timeout = TIMEOUT_STABLE;
	view_attr_fill(v, ret, ino, S_IFLNK | 0777, (off_t)strlen(target));
	return 0;
}

static int delegated_readlink(struct view *v, const struct caller *c, uint64_t ino, char **ret_target)
{
	*ret_target = delegated_target(v, ino);
	return 0;
}

const struct kind_ops proc_top_link_ops = {
	.type = S_IFLNK,
	.valid = top_link_valid,
	.attr = delegated_attr,
	.readlink = delegated_readlink,
};

static gboolean pid_dir_valid(const struct view *v, uint64_t ino)
{
	return ino_entry(ino) == 0;
}

static int pid_dir_lookup(struct view *v, const struct caller *c, uint64_t parent, const char *name,
			  struct view_entry *ret)
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
	ret->ino = ino_pid_make(kind, ino_pid(parent), index, entry_tag(v, kind, ino_pid(parent), ino_tag(parent)));
	return 0;
}

struct pid_listing {
	struct view *v;
	GArray *entries;
	uint64_t parent;
};

static void list_pid_entry(const struct dirent *de, void *data)
{
	struct pid_listing *l = data;
	unsigned index = GPOINTER_TO_UINT(g_hash_table_lookup(l->v->pid_entry_index, de->d_name));
	if (index == 0)
		return;
	enum node_kind kind = pid_entry_kind(de->d_name);
	uint64_t tag = kind == NODE_PID_MAGIC ? 0 : entry_tag(l->v, kind, ino_pid(l->parent), ino_tag(l->parent));
	view_dirent_add(l->entries, de->d_name, ino_pid_make(kind, ino_pid(l->parent), index, tag),
			kind == NODE_PID_FILE ? S_IFREG : S_IFLNK);
}

static int pid_dir_readdir(struct view *v, const struct caller *c, uint64_t ino, GArray *entries)
{
	struct pid_listing l = { v, entries, ino };
	char path[16];
	int r = pid_node_current(v, ino);
	if (r < 0) /* a directory read is not walked again: the old one is gone */
		return r == -ESTALE ? -ENOENT : r;
	snprintf(path, sizeof(path), "%d", (int)ino_pid(ino));
	return list_proc(v, c, ino_pid(ino), path, list_pid_entry, &l);
}

const struct kind_ops proc_pid_dir_ops = {
	.type = S_IFDIR,
	.attr_from_lookup = TRUE,
	.valid = pid_dir_valid,
	.current = pid_node_current,
	.attr = pid_dir_attr,
	.lookup = pid_dir_lookup,
	.readdir = pid_dir_readdir,
};

/* An entry of a pid directory of the kind its name has. */
static gboolean pid_entry_valid(const struct view *v, uint64_t ino)
{
	const char *name = pid_entry_name(v, ino);
	return name && pid_entry_kind(name) == ino_kind(ino);
}

const struct kind_ops proc_pid_link_ops = {
	.type = S_IFLNK,
	.valid = pid_entry_valid,
	.current = pid_node_current,
	.attr = delegated_attr,
	.readlink = delegated_readlink,
};

static int magic_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret,
		      double *ret_timeout)
{
	/* Never cached: each lookup makes a new inode, so the kernel asks
	 * for the text, with the caller's rights, every time. */
	*ret_timeout = 0;
	view_attr_fill(v, ret, ino, S_IFLNK | 0777, 0);
	return 0;
}

static int magic_readlink(struct view *v, const struct caller *c, uint64_t ino, char **ret_target)
{
	return delegate_magic_target(c, v->cfg.proc_fd, ino_pid(ino), pid_entry_name(v, ino), ret_target);
}

/* No current: the tag of a magic link is a generation, not the process's. */
const struct kind_ops proc_pid_magic_ops = {
	.type = S_IFLNK,
	.valid = pid_entry_valid,
	.attr = magic_attr,
	.readlink = magic_readlink,
};

static int pid_file_open(struct view *v, const struct caller *c, uint64_t ino, GBytes **ret,
		 int64_t *ret_version)
{
	struct pid_stat st;
	int r = pid_node_process(v, ino, &st);
	if (r < 0)
		return r;
	/* The memo's text is the same for every caller who may open it (the
	 * open checks): the open tells the kernel its size, for sendfile. A
	 * process that exec'd meanwhile may be another's to read: its text
	 * is not this inode's (the kernel looks the name up again). */
	*ret_version = VIEW_FRESH;
	r = smaps_read(v->cfg.smaps, c, v->cfg.pid_ns, ino_pid(ino), st.start_time, ret);
	if (r == 0 && (ino_process_tag(st.start_time) ^ access_tag(v, ino_pid(ino))) != ino_tag(ino)) {
		g_clear_pointer(ret, g_bytes_unref);
		return -ESTALE;
	}
	return r;
}

const struct kind_ops proc_pid_file_ops = {
	.type = S_IFREG,
	.valid = pid_entry_valid,
	.current = pid_node_current,
	.attr = view_served_file_attr,
	.open = pid_file_open,
};
