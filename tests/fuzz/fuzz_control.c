/* control_decode (daemon/control.h): any text a peer of the control socket
 * sends. A message it takes has a known word, and comes back the same
 * through control_send and control_receive; one it rejects says why. The
 * last input byte is how many fds came with the text. */
#include "control.h"
#include "fuzz.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

static int sv[2] = { -1, -1 }; /* made once, for the round trips */

static void check_round_trip(const struct control_msg *m)
{
	struct control_msg again;
	g_autoptr(GError) err = NULL;

	if (sv[0] < 0)
		FUZZ_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	FUZZ_CHECK(control_send(sv[0], m, &err) == 0);
	FUZZ_CHECK(control_receive(sv[1], CONTROL_ANY_WORD, &again, &err) == 0);
	FUZZ_CHECK(again.word == m->word && again.n_fds == 0);
	FUZZ_CHECK(memcmp(again.args, m->args, sizeof(m->args)) == 0);
	FUZZ_CHECK(strcmp(again.reason, m->reason) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_tail tail = { data, size };
	unsigned n_fds = (unsigned)fuzz_take(&tail, 1) % 4;
	g_autofree char *text = fuzz_exact(tail.data, tail.size);
	struct control_msg m;
	g_autoptr(GError) err = NULL;

	memset(&m, 0x5a, sizeof(m));
	int r = control_decode(text, tail.size, n_fds, &m, &err);
	if (r < 0) {
		FUZZ_CHECK(r == -EPROTO && err && err->message[0]);
		return 0;
	}
	FUZZ_CHECK(!err);
	FUZZ_CHECK((unsigned)m.word <= CONTROL_LAST_WORD);
	FUZZ_CHECK(memchr(m.reason, '\0', sizeof(m.reason)));
	FUZZ_CHECK(m.args[0] <= G_MAXINT && m.args[1] <= G_MAXINT);
	if (n_fds == 0) {
		m.n_fds = 0;
		check_round_trip(&m);
	}
	return 0;
}
