#!/bin/sh
# Build everything with AddressSanitizer and UndefinedBehaviorSanitizer
# (gcc) and run the unit tests, the mount tests and 3 minutes of the soak
# (tests/soak) against that daemon: any report fails the run (ASan aborts
# the daemon, UBSan is built not to recover, and LeakSanitizer's exit
# status at the daemon's exit fails the tests' "stops with exit 0" checks).
#
#   contrib/scripts/asan.sh [BUILD_DIR]     (default: build-asan)
#
# The user-mode Linux guest is left out: ASan's shadow memory does not fit
# the guest's address space (the daemon cannot start there); that suite
# runs against the plain build.
set -eu
cd "$(dirname "$0")/../.."
dir=${1:-build-asan}
if [ ! -d "$dir" ]; then
	meson setup -Db_sanitize=address,undefined -Dc_args=-fno-sanitize-recover=undefined "$dir" >/dev/null
fi
ninja -C "$dir" >/dev/null
mount_tests=$(meson test -C "$dir" --no-rebuild --list --suite mount 2>/dev/null | sed -n 's|^cgprocfs:mount / ||p' | grep -vx uml)
export ASAN_OPTIONS="detect_leaks=1 ${ASAN_OPTIONS:-}"
export CGPROCFS_SANITIZED=1 # tests that bound RSS leave that to LeakSanitizer
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 ${UBSAN_OPTIONS:-}"
status=0
meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 --suite unit || status=1
# shellcheck disable=SC2086 # one test name per word
meson test -C "$dir" --no-rebuild --print-errorlogs $mount_tests || status=1
# Every change of the soak at least once in 3 minutes, and a daemon event
# every 8 s: a round of them (--replace and SIGKILL, plain and with each
# process killed at each step of a handover: tests/soak/daemons.py) and
# the first events of the next.
tests/soak/run-soak.sh "$dir" --minutes 3 --containers-every 30 --daemon-every 8 --calm 0 --warmup 30 || status=1
exit $status
