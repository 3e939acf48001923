/* fs/triggers.c: the limits, the records the next daemon reads, and a
 * close while the trigger's poller is being woken. An eventfd stands for
 * a kernel pressure file; it never says EPOLLPRI, so firings are left to
 * tests/integration/test_triggers.py. */
#include "triggers.h"

#include "fakefuse.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <glib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static struct trigger_record records[TRIGGERS_MAX];

static int file(void)
{
	int fd = eventfd(0, EFD_CLOEXEC);
	cr_assert(fd >= 0);
	return fd;
}

static struct triggers *fresh(void)
{
	memset(records, 0, sizeof(records));
	struct triggers *t = triggers_new(records, TRIGGERS_MAX, 1);
	cr_assert(t);
	return t;
}

Test(triggers, a_tenant_past_its_limit_gets_ENOSPC_and_another_tenant_does_not)
{
	struct triggers *t = fresh();
	struct trigger *held[TRIGGERS_TENANT_MAX + 1] = { 0 };
	for (unsigned i = 0; i < TRIGGERS_TENANT_MAX; i++)
		cr_assert_eq(triggers_add(t, file(), 7, 0, 100 + i, 1, "some 1 2", &held[i]), 0, "trigger %u", i);
	cr_assert_eq(triggers_admit(t, 7), -ENOSPC);
	struct trigger *over = NULL;
	cr_assert_eq(triggers_add(t, file(), 7, 0, 999, 1, "some 1 2", &over), -ENOSPC);
	cr_assert_null(over);
	cr_assert_eq(triggers_admit(t, 8), 0, "another tenant");
	cr_assert_eq(triggers_add(t, file(), 8, 0, 1000, 1, "some 1 2", &held[TRIGGERS_TENANT_MAX]), 0);
	triggers_remove(held[0]);
	cr_assert_eq(triggers_admit(t, 7), 0, "one closed: room again");
	for (unsigned i = 1; i <= TRIGGERS_TENANT_MAX; i++)
		triggers_remove(held[i]);
	triggers_free(t);
}

/* fresh()'s host tenant is 1. */
Test(triggers, containers_at_their_bound_leave_the_host_its_triggers)
{
	struct triggers *t = fresh();
	const unsigned tenants = TRIGGERS_MAX / TRIGGERS_TENANT_MAX; /* enough to fill the table */
	g_autofree struct trigger **held = g_new0(struct trigger *, TRIGGERS_MAX + TRIGGERS_TENANT_MAX);
	unsigned n = 0, refused = 0;
	for (unsigned tenant = 2; tenant < 2 + tenants; tenant++)
		for (unsigned i = 0; i < TRIGGERS_TENANT_MAX; i++) {
			int r = triggers_add(t, file(), tenant, 0, 100 + n + refused, 1, "some 1 2", &held[n]);
			cr_assert(r == 0 || r == -ENOSPC, "%s", g_strerror(-r));
			r == 0 ? n++ : refused++;
		}
	cr_expect_eq(n, TRIGGERS_MAX - TRIGGERS_TENANT_MAX, "the containers' triggers: %u", n);
	cr_expect_eq(refused, TRIGGERS_TENANT_MAX);
	unsigned containers = n;
	for (unsigned i = 0; i < TRIGGERS_TENANT_MAX; i++) {
		int r = triggers_add(t, file(), 1, 0, 5000 + i, 1, "some 1 2", &held[n]);
		cr_expect_eq(r, 0, "the host's trigger %u while the containers hold %u: %s", i, containers,
			     g_strerror(-r));
		n += r == 0;
	}
	cr_expect_eq(triggers_admit(t, 1), -ENOSPC, "the host's own bound");
	for (unsigned i = 0; i < n; i++)
		triggers_remove(held[i]);
	triggers_free(t);
}

static void remember(void *data, uint64_t kh)
{
	*(uint64_t *)data = kh;
}

Test(triggers, a_record_lives_from_the_trigger_to_the_release_and_a_next_daemon_inherits_it)
{
	struct triggers *t = fresh();
	struct trigger *tr = NULL;
	char text[TRIGGER_TEXT_MAX];

	cr_assert_eq(triggers_add(t, file(), 1, 42, 5, 77, "some 150000 1000000", &tr), 0);
	/* A poll with the kernel's handle: kept too. No firing yet. */
	cr_assert_eq(triggers_poll(t, tr, NULL, 0xabc), TRIGGERS_FILE_EVENTS);
	cr_assert_eq(triggers_kept(t, 42, 5, text), 0);
	cr_assert_str_eq(text, "some 150000 1000000");
	cr_assert_eq(triggers_kept(t, 43, 5, text), -ENOENT, "another session's");

	/* The daemon goes (its triggers closed, records kept): the next one's. */
	static struct trigger_record next[TRIGGERS_MAX];
	triggers_remove(tr);
	struct triggers *n = triggers_new(next, TRIGGERS_MAX, 1);
	triggers_inherit(n, records, TRIGGERS_MAX);
	triggers_free(t);
	cr_assert_eq(triggers_kept(n, 42, 5, text), 0);
	cr_assert_str_eq(text, "some 150000 1000000");
	uint64_t seen = 0;
	triggers_each_polled(n, 42, remember, &seen);
	cr_assert_eq(seen, 0xabc, "the poller to wake");

	/* Set again there: the same record; released: gone. */
	cr_assert_eq(triggers_add(n, file(), 1, 42, 5, 77, "some 150000 1000000", &tr), 0);
	triggers_released(n, 42, 5);
	cr_assert_eq(triggers_kept(n, 42, 5, text), -ENOENT);
	triggers_remove(tr);
	triggers_free(n);
}

Test(triggers, with_every_record_in_use_a_trigger_is_still_taken_unkept)
{
	static struct trigger_record one[1];
	struct triggers *t = triggers_new(one, 1, 1);
	struct trigger *a = NULL, *b = NULL;
	char text[TRIGGER_TEXT_MAX];
	cr_assert_eq(triggers_add(t, file(), 1, 0, 1, 1, "some 1 2", &a), 0);
	cr_assert_eq(triggers_add(t, file(), 2, 0, 2, 1, "some 1 2", &b), 0);
	cr_assert_eq(triggers_kept(t, 0, 1, text), 0);
	cr_assert_eq(triggers_kept(t, 0, 2, text), -ENOENT);
	triggers_remove(a);
	triggers_remove(b);
	triggers_free(t);
}

/* The poll handle libfuse made, and a wakeup sent through its session,
 * which waits until the test lets it go. */
static struct {
	GMutex lock;
	GCond changed;
	gboolean waking, let_go, removed;
	struct fuse_pollhandle *ph;
} wake;

static ssize_t held_wakeups(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *h = iov[0].iov_base;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&wake.lock);
	if (h->unique == 0 && h->error == FUSE_NOTIFY_POLL) {
		wake.waking = TRUE;
		g_cond_broadcast(&wake.changed);
		while (!wake.let_go)
			g_cond_wait(&wake.changed, &wake.lock);
	}
	return (ssize_t)fakefuse_len(iov, count);
}

static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	wake.ph = ph;
	fuse_reply_poll(req, 0);
}

static gpointer remove_trigger(gpointer tr)
{
	triggers_remove(tr);
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&wake.lock);
	wake.removed = TRUE;
	return NULL;
}

/* A closed fd's trigger goes, then its session (session_free): the wake
 * that the thread is sending through that session must be over first. */
Test(triggers, a_close_waits_for_the_wake_of_its_poller_under_way)
{
	static const struct fuse_lowlevel_ops ops = { .poll = op_poll };
	struct fuse_session *se = fakefuse_new(&ops, sizeof(ops), NULL, held_wakeups);
	const struct fuse_poll_in poll = { .fh = 5, .kh = 9, .flags = FUSE_POLL_SCHEDULE_NOTIFY };
	fakefuse_send(se, FUSE_POLL, 1, 0, &poll, sizeof(poll));
	cr_assert(wake.ph, "libfuse made a poll handle");

	/* A pipe's read end with no writer says EPOLLHUP: the trigger fires. */
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	struct triggers *t = fresh();
	struct trigger *tr = NULL;
	cr_assert_eq(triggers_add(t, p[0], 1, 0, 5, 77, "some 1 2", &tr), 0);
	triggers_poll(t, tr, wake.ph, 9);
	close(p[1]);
	g_mutex_lock(&wake.lock);
	while (!wake.waking)
		g_cond_wait(&wake.changed, &wake.lock);
	g_mutex_unlock(&wake.lock);

	GThread *remover = g_thread_new("remove", remove_trigger, tr);
	g_usleep(200 * 1000);
	g_mutex_lock(&wake.lock);
	cr_expect_not(wake.removed, "the close returned while its poller was being woken through its session");
	wake.let_go = TRUE;
	g_cond_broadcast(&wake.changed);
	g_mutex_unlock(&wake.lock);
	g_thread_join(remover);
	cr_assert(wake.removed);
	fuse_session_destroy(se);
	triggers_free(t);
}
