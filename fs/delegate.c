#include "delegate.h"

#include <stdio.h>

char *delegate_top_target(const char *name)
{
	return g_strconcat(DELEGATE_REAL_NAME "/", name, NULL);
}

char *delegate_pid_target(pid_t pid, const char *name)
{
	return g_strdup_printf("../" DELEGATE_REAL_NAME "/%d/%s", (int)pid, name);
}

int delegate_magic_target(const struct caller *c, int proc_fd, pid_t pid, const char *name,
			  char **ret_target)
{
	char path[64];

	snprintf(path, sizeof(path), "%d/%s", (int)pid, name);
	return caller_readlinkat(c, pid, proc_fd, path, ret_target);
}
