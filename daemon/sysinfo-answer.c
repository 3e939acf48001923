/* The answer to one sysinfo(2) (sysinfo-answer.h). */
#include "sysinfo-answer.h"

#include "cleanup.h"
#include "inplace.h"
#include "procfile.h"
#include "seccomp-state.h"
#include "sysinfo.h"
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* How long an answer serves the callers of one container and namespaces:
 * as long as the meminfo text it comes from (fs/files.c); its uptime is
 * moved on by the time since. */
#define ANSWER_MAX_AGE_US G_USEC_PER_SEC

/* The namespaces an answer to tid holds for; FALSE if they cannot be told. */
static gboolean namespaces_of(int proc_fd, pid_t tid, uint64_t ret[3])
{
	const char *const names[] = { "pid", "cgroup", "mnt" };
	for (int i = 0; i < 3; i++) {
		char path[48];
		struct stat st;
		snprintf(path, sizeof(path), "%d/ns/%s", (int)tid, names[i]);
		if (fstatat(proc_fd, path, &st, 0) < 0)
			return FALSE;
		ret[i] = st.st_ino;
	}
	return TRUE;
}

/* What the caller's view says in place of the kernel's answer; -ENOENT
 * where its view is not in place, -EIO where it is and its figures cannot
 * be had. */
static int render_answer(const struct sysinfo_source *l, pid_t tid, struct sysinfo *ret, double *ret_up)
{
	struct caller c = { .tid = tid, .proc_fd = l->proc_fd, .pid_ns_fd = -1 };
	g_autoptr(GBytes) meminfo = NULL, uptime = NULL, loadavg = NULL;
	struct sysinfo host;
	/* A container whose view is not in place keeps the kernel's
	 * sysinfo(2), which then agrees with the files it reads (busybox free
	 * takes both). */
	if (!inplace_view(l->in_place, tid, INPLACE_MEMORY))
		return -ENOENT;
	if (sysinfo(&host) < 0)
		return -errno;
	/* In place, the view's figures or none: never the kernel's (a scope
	 * that cannot be found, say). */
	if (view_proc_text(l->view, &c, "meminfo", &meminfo) < 0 || view_proc_text(l->view, &c, "uptime", &uptime) < 0 ||
	    view_proc_text(l->view, &c, "loadavg", &loadavg) < 0)
		return -EIO;
	g_autofree char *m = g_strndup(g_bytes_get_data(meminfo, NULL), g_bytes_get_size(meminfo));
	g_autofree char *u = g_strndup(g_bytes_get_data(uptime, NULL), g_bytes_get_size(uptime));
	g_autofree char *a = g_strndup(g_bytes_get_data(loadavg, NULL), g_bytes_get_size(loadavg));
	*ret_up = g_ascii_strtod(u, NULL);
	return sysinfo_from_texts(&host, m, u, a, ret);
}

/* The answer to tid: *last if it is for tid's namespaces and young enough
 * (its uptime moved on), else a new one. */
static int answer_of(const struct sysinfo_source *l, struct answer *last, pid_t tid, struct sysinfo *ret)
{
	uint64_t ns[3] = { 0, 0, 0 };
	gint64 now = g_get_monotonic_time();
	gboolean reusable = l->reuse && namespaces_of(l->proc_fd, tid, ns);
	if (reusable && memcmp(ns, last->ns, sizeof(ns)) == 0 && now - last->at_us < ANSWER_MAX_AGE_US) {
		double up = last->up + (double)(now - last->at_us) / G_USEC_PER_SEC;
		*ret = last->s;
		ret->uptime = sysinfo_uptime(up);
		return 0;
	}
	double up = 0;
	int r = render_answer(l, tid, ret, &up);
	if (r == 0 && reusable)
		*last = (struct answer){ .ns = { ns[0], ns[1], ns[2] }, .at_us = now, .up = up, .s = *ret };
	return r;
}

int sysinfo_answer(const struct sysinfo_source *l, struct answer *last, int notify_fd, int mem,
		   const struct seccomp_notif *req)
{
	struct sysinfo s;
	char path[32];
	snprintf(path, sizeof(path), "%u/maps", req->pid);
	_cleanup_close_ int maps = openat(l->proc_fd, path, O_RDONLY | O_CLOEXEC);
	int r = ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0 ? -errno : 0;
	if (r == 0 && maps < 0)
		r = sysinfo_out_of_fds(errno) ? -EIO : -EFAULT;
	else if (r == 0 && !seccomp_writable(maps, req->data.args[0], sizeof(s)))
		r = -EFAULT;
	if (r == 0)
		r = answer_of(l, last, (pid_t)req->pid, &s);
	/* Again, just before the write: a caller interrupted while the
	 * answer was made runs on, and its buffer may be in use again. */
	if (r == 0 && ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
		r = -errno;
	if (r == 0 && pwrite(mem, &s, sizeof(s), (off_t)req->data.args[0]) != (ssize_t)sizeof(s))
		r = -EFAULT;
	return r;
}
