#include "scope.h"

#include "pidns.h"
#include "procfile.h"
#include "tidcache.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct container {
	char *text; /* its init's <pid>/cgroup when it was added */
	struct cgroup_paths paths;
};

struct scope {
	struct scope_config cfg;
	char *own_ns;          /* the daemon's cgroup namespace: "cgroup:[N]" */
	GRWLock lock;          /* guards containers */
	GHashTable *containers; /* pid namespace -> GPtrArray of struct container */
	GMutex ns_lock;         /* guards ns_roots */
	GHashTable *ns_roots;   /* "cgroup:[N]" -> struct cgroup_paths: its root */
	guint64 ns_misses_told; /* errnos of roots not found, said (bit min(errno, 63)); ns_lock */
	struct tidcache found;  /* what each caller was found, FOUND_LIFETIME_US */
};

/* The CPU, memory, time and I/O views each ask for a caller's scope when
 * they find it: one finding serves them all for this long (a move is then
 * seen that much later than the views' own half second). */
#define FOUND_LIFETIME_US (50 * G_TIME_SPAN_MILLISECOND)
/* Roots of cgroup namespaces kept at most (one costs a thread to find):
 * past it, the table starts over. */
#define NS_ROOTS_MAX 4096

/* The hierarchies, in the order a container is matched by (the first one
 * the host has decides). */
enum { H_MEMORY, H_CPU, H_CPUACCT, H_CPUSET, H_IO, H_UNIFIED, H_N };

static const struct cgroup_hierarchy *hierarchy(const struct cgroup_config *c, int i)
{
	const struct cgroup_hierarchy *all[H_N] = { &c->memory, &c->cpu,	&c->cpuacct,
						    &c->cpuset, &c->io, &c->unified };
	return all[i];
}

static char **slot(struct cgroup_paths *p, int i)
{
	char **all[H_N] = { &p->memory, &p->cpu, &p->cpuacct, &p->cpuset, &p->io, &p->unified };
	return all[i];
}

static void paths_copy(const struct cgroup_paths *from, struct cgroup_paths *to)
{
	for (int i = 0; i < H_N; i++)
		*slot(to, i) = g_strdup(*slot((struct cgroup_paths *)from, i));
}

static void paths_free(gpointer p)
{
	cgroup_paths_clear(p);
	g_free(p);
}

static gpointer found_ref(gpointer f)
{
	return g_atomic_rc_box_acquire(f);
}

static void found_clear(gpointer f)
{
	cgroup_paths_clear(&((struct scope_found *)f)->paths);
}

static void found_unref(gpointer f)
{
	g_atomic_rc_box_release_full(f, found_clear);
}

static void container_free(gpointer p)
{
	struct container *c = p;
	g_free(c->text);
	cgroup_paths_clear(&c->paths);
	g_free(c);
}

/* Whether the cgroup path is root or below it. */
static gboolean at_or_below(const char *path, const char *root)
{
	size_t n = strlen(root);
	if (strcmp(root, "/") == 0)
		return TRUE;
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The hierarchy that matches callers with containers: -1 if none. */
static int key_hierarchy(const struct scope *s)
{
	for (int i = 0; i < H_N; i++)
		if (hierarchy(&s->cfg.cgroups, i)->version != CGROUP_NONE)
			return i;
	return -1;
}

/* Whether every path of own that root has too is at or below it. */
static gboolean within(const struct cgroup_paths *own, const struct cgroup_paths *root, int key)
{
	const char *o = *slot((struct cgroup_paths *)own, key), *r = *slot((struct cgroup_paths *)root, key);
	return o && r && at_or_below(o, r);
}

struct scope *scope_new(const struct scope_config *cfg)
{
	struct scope *s = g_new0(struct scope, 1);
	s->cfg = *cfg;
	if (cfg->rule == SCOPE_CONTAINER && procfile_readlink_at(cfg->proc_fd, "self/ns/cgroup", &s->own_ns) < 0)
		s->own_ns = NULL;
	g_rw_lock_init(&s->lock);
	g_mutex_init(&s->ns_lock);
	s->containers = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)g_ptr_array_unref);
	s->ns_roots = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, paths_free);
	tidcache_init(&s->found, found_ref, found_unref);
	s->found.lifetime_us = FOUND_LIFETIME_US;
	return s;
}

gboolean scope_decides_host(const struct scope *s)
{
	return s->cfg.rule == SCOPE_CONTAINER;
}

void scope_free(struct scope *s)
{
	if (!s)
		return;
	g_hash_table_unref(s->containers);
	g_hash_table_unref(s->ns_roots);
	tidcache_clear(&s->found);
	g_rw_lock_clear(&s->lock);
	g_mutex_clear(&s->ns_lock);
	g_free(s->own_ns);
	g_free(s);
}

int scope_add(struct scope *s, uint64_t ns, const char *cgroup_text)
{
	struct container *c = g_new0(struct container, 1);
	if (cgroup_parse_membership(cgroup_text, &s->cfg.cgroups, &c->paths) < 0) {
		g_free(c);
		return -EINVAL;
	}
	c->text = g_strdup(cgroup_text);
	g_rw_lock_writer_lock(&s->lock);
	GPtrArray *all = g_hash_table_lookup(s->containers, GSIZE_TO_POINTER(ns));
	if (!all) {
		all = g_ptr_array_new_with_free_func(container_free);
		g_hash_table_insert(s->containers, GSIZE_TO_POINTER(ns), all);
	}
	for (guint i = 0; c && i < all->len; i++)
		if (strcmp(((struct container *)g_ptr_array_index(all, i))->text, c->text) == 0)
			g_clear_pointer(&c, container_free); /* known */
	if (c)
		g_ptr_array_add(all, c);
	g_rw_lock_writer_unlock(&s->lock);
	tidcache_forget(&s->found); /* its callers are its now */
	return 0;
}

void scope_remove(struct scope *s, uint64_t ns)
{
	g_rw_lock_writer_lock(&s->lock);
	g_hash_table_remove(s->containers, GSIZE_TO_POINTER(ns));
	g_rw_lock_writer_unlock(&s->lock);
	tidcache_forget(&s->found);
}

char *scope_dump(struct scope *s)
{
	GString *out = g_string_new(NULL);
	GHashTableIter it;
	gpointer key, value;

	g_rw_lock_reader_lock(&s->lock);
	g_hash_table_iter_init(&it, s->containers);
	while (g_hash_table_iter_next(&it, &key, &value)) {
		GPtrArray *all = value;
		for (guint i = 0; i < all->len; i++) {
			g_autofree char *text = g_strescape(((struct container *)g_ptr_array_index(all, i))->text, NULL);
			g_string_append_printf(out, "%" G_GSIZE_FORMAT " %s\n", GPOINTER_TO_SIZE(key), text);
		}
	}
	g_rw_lock_reader_unlock(&s->lock);
	return g_string_free(out, FALSE);
}

unsigned scope_add_from(struct scope *s, const char *dump, uint64_t ns)
{
	g_auto(GStrv) lines = g_strsplit(dump, "\n", -1);
	unsigned added = 0;

	for (char **line = lines; *line; line++) {
		char *end;
		guint64 key = g_ascii_strtoull(*line, &end, 10);
		if (end == *line || *end != ' ' || key != ns)
			continue;
		g_autofree char *text = g_strcompress(end + 1);
		added += scope_add(s, ns, text) == 0;
	}
	return added;
}

/* Rule 1: of the containers of tid's pid namespace, the deepest own is
 * in; FALSE if none (a process that joined the namespace from elsewhere,
 * or a namespace no container was attached in). */
static gboolean in_container(struct scope *s, pid_t tid, const struct cgroup_paths *own, struct cgroup_paths *ret)
{
	int key = key_hierarchy(s);
	const struct container *best = NULL;

	g_rw_lock_reader_lock(&s->lock);
	GPtrArray *all = key >= 0 && g_hash_table_size(s->containers) > 0
				 ? g_hash_table_lookup(s->containers, GSIZE_TO_POINTER(pidns_of(s->cfg.proc_fd, tid)))
				 : NULL;
	for (guint i = 0; all && i < all->len; i++) {
		const struct container *c = g_ptr_array_index(all, i);
		if (within(own, &c->paths, key) &&
		    (!best || strlen(*slot((struct cgroup_paths *)&c->paths, key)) >
				      strlen(*slot((struct cgroup_paths *)&best->paths, key))))
			best = c;
	}
	if (best)
		paths_copy(&best->paths, ret);
	g_rw_lock_reader_unlock(&s->lock);
	return best != NULL;
}

/* ------------------------------------------------ cgroup namespaces -- */

/* The parts of a cgroup path ("/a/b": a, b). */
static GStrv path_parts(const char *path)
{
	g_auto(GStrv) all = g_strsplit(path, "/", -1);
	GPtrArray *parts = g_ptr_array_new();
	for (char **p = all; *p; p++)
		if (**p)
			g_ptr_array_add(parts, g_strdup(*p));
	g_ptr_array_add(parts, NULL);
	return (GStrv)g_ptr_array_free(parts, FALSE);
}

/* Are the first n parts of a and b the same? */
static gboolean same_head(char **a, char **b, guint n)
{
	for (guint i = 0; i < n; i++)
		if (strcmp(a[i], b[i]) != 0)
			return FALSE;
	return TRUE;
}

/* One hierarchy's root: caller's path, the daemon's outside and inside. */
static char *root_of(const char *caller, const char *own, const char *own_in)
{
	g_auto(GStrv) c = path_parts(caller), d = path_parts(own), in = path_parts(own_in);
	guint up = 0, nc = g_strv_length(c), nd = g_strv_length(d), nin = g_strv_length(in);
	while (up < nin && strcmp(in[up], "..") == 0)
		up++;
	guint tail = nin - up; /* the daemon's path below the cgroup it shares with the root */
	if (tail > nd || !same_head(in + up, d + nd - tail, tail))
		return NULL;
	guint shared = nd - tail, depth = shared + up;
	if (nc < depth || !same_head(c, d, shared))
		return NULL;
	char *cut = c[depth]; /* the caller's path cut at the root's depth */
	c[depth] = NULL;
	g_autofree char *joined = g_strjoinv("/", c);
	c[depth] = cut;
	return g_strconcat("/", joined, NULL);
}

int scope_ns_root(const char *text, const char *own_text, const char *own_ns_text, const struct cgroup_config *cfg,
		  struct cgroup_paths *ret)
{
	struct cgroup_paths caller = { 0 }, own = { 0 }, own_in = { 0 }, root = { 0 };
	int r = cgroup_parse_membership(text, cfg, &caller);
	if (r == 0)
		r = cgroup_parse_membership(own_text, cfg, &own);
	if (r == 0)
		r = cgroup_parse_membership(own_ns_text, cfg, &own_in);
	for (int i = 0; r == 0 && i < H_N; i++) {
		const char *c = *slot(&caller, i), *d = *slot(&own, i), *in = *slot(&own_in, i);
		if (!c)
			continue;
		*slot(&root, i) = d && in ? root_of(c, d, in) : NULL;
		if (!*slot(&root, i))
			r = -EINVAL;
	}
	cgroup_paths_clear(&caller);
	cgroup_paths_clear(&own);
	cgroup_paths_clear(&own_in);
	if (r < 0)
		cgroup_paths_clear(&root);
	else
		*ret = root;
	return r;
}

struct ns_read {
	int proc_fd, ns_fd;
	char *own, *own_in; /* out: this thread's cgroups outside, then inside */
	int err;            /* out */
};

/* A thread of its own, which ends here: it joins the caller's cgroup
 * namespace, where the kernel writes its own cgroups relative to the
 * namespace's root. */
static gpointer read_in_ns(gpointer data)
{
	struct ns_read *n = data;
	n->err = procfile_read_text_at(n->proc_fd, "thread-self/cgroup", &n->own);
	if (n->err == 0 && setns(n->ns_fd, CLONE_NEWCGROUP) < 0)
		n->err = -errno;
	if (n->err == 0)
		n->err = procfile_read_text_at(n->proc_fd, "thread-self/cgroup", &n->own_in);
	return NULL;
}

/* The root of ns (tid's cgroup namespace), tid's cgroups in text: 0, or
 * -errno. */
static int find_ns_root(struct scope *s, pid_t tid, const char *text, struct cgroup_paths *ret)
{
	char path[32];
	snprintf(path, sizeof(path), "%d/ns/cgroup", (int)tid);
	struct ns_read n = { .proc_fd = s->cfg.proc_fd };
	n.ns_fd = procfile_openat(s->cfg.proc_fd, path, O_RDONLY | O_CLOEXEC);
	if (n.ns_fd < 0)
		return n.ns_fd;
	g_thread_join(g_thread_new("cgprocfs-cgns", read_in_ns, &n));
	close(n.ns_fd);
	int r = n.err < 0 ? n.err : scope_ns_root(text, n.own, n.own_in, &s->cfg.cgroups, ret);
	g_free(n.own);
	g_free(n.own_in);
	return r;
}

/* A namespace's root not found (r) for a caller still there: said once
 * per errno, under ns_lock. */
static void tell_ns_miss(struct scope *s, pid_t tid, int r)
{
	guint64 bit = UINT64_C(1) << MIN(-r, 63);
	if (r == -ENOENT || r == -ESRCH || (s->ns_misses_told & bit))
		return;
	s->ns_misses_told |= bit;
	g_message("cannot find the root of the cgroup namespace of thread %d (%s): its figures come from its own "
		  "cgroup (rule 3)", (int)tid, g_strerror(-r));
}

/* Rule 2: the root of tid's cgroup namespace, if it has one of its own
 * (and own is in it); FALSE if not. */
static gboolean ns_root(struct scope *s, pid_t tid, const char *text, const struct cgroup_paths *own,
			struct cgroup_paths *ret)
{
	char path[32];
	g_autofree char *ns = NULL;
	int key = key_hierarchy(s);

	snprintf(path, sizeof(path), "%d/ns/cgroup", (int)tid);
	if (!s->own_ns || key < 0 || procfile_readlink_at(s->cfg.proc_fd, path, &ns) < 0 ||
	    strcmp(ns, s->own_ns) == 0)
		return FALSE;
	/* A namespace's root never changes, but its number may be another's
	 * once it is gone: a root own is not in is found again. */
	g_mutex_lock(&s->ns_lock);
	const struct cgroup_paths *known = g_hash_table_lookup(s->ns_roots, ns);
	if (known && within(own, known, key)) {
		paths_copy(known, ret);
		g_mutex_unlock(&s->ns_lock);
		return TRUE;
	}
	g_mutex_unlock(&s->ns_lock);
	/* Found under no lock: a tenant makes as many namespaces as it
	 * likes, and each costs a thread; other callers look theirs up
	 * meanwhile. */
	struct cgroup_paths *found = g_new0(struct cgroup_paths, 1);
	int r = find_ns_root(s, tid, text, found);
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->ns_lock);
	if (r < 0) {
		g_free(found);
		tell_ns_miss(s, tid, r);
		return FALSE;
	}
	paths_copy(found, ret);
	if (g_hash_table_size(s->ns_roots) >= NS_ROOTS_MAX)
		g_hash_table_remove_all(s->ns_roots); /* found again as they are asked */
	g_hash_table_replace(s->ns_roots, g_steal_pointer(&ns), found);
	return TRUE;
}

/* ----------------------------------------------------------- limits -- */

/* Rule 3: whether own or an ancestor sets a limit the view shows. A
 * cgroup file that cannot be read says yes: the view reads it again, and
 * reports it. */
static gboolean limited(struct scope *s, const struct cgroup_paths *own)
{
	struct cgroup_limits l;
	struct cpuset online;
	g_autofree char *culprit = NULL, *text = NULL;

	int r = cgroup_read_limits(&s->cfg.cgroups, own, &l, &culprit);
	if (r < 0)
		return r == -EINVAL; /* -ENOENT: the cgroup is gone */
	if (l.has_quota)
		return TRUE;
	if (l.has_cpuset && procfile_read_text_at(s->cfg.sys_cpu_fd, "online", &text) == 0 &&
	    cpuset_parse_list(text, &online) == 0) {
		struct cpuset both = l.cpuset;
		cpuset_intersect(&both, &online);
		if (cpuset_count(&both) < cpuset_count(&online))
			return TRUE;
	}
	const struct cgroup_hierarchy *m = &s->cfg.cgroups.memory;
	g_autofree char *dir = m->version != CGROUP_NONE && own->memory ? cgroup_relative_dir(m, own->memory) : NULL;
	gboolean mem_limited = FALSE;
	r = dir ? cgroup_memory_limited(m, dir, &mem_limited) : -ENOENT;
	return r == -EINVAL || (r == 0 && mem_limited); /* -ENOENT: no memory controller there */
}

/* ------------------------------------------------------------- find -- */

/* tid's scope, found now. */
static int find_now(struct scope *s, pid_t tid, struct scope_found *ret)
{
	char path[32];
	g_autofree char *text = NULL;
	struct cgroup_paths own = { 0 };

	snprintf(path, sizeof(path), "%d/cgroup", (int)tid);
	int r = procfile_read_text_at(s->cfg.proc_fd, path, &text);
	if (r < 0)
		return r == -ESRCH ? -ENOENT : r;
	if (cgroup_parse_membership(text, &s->cfg.cgroups, &own) < 0)
		return -EINVAL;
	*ret = (struct scope_found){ 0 };
	if (s->cfg.rule == SCOPE_CONTAINER) {
		if (in_container(s, tid, &own, &ret->paths) || ns_root(s, tid, text, &own, &ret->paths)) {
			cgroup_paths_clear(&own);
			return 0;
		}
		if (!limited(s, &own)) {
			cgroup_paths_clear(&own);
			ret->host = TRUE;
			return 0;
		}
	}
	ret->paths = own;
	return 0;
}

int scope_find(struct scope *s, pid_t tid, struct scope_found *ret)
{
	struct scope_found *known = tidcache_get(&s->found, tid);
	if (!known) {
		struct scope_found now;
		int r = find_now(s, tid, &now);
		if (r < 0)
			return r;
		known = g_atomic_rc_box_dup(sizeof(now), &now); /* the paths are the box's */
		tidcache_put(&s->found, tid, known);
	}
	ret->host = known->host;
	paths_copy(&known->paths, &ret->paths);
	found_unref(known);
	return 0;
}

void scope_found_clear(struct scope_found *f)
{
	cgroup_paths_clear(&f->paths);
	f->host = FALSE;
}

int scope_dir(struct scope *s, pid_t tid, const struct cgroup_hierarchy *h, char **ret)
{
	struct scope_found f;
	char *dir = NULL;

	if (scope_find(s, tid, &f) < 0)
		return -EIO;
	for (int i = 0; i < H_N && !f.host && !dir; i++)
		if (hierarchy(&s->cfg.cgroups, i)->version == h->version &&
		    hierarchy(&s->cfg.cgroups, i)->root_fd == h->root_fd && *slot(&f.paths, i))
			dir = cgroup_relative_dir(h, *slot(&f.paths, i));
	scope_found_clear(&f);
	*ret = dir ? dir : g_strdup("");
	return 0;
}
