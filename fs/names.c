#include "names.h"

#include "hash.h"

#include <glib.h>
#include <string.h>

/* One table for the whole process, on purpose: a number must mean the same
 * name in every view of the process (one kernel superblock per session,
 * whose cached inodes outlive a view and are carried across a handover to
 * another daemon), so the table cannot belong to one view. It only grows,
 * by the names the kernel shows (top-level /proc names, paths under the
 * sysfs CPU directory), and is never freed: numbers handed out stay valid
 * until the process exits, where the kernel may still ask about them.
 * lock guards by_id and by_name (their creation too); the strings, once
 * inserted, are never changed or freed, so a name returned by
 * names_lookup() may be used without the lock. */
static GRWLock lock;
static GHashTable *by_id;   /* id -> name (owned) */
static GHashTable *by_name; /* name -> id (the same strings) */

#define ID_MASK ((UINT64_C(1) << NAMES_BITS) - 1)


uint64_t names_intern(const char *name)
{
	g_rw_lock_reader_lock(&lock);
	gpointer known = by_name ? g_hash_table_lookup(by_name, name) : NULL;
	g_rw_lock_reader_unlock(&lock);
	if (known)
		return (uint64_t)(uintptr_t)known;

	G_GNUC_UNUSED g_autoptr(GRWLockWriterLocker) locker = g_rw_lock_writer_locker_new(&lock);
	if (!by_id) {
		by_id = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
		by_name = g_hash_table_new(g_str_hash, g_str_equal);
	}
	known = g_hash_table_lookup(by_name, name);
	if (known)
		return (uint64_t)(uintptr_t)known;
	uint64_t id = hash_fnv(HASH_FNV_START, name, strlen(name)) & ID_MASK;
	while (id == 0 || g_hash_table_contains(by_id, (gpointer)(uintptr_t)id))
		id = (id + 1) & ID_MASK;
	char *copy = g_strdup(name);
	g_hash_table_insert(by_id, (gpointer)(uintptr_t)id, copy);
	g_hash_table_insert(by_name, copy, (gpointer)(uintptr_t)id);
	return id;
}

const char *names_lookup(uint64_t id)
{
	g_rw_lock_reader_lock(&lock);
	const char *name = by_id ? g_hash_table_lookup(by_id, (gpointer)(uintptr_t)id) : NULL;
	g_rw_lock_reader_unlock(&lock);
	return name;
}
