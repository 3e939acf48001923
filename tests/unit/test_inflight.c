/* The requests in hand, kept for a daemon after a crash (daemon/inflight.c). */
#include "inflight.h"

#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

/* A request of opcode with unique and a body of n bytes of value c. */
static size_t request(unsigned char *buf, guint32 opcode, guint64 unique, size_t n, unsigned char c)
{
	struct fuse_in_header h = { .len = (guint32)(sizeof(h) + n), .opcode = opcode, .unique = unique, .nodeid = 1 };
	memcpy(buf, &h, sizeof(h));
	memset(buf + sizeof(h), c, n);
	return sizeof(h) + n;
}

struct seen {
	guint64 uniques[8];
	size_t lens[8];
	unsigned char last_byte[8];
	unsigned n;
};

static void collect(void *data, const struct fuse_in_header *req, size_t len)
{
	struct seen *s = data;
	s->uniques[s->n] = req->unique;
	s->lens[s->n] = len;
	s->last_byte[s->n] = len ? ((const unsigned char *)req)[len - 1] : 0;
	s->n++;
}

/* What a daemon taking over from f's keeper sees of key's session. */
static struct seen adopted(struct inflight *f, guint64 key)
{
	struct seen s = { 0 };
	struct inflight *other = inflight_adopt(dup(inflight_fd(f)));
	cr_assert_not_null(other);
	inflight_each(other, key, collect, &s);
	inflight_free(other);
	return s;
}

Test(inflight, what_is_taken_and_not_answered_is_seen_by_the_next_daemon_whole_and_once)
{
	unsigned char buf[8192];
	struct inflight *f = inflight_new();
	cr_assert_not_null(f);
	inflight_taken(f, 0, buf, request(buf, FUSE_READ, 2, 24, 'a'));
	inflight_taken(f, 0, buf, request(buf, FUSE_LOOKUP, 4, 9, 'b'));
	inflight_taken(f, 0, buf, request(buf, FUSE_OPEN, 6, 8, 'c'));
	inflight_answered(f, 0, 4);
	struct seen s = adopted(f, 0);
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.uniques[0] + s.uniques[1], 8); /* 2 and 6 */
	for (unsigned i = 0; i < s.n; i++) {
		cr_assert_eq(s.lens[i], sizeof(struct fuse_in_header) + (s.uniques[i] == 2 ? 24 : 8));
		cr_assert_eq(s.last_byte[i], s.uniques[i] == 2 ? 'a' : 'c');
	}
	cr_assert_eq(adopted(f, 0).n, 0, "each is answered once");
	inflight_free(f);
}

Test(inflight, each_session_sees_its_own_and_requests_with_no_answer_are_not_kept)
{
	unsigned char buf[8192];
	struct inflight *f = inflight_new();
	inflight_taken(f, 0, buf, request(buf, FUSE_GETATTR, 2, 16, 'h'));
	inflight_taken(f, 4026531836, buf, request(buf, FUSE_GETATTR, 2, 16, 'c'));
	inflight_taken(f, 0, buf, request(buf, FUSE_FORGET, 4, 8, 'f'));
	inflight_taken(f, 0, buf, request(buf, FUSE_INTERRUPT, 7, 8, 'i'));
	struct seen host = adopted(f, 0);
	cr_assert_eq(host.n, 1);
	cr_assert_eq(host.last_byte[0], 'h');
	struct seen container = adopted(f, 4026531836);
	cr_assert_eq(container.n, 1);
	cr_assert_eq(container.last_byte[0], 'c');
	inflight_free(f);
}

/* unique counts from the same start on every connection: an answer in
 * one session is not another's. */
Test(inflight, an_answer_clears_its_own_sessions_record_not_another_with_the_same_unique)
{
	unsigned char buf[256];
	const guint64 host = 0, container = 4026531836;
	/* either taken first: the slot filled last is looked at first */
	for (int host_first = 0; host_first <= 1; host_first++) {
		struct inflight *f = inflight_new();
		cr_assert_not_null(f);
		for (int i = 0; i < 2; i++) {
			gboolean is_host = (i == 0) == host_first;
			inflight_taken(f, is_host ? host : container, buf,
				       request(buf, FUSE_GETATTR, 8, 16, is_host ? 'h' : 'c'));
		}
		inflight_answered(f, host, 8);
		struct seen h = adopted(f, host);
		cr_assert_eq(h.n, 0, "the host's request was answered, yet %u of it are replayed", h.n);
		struct seen c = adopted(f, container);
		cr_assert_eq(c.n, 1, "the container's request was not answered, yet %u of it are kept", c.n);
		cr_assert_eq(c.last_byte[0], 'c');
		inflight_free(f);
	}
}

Test(inflight, a_request_longer_than_a_slot_keeps_its_header_only)
{
	unsigned char buf[8192];
	struct inflight *f = inflight_new();
	inflight_taken(f, 0, buf, request(buf, FUSE_WRITE, 10, 6000, 'w'));
	struct seen s = adopted(f, 0);
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.uniques[0], 10);
	cr_assert_eq(s.lens[0], 0);
	inflight_free(f);
}

static void count(void *data, const struct fuse_in_header *req, size_t len)
{
	(*(unsigned *)data)++;
}

Test(inflight, more_in_hand_than_slots_keeps_the_first_ones_and_a_foreign_fd_is_refused)
{
	unsigned char buf[256];
	struct inflight *f = inflight_new();
	for (guint64 u = 1; u <= 200; u++)
		inflight_taken(f, 0, buf, request(buf, FUSE_STATFS, 2 * u, 0, 0));
	inflight_answered(f, 0, 2);
	inflight_taken(f, 0, buf, request(buf, FUSE_STATFS, 1000, 0, 0)); /* in the slot answered */
	struct inflight *other = inflight_adopt(dup(inflight_fd(f)));
	unsigned n = 0;
	inflight_each(other, 0, count, &n);
	inflight_free(other);
	cr_assert_eq(n, 128);
	inflight_free(f);
	int pipefd[2];
	cr_assert_eq(pipe(pipefd), 0);
	cr_assert_null(inflight_adopt(pipefd[0]));
	close(pipefd[1]);
}

Test(inflight, a_call_being_taken_is_a_call_taken_once_noted_and_an_expected_id_until_then)
{
	struct inflight *f = inflight_new();
	cr_assert_not_null(f);
	int a = inflight_call_receiving(f, 41), b = inflight_call_receiving(f, 0);
	cr_assert(a >= 0 && b >= 0 && a != b);
	struct seccomp_notif req = { .id = 41, .pid = 7 };
	inflight_call_taken_in(f, a, &req);
	struct seccomp_notif taken[INFLIGHT_CALLS];
	cr_assert_eq(inflight_calls_take(f, taken), 1, "the noted one is taken, the other is still being taken");
	cr_assert_eq(taken[0].id, 41);
	cr_assert_eq(taken[0].pid, 7);
	/* b, and c expecting 50: no fd holds such a notification (not seccomp's). */
	int c = inflight_call_receiving(f, 50);
	cr_assert(c >= 0);
	int fds[1] = { STDIN_FILENO };
	cr_assert_eq(inflight_let_lost_through(f, fds, 1), 0);
	cr_assert_eq(inflight_calls_take(f, taken), 0);
	for (int i = 0; i < INFLIGHT_CALLS; i++)
		cr_assert(inflight_call_receiving(f, 1) >= 0, "every slot free again");
	cr_assert_eq(inflight_call_receiving(f, 1), -1, "all in use");
	inflight_free(f);
}
