/* cgprocfs-runtime: an OCI runtime that is runc (or crun, or any other)
 * with the cgprocfs hook added, for Docker and containerd, which read no
 * hooks.d.
 *
 *   cgprocfs-runtime [--cgprocfs-help] [--cgprocfs-always] [--cgprocfs-no-sysinfo] [--cgprocfs-no-affinity]
 *                    [--cgprocfs-runtime=PATH] [--cgprocfs-hook=PATH] [--cgprocfs-mountpoint=PATH]
 *                    RUNTIME ARGUMENTS...
 *
 * For "create" and "run", it appends the cgprocfs-oci-hook createContainer
 * hook (createRuntime for a container with a user namespace of its own)
 * to the bundle's config.json (rewritten whole, atomically; the
 * bundle's own hooks keep their place), if the container is annotated
 * io.cgprocfs.enable=true or --cgprocfs-always is given; then, and for
 * every other command, it executes the real runtime with the same
 * arguments (its own options taken out). The real runtime is
 * --cgprocfs-runtime, else $CGPROCFS_RUNTIME, else runc. With the hook, the
 * container's seccomp profile notifies sysinfo(2) and sched_getaffinity(2)
 * to the daemon's listener (seccomp.h), if one listens and the profile
 * plainly allows each call (neither with --cgprocfs-no-sysinfo; not
 * sched_getaffinity with --cgprocfs-no-affinity, or for a container
 * annotated io.cgprocfs.affinity=false). It never makes a
 * container fail to start: if it cannot add the hook (none that can be
 * run: --cgprocfs-hook, the installed one, or one beside this program),
 * it says why in one line and runs the runtime as if it were not there
 * (and the hook itself starts the container with the real /proc if the
 * daemon is away). */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "say.h"
#include "seccomp.h"

#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define ANNOTATION "io.cgprocfs.enable"
/* "false": the container's sched_getaffinity(2) stays the kernel's. */
#define AFFINITY_ANNOTATION "io.cgprocfs.affinity"

struct options {
	gboolean help;
	gboolean always;
	gboolean no_sysinfo;
	gboolean no_affinity;
	const char *runtime;
	const char *hook;
	const char *mountpoint;
	const char *id; /* the container's, for what is said */
};

/* Take our own options out of argv (in place); the rest is the runtime's. */
static int take_options(int argc, char **argv, struct options *o)
{
	int out = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--cgprocfs-help") == 0)
			o->help = TRUE;
		else if (strcmp(a, "--cgprocfs-always") == 0)
			o->always = TRUE;
		else if (strcmp(a, "--cgprocfs-no-sysinfo") == 0)
			o->no_sysinfo = TRUE;
		else if (strcmp(a, "--cgprocfs-no-affinity") == 0)
			o->no_affinity = TRUE;
		else if (g_str_has_prefix(a, "--cgprocfs-runtime="))
			o->runtime = a + strlen("--cgprocfs-runtime=");
		else if (g_str_has_prefix(a, "--cgprocfs-hook="))
			o->hook = a + strlen("--cgprocfs-hook=");
		else if (g_str_has_prefix(a, "--cgprocfs-mountpoint="))
			o->mountpoint = a + strlen("--cgprocfs-mountpoint=");
		else
			argv[out++] = argv[i];
	}
	argv[out] = NULL;
	return out;
}

/* runc's global options that take a value (as a separate word). */
static gboolean takes_value(const char *a)
{
	static const char *const with_value[] = { "--root", "--log", "--log-format", "--criu", "--rootless" };
	for (size_t i = 0; i < G_N_ELEMENTS(with_value); i++)
		if (strcmp(a, with_value[i]) == 0)
			return TRUE;
	return FALSE;
}

/* The index of the command in argv (after the global options), or -1. */
static int command_at(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] != '-')
			return i;
		if (takes_value(argv[i]))
			i++;
	}
	return -1;
}

/* The bundle of a create or run at argv[cmd]: --bundle/-b, or the
 * working directory. */
static char *bundle_of(int argc, char **argv, int cmd)
{
	for (int i = cmd + 1; i < argc; i++) {
		if ((strcmp(argv[i], "--bundle") == 0 || strcmp(argv[i], "-b") == 0) && i + 1 < argc)
			return g_strdup(argv[i + 1]);
		if (g_str_has_prefix(argv[i], "--bundle="))
			return g_strdup(argv[i] + strlen("--bundle="));
		if (g_str_has_prefix(argv[i], "-b="))
			return g_strdup(argv[i] + strlen("-b="));
	}
	return g_get_current_dir();
}

/* Write text over path atomically (a new file renamed over it), with the
 * old file's mode. Not synced: a bundle lives only as long as its
 * runtime's state (under /run), and a crash ends both. */
static gboolean replace_file(const char *path, const char *text, GError **error)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "cannot stat %s: %s", path,
				   g_strerror(errno)), FALSE;
	g_autofree char *tmp = g_strconcat(path, ".cgprocfs-XXXXXX", NULL);
	int fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, st.st_mode & 07777);
	if (fd < 0)
		return g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "cannot write beside %s: %s",
				   path, g_strerror(errno)), FALSE;
	size_t len = strlen(text);
	gboolean ok = write(fd, text, len) == (ssize_t)len;
	int err = errno;
	ok = close(fd) == 0 && ok;
	if (ok && rename(tmp, path) == 0)
		return TRUE;
	err = errno ? errno : err;
	g_unlink(tmp);
	return g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(err), "cannot replace %s: %s", path,
			   g_strerror(err)), FALSE;
}

/* The hook to add: --cgprocfs-hook's, else the installed one, else the one
 * beside this program (a build tree's); NULL with *error set if none of
 * them can be run (a hook the runtime cannot run fails every start). */
static char *hook_path(const struct options *o, GError **error)
{
	if (o->hook) {
		if (access(o->hook, X_OK) == 0)
			return g_strdup(o->hook);
		int err = errno;
		return g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(err), "the hook %s cannot be run: %s",
				   o->hook, g_strerror(err)), NULL;
	}
	if (access(CGPROCFS_HOOK, X_OK) == 0)
		return g_strdup(CGPROCFS_HOOK);
	g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
	g_autofree char *dir = self ? g_path_get_dirname(self) : NULL;
	g_autofree char *beside = dir ? g_build_filename(dir, "cgprocfs-oci-hook", NULL) : NULL;
	if (beside && access(beside, X_OK) == 0)
		return g_steal_pointer(&beside);
	return g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
			   "no cgprocfs-oci-hook at %s (install cgprocfs, or name it with --cgprocfs-hook=PATH)",
			   CGPROCFS_HOOK), NULL;
}

/* hooks.<stage> of config with the hook at path (args: its argv) at its
 * end, the bundle's own hooks kept in their place: 1 if added, 0 if one
 * at path is there already, -EINVAL if config's hooks are not OCI's. */
static int append_hook(JsonObject *config, const char *stage, const char *path, const char *const *args)
{
	JsonNode *hooks = json_member_of_type(config, "hooks", JSON_NODE_OBJECT);
	JsonNode *list = hooks ? json_member_of_type(json_node_get_object(hooks), stage, JSON_NODE_ARRAY) : NULL;
	if (!list)
		return -EINVAL;
	JsonArray *a = json_node_get_array(list);
	for (guint i = 0; i < json_array_get_length(a); i++) {
		JsonNode *e = json_array_get_element(a, i);
		if (JSON_NODE_HOLDS_OBJECT(e) &&
		    g_strcmp0(json_object_get_string_member_with_default(json_node_get_object(e), "path", NULL), path) == 0)
			return 0;
	}
	g_autoptr(JsonBuilder) b = json_builder_new();
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "path");
	json_builder_add_string_value(b, path);
	json_builder_set_member_name(b, "args");
	json_builder_begin_array(b);
	for (; *args; args++)
		json_builder_add_string_value(b, *args);
	json_builder_end_array(b);
	json_builder_end_object(b);
	json_array_add_element(a, json_builder_get_root(b));
	return 1;
}

/* The stage of config's hooks the hook goes to. createContainer: the
 * runtime runs it in the container's namespaces, before pivot_root, its
 * user namespace's root. For a container with a user namespace of its own
 * (Docker's userns-remap, podman's --userns), that root is not the host's
 * and cannot reach the daemon's control socket (root's alone):
 * createRuntime, which the runtime runs on the host once the container's
 * mounts are made, before pivot_root (runc), and where the hook enters the
 * container's mount namespace. */
static const char *hook_stage(JsonObject *config)
{
	JsonNode *linux_node = json_object_get_member(config, "linux");
	JsonObject *l = linux_node && JSON_NODE_HOLDS_OBJECT(linux_node) ? json_node_get_object(linux_node) : NULL;
	JsonNode *list = l ? json_object_get_member(l, "namespaces") : NULL;
	JsonArray *namespaces = list && JSON_NODE_HOLDS_ARRAY(list) ? json_node_get_array(list) : NULL;
	for (guint i = 0; namespaces && i < json_array_get_length(namespaces); i++) {
		JsonNode *e = json_array_get_element(namespaces, i);
		if (JSON_NODE_HOLDS_OBJECT(e) &&
		    g_strcmp0(json_object_get_string_member_with_default(json_node_get_object(e), "type", NULL), "user") == 0)
			return "createRuntime";
	}
	return "createContainer";
}

/* The daemon's seccomp listener (<control socket>.seccomp, daemon/sysinfo.c)
 * if something listens there now (the daemon, or its keeper while none
 * runs), else NULL: a runtime that cannot connect to it fails the start.
 * (No daemon is the hook's to tell.) */
static char *listener_of(const char *mountpoint)
{
	g_autofree char *file = g_build_filename(mountpoint, ".cgprocfs", "control", NULL);
	g_autofree char *control = NULL;
	if (!g_file_get_contents(file, &control, NULL, NULL))
		return NULL;
	g_autofree char *path = g_strconcat(g_strstrip(control), ".seccomp", NULL);
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	gboolean there = fd >= 0 && strlen(path) < sizeof(addr.sun_path) &&
			 (strcpy(addr.sun_path, path), connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
	if (fd >= 0)
		close(fd);
	return there ? g_steal_pointer(&path) : NULL;
}

/* Have the container's sysinfo(2), and its sched_getaffinity(2) unless
 * affinity is FALSE, answered by the daemon, where its profile allows
 * (seccomp.h): TRUE if config was edited; one line says why of each call
 * left the kernel's. */
static gboolean notify_calls(const struct options *o, JsonObject *config, gboolean affinity)
{
	static const char *const names[] = { "sysinfo", "sched_getaffinity" };
	static const char *const what[] = { "sysinfo(2) (free, uptime)", "sched_getaffinity(2) (nproc)" };
	const char *why[G_N_ELEMENTS(names)] = { NULL, NULL };
	g_autofree char *listener = o->no_sysinfo ? NULL : listener_of(o->mountpoint);
	gboolean edited = listener && seccomp_notify_calls(config, listener, names, affinity ? 2 : 1, why);
	for (guint i = 0; i < G_N_ELEMENTS(names); i++)
		if (why[i])
			oci_say("cgprocfs-runtime", o->id, "%s: %s; the container's %s is the host's", names[i], why[i],
				what[i]);
	return edited;
}

/* Add the hook to the bundle's config.json if the container wants it:
 * FALSE with *error set if it could not. */
static gboolean add_hook(const struct options *o, const char *bundle, GError **error)
{
	g_autofree char *path = g_build_filename(bundle, "config.json", NULL);
	g_autoptr(JsonParser) parser = json_parser_new();
	if (!json_parser_load_from_mapped_file(parser, path, error))
		return FALSE;
	JsonNode *root = json_parser_get_root(parser);
	if (!root || !JSON_NODE_HOLDS_OBJECT(root))
		return g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s is not a JSON object", path), FALSE;
	JsonObject *c = json_node_get_object(root);
	JsonNode *annotations = json_object_get_member(c, "annotations");
	JsonObject *a = annotations && JSON_NODE_HOLDS_OBJECT(annotations) ? json_node_get_object(annotations) : NULL;
	const char *enable = a ? json_object_get_string_member_with_default(a, ANNOTATION, NULL) : NULL;
	const char *affinity = a ? json_object_get_string_member_with_default(a, AFFINITY_ANNOTATION, NULL) : NULL;
	if (!o->always && g_strcmp0(enable, "true") != 0)
		return TRUE;
	g_autofree char *hook = hook_path(o, error);
	if (!hook)
		return FALSE;
	const char *const args[] = { "cgprocfs-oci-hook", "--mountpoint", o->mountpoint, NULL };
	int r = append_hook(c, hook_stage(c), hook, args);
	if (r < 0)
		return g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s has hooks this cannot add to", path),
		       FALSE;
	if (notify_calls(o, c, !o->no_affinity && g_strcmp0(affinity, "false") != 0))
		r = 1;
	g_autofree char *text = r > 0 ? json_to_string(root, TRUE) : NULL;
	return r == 0 || replace_file(path, text, error);
}

int main(int argc, char **argv)
{
	struct options o = {
		.runtime = g_getenv("CGPROCFS_RUNTIME") ? g_getenv("CGPROCFS_RUNTIME") : "runc",
		.mountpoint = "/var/lib/cgprocfs",
	};
	argc = take_options(argc, argv, &o);
	if (o.help) {
		printf("usage: cgprocfs-runtime [--cgprocfs-help] [--cgprocfs-always] [--cgprocfs-no-sysinfo]\n"
		       "                        [--cgprocfs-no-affinity] [--cgprocfs-runtime=PATH] [--cgprocfs-hook=PATH]\n"
		       "                        [--cgprocfs-mountpoint=PATH] RUNTIME-ARGUMENTS...\n"
		       "An OCI runtime: the real one (--cgprocfs-runtime, $CGPROCFS_RUNTIME, or runc) with\n"
		       "the cgprocfs hook added to the bundle of every create and run, for containers\n"
		       "annotated " ANNOTATION "=true (every one with --cgprocfs-always), and their\n"
		       "sysinfo(2) and sched_getaffinity(2) answered by the daemon through seccomp (neither\n"
		       "with --cgprocfs-no-sysinfo; not sched_getaffinity with --cgprocfs-no-affinity or\n"
		       "for a container annotated " AFFINITY_ANNOTATION "=false).\n"
		       "Any other argument, --help and --version included, goes to the real runtime.\n");
		return 0;
	}
	int cmd = command_at(argc, argv);
	if (cmd > 0 && (strcmp(argv[cmd], "create") == 0 || strcmp(argv[cmd], "run") == 0)) {
		g_autoptr(GError) error = NULL;
		g_autofree char *bundle = bundle_of(argc, argv, cmd);
		o.id = argc - 1 > cmd ? argv[argc - 1] : NULL; /* create/run's last argument */
		if (!add_hook(&o, bundle, &error))
			oci_say("cgprocfs-runtime", o.id, "%s; the container starts without the cgprocfs view",
				error->message);
	}
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("cgprocfs-runtime version %s\n", CGPROCFS_VERSION);
		fflush(stdout);
	}
	argv[0] = (char *)o.runtime;
	execvp(o.runtime, argv);
	g_printerr("cgprocfs-runtime: cannot run %s: %s (set --cgprocfs-runtime=PATH or $CGPROCFS_RUNTIME)\n",
		   o.runtime, g_strerror(errno));
	return 127;
}
