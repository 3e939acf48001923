#include "smaps.h"

#include "cleanup.h"
#include "procfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

/* Has pid stood for the process started at start_time all along? */
static gboolean same_process(int proc_fd, pid_t pid, uint64_t start_time)
{
	struct pid_stat st;
	return procfile_pid_stat(proc_fd, pid, &st) == 0 && st.start_time == start_time;
}

int smaps_read(const struct caller *c, int proc_fd, pid_t pid, uint64_t start_time,
	       GBytes **ret_content)
{
	char path[48];
	_cleanup_close_ int fd = -1;
	g_autoptr(GBytes) text = NULL;

	snprintf(path, sizeof(path), "%d/smaps_rollup", (int)pid);
	int r = caller_openat(c, pid, proc_fd, path, O_RDONLY, &fd);
	if (r < 0)
		return r == -ESRCH ? -ENOENT : r;
	r = procfile_read_fd(fd, &text);
	if (r < 0)
		return r == -ESRCH ? -ENOENT : r;
	/* The caller checked the process; the pid may have been recycled since. */
	if (!same_process(proc_fd, pid, start_time))
		return -ENOENT;
	*ret_content = g_steal_pointer(&text);
	return 0;
}
