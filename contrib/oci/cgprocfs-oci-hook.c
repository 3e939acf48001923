/* cgprocfs-oci-hook: an OCI createContainer hook that puts the cgprocfs
 * view over a container's /proc and /sys/devices/system/cpu (or a
 * createRuntime hook, run on the host, for a container with a user
 * namespace of its own: cgprocfs-runtime puts it there).
 *
 * It reads the container's state on stdin, asks the daemon over its control
 * socket for a view of the container, gets back a detached mount of it,
 * puts clones of its parts over the container's /proc and CPU directory
 * and the container's own procfs at /proc/.real. It never breaks a
 * container start: whatever goes wrong, it says so in one line on stderr
 * and in the system log and exits 0, and the container keeps the real
 * /proc. */
#include "control.h"
#include "faults.h"
#include "say.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glib.h>
#include <json-glib/json-glib.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define PROC_SUPER_MAGIC 0x9fa0
#define HOOK_ERROR g_quark_from_static_string("cgprocfs-oci-hook-error")

/* ------------------------------------------------------------ the hook -- */

static const char *mountpoint = "/var/lib/cgprocfs";
static gboolean files_mode;

static char *container_id; /* the state's id */

#define say(...) oci_say("cgprocfs-oci-hook", container_id, __VA_ARGS__)

/* The hook gives up, and says so. Its exit status, 0: a container never
 * fails to start for cgprocfs. */
G_GNUC_PRINTF(1, 2)
static int give_up(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *text = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	say("%s; the container keeps the real /proc", text);
	return 0;
}

/* Ask the daemon on conn for a view of the container of host process
 * pid (control.h): the view's detached mount, or -errno with *error. */
static int ask_view(int conn, long pid, GError **error)
{
	const struct control_msg attach = { .word = CONTROL_ATTACH, .args = { (unsigned)pid } };
	struct control_msg reply;

	if (control_send(conn, &attach, error) < 0) {
		g_prefix_error(error, "cannot talk to the daemon: ");
		return -EPIPE;
	}
	fault_point("attach-sent");
	if (control_receive(conn, CONTROL_WORD(CONTROL_OK) | CONTROL_WORD(CONTROL_ERROR), &reply, error) < 0) {
		g_prefix_error(error, "no answer from the daemon: ");
		return -EPROTO;
	}
	if (reply.word == CONTROL_OK && reply.n_fds == 1)
		return reply.fds[0];
	control_close_fds(&reply);
	if (reply.word == CONTROL_ERROR)
		g_set_error(error, HOOK_ERROR, EPROTO, "error: %s", reply.reason);
	else
		g_set_error(error, HOOK_ERROR, EPROTO, "the daemon sent no mount");
	return -EPROTO;
}

/* The innermost pid (the last of NSpid) of host process h, and its parent. */
static gboolean pids_of(long h, long *ret_inner, long *ret_ppid)
{
	g_autofree char *path = g_strdup_printf("/proc/%ld/status", h);
	g_autofree char *text = NULL;
	if (!g_file_get_contents(path, &text, NULL, NULL))
		return FALSE;
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	gboolean found = FALSE;
	for (char **l = lines; *l; l++) {
		if (g_str_has_prefix(*l, "PPid:"))
			*ret_ppid = strtol(*l + 5, NULL, 10);
		if (g_str_has_prefix(*l, "NSpid:")) {
			const char *last = strrchr(*l, '\t');
			*ret_inner = strtol(last ? last + 1 : *l + 6, NULL, 10);
			found = TRUE;
		}
	}
	return found;
}

/* The container process pid as the host (and the daemon) numbers it.
 * Some runtimes run the hook in their own namespaces, where the state's
 * pid is the host's; runc runs createContainer hooks inside the
 * container's pid and mount namespaces (before pivot_root, /proc still the
 * host's), where the state's pid is the container's: then it is the hook's
 * ancestor, found by walking up the host's /proc. */
static long host_pid(long pid, gboolean *ret_inside)
{
	char self[32] = "";
	ssize_t n = readlink("/proc/self", self, sizeof(self) - 1);
	long h = n > 0 ? strtol(self, NULL, 10) : 0;

	*ret_inside = h > 0 && h != (long)getpid();
	if (!*ret_inside)
		return pid;
	/* crun says pid 0 there: the container's init, 1 in its namespace. */
	if (pid == 0)
		pid = 1;
	for (int depth = 0; h > 1 && depth < 16; depth++) {
		long inner = 0, ppid = 0;
		if (!pids_of(h, &inner, &ppid))
			return 0;
		if (inner == pid)
			return h;
		h = ppid;
	}
	return 0;
}

/* A part of the view a container gets: the path in the view, the path
 * in the container, and whether the container starts without it (with
 * a line that says so). */
struct part {
	const char *sub;
	const char *target;
	gboolean optional;
	int target_fd; /* where to mount it, if not at target (-1) */
};

/* A clone of each part of view (the daemon's detached mount) in
 * trees[i] (-errno for an optional part that could not be cloned). Nothing
 * can be cloned from a detached mount before Linux 6.15 (open_tree
 * answers EINVAL), so the view is attached first, over stage (the
 * container's procfs, which no process of the container uses yet),
 * cloned there and taken off again. 0, or -errno with *ret_failed the
 * part that failed (NULL: the attach itself). */
static int clone_parts(int view, const char *stage, const struct part *parts, size_t n, int *trees,
		       const struct part **ret_failed)
{
	*ret_failed = NULL;
	if (move_mount(view, "", AT_FDCWD, stage, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		int tree = open_tree(view, parts[i].sub, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		trees[i] = tree < 0 ? -errno : tree;
		if (tree < 0 && !parts[i].optional) {
			r = trees[i];
			*ret_failed = &parts[i];
		}
	}
	/* The view's own mount goes; its clones stand on their own. */
	if (umount2(stage, MNT_DETACH) < 0 && r == 0)
		r = -errno;
	return r;
}

/* Move tree (a clone) to target (or target_fd, if not -1): 0 or -errno. */
static int put(int tree, const char *target, int target_fd)
{
	int r = target_fd >= 0 ? move_mount(tree, "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH)
			       : move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH);
	return r < 0 ? -errno : 0;
}

/* rootfs/sys/devices/system/cpu, walked with no link followed (the
 * image's links would lead the mount anywhere: with no /sys mount, sys/
 * is the image's own), if it is sysfs: an O_PATH fd, else -1 (said once
 * where it is there but not sysfs). */
static int sysfs_cpu_dir(const char *rootfs)
{
	static const char *const names[] = { "sys", "devices", "system", "cpu" };
	int fd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; fd >= 0 && i < G_N_ELEMENTS(names); i++) {
		int next = openat(fd, names[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int err = errno;
		close(fd);
		fd = next;
		if (fd < 0 && err != ENOENT)
			say("no CPU view: %s/sys/devices/system/cpu is not a directory of the container's own "
			    "(%s at %s)", rootfs, g_strerror(err), names[i]);
	}
	struct statfs sfs;
	if (fd >= 0 && (fstatfs(fd, &sfs) < 0 || sfs.f_type != SYSFS_MAGIC)) {
		say("no CPU view: %s/sys/devices/system/cpu is not sysfs", rootfs);
		close(fd);
		fd = -1;
	}
	return fd;
}

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Put the view's parts in the container: the whole view over proc with
 * real_tree (the container's own procfs) at proc/.real, or only
 * cpuinfo and stat (--mode files); and the CPU directory over cpu if
 * the container has one. 0 (give_up's when it could not). */
static int place_view(int view, int real_tree, const char *proc, const char *cpu, int cpu_fd)
{
	g_autofree char *cpuinfo = g_build_filename(proc, "cpuinfo", NULL);
	g_autofree char *stat = g_build_filename(proc, "stat", NULL);
	g_autofree char *real = g_build_filename(proc, ".real", NULL);
	struct part parts[3];
	size_t n = 0;
	if (files_mode) {
		parts[n++] = (struct part){ "proc/cpuinfo", cpuinfo, FALSE, -1 };
		parts[n++] = (struct part){ "proc/stat", stat, FALSE, -1 };
	} else {
		parts[n++] = (struct part){ "proc", proc, FALSE, -1 };
	}
	if (cpu_fd >= 0)
		parts[n++] = (struct part){ "sys/devices/system/cpu", cpu, TRUE, cpu_fd };
	int trees[G_N_ELEMENTS(parts)] = { -1, -1, -1 };
	const struct part *failed;
	int r = clone_parts(view, proc, parts, n, trees, &failed);
	if (r < 0) {
		close_all(trees, n);
		if (!failed)
			return give_up("cannot attach the view at %s: %s", proc, g_strerror(-r));
		return give_up("cannot take %s of the view: %s", failed->sub, g_strerror(-r));
	}
	for (size_t i = 0; i < n; i++) {
		r = trees[i] < 0 ? trees[i] : put(trees[i], parts[i].target, parts[i].target_fd);
		if (r < 0 && parts[i].optional) {
			say("cannot mount the CPU view on %s: %s", cpu, g_strerror(-r));
		} else if (r < 0) {
			close_all(trees, n);
			return give_up("cannot mount the view on %s: %s", parts[i].target, g_strerror(-r));
		}
	}
	close_all(trees, n);
	if (!files_mode && (r = put(real_tree, real, -1)) < 0) {
		/* a view without its .real would break the container */
		umount2(proc, MNT_DETACH);
		return give_up("cannot mount the container's procfs at %s: %s", real, g_strerror(-r));
	}
	return 0;
}

/* The container's root directory, as its bundle's config.json names it;
 * NULL once give_up said why not. */
static char *rootfs_of(const char *bundle)
{
	g_autofree char *config_path = g_build_filename(bundle, "config.json", NULL);
	g_autoptr(JsonParser) parser = json_parser_new_immutable();
	JsonNode *config = json_parser_load_from_mapped_file(parser, config_path, NULL) ? json_parser_get_root(parser)
											 : NULL;
	JsonNode *root = config && JSON_NODE_HOLDS_OBJECT(config)
				 ? json_object_get_member(json_node_get_object(config), "root")
				 : NULL;
	const char *root_path = root && JSON_NODE_HOLDS_OBJECT(root)
					? json_object_get_string_member_with_default(json_node_get_object(root), "path",
										     NULL)
					: NULL;
	if (!root_path) {
		give_up("%s names no root.path (or cannot be read as JSON)", config_path);
		return NULL;
	}
	return g_path_is_absolute(root_path) ? g_strdup(root_path) : g_build_filename(bundle, root_path, NULL);
}

static int run(const char *state_text)
{
	g_autoptr(JsonNode) state = json_from_string(state_text, NULL);
	JsonObject *so = state && JSON_NODE_HOLDS_OBJECT(state) ? json_node_get_object(state) : NULL;
	long pid = so ? (long)json_object_get_int_member_with_default(so, "pid", -1) : -1;
	const char *bundle = so ? json_object_get_string_member_with_default(so, "bundle", NULL) : NULL;
	if (so)
		container_id = g_strdup(json_object_get_string_member_with_default(so, "id", "?"));
	if (pid < 0 || !bundle)
		return give_up("the state on stdin has no pid or bundle");
	g_autofree char *rootfs = rootfs_of(bundle);
	if (!rootfs)
		return 0;

	g_autofree char *socket_path = control_socket_of(mountpoint, NULL);
	if (!socket_path)
		return give_up("no cgprocfs daemon serves %s", mountpoint);

	g_autoptr(GError) error = NULL;
	int conn = control_connect(socket_path, 0, &error);
	if (conn < 0)
		return give_up("%s", error->message);
	gboolean inside;
	pid = host_pid(pid, &inside);
	if (pid <= 0)
		return give_up("cannot find the container's process on the host");
	if (!inside) {
		char ns_path[64];
		snprintf(ns_path, sizeof(ns_path), "/proc/%ld/ns/mnt", pid);
		int mnt_ns = open(ns_path, O_RDONLY | O_CLOEXEC);
		if (mnt_ns < 0 || setns(mnt_ns, CLONE_NEWNS) < 0)
			return give_up("cannot enter the container's mount namespace: %s", g_strerror(errno));
	}

	g_autofree char *proc = g_build_filename(rootfs, "proc", NULL);
	g_autofree char *cpu = g_build_filename(rootfs, "sys", "devices", "system", "cpu", NULL);
	struct statfs sfs;
	if (statfs(proc, &sfs) < 0 || sfs.f_type != PROC_SUPER_MAGIC)
		return give_up("%s is not a procfs", proc);
	/* The container's own procfs, with what the runtime mounted in it. */
	int real_tree = open_tree(AT_FDCWD, proc, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (real_tree < 0)
		return give_up("cannot clone %s: %s", proc, g_strerror(errno));
	/* The daemon makes the FUSE mount (so that it numbers callers as the
	 * host does, and whatever device cgroup the runtime put this hook in)
	 * and hands it over, detached. */
	int view = ask_view(conn, pid, &error);
	if (view < 0)
		return give_up("%s", error->message);
	fault_point("attach-got");
	int cpu_fd = sysfs_cpu_dir(rootfs);
	int r = place_view(view, real_tree, proc, cpu, cpu_fd);
	if (cpu_fd >= 0)
		close(cpu_fd);
	return r;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mountpoint", required_argument, NULL, 'm' },
		{ "mode", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	fault_set_role("hook");
	int o;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'm':
			mountpoint = optarg;
			break;
		case 'M':
			if (strcmp(optarg, "proc") != 0 && strcmp(optarg, "files") != 0) {
				fprintf(stderr, "cgprocfs-oci-hook: --mode takes proc or files\n");
				return 2;
			}
			files_mode = strcmp(optarg, "files") == 0;
			break;
		case 'h':
			printf("usage: cgprocfs-oci-hook [--mountpoint PATH] [--mode proc|files] [-h|--help] < state.json\n"
			       "OCI createContainer hook: binds the cgprocfs view (default /var/lib/cgprocfs)\n"
			       "over the container's /proc (proc) or only cpuinfo, stat and the CPU directory\n"
			       "(files). It never fails a container start.\n");
			return 0;
		default:
			return 2;
		}
	}
	g_autofree char *state = NULL;
	g_autoptr(GIOChannel) in = g_io_channel_unix_new(0);
	gsize len;
	if (g_io_channel_read_to_end(in, &state, &len, NULL) != G_IO_STATUS_NORMAL)
		return give_up("cannot read the state on stdin");
	return run(state);
}
