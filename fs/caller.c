#include "caller.h"

#include "cleanup.h"
#include "pidns.h"
#include "procfile.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int caller_parse_status(const char *text, size_t len, struct caller_status *ret)
{
	g_autofree char *copy = g_strndup(text, len);
	g_autoptr(GArray) groups = g_array_new(FALSE, FALSE, sizeof(gid_t));
	gboolean have_caps = FALSE, have_groups = FALSE;
	uint64_t caps = 0;

	ret->tgid = 0;
	ret->fsuid = ret->euid = (uid_t)-1;
	ret->fsgid = (gid_t)-1;
	for (char *line = copy, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (g_str_has_prefix(line, "Tgid:")) {
			guint64 tgid;
			if (!g_ascii_string_to_unsigned(g_strstrip(line + 5), 10, 1, G_MAXINT32, &tgid, NULL))
				return -EINVAL;
			ret->tgid = (pid_t)tgid;
		} else if (g_str_has_prefix(line, "Uid:") || g_str_has_prefix(line, "Gid:")) {
			g_auto(GStrv) ids = g_strsplit_set(g_strstrip(line + 4), " \t", -1);
			guint64 id, e;
			if (g_strv_length(ids) != 4 ||
			    !g_ascii_string_to_unsigned(ids[3], 10, 0, G_MAXUINT32 - 1, &id, NULL) ||
			    !g_ascii_string_to_unsigned(ids[1], 10, 0, G_MAXUINT32 - 1, &e, NULL))
				return -EINVAL;
			if (line[0] == 'U') {
				ret->fsuid = (uid_t)id;
				ret->euid = (uid_t)e;
			} else {
				ret->fsgid = (gid_t)id;
			}
		} else if (g_str_has_prefix(line, "CapEff:")) {
			char *end;
			errno = 0;
			caps = strtoull(line + 7, &end, 16);
			if (errno || end == line + 7)
				return -EINVAL;
			have_caps = TRUE;
		} else if (g_str_has_prefix(line, "Groups:")) {
			g_auto(GStrv) words = g_strsplit_set(line + 7, " \t", -1);
			for (char **w = words; *w; w++) {
				if (**w == '\0')
					continue;
				guint64 gid;
				if (!g_ascii_string_to_unsigned(*w, 10, 0, G_MAXUINT32 - 1, &gid, NULL))
					return -EINVAL;
				gid_t g = (gid_t)gid;
				g_array_append_val(groups, g);
			}
			have_groups = TRUE;
		}
	}
	if (!have_caps || !have_groups)
		return -EINVAL;
	ret->cap_effective = caps;
	ret->groups = g_steal_pointer(&groups);
	return 0;
}

/* The daemon's own capabilities, groups and filesystem ids, which every
 * thread has but while it acts as a caller, and which never change: read
 * once (g_once), then shared read-only by every thread, no lock; never
 * freed. A restore goes back to these, never to what a thread had (which,
 * for a thread made by one that failed a restore, could be a caller's). */
struct daemon_creds {
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	GArray *groups; /* gid_t */
	uid_t euid;
	uid_t fsuid;
	gid_t fsgid;
};

static const struct daemon_creds *daemon_creds(void)
{
	static struct daemon_creds d;
	static gsize done;
	if (g_once_init_enter(&done)) {
		struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
		int n = getgroups(0, NULL);
		d.euid = geteuid();
		d.fsuid = (uid_t)setfsuid((uid_t)-1);
		d.fsgid = (gid_t)setfsgid((gid_t)-1);
		gboolean ok = syscall(SYS_capget, &hdr, d.caps) == 0 && n >= 0;
		if (ok) {
			d.groups = g_array_sized_new(FALSE, TRUE, sizeof(gid_t), (guint)n);
			g_array_set_size(d.groups, (guint)n);
			ok = getgroups(n, (gid_t *)(void *)d.groups->data) == n;
		}
		g_once_init_leave(&done, ok ? 1 : 2);
	}
	return done == 1 ? &d : NULL;
}

/* Whether this thread acts as a caller (until creds_restore). */
struct saved_creds {
	gboolean active;
};

/* Restores of the daemon's credentials that failed, every attempt on every
 * thread (atomic); caller_restore_failures() reports it. */
static guint64 restore_failures;
/* Restores still to fail on purpose (atomic): caller_inject_restore_failures. */
static gint injected_failures;
/* This thread's own: a restore failed on it. Until one succeeds, it acts
 * as nobody (every caller_* call is -EIO). */
static __thread gboolean unrestored;
static __thread pid_t serving;

void caller_set_serving(pid_t tid)
{
	serving = tid;
}

pid_t caller_serving(void)
{
	return serving;
}

/* This thread's euid, as setresuid's raw system call sets it (per thread:
 * glibc's setresuid would change every thread of the daemon). The kernel
 * sets the fsuid to it too, and takes the effective capabilities away
 * when it leaves 0 (gives them back from the permitted ones when it comes
 * back); the real and saved uids stay the daemon's, so its permitted
 * capabilities stay and the way back needs none. */
static int set_thread_euid(uid_t euid)
{
	if (syscall(SYS_setresuid, (uid_t)-1, euid, (uid_t)-1) < 0)
		return -errno;
	return geteuid() == euid ? 0 : -EPERM;
}

/* Give this thread the daemon's euid, capabilities, groups and filesystem
 * ids back. 0 or -EIO. */
static int restore_ids(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	const struct daemon_creds *d = daemon_creds(); /* set: a thread acted as a caller */
	int injected = g_atomic_int_get(&injected_failures);

	if (injected > 0 && g_atomic_int_compare_and_exchange(&injected_failures, injected, injected - 1))
		return -EIO;
	/* The euid first (it sets the fsuid), then capabilities: setgroups
	 * needs CAP_SETGID back. */
	if (set_thread_euid(d->euid) < 0 || syscall(SYS_capset, &hdr, d->caps) < 0 ||
	    syscall(SYS_setgroups, (size_t)d->groups->len, (const gid_t *)(void *)d->groups->data) < 0)
		return -EIO;
	setfsuid(d->fsuid);
	setfsgid(d->fsgid);
	if ((uid_t)setfsuid((uid_t)-1) != d->fsuid || (gid_t)setfsgid((gid_t)-1) != d->fsgid)
		return -EIO;
	return 0;
}

/* End acting as a caller. A failure leaves the thread with at most the
 * caller's rights, never more than the daemon's: it is remembered, and
 * the thread acts as nobody else before a retry succeeds. 0 or -EIO. */
static int creds_restore(struct saved_creds *s)
{
	if (!s->active)
		return 0;
	s->active = FALSE;
	unrestored = TRUE;
	return caller_restored();
}

int caller_restored(void)
{
	if (!unrestored)
		return 0;
	if (restore_ids() < 0) {
		__atomic_fetch_add(&restore_failures, 1, __ATOMIC_RELAXED);
		g_debug("cannot restore the daemon's credentials: %s", g_strerror(errno));
		return -EIO;
	}
	unrestored = FALSE;
	return 0;
}

uint64_t caller_restore_failures(void)
{
	return __atomic_load_n(&restore_failures, __ATOMIC_RELAXED);
}

void caller_inject_restore_failures(unsigned n)
{
	g_atomic_int_set(&injected_failures, (gint)n);
}

static gboolean user_ns_of(int proc_fd, const char *pid, struct stat *ret)
{
	char path[48];
	snprintf(path, sizeof(path), "%s/ns/user", pid);
	return fstatat(proc_fd, path, ret, 0) == 0;
}

/* The daemon's user namespace never changes: looked up once (g_once), then
 * read by every thread, no lock; never freed. */
static gboolean daemon_user_ns(int proc_fd, struct stat *ret)
{
	static struct stat mine;
	static gsize done;
	if (g_once_init_enter(&done)) {
		gsize ok = user_ns_of(proc_fd, "self", &mine) ? 1 : 2;
		g_once_init_leave(&done, ok);
	}
	*ret = mine;
	return done == 1;
}

static gboolean same_ns(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Is id within a map of the caller's namespace (its uid_map)? */
static gboolean mapped(int proc_fd, const char *tid, uid_t id)
{
	char path[48];
	g_autoptr(GBytes) text = NULL;
	snprintf(path, sizeof(path), "%s/uid_map", tid);
	if (procfile_read_at(proc_fd, path, &text) < 0)
		return FALSE;
	gsize len;
	const char *data = g_bytes_get_data(text, &len);
	g_autofree char *map = g_strndup(data, len);
	g_auto(GStrv) lines = g_strsplit(map, "\n", -1);
	for (char **l = lines; *l; l++) {
		unsigned long long inside, outside, count;
		if (sscanf(*l, "%llu %llu %llu", &inside, &outside, &count) == 3 && id >= outside &&
		    id - outside < count)
			return TRUE;
	}
	return FALSE;
}

/* Does the kernel ask capabilities toward owner (of the caller's user
 * namespace) of that namespace alone? Only if owner is dumpable: else of
 * the namespace its mm was made in too, which may be an ancestor, where
 * the caller has none (a process that joined the caller's, as runc init
 * does). That namespace cannot be read; owner is taken for dumpable, and
 * made in the caller's, if its directory is its euid's (as the kernel
 * gives it one that is dumpable) and that euid is one of the caller's
 * namespace. Never more than the kernel grants; sometimes less (a
 * process that exec'd a setuid program inside the namespace). */
static gboolean caps_count_toward(int proc_fd, const char *tid, int owner_proc_fd, const char *pid)
{
	char path[48];
	g_autoptr(GBytes) text = NULL;
	struct stat dir;
	struct caller_status st;
	snprintf(path, sizeof(path), "%s/status", pid);
	if (fstatat(owner_proc_fd, pid, &dir, 0) < 0 || procfile_read_at(owner_proc_fd, path, &text) < 0)
		return FALSE;
	gsize len;
	const char *data = g_bytes_get_data(text, &len);
	if (caller_parse_status(data, len, &st) < 0)
		return FALSE;
	g_array_unref(st.groups);
	return st.euid != (uid_t)-1 && dir.st_uid == st.euid && mapped(proc_fd, tid, st.euid);
}

/* Which of the caller's effective capabilities the narrowed thread may keep.
 * The thread stays in the daemon's user namespace, where capabilities mean
 * more than in a child namespace: a caller in another user namespace keeps
 * its capabilities only towards a process of its own namespace, is refused
 * processes outside it (-EXDEV: the kernel gives it no access to them),
 * and keeps none for plain files. */
static int usable_caps(const struct caller *c, int owner_proc_fd, pid_t owner, uint64_t caps, uint64_t *ret)
{
	struct stat mine, theirs, target;
	char tid[16], pid[16];

	snprintf(tid, sizeof(tid), "%d", (int)c->tid);
	if (!daemon_user_ns(c->proc_fd, &mine) || !user_ns_of(c->proc_fd, tid, &theirs))
		return -EACCES;
	if (same_ns(&mine, &theirs)) {
		*ret = caps;
		return 0;
	}
	if (owner <= 0) {
		*ret = 0;
		return 0;
	}
	snprintf(pid, sizeof(pid), "%d", (int)owner);
	if (!user_ns_of(owner_proc_fd, pid, &target))
		return errno == ENOENT || errno == ESRCH ? -ENOENT : -EXDEV; /* gone, or not to be told: none */
	if (!same_ns(&theirs, &target))
		return -EXDEV;
	*ret = caps_count_toward(c->proc_fd, tid, owner_proc_fd, pid) ? caps : 0;
	return 0;
}

/* Is owner the caller's own process? The kernel lets a process at its own
 * files without a check (same_thread_group in ptrace_may_access): even a
 * process that is not dumpable reads its own exe link and smaps_rollup. */
static gboolean own_process(const struct caller *c, pid_t caller_tgid, pid_t owner)
{
	if (owner <= 0)
		return FALSE;
	if (c->pid_ns_fd < 0)
		return caller_tgid == owner;
	return pidns_tgid_in(c->pid_ns_fd, c->tid) == owner;
}

/* Put the caller's groups, fsgid, euid, fsuid and the capabilities it
 * keeps (caps) on this thread, in an order the kernel allows: groups and
 * fsgid while the daemon's capabilities still count, then the euid, which
 * takes them away where it leaves 0, then the fsuid (back with CAP_SETUID
 * where it is not the euid), then the narrowed capabilities. A failure
 * leaves whatever was changed to the caller's cleanup. 0 or -errno. */
static int creds_apply(const struct daemon_creds *d, const struct caller *c, const GArray *groups,
		       uid_t euid, uint64_t caps)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct narrowed[_LINUX_CAPABILITY_U32S_3];
	memcpy(narrowed, d->caps, sizeof(narrowed));
	narrowed[0].effective &= (uint32_t)caps;
	narrowed[1].effective &= (uint32_t)(caps >> 32);

	if (syscall(SYS_setgroups, (size_t)groups->len, (const gid_t *)(void *)groups->data) < 0)
		return -errno;
	setfsgid(c->gid);
	if ((gid_t)setfsgid((gid_t)-1) != c->gid)
		return -EPERM;
	if (euid != d->euid) {
		int r = set_thread_euid(euid);
		if (r < 0)
			return r;
		if (c->uid != euid && syscall(SYS_capset, &hdr, d->caps) < 0)
			return -errno;
	}
	setfsuid(c->uid);
	if ((uid_t)setfsuid((uid_t)-1) != c->uid)
		return -EPERM;
	if (syscall(SYS_capset, &hdr, narrowed) < 0)
		return -errno;
	return 0;
}

/* Narrow this thread's credentials to the caller's: every one the kernel
 * consults for another process's files. The fsuid, fsgid and groups (its
 * permission checks), the capabilities, and the euid: the kernel gives a
 * user namespace's owner every capability in it (cap_capable), so a thread
 * that kept euid 0 would pass ptrace_may_access for every process of every
 * user namespace root made (every unprivileged container). The real and
 * saved uids are not asked by procfs (it checks with the fs credentials)
 * and stay the daemon's. Per-thread raw syscalls: glibc's setgroups would
 * change every thread of the daemon. Whatever it returns, the caller runs
 * creds_restore(s) afterwards. */
static int creds_assume(const struct caller *c, int owner_proc_fd, pid_t owner, struct saved_creds *s)
{
	char path[48];
	g_autoptr(GBytes) text = NULL;
	struct caller_status st;

	snprintf(path, sizeof(path), "%d/status", (int)c->tid);
	if (procfile_read_at(c->proc_fd, path, &text) < 0)
		return -EACCES; /* the caller is gone: grant nothing */
	gsize len;
	const char *data = g_bytes_get_data(text, &len);
	if (caller_parse_status(data, len, &st) < 0)
		return -EACCES;
	g_autoptr(GArray) caller_groups = st.groups;
	uint64_t caller_caps;
	if (own_process(c, st.tgid, owner))
		return 0; /* as the kernel does: nothing to narrow */
	int r = usable_caps(c, owner_proc_fd, owner, st.cap_effective, &caller_caps);
	if (r < 0)
		return r;
	uid_t euid = st.euid;
	if (st.fsuid != c->uid || st.fsgid != c->gid) {
		/* The request's ids are not the thread's own: it acts with
		 * credentials put on for it (override_creds: an io_uring
		 * personality, say), whose capabilities and groups its status
		 * does not show. None, then: never more than the kernel grants;
		 * and the request's fsuid as the euid (such credentials are
		 * one user's: a personality copies its registrar's whole). */
		caller_caps = 0;
		g_array_set_size(caller_groups, 0);
		euid = c->uid;
	}

	const struct daemon_creds *d = daemon_creds();
	if (!d)
		return -EIO;
	uint64_t ours = (uint64_t)d->caps[1].effective << 32 | d->caps[0].effective;
	if (c->uid == 0 && c->gid == 0 && (caller_caps & ours) == ours)
		return 0; /* root with all of the daemon's capabilities: nothing to narrow */
	s->active = TRUE;
	return creds_apply(d, c, caller_groups, euid, caller_caps);
}

int caller_user_ns_foreign(const struct caller *c)
{
	struct stat mine, theirs;
	char tid[16];
	snprintf(tid, sizeof(tid), "%d", (int)c->tid);
	if (!daemon_user_ns(c->proc_fd, &mine) || !user_ns_of(c->proc_fd, tid, &theirs))
		return -EACCES;
	return !same_ns(&mine, &theirs);
}

int caller_run(const struct caller *c, pid_t owner, int dirfd, int (*fn)(void *data), void *data)
{
	int r = caller_restored();
	if (r < 0)
		return r;
	struct saved_creds saved = { 0 };
	r = creds_assume(c, dirfd, owner, &saved);
	if (r == 0)
		r = fn(data);
	int restored = creds_restore(&saved);
	return restored < 0 ? restored : r;
}

struct open_call {
	int dirfd;
	const char *path;
	int flags;
	int fd; /* the result, -1 until opened */
};

static int open_as(void *data)
{
	struct open_call *o = data;
	o->fd = openat(o->dirfd, o->path, o->flags | O_CLOEXEC | O_NOCTTY);
	return o->fd < 0 ? procfile_errno() : 0;
}

int caller_openat(const struct caller *c, pid_t owner, int dirfd, const char *path, int flags,
		  int *ret_fd)
{
	struct open_call o = { dirfd, path, flags, -1 };
	int r = caller_run(c, owner, dirfd, open_as, &o);
	_cleanup_close_ int fd = o.fd; /* closed if the restore failed */
	if (r < 0)
		return r == -EXDEV ? -EACCES : r;
	*ret_fd = steal_fd(&fd);
	return 0;
}

/* The caller's effective capabilities as they count for a plain file, 0
 * where its request's ids are not its own (see creds_assume). */
static int counted_caps(const struct caller *c, uint64_t *ret)
{
	char path[48];
	g_autoptr(GBytes) text = NULL;
	struct caller_status st;
	gsize len;

	snprintf(path, sizeof(path), "%d/status", (int)c->tid);
	if (procfile_read_at(c->proc_fd, path, &text) < 0)
		return -EACCES;
	const char *data = g_bytes_get_data(text, &len);
	if (caller_parse_status(data, len, &st) < 0)
		return -EACCES;
	g_array_unref(st.groups);
	int r = usable_caps(c, c->proc_fd, 0, st.cap_effective, ret);
	if (r == 0 && (st.fsuid != c->uid || st.fsgid != c->gid))
		*ret = 0;
	return r;
}

int caller_open_capable(const struct caller *c, int cap, int dirfd, const char *path, int flags, int *ret_fd)
{
	uint64_t caps;
	int r = caller_restored();
	if (r == 0)
		r = counted_caps(c, &caps);
	const struct daemon_creds *d = daemon_creds();
	if (r == 0 && !d)
		r = -EIO;
	if (r < 0)
		return r;
	struct saved_creds saved = { 0 };
	if (!(caps & (UINT64_C(1) << cap))) {
		struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct narrowed[_LINUX_CAPABILITY_U32S_3];
		memcpy(narrowed, d->caps, sizeof(narrowed));
		narrowed[cap / 32].effective &= ~(UINT32_C(1) << (cap % 32));
		saved.active = TRUE;
		if (syscall(SYS_capset, &hdr, narrowed) < 0)
			r = -errno;
	}
	_cleanup_close_ int fd = r < 0 ? -1 : openat(dirfd, path, flags | O_CLOEXEC | O_NOCTTY);
	if (r == 0 && fd < 0)
		r = procfile_errno();
	int restored = creds_restore(&saved);
	if (restored < 0 || r < 0)
		return restored < 0 ? restored : r;
	*ret_fd = steal_fd(&fd);
	return 0;
}

struct readlink_call {
	int dirfd;
	const char *path;
	char *target; /* the result, NULL until read */
};

static int readlink_as(void *data)
{
	struct readlink_call *l = data;
	return procfile_readlink_at(l->dirfd, l->path, &l->target);
}

int caller_readlinkat(const struct caller *c, pid_t owner, int dirfd, const char *path,
		      char **ret_target)
{
	struct readlink_call l = { dirfd, path, NULL };
	int r = caller_run(c, owner, dirfd, readlink_as, &l);
	g_autofree char *target = l.target; /* freed if the restore failed */
	if (r < 0)
		return r == -EXDEV ? -EACCES : r;
	*ret_target = g_steal_pointer(&target);
	return 0;
}
