/* What the kernel was told of each served file: a process's files are let
 * go of when it exits, the others stay. */
#include "kcache.h"
#include "view-internal.h"

#include <criterion/criterion.h>

Test(kcache, lets_go_of_the_files_of_an_exited_process)
{
	struct ops_state s = { 0 };
	kcache_init(&s);
	const uint64_t exited = ino_pid_make(NODE_PID_FILE, 42, 3, 7);
	const uint64_t alive = ino_pid_make(NODE_PID_FILE, 43, 3, 7);
	const uint64_t shared = ino_served_make(NODE_HOST_FILE, 1, 42);
	cr_assert(kcache_told(&s, exited, 5, 100), "a file never told of is new to the kernel");
	cr_assert_not(kcache_told(&s, exited, 5, 100), "the same version again is not");
	kcache_told(&s, alive, 5, 100);
	kcache_told(&s, shared, 5, 100);
	cr_assert_eq(kcache_told_count(&s), 3);

	kcache_forget_process(&s, 42);
	cr_assert_eq(kcache_told_count(&s), 2, "%u inodes kept after pid 42 exited", kcache_told_count(&s));
	cr_assert(kcache_told(&s, exited, 5, 100), "a file of the exited process is new again");
	cr_assert_not(kcache_told(&s, alive, 5, 100), "another process's file was let go of");
	cr_assert_not(kcache_told(&s, shared, 5, 100), "a file of no process was let go of");
	kcache_forget_process(&s, 44); /* never told of: nothing to do */
	cr_assert_eq(kcache_told_count(&s), 3);
	kcache_clear(&s);
}
