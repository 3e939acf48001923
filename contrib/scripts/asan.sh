#!/bin/sh
# Build everything with AddressSanitizer and UndefinedBehaviorSanitizer
# (gcc) and run the unit tests, the mount tests and the soak (tests/soak)
# against that daemon: any report fails the run (ASan aborts the daemon,
# UBSan is built not to recover, and LeakSanitizer's exit status at the
# daemon's exit fails the tests' "stops with exit 0" checks).
#
#   contrib/scripts/asan.sh [BUILD_DIR [tests|soak]]   (default: build-asan, both)
#
# The mount tests are the daemon's own groups, view and lifecycle; the
# slow group is left to the plain build: what the daemon does for runc,
# crun, podman, Docker, LXC and psutil's suite (a container's attach
# through the hook, its view, a takeover of it, the host view's files
# read from a cgroup namespace, every served file read) the view and
# lifecycle suites do too, through the same hook; the packaging suites
# build their own; and ASan's shadow memory does not fit the user-mode
# Linux guest's address space.
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
# The daemon's own mount suites, what it serves and its lifecycle, two at
# a time; the unit suite beside them (unit-beside.sh).
export ASAN_OPTIONS="detect_leaks=1 ${ASAN_OPTIONS:-}"
export CGPROCFS_SANITIZED=1 # tests that bound RSS leave that to LeakSanitizer
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 ${UBSAN_OPTIONS:-}"
status=0
if [ "$what" != soak ]; then
	contrib/scripts/unit-beside.sh "$dir" --print-errorlogs --num-processes 2 --suite view --suite lifecycle ||
		{ status=1 && contrib/scripts/failed-tests.py "$dir"; }
	lap "asan: unit and mount tests"
fi
if [ "$what" != tests ]; then
	# Every change of the soak at least four times, and a daemon event
	# every 2.5 s until a whole round of them is done (--replace and
	# SIGKILL, plain and with each process killed at each step of a
	# handover: tests/soak/daemons.py).
	tests/soak/run-soak.sh "$dir" --minutes 0.9 --rounds 1 --containers-every 13 --daemon-every 2.5 --calm 0 \
		--warmup 30 ||
		status=1
	lap "asan: soak"
fi
exit $status
