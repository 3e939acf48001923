/* The notifier: a child process, forked at start, that writes the daemon's
 * notifications to the kernel (entry and inode invalidations, page cache
 * stores) on the sessions' /dev/fuse fds.
 *
 * A notification can wait in the kernel, uninterruptibly, for a request in
 * flight: an entry's invalidation for the directory lock that a LOOKUP in
 * that directory holds until it is answered, a store for the pages a READ
 * holds. Written by one of the daemon's threads, such a wait kept a killed
 * daemon from ever finishing its exit (the request waits for a daemon, and
 * the keeper hands the views to a new one only once the old one is gone).
 * Written by the notifier, it holds up only the notifier, which goes (its
 * parent-death signal) once the new daemon has answered the request.
 *
 * Each thread that notifies has a channel of its own to a thread of the
 * notifier (made at its first notification, closed at its exit), and waits
 * there for the write's result: notifications keep their order per thread,
 * and one that waits holds up no other thread's. */
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

struct notifier;

/* Fork the notifier (before any thread is started). 0, or -errno. */
int notifier_start(struct notifier **ret);
/* Write the notification iov (count pieces, as libfuse makes it) on
 * fuse_fd through the notifier, or directly if n is NULL or its process
 * is gone: as writev(2) does, the length or -1 with errno (EMSGSIZE for
 * one longer than NOTIFIER_MAX_MESSAGE). Any thread. */
ssize_t notifier_writev(struct notifier *n, int fuse_fd, const struct iovec *iov, int count);
/* From notifier_batch_begin to notifier_batch_end, this thread's
 * notifications are sent in batches, nobody waiting for each: for a
 * thread that sends thousands at once (taking over a view). The errors of
 * a batch's notifications are not told. */
void notifier_batch_begin(void);
void notifier_batch_end(struct notifier *n);
/* The sessions are another daemon's now (handed over): from here on
 * nothing is written, and threads waiting for the notifier's answer
 * (which may wait in the kernel for a request only a daemon serving the
 * views answers) stop waiting, so that this daemon can exit. */
void notifier_silence(struct notifier *n);
/* Close the daemon's end; the notifier exits once each thread's channel
 * is closed too. */
void notifier_free(struct notifier *n);

/* The longest notification: far above any text the daemon stores. */
#define NOTIFIER_MAX_MESSAGE (1u << 20)
