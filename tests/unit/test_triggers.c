/* fs/triggers.c: the limits and the records the next daemon reads. An
 * eventfd stands for a kernel pressure file; it never says EPOLLPRI, so
 * firings are left to tests/integration/test_triggers.py. */
#include "triggers.h"

#include <criterion/criterion.h>
#include <errno.h>
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
	struct triggers *t = triggers_new(records, TRIGGERS_MAX);
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
	struct triggers *n = triggers_new(next, TRIGGERS_MAX);
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
	struct triggers *t = triggers_new(one, 1);
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
