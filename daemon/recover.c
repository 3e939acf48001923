/* Taking a view over from a dead daemon's keeper (see keeper.c): the dead
 * daemon's process watches are gone, so the kernel may cache entries of
 * processes that exited meanwhile, and a number of one of those may stand
 * for another process by now (the soak saw a live process's directory
 * ENOENT in the view: its cached entry was of the pid's previous process).
 * Every number allocated so far (up to ns_last_pid, or the highest live
 * one) is dropped from the kernel's cache; the next lookup makes the entry
 * again, watched. A number above that, only possible after the
 * namespace's pids wrapped around, is not. */
#include "daemon.h"
#include "dirwalk.h"
#include "session.h"
#include "procfile.h"


static void note_top(const struct dirent *de, void *data)
{
	guint64 pid;
	unsigned *top = data;
	if (g_ascii_string_to_unsigned(de->d_name, 10, 1, G_MAXINT32, &pid, NULL))
		*top = MAX(*top, (unsigned)pid);
}

/* The last pid the namespace of proc_fd allocated, 0 if unknown. */
static unsigned last_pid(int proc_fd)
{
	g_autofree char *s = NULL;
	guint64 n;
	if (procfile_read_text_at(proc_fd, "sys/kernel/ns_last_pid", &s) < 0)
		return 0;
	return g_ascii_string_to_unsigned(g_strstrip(s), 10, 0, G_MAXINT32, &n, NULL) ? (unsigned)n : 0;
}

void recover_entries(struct session *s, int proc_fd)
{
	struct ops_state *owner = session_ops(s);
	unsigned top = last_pid(proc_fd);
	gint64 started = g_get_monotonic_time();

	(void)dirwalk(proc_fd, ".", note_top, &top);
	session_batch_notifications(s, TRUE);
	for (unsigned pid = 1; pid <= top; pid++)
		ops_forget_pid(owner, (pid_t)pid);
	session_batch_notifications(s, FALSE);
	g_debug("taken-over view: the entries of pids 1 to %u dropped in %.1f ms", top,
		(double)(g_get_monotonic_time() - started) / 1000);
}
