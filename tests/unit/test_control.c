/* The control protocol (daemon/control.h) over socketpairs and a
 * listening socket: every word round-trips, bad messages are rejected
 * with a reason and their fds closed, a peer that is not root is refused. */
#include "cleanup.h"
#include "control.h"
#include "log.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int sv[2]; /* [0] sends, [1] receives */

static void setup(void)
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

static void teardown(void)
{
	close(sv[0]);
	close(sv[1]);
}

TestSuite(control, .init = setup, .fini = teardown);

/* A pipe: [0] non-blocking, to tell whether any copy of [1] is open. */
static void make_pipe(int p[2])
{
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
}

/* TRUE once no write end of the pipe whose read end is r is left open. */
static gboolean writers_gone(int r)
{
	char c;
	return read(r, &c, 1) == 0;
}

static unsigned open_fds(void)
{
	g_autoptr(GDir) dir = g_dir_open("/proc/self/fd", 0, NULL);
	unsigned n = 0;
	cr_assert_not_null(dir);
	while (g_dir_read_name(dir))
		n++;
	return n;
}

static const struct control_msg samples[] = {
	{ .word = CONTROL_ATTACH, .args = { 1234 } },
	{ .word = CONTROL_HANDOVER },
	{ .word = CONTROL_OK },
	{ .word = CONTROL_OK, .n_fds = 1 },
	{ .word = CONTROL_ERROR, .reason = "no such process" },
	{ .word = CONTROL_ERROR, .reason = "" },
	{ .word = CONTROL_SESSION, .args = { 31 }, .n_fds = 1 },
	{ .word = CONTROL_SESSION, .args = { 31 }, .n_fds = 2 },
	{ .word = CONTROL_WATCH, .args = { 2, 77 }, .n_fds = 1 },
	{ .word = CONTROL_END },
	{ .word = CONTROL_SERVING },
	{ .word = CONTROL_KEEP, .args = { 5, 31 }, .n_fds = 1 },
	{ .word = CONTROL_KEEP, .args = { 0, 2147483647 }, .n_fds = 2 },
	{ .word = CONTROL_DROP, .args = { 5 } },
	{ .word = CONTROL_QUIT },
	{ .word = CONTROL_LISTENER, .n_fds = 1 },
	{ .word = CONTROL_LISTENER, .n_fds = 3 },
	{ .word = CONTROL_NOTIFY, .n_fds = 1 },
	{ .word = CONTROL_PUBLISH },
	{ .word = CONTROL_LEAVE },
};

Test(control, every_word_round_trips_with_usable_fds)
{
	for (size_t i = 0; i < G_N_ELEMENTS(samples); i++) {
		struct control_msg out = samples[i], in;
		int pipes[CONTROL_MAX_FDS][2];
		g_autoptr(GError) err = NULL;

		for (unsigned f = 0; f < out.n_fds; f++) {
			make_pipe(pipes[f]);
			out.fds[f] = pipes[f][1];
		}
		cr_assert_eq(control_send(sv[0], &out, &err), 0, "send %s: %s", control_word_text(out.word),
			     err ? err->message : "");
		for (unsigned f = 0; f < out.n_fds; f++)
			close(pipes[f][1]); /* the receiver's copy is the only one now */
		cr_assert_eq(control_receive(sv[1], CONTROL_ANY_WORD, &in, &err), 0, "receive %s: %s", control_word_text(out.word),
			     err ? err->message : "");
		cr_assert_eq(in.word, out.word);
		cr_assert_eq(in.n_fds, out.n_fds, "%s: fds", control_word_text(out.word));
		cr_assert_eq(in.args[0], out.args[0]);
		cr_assert_eq(in.args[1], out.args[1]);
		cr_assert_str_eq(in.reason, out.reason);
		for (unsigned f = 0; f < in.n_fds; f++) {
			char c = 0;
			cr_assert(fcntl(in.fds[f], F_GETFD) & FD_CLOEXEC, "received fds are close-on-exec");
			cr_assert_eq(write(in.fds[f], "x", 1), 1, "the fd received works");
			cr_assert_eq(read(pipes[f][0], &c, 1), 1);
			cr_assert_eq(c, 'x');
		}
		control_close_fds(&in);
		for (unsigned f = 0; f < out.n_fds; f++) {
			cr_assert(writers_gone(pipes[f][0]), "control_close_fds closed them");
			close(pipes[f][0]);
		}
	}
}

Test(control, the_sender_refuses_what_the_table_does_not_allow)
{
	g_autoptr(GError) err = NULL;
	const struct control_msg end_with_fd = { .word = CONTROL_END, .fds = { 0 }, .n_fds = 1 };
	const struct control_msg session_without = { .word = CONTROL_SESSION, .args = { 31 } };
	const struct control_msg huge = { .word = CONTROL_DROP, .args = { 1u << 31 } };

	cr_assert_eq(control_send(sv[0], &end_with_fd, &err), -EINVAL);
	cr_assert_not_null(err);
	g_clear_error(&err);
	cr_assert_eq(control_send(sv[0], &session_without, &err), -EINVAL);
	g_clear_error(&err);
	cr_assert_eq(control_send(sv[0], &huge, &err), -ERANGE);
	g_clear_error(&err);
	cr_assert_eq(control_send_error(sv[0], &err, "%s", "a reason"), 0);
}

/* Send len bytes of text raw, with n_fds fds (copies of a pipe's write
 * end), and expect control_receive, taking the words of expected, to
 * reject it with a reason containing words; the fds received must be
 * closed. */
static void expect_reject(const char *text, size_t len, unsigned n_fds, unsigned expected, const char *words)
{
	int p[2], fds[8];
	struct control_msg in = { .word = CONTROL_QUIT };
	g_autoptr(GError) err = NULL;

	make_pipe(p);
	for (unsigned i = 0; i < n_fds; i++)
		fds[i] = i == 0 ? p[1] : dup(p[1]);
	cr_assert_eq(fdmsg_send_bytes(sv[0], text, len, fds, n_fds), (ssize_t)len);
	for (unsigned i = 0; i < n_fds; i++)
		close(fds[i]);
	if (!n_fds)
		close(p[1]);
	unsigned before = open_fds();
	cr_assert_eq(control_receive(sv[1], expected, &in, &err), -EPROTO, "%.*s was taken", (int)MIN(len, 40),
		     text);
	cr_assert_eq(in.word, CONTROL_QUIT, "*ret untouched on failure");
	cr_assert_not_null(err);
	cr_assert(strstr(err->message, words), "reason: %s (expected %s)", err->message, words);
	cr_assert_eq(open_fds(), before, "fds left open by a rejected message");
	cr_assert(writers_gone(p[0]), "the fds of a rejected message were not closed");
	close(p[0]);
}

static const struct bad_message {
	const char *text;
	unsigned n_fds;
	const char *reason;
} truncated[] = {
	{ "session", 1, "with 0 numbers, not 1" },
	{ "watch 1", 1, "with 1 numbers, not 2" },
	{ "keep 5 ", 2, "bad number" },
	{ "attach", 0, "with 0 numbers" },
}, unknown[] = {
	{ "frobnicate 1", 0, "unknown word \"frobnicate\"" },
	{ "ATTACH 1", 0, "unknown word" },
	{ "attach -1", 0, "bad number" },
	{ "attach 99999999999", 0, "bad number" },
	{ "attach 1 2", 0, "with 2 numbers" },
	{ "drop  5", 0, "with 2 numbers" },
}, with_fds[] = {
	{ "end", 1, "\"end\" with 1 fds" },
	{ "attach 12", 1, "\"attach\" with 1 fds" },
	{ "watch 1 2", 2, "\"watch\" with 2 fds" },
	{ "error: no", 1, "with 1 fds" },
	{ "session 31", 4, "more than 3 fds" },
	{ "session 31", 8, "more than 3 fds" },
	{ "listener", 0, "\"listener\" with 0 fds" },
	{ "publish", 1, "\"publish\" with 1 fds" },
};

static void expect_rejects(const struct bad_message *bad, size_t n)
{
	for (size_t i = 0; i < n; i++)
		expect_reject(bad[i].text, strlen(bad[i].text), bad[i].n_fds, CONTROL_ANY_WORD, bad[i].reason);
}

Test(control, truncated_messages_are_rejected)
{
	expect_rejects(truncated, G_N_ELEMENTS(truncated));
}

Test(control, unknown_words_and_bad_numbers_are_rejected)
{
	expect_rejects(unknown, G_N_ELEMENTS(unknown));
	expect_reject("attach\0 1", 9, 0, CONTROL_ANY_WORD, "NUL");
}

Test(control, fds_a_word_does_not_take_are_closed_and_the_message_rejected)
{
	expect_rejects(with_fds, G_N_ELEMENTS(with_fds));
}

Test(control, a_word_the_receiver_does_not_take_is_rejected_with_its_fds)
{
	expect_reject("session 31", 10, 1, CONTROL_WORD(CONTROL_ATTACH) | CONTROL_WORD(CONTROL_HANDOVER),
		      "\"session\" out of place");
	expect_reject("quit", 4, 0, CONTROL_WORD(CONTROL_SERVING), "\"quit\" out of place");
}

Test(control, a_kibibyte_of_garbage_is_rejected)
{
	char garbage[1024];
	GRand *rand = g_rand_new_with_seed(9);
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (char)g_rand_int_range(rand, 0, 256);
	g_rand_free(rand);
	expect_reject(garbage, sizeof(garbage), 1, CONTROL_ANY_WORD, "longer than 255 bytes");
	/* And a clean message after it still gets through. */
	struct control_msg in;
	cr_assert_eq(control_send_word(sv[0], CONTROL_END, NULL), 0);
	cr_assert_eq(control_receive(sv[1], CONTROL_ANY_WORD, &in, NULL), 0);
	cr_assert_eq(in.word, CONTROL_END);
}

Test(control, the_decoder_survives_random_short_text)
{
	GRand *rand = g_rand_new_with_seed(4);
	const char alphabet[] = "attachsessionwatchkeepdroperror: 0123456789 \n";
	for (int round = 0; round < 20000; round++) {
		char text[24];
		size_t len = (size_t)g_rand_int_range(rand, 0, sizeof(text));
		struct control_msg m;
		for (size_t i = 0; i < len; i++)
			text[i] = alphabet[g_rand_int_range(rand, 0, sizeof(alphabet) - 1)];
		g_autoptr(GError) err = NULL;
		int r = control_decode(text, len, 0, &m, &err);
		cr_assert(r == 0 || (r == -EPROTO && err), "decode of %.*s: %d", (int)len, text, r);
	}
	g_rand_free(rand);
}

Test(control, the_peer_goes_away)
{
	struct control_msg in;
	g_autoptr(GError) err = NULL;
	close(sv[0]);
	sv[0] = -1;
	cr_assert_eq(control_receive(sv[1], CONTROL_ANY_WORD, &in, &err), -EPIPE);
	cr_assert(g_error_matches(err, CGPROCFS_ERROR, EPIPE), "log.h's domain, the errno as code");
}

Test(control, a_peer_that_is_not_root_is_refused_with_the_reason)
{
	g_autofree char *dir = g_dir_make_tmp("control-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "sub", "control.sock", NULL);
	g_autofree char *sub = g_path_get_dirname(path);

	cr_assert_not_null(dir);
	_cleanup_close_ int listen_fd = control_listen(path, 4);
	cr_assert_geq(listen_fd, 0, "control_listen: %s", g_strerror(-listen_fd));
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "the socket is root's only");
	/* Open it up (as a mistake would): the daemon still refuses. */
	cr_assert_eq(chmod(dir, 0755) | chmod(sub, 0755) | chmod(path, 0666), 0);

	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		struct control_msg in;
		if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		int conn = control_connect(path, 10, NULL);
		if (conn < 0)
			_exit(3);
		if (control_receive(conn, CONTROL_ANY_WORD, &in, NULL) < 0 || in.word != CONTROL_ERROR)
			_exit(4);
		_exit(strcmp(in.reason, "only root may attach containers") == 0 ? 0 : 5);
	}
	cr_assert_eq(control_accept(listen_fd, "only root may attach containers"), -EPERM);
	int status;
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child did not get the refusal (%d)",
		  status);

	/* Root gets through. */
	g_autoptr(GError) err = NULL;
	_cleanup_close_ int conn = control_connect(path, 10, &err);
	cr_assert_geq(conn, 0, "%s", err ? err->message : "");
	_cleanup_close_ int served = control_accept(listen_fd, "only root may attach containers");
	cr_assert_geq(served, 0);
	unlink(path);
	rmdir(sub);
	rmdir(dir);
}

Test(control, connecting_to_nothing_says_where)
{
	g_autoptr(GError) err = NULL;
	cr_assert_lt(control_connect("/nonexistent/cgprocfs.sock", 1, &err), 0);
	cr_assert(strstr(err->message, "cannot reach the daemon at /nonexistent/cgprocfs.sock"), "%s",
		  err->message);
}

Test(control, the_control_file_names_the_socket)
{
	g_autofree char *dir = g_dir_make_tmp("mnt-XXXXXX", NULL);
	g_autofree char *meta = g_build_filename(dir, ".cgprocfs", NULL);
	g_autofree char *file = g_build_filename(meta, "control", NULL);
	g_autoptr(GError) err = NULL;

	cr_assert_null(control_socket_of(dir, &err), "no control file: no socket");
	cr_assert_not_null(err);
	g_clear_error(&err);
	cr_assert_eq(g_mkdir_with_parents(meta, 0700), 0);
	cr_assert(g_file_set_contents(file, "  \n", -1, NULL));
	cr_assert_null(control_socket_of(dir, &err), "an empty control file: no socket");
	g_clear_error(&err);
	cr_assert(g_file_set_contents(file, "/run/cgprocfs/x.sock\n", -1, NULL));
	g_autofree char *path = control_socket_of(dir, &err);
	cr_assert_str_eq(path, "/run/cgprocfs/x.sock");
	unlink(file);
	rmdir(meta);
	rmdir(dir);
}

/* The giving side of a handover, on sv[0]: two sessions, a watch, a
 * seccomp notification fd, the listeners, end. */
static gpointer give(gpointer data)
{
	/* host fuse, container fuse, container ns, pidfd, notify, listener, seccomp listeners */
	const int *fds = data;
	int r = handover_send_session(sv[0], 31, fds[0], -1, NULL);
	if (r == 0)
		r = handover_send_session(sv[0], 31, fds[1], fds[2], NULL);
	if (r == 0)
		r = handover_send_watch(sv[0], 1, 4321, fds[3], NULL);
	if (r == 0)
		r = handover_send_notify(sv[0], fds[4], NULL);
	if (r == 0)
		r = handover_send_listener(sv[0], fds[5], (const int[2]){ fds[6], fds[7] }, NULL);
	if (r == 0)
		r = handover_finish(sv[0], NULL);
	return GINT_TO_POINTER(r);
}

Test(control, a_handover_gives_sessions_watches_notify_fds_and_the_listeners)
{
	int p[8][2], fds[8];
	struct handover h;
	g_autoptr(GError) err = NULL;

	for (int i = 0; i < 8; i++) {
		make_pipe(p[i]);
		fds[i] = p[i][1];
	}
	GThread *giver = g_thread_new("give", give, fds);
	cr_assert_eq(handover_take(sv[1], &h, &err), 0, "%s", err ? err->message : "");
	sv[1] = -1; /* taken */
	cr_assert_eq(h.sessions->len, 2);
	cr_assert_eq(h.watches->len, 1);
	cr_assert_eq(h.notify->len, 1);
	const struct handover_session *host = &g_array_index(h.sessions, struct handover_session, 0);
	const struct handover_session *c = &g_array_index(h.sessions, struct handover_session, 1);
	const struct handover_watch *w = &g_array_index(h.watches, struct handover_watch, 0);
	cr_assert(host->fuse_fd >= 0 && host->ns_fd == -1 && host->proto_minor == 31);
	cr_assert(c->fuse_fd >= 0 && c->ns_fd >= 0 && c->proto_minor == 31);
	cr_assert(w->session == 1 && w->pid == 4321 && w->pidfd >= 0);
	cr_assert_geq(h.listener, 0, "the listener came");
	cr_assert(h.seccomp_listeners[0] >= 0 && h.seccomp_listeners[1] >= 0, "the seccomp listeners came");
	char ch;
	cr_assert_eq(write(c->ns_fd, "n", 1), 1, "the fds taken work");
	cr_assert_eq(read(p[2][0], &ch, 1), 1);
	cr_assert_eq(write(h.listener, "l", 1), 1);
	cr_assert_eq(read(p[5][0], &ch, 1), 1);
	cr_assert_eq(write(g_array_index(h.notify, int, 0), "s", 1), 1);
	cr_assert_eq(read(p[4][0], &ch, 1), 1);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(write(h.seccomp_listeners[i], "s", 1), 1);
		cr_assert_eq(read(p[6 + i][0], &ch, 1), 1);
	}
	handover_done(&h);
	cr_assert_eq(GPOINTER_TO_INT(g_thread_join(giver)), 0, "the giving side saw no serving");
	handover_clear(&h);
	for (int i = 0; i < 8; i++) {
		close(p[i][1]);
		cr_assert(writers_gone(p[i][0]), "handover_clear closes everything");
		close(p[i][0]);
	}
}

Test(control, a_handover_refused_or_out_of_order_fails_with_a_reason)
{
	struct handover h = { .conn = -1 };
	g_autoptr(GError) err = NULL;

	cr_assert_eq(control_send_word(sv[0], CONTROL_END, NULL), 0);
	cr_assert_lt(handover_take(dup(sv[1]), &h, &err), 0, "end before any session");
	cr_assert(strstr(err->message, "made no sense"), "%s", err->message);
	g_clear_error(&err);
	cr_assert_eq(control_send_error(sv[0], NULL, "its daemon is alive"), 0);
	cr_assert_lt(handover_take(dup(sv[1]), &h, &err), 0);
	cr_assert(strstr(err->message, "refused to hand over: its daemon is alive"), "%s", err->message);
}
