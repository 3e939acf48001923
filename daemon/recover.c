/* Taking a view over from a dead daemon's keeper (see keeper.c): the dead
 * daemon's process watches are gone, so the kernel may cache entries of
 * processes that exited meanwhile (their numbers could come back for other
 * processes and be shadowed). The live processes are watched again, and
 * every other number allocated so far (up to ns_last_pid) is dropped from
 * the kernel's cache: about a microsecond each. A number above that, only
 * possible after the namespace's pids wrapped around, is not. */
#include "daemon.h"
#include "dirwalk.h"
#include "session.h"
#include "pidns.h"
#include "procfile.h"

#include <errno.h>


static void add_pid(const struct dirent *de, void *data)
{
	guint64 pid;
	if (g_ascii_string_to_unsigned(de->d_name, 10, 1, G_MAXINT32, &pid, NULL))
		g_hash_table_add(data, GUINT_TO_POINTER((guint)pid));
}

/* The numbers of proc_fd's processes (none if it cannot be listed). */
static GHashTable *live_pids(int proc_fd)
{
	GHashTable *live = g_hash_table_new(g_direct_hash, g_direct_equal);
	(void)dirwalk(proc_fd, ".", add_pid, live);
	return live;
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
	int pid_ns_fd = session_ns_fd(s);
	g_autoptr(GHashTable) live = live_pids(proc_fd);
	GHashTableIter it;
	gpointer key;
	unsigned dropped = 0, top = last_pid(proc_fd);

	g_hash_table_iter_init(&it, live);
	while (g_hash_table_iter_next(&it, &key, NULL)) {
		pid_t pid = (pid_t)GPOINTER_TO_UINT(key);
		int fd = pidns_pidfd_open(pid_ns_fd, pid, 0);
		top = MAX(top, (unsigned)pid);
		if (fd >= 0)
			pidwatch_adopt(owner->watch, owner, pid, fd);
	}
	for (unsigned pid = 1; pid <= top; pid++) {
		if (!g_hash_table_contains(live, GUINT_TO_POINTER(pid))) {
			ops_forget_pid(owner, (pid_t)pid);
			dropped++;
		}
	}
	g_debug("taken-over view: %u live processes watched again, %u other numbers dropped",
		g_hash_table_size(live), dropped);
}
