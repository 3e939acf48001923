/* Watching processes for several owners (view sessions) at once. */
#include "pidwatch.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static GAsyncQueue *exits; /* "owner:pid" strings, one per on_exit */
static struct pidwatch *w;
static GThread *runner;
static char owner_a[] = "a", owner_b[] = "b", owner_slow[] = "slow";
static gint slow_running; /* atomic: on_exit runs for owner_slow */

static void on_exit_cb(void *owner, pid_t pid)
{
	if (owner == owner_slow) {
		/* Long enough for a forget that does not wait to return first. */
		g_atomic_int_set(&slow_running, 1);
		g_usleep(300 * 1000);
		g_atomic_int_set(&slow_running, 0);
	}
	g_async_queue_push(exits, g_strdup_printf("%s:%d", (const char *)owner, (int)pid));
}

static gpointer run(gpointer data)
{
	cr_assert_eq(pidwatch_run(data), 0);
	return NULL;
}

static void setup(void)
{
	exits = g_async_queue_new_full(g_free);
	cr_assert_eq(pidwatch_new(on_exit_cb, &w), 0);
	runner = g_thread_new("pidwatch", run, w);
}

static void teardown(void)
{
	pidwatch_stop(w);
	g_thread_join(runner);
	pidwatch_free(w);
	g_async_queue_unref(exits);
}

TestSuite(pidwatch, .init = setup, .fini = teardown);

static pid_t start_child(void)
{
	pid_t child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	cr_assert(child > 0);
	return child;
}

static int pidfd_of(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	cr_assert(fd >= 0);
	return fd;
}

/* The next exit reported, or NULL after ms without one. */
static char *next_exit(int ms)
{
	return g_async_queue_timeout_pop(exits, (guint64)ms * 1000);
}

Test(pidwatch, each_owner_is_told)
{
	pid_t child = start_child();
	pidwatch_adopt(w, owner_a, child, pidfd_of(child));
	pidwatch_adopt(w, owner_b, child, pidfd_of(child));
	/* A second watch of the same process by one owner is dropped. */
	pidwatch_adopt(w, owner_a, child, pidfd_of(child));
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	g_autofree char *first = next_exit(5000);
	g_autofree char *second = next_exit(5000);
	g_autofree char *third = next_exit(300);
	cr_assert_not_null(first);
	cr_assert_not_null(second);
	g_autofree char *want_a = g_strdup_printf("a:%d", (int)child);
	g_autofree char *want_b = g_strdup_printf("b:%d", (int)child);
	cr_expect((!strcmp(first, want_a) && !strcmp(second, want_b)) ||
			  (!strcmp(first, want_b) && !strcmp(second, want_a)),
		  "told %s and %s", first, second);
	cr_expect_null(third, "told once more: %s", third);
}

Test(pidwatch, a_forgotten_owner_is_not_told)
{
	pid_t child = start_child();
	pidwatch_adopt(w, owner_a, child, pidfd_of(child));
	pidwatch_adopt(w, owner_b, child, pidfd_of(child));
	pidwatch_forget_owner(w, owner_b);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	g_autofree char *first = next_exit(5000);
	g_autofree char *second = next_exit(300);
	g_autofree char *want = g_strdup_printf("a:%d", (int)child);
	cr_assert_not_null(first);
	cr_expect_str_eq(first, want);
	cr_expect_null(second, "a forgotten owner was told: %s", second);
}

static gpointer adopt_unwatchable(gpointer data)
{
	/* A regular file: epoll refuses it, as it would a pidfd on failure. */
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	pidwatch_adopt(data, owner_slow, 4242, fd);
	return NULL;
}

Test(pidwatch, a_watch_that_fails_is_reported_and_forgetting_waits_for_the_report)
{
	GThread *adopter = g_thread_new("adopt", adopt_unwatchable, w);
	for (int i = 0; i < 500 && !g_atomic_int_get(&slow_running); i++)
		g_usleep(10 * 1000);
	cr_assert(g_atomic_int_get(&slow_running), "the failed watch was not reported");
	/* The session ends while its on_exit runs: forgetting must wait for
	 * it, for the session is freed right after. */
	pidwatch_forget_owner(w, owner_slow);
	cr_expect_not(g_atomic_int_get(&slow_running), "on_exit still running for a forgotten owner");
	g_thread_join(adopter);
	g_autofree char *told = next_exit(5000);
	cr_expect_str_eq(told, "slow:4242");
}
