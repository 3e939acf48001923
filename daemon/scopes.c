/* The containers' cgroups (fs/scope.h's rule 1): each container's, read
 * from its init at the attach, and kept in a file beside the control
 * socket for the daemon after this one (a takeover, or a start after a
 * crash), which cannot read them again: by then systemd may have moved
 * the init into init.scope. */
#include "daemon.h"
#include "procfile.h"

#include <errno.h>
#include <stdio.h>

/* Writers of one file, one at a time: the last dump is the last state. */
static GMutex save_lock;

void scopes_save(struct scope *s, const char *path)
{
	static gboolean warned;
	g_autoptr(GError) error = NULL;

	if (!s || !path)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&save_lock);
	g_autofree char *dump = scope_dump(s);
	if (!g_file_set_contents(path, dump, -1, &error) && !warned) {
		g_warning("cannot keep the containers' cgroups in %s (%s): a daemon taking over from this one "
			  "counts a container's processes by their own cgroups", path, error->message);
		warned = TRUE;
	}
}

void scopes_attached(struct scope *s, const char *path, int proc_fd, pid_t init, uint64_t ns)
{
	char name[32];
	g_autofree char *text = NULL;

	if (!s)
		return;
	snprintf(name, sizeof(name), "%d/cgroup", (int)init);
	int r = procfile_read_text_at(proc_fd, name, &text);
	if (r == 0)
		r = scope_add(s, ns, text);
	if (r < 0) {
		g_warning("cannot read the cgroups of container init %d (%s): its processes' figures come from "
			  "their own cgroups", (int)init, g_strerror(-r));
		return;
	}
	scopes_save(s, path);
}

void scopes_ended(struct scope *s, const char *path, uint64_t ns)
{
	if (!s)
		return;
	scope_remove(s, ns);
	scopes_save(s, path);
}

char *scopes_inherited(const char *path)
{
	char *text = NULL;
	return g_file_get_contents(path, &text, NULL, NULL) ? text : g_strdup("");
}
