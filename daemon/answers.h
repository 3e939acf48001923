/* Answers to the kernel, written so that a daemon killed while the
 * kernel copies one never costs its caller an EIO (answers.c). */
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

/* Writes the answer iov[0..count) (a whole message, its header first)
 * to the FUSE device fd, as writev does; the kernel's errno if it
 * refuses it. */
ssize_t answer_write(int fd, const struct iovec *iov, int count);

/* The fault answer-copy-fails (faults.h) is asked for: the answer of
 * the request unique, just taken by this thread, is to be unreadable. */
void answer_poison_next(unsigned long long unique);
