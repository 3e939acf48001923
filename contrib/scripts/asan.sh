#!/bin/sh
# Build everything with AddressSanitizer and UndefinedBehaviorSanitizer
# (gcc) and run the unit tests, the mount tests and the soak (tests/soak)
# against that daemon: any report fails the run (ASan aborts the daemon,
# UBSan is built not to recover, and LeakSanitizer's exit status at the
# daemon's exit fails the tests' "stops with exit 0" checks).
#
#   contrib/scripts/asan.sh [BUILD_DIR [tests|soak]]   (default: build-asan, both)
#
# The user-mode Linux guest is left out: ASan's shadow memory does not fit
# the guest's address space (the daemon cannot start there); that suite
# runs against the plain build. So is the Debian package's suite, which
# builds and installs a package of its own, and LXC's, whose daemon side
# (the host view's files read from a cgroup namespace) test_scope runs.
set -eu
cd "$(dirname "$0")/../.."
dir=${1:-build-asan}
what=${2:-all}
last=$(date +%s)
# lap NAME: say how long NAME took (setup-and-test.sh shows these lines).
lap() {
	now=$(date +%s)
	printf 'stage: %-30s %5d s\n' "$1" $((now - last))
	last=$now
}
if [ ! -d "$dir" ]; then
	meson setup -Db_sanitize=address,undefined -Dc_args=-fno-sanitize-recover=undefined "$dir" >/dev/null
fi
ninja -C "$dir" >/dev/null
lap "asan: build"
mount_tests=$(meson test -C "$dir" --no-rebuild --list --suite mount 2>/dev/null | sed -n 's|^cgprocfs:mount[^ ]* / ||p' |
	grep -vx -e uml -e deb -e lxc)
export ASAN_OPTIONS="detect_leaks=1 ${ASAN_OPTIONS:-}"
export CGPROCFS_SANITIZED=1 # tests that bound RSS leave that to LeakSanitizer
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 ${UBSAN_OPTIONS:-}"
status=0
if [ "$what" != soak ]; then
	meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 --suite unit || status=1
	lap "asan: unit tests"
	# shellcheck disable=SC2086 # one test name per word
	meson test -C "$dir" --no-rebuild --print-errorlogs $mount_tests || status=1
	lap "asan: mount tests"
fi
if [ "$what" != tests ]; then
	# Every change of the soak at least once, and a daemon event every 5 s:
	# a whole round of them (--replace and SIGKILL, plain and with each
	# process killed at each step of a handover: tests/soak/daemons.py).
	tests/soak/run-soak.sh "$dir" --minutes 2.5 --containers-every 30 --daemon-every 5 --calm 0 --warmup 30 ||
		status=1
	lap "asan: soak"
fi
exit $status
