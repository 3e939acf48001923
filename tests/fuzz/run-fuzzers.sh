#!/bin/sh
# Run the libFuzzer harnesses of tests/fuzz. See README.md.
#
#   run-fuzzers.sh [-t SECONDS] [-j JOBS] BUILDDIR [NAME...]
#       fuzz each NAME (default: all) for SECONDS (default 180), JOBS at a
#       time (default 2); corpus, crashes and logs go under
#       BUILDDIR/tests/fuzz/out/{corpus,crashes,logs}/
#   run-fuzzers.sh --check DIR NAME
#       run fuzz_NAME once over its seeds and the saved crash inputs, no
#       fuzzing (what `meson test --suite fuzz` does)
#
# BUILDDIR is a build directory set up with -Dfuzz=true (or its tests/fuzz).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
fx=$top/tests/fixtures
all="pid_stat caller_status cpuset cgroup_membership cgroup_limits cpumap render_cpuinfo render_stat render_set snapshot memview diskview control"

# The seed files of one harness, one path a line: fixtures the daemon reads
# the kind of text of, and the hand-written ones in tests/fuzz/seeds/NAME.
seed_files() {
	case $1 in
	pid_stat) find "$fx/proc/100/stat" "$fx/proc/100/task" -type f -name stat ;;
	caller_status) find "$fx/proc/100/status" -type f ;;
	cpuset | render_set)
		find "$fx/sys-cpu" -type f
		find "$fx/cgroup" -type f -name 'cpuset.*' ;;
	cgroup_limits) find "$fx/cgroup" -type f ;;
	render_cpuinfo) find "$fx/cpuinfo" "$fx/proc/cpuinfo" -type f ! -name 'stat*' ;;
	render_stat) find "$fx/cpuinfo/stat-4cpu" "$fx/proc/stat" -type f ;;
	snapshot) find "$fx/cpuinfo" "$fx/proc/stat" -type f ;;
	memview) find "$fx/meminfo" -type f ;;
	esac
	case $1 in
	render_set) d=$here/seeds/cpuset ;; # the same kinds of text
	*) d=$here/seeds/$1 ;;
	esac
	if [ -d "$d" ]; then find "$d" -type f; fi
}

# Copy the seeds of $1 into directory $2 (names made unique).
make_seeds() {
	mkdir -p "$2"
	seed_files "$1" | while read -r f; do
		cp "$f" "$2/$(echo "${f#"$top"/}" | tr / _)"
	done
}

find_exe_dir() {
	for d in "$1" "$1/tests/fuzz"; do
		if [ -x "$d/fuzz_cpuset" ]; then
			echo "$d"
			return 0
		fi
	done
	echo "no fuzzers in $1: meson setup it with -Dfuzz=true (CC=clang) and ninja -C it" >&2
	exit 2
}

if [ "${1:-}" = --check ]; then
	exe=$(find_exe_dir "$2")/fuzz_$3
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	make_seeds "$3" "$tmp/seeds"
	[ -d "$here/crashes/$3" ] && cp "$here/crashes/$3"/* "$tmp/seeds/"
	if [ -n "$(ls "$tmp/seeds")" ]; then
		"$exe" -rss_limit_mb=2048 "$tmp/seeds"/*
	else
		"$exe" -rss_limit_mb=2048 -runs=2000 -seed=1
	fi
	exit
fi

seconds=180
jobs=2
while getopts t:j: opt; do
	case $opt in
	t) seconds=$OPTARG ;;
	j) jobs=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,12p' "$0"; exit 2; }
exedir=$(find_exe_dir "$1")
shift
out=$exedir/out
names=${*:-$all}

run_one() {
	name=$1
	rm -rf "$out/seeds/$name"
	make_seeds "$name" "$out/seeds/$name"
	mkdir -p "$out/corpus/$name" "$out/crashes/$name" "$out/logs"
	echo "fuzz_$name: ${seconds}s, log $out/logs/$name.log"
	rc=0
	"$exedir/fuzz_$name" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
		-print_final_stats=1 -artifact_prefix="$out/crashes/$name/" \
		"$out/corpus/$name" "$out/seeds/$name" >"$out/logs/$name.log" 2>&1 || rc=$?
	echo "fuzz_$name: exit $rc; $(grep -E '^#[0-9]+.*DONE|^Done' "$out/logs/$name.log" | tail -n 1)"
	return 0
}

# At most $jobs at a time.
# shellcheck disable=SC2086 # one word per name
set -- $names
while [ $# -gt 0 ]; do
	pids=
	i=0
	while [ $i -lt "$jobs" ] && [ $# -gt 0 ]; do
		run_one "$1" &
		pids="$pids $!"
		shift
		i=$((i + 1))
	done
	for p in $pids; do wait "$p"; done
done
echo "crashes:"
find "$out/crashes" -type f | sed 's/^/  /'
