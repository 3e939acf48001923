/* Linked into the TSan build only. glib's GMutex, GCond and GRWLock are
 * futex-based on Linux, in an uninstrumented library: ThreadSanitizer does
 * not see that they order memory, and reports every field they guard. The
 * calls from instrumented code land here (the executable's definitions
 * come first), which tell TSan what the lock does and then call glib's
 * own. glib's calls within itself are untouched. */
#include <dlfcn.h>
#include <glib.h>
#include <pthread.h>
#include <sanitizer/tsan_interface.h>

/* glib's own name, found once. */
#define REAL(name) \
	static __typeof__(name) *found_##name; \
	__typeof__(name) *real_##name = __atomic_load_n(&found_##name, __ATOMIC_RELAXED); \
	if (!real_##name) { \
		real_##name = __extension__(__typeof__(name) *)dlsym(RTLD_NEXT, #name); \
		__atomic_store_n(&found_##name, real_##name, __ATOMIC_RELAXED); \
	}

void g_mutex_lock(GMutex *m)
{
	REAL(g_mutex_lock);
	real_g_mutex_lock(m);
	__tsan_acquire(m);
}

gboolean g_mutex_trylock(GMutex *m)
{
	REAL(g_mutex_trylock);
	gboolean locked = real_g_mutex_trylock(m);
	if (locked)
		__tsan_acquire(m);
	return locked;
}

void g_mutex_unlock(GMutex *m)
{
	REAL(g_mutex_unlock);
	__tsan_release(m);
	real_g_mutex_unlock(m);
}

void g_cond_wait(GCond *c, GMutex *m)
{
	REAL(g_cond_wait);
	__tsan_release(m);
	real_g_cond_wait(c, m);
	__tsan_acquire(m);
}

gboolean g_cond_wait_until(GCond *c, GMutex *m, gint64 end_time)
{
	REAL(g_cond_wait_until);
	__tsan_release(m);
	gboolean signalled = real_g_cond_wait_until(c, m, end_time);
	__tsan_acquire(m);
	return signalled;
}

/* Readers are ordered among themselves too: more than the lock promises,
 * which can only hide races, never invent them. */
#define RW(name, before, after) \
	void name(GRWLock *l) \
	{ \
		REAL(name); \
		before; \
		real_##name(l); \
		after; \
	}
RW(g_rw_lock_writer_lock, (void)0, __tsan_acquire(l))
RW(g_rw_lock_writer_unlock, __tsan_release(l), (void)0)
RW(g_rw_lock_reader_lock, (void)0, __tsan_acquire(l))
RW(g_rw_lock_reader_unlock, __tsan_release(l), (void)0)

/* GBytes are shared by reference count, counted in glib: whoever drops the
 * last reference frees them after every other holder is done. Unrefs take
 * turns under a lock TSan knows, so the last comes after all others. */
static pthread_mutex_t unref_turn = PTHREAD_MUTEX_INITIALIZER;

void g_bytes_unref(GBytes *b)
{
	REAL(g_bytes_unref);
	pthread_mutex_lock(&unref_turn);
	real_g_bytes_unref(b);
	pthread_mutex_unlock(&unref_turn);
}
