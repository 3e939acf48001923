#!/usr/bin/env bash
# Latency of the cgprocfs view against the real /proc, in one run.
#
#   tests/bench/bench-view.sh [BUILD_DIR]      (default: build; needs root)
#
# Starts the daemon from BUILD_DIR on a fresh temporary mountpoint, an idle
# `sleep` to read files of, and two long-lived private mount namespaces:
#   view namespace  the view bound over /proc (mount --rbind MNT/proc /proc),
#                   so the real procfs is at /proc/.real in it;
#   real namespace  an untouched copy of this one, plain /proc.
# Then:
#   1. in the view namespace, cgprocfs-bench-latency times open+read+close
#      of real:X=/proc/.real/... against view:X=/proc/..., interleaved;
#   2. `ps aux >/dev/null` is timed in the real and in the view namespace,
#      interleaved in random order (each run: nsenter --mount=NS ps aux),
#      with a third arm timing the start-up alone (nsenter ... true).
# Prints p50/p99/mean per row and the view/real ratios, then the aims.
# The aims are reported, not enforced: the exit status says only whether
# the benchmark could run.
#
# Environment (all optional):
#   BENCH_ITERATIONS  latency rounds (default 20000)
#   BENCH_WARMUP      unrecorded latency rounds first (default 2000)
#   BENCH_PS_RUNS     ps aux runs per arm (default 100)
#   BENCH_DAEMON_ARGS extra daemon arguments, split on spaces
#                     (e.g. "-d -o debug" to log every FUSE request)
#   BENCH_DAEMON_LOG  keep the daemon's stderr in this file
set -euo pipefail

BUILD_DIR=${1:-build}
ITERATIONS=${BENCH_ITERATIONS:-20000}
WARMUP=${BENCH_WARMUP:-2000}
PS_RUNS=${BENCH_PS_RUNS:-100}
read -r -a DAEMON_ARGS <<<"${BENCH_DAEMON_ARGS:-}"
# Aims from the issue: p50 ratios, view over real.
AIM_DELEGATED=1.2
AIM_PS=1.5

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $# -le 1 ]] || die "usage: $0 [BUILD_DIR]"
[[ $(id -u) -eq 0 ]] || die "needs root (it mounts the view and makes mount namespaces): sudo $0 ${1:-}"
for tool in unshare nsenter ps mount findmnt; do
	command -v "$tool" >/dev/null || die "needs $tool"
done
# Absolute paths: entering a mount namespace moves to its root directory.
DAEMON=$(realpath -e "$BUILD_DIR/daemon/cgprocfs" 2>/dev/null) ||
	die "no daemon at $BUILD_DIR/daemon/cgprocfs: build first (ninja -C $BUILD_DIR)"
LATENCY=$(realpath -e "$BUILD_DIR/tests/bench/cgprocfs-bench-latency" 2>/dev/null) ||
	die "no $BUILD_DIR/tests/bench/cgprocfs-bench-latency: build first (ninja -C $BUILD_DIR)"

WORK=$(mktemp -d -t cgprocfs-bench.XXXXXX)
MNT=$WORK/mnt
DAEMON_LOG=${BENCH_DAEMON_LOG:-$WORK/daemon.log}
daemon_pid='' idle_pid='' view_ns_pid='' real_ns_pid=''

is_mounted() { findmnt -rn -o TARGET | grep -qxF "$MNT"; }

stop_pid() { # pid: SIGTERM it (if ours and alive) and reap it
	[[ -n $1 ]] || return 0
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

cleanup() {
	local status=$?
	trap - EXIT INT TERM HUP
	trap '' PIPE # a closed output must not stop the cleanup half-way
	# The namespaces hold binds of the view: drop them before the daemon
	# unmounts, or its teardown waits for them.
	stop_pid "$view_ns_pid"
	stop_pid "$real_ns_pid"
	stop_pid "$idle_pid"
	if [[ -n $daemon_pid ]]; then stop_daemon daemon "$daemon_pid" || status=1; fi
	if is_mounted; then
		echo "bench-view: $MNT still mounted after the daemon stopped; unmounting it" >&2
		umount -l "$MNT" 2>/dev/null || true
		status=1
	fi
	if [[ $status -ne 0 && -s $DAEMON_LOG && $DAEMON_LOG == "$WORK"/* ]]; then
		echo "bench-view: daemon log:" >&2
		sed 's/^/  /' "$DAEMON_LOG" >&2
	fi
	# No rm -r: never walk into the view if it were still mounted.
	rm -f "$WORK"/daemon.log "$WORK"/ps-samples.txt
	if is_mounted || ! rmdir "$MNT" "$WORK" 2>/dev/null; then
		echo "bench-view: left $WORK behind" >&2
	fi
	exit "$status"
}
trap cleanup EXIT
exit_on_signals

# --- the daemon -----------------------------------------------------------
mkdir "$MNT"
"$DAEMON" "${DAEMON_ARGS[@]}" "$MNT" 2>"$DAEMON_LOG" &
daemon_pid=$!
for _ in $(seq 100); do
	[[ -e $MNT/proc/.real/self ]] && break
	kill -0 "$daemon_pid" 2>/dev/null || { wait "$daemon_pid" || true; daemon_pid=; die "daemon exited at start-up"; }
	sleep 0.1
done
[[ -e $MNT/proc/.real/self ]] || die "daemon not ready after 10 s ($MNT/proc/.real/self missing)"

# --- the idle process and the two namespaces ------------------------------
sleep infinity &
idle_pid=$!
# unshare and bash exec, so $! is the process that holds each namespace.
# shellcheck disable=SC2016 # $1 is for the inner bash
unshare --mount --propagation private \
	bash -c 'mount --rbind "$1/proc" /proc && exec sleep infinity' bench-view-ns "$MNT" &
view_ns_pid=$!
unshare --mount --propagation private sleep infinity &
real_ns_pid=$!
in_view() { nsenter --mount="/proc/$view_ns_pid/ns/mnt" -- "$@"; }
in_real() { nsenter --mount="/proc/$real_ns_pid/ns/mnt" -- "$@"; }
# The type of the mount on top at /proc (findmnt lists the stack, bottom first).
proc_fstype() { "$1" findmnt -n -o FSTYPE --mountpoint /proc | tail -n 1; }
for _ in $(seq 100); do
	kill -0 "$view_ns_pid" 2>/dev/null || die "could not bind the view over /proc in a new mount namespace"
	[[ $(proc_fstype in_view 2>/dev/null) == fuse.cgprocfs ]] &&
		in_view test -e /proc/.real/self && break
	sleep 0.1
done
[[ $(proc_fstype in_view) == fuse.cgprocfs ]] || die "the view is not at /proc in the view namespace"
[[ $(proc_fstype in_real) == proc ]] || die "/proc is not a procfs in the real namespace"
in_view test -r "/proc/$idle_pid/smaps_rollup" || die "cannot read /proc/$idle_pid/smaps_rollup through the view"

echo "cgprocfs view benchmark: $(nproc) CPUs, kernel $(uname -r), $(find /proc -maxdepth 1 -name '[0-9]*' | wc -l) processes"
echo "daemon: $DAEMON${DAEMON_ARGS[*]:+ ${DAEMON_ARGS[*]}}; idle process: pid $idle_pid (sleep)"
echo

# --- 1. open + read + close ------------------------------------------------
echo "== open + read to EOF + close, one process, in the view namespace (µs) =="
echo "   real:X = /proc/.real/..., the real procfs under the view; view:X = /proc/..."
latency_out=$(in_view "$LATENCY" --iterations "$ITERATIONS" --warmup "$WARMUP" \
	"real:status=/proc/.real/$idle_pid/status" "view:status=/proc/$idle_pid/status" \
	"real:smaps=/proc/.real/$idle_pid/smaps_rollup" "view:smaps=/proc/$idle_pid/smaps_rollup" \
	"real:cpuinfo=/proc/.real/cpuinfo" "view:cpuinfo=/proc/cpuinfo" \
	"real:stat=/proc/.real/stat" "view:stat=/proc/stat") || die "latency run failed"
echo "$latency_out"
echo

# --- 2. ps aux --------------------------------------------------------------
echo "== ps aux >/dev/null in the real and in the view namespace, interleaved, $PS_RUNS runs each (µs) =="
echo "   each run: nsenter --mount=NS ps aux, so both arms include the start-up row's cost"
# Warm both arms (the view's dentry cache fills on the first walk).
for _ in 1 2 3; do
	in_real ps aux >/dev/null
	in_view ps aux >/dev/null
done
real_count=$(in_real ps aux --no-headers | wc -l)
view_count=$(in_view ps aux --no-headers | wc -l)
(( view_count + 5 >= real_count && real_count + 5 >= view_count )) ||
	die "ps aux lists $view_count processes through the view and $real_count on the real /proc"

samples=$WORK/ps-samples.txt
: >"$samples"
RANDOM=1 # the same sequence of orders in every run
for ((i = 0; i < PS_RUNS; i++)); do
	# Three arms in a new random order each time, so none always runs
	# right after the same other one. "startup" is the fixed cost alone
	# (nsenter + exec of a trivial program), to subtract if wanted.
	arms=(real view startup)
	for ((k = ${#arms[@]} - 1; k > 0; k--)); do
		j=$((RANDOM % (k + 1)))
		tmp=${arms[k]}
		arms[k]=${arms[j]}
		arms[j]=$tmp
	done
	for arm in "${arms[@]}"; do
		case $arm in
		real) cmd=(in_real ps aux) label=real:ps_aux ;;
		view) cmd=(in_view ps aux) label=view:ps_aux ;;
		startup) cmd=(in_real true) label=startup ;;
		esac
		t0=$EPOCHREALTIME
		"${cmd[@]}" >/dev/null || die "'${cmd[*]}' failed"
		t1=$EPOCHREALTIME
		echo "$label $t0 $t1" >>"$samples"
	done
done
ps_out=$(awk '
	{ us = ($3 - $2) * 1e6; n[$1]++; v[$1, n[$1]] = us; sum[$1] += us }
	function pct(label, q,    k, i, j, t, a) {
		k = n[label]
		for (i = 1; i <= k; i++) a[i] = v[label, i]
		for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
		i = int(q * k + 0.999999); if (i < 1) i = 1; if (i > k) i = k
		return a[i]
	}
	END {
		printf "%-14s %10s %10s %10s %10s %10s  %s\n", "label", "p50_us", "p99_us", "mean_us", "p50_ratio", "p99_ratio", "ratio_vs"
		split("real:ps_aux view:ps_aux startup", order, " ")
		for (o = 1; o <= 3; o++) {
			l = order[o]; p50[l] = pct(l, 0.50); p99[l] = pct(l, 0.99)
			printf "%-14s %10.0f %10.0f %10.0f", l, p50[l], p99[l], sum[l] / n[l]
			if (l == "view:ps_aux")
				printf " %9.2fx %9.2fx  real:ps_aux\n", p50[l] / p50["real:ps_aux"], p99[l] / p99["real:ps_aux"]
			else
				printf " %10s %10s  -\n", "-", "-"
		}
		printf "ps without start-up (p50 - startup p50): real %.0f µs, view %.0f µs, ratio %.2fx\n",
			p50["real:ps_aux"] - p50["startup"], p50["view:ps_aux"] - p50["startup"],
			(p50["view:ps_aux"] - p50["startup"]) / (p50["real:ps_aux"] - p50["startup"])
	}' "$samples")
echo "$ps_out"
echo "($view_count processes listed through the view, $real_count on the real /proc)"
echo

# --- aims ---------------------------------------------------------------------
p50_ratio() { # output label: the p50 ratio column of that row
	awk -v l="$2" '$1 == l { sub(/x$/, "", $5); print $5 }' <<<"$1"
}
aim() { # what ratio limit
	local verdict
	verdict=$(awk -v r="$2" -v a="$3" 'BEGIN { print (r <= a) ? "met" : "NOT met" }')
	printf '  %-34s p50 ratio %5sx (aim <= %sx): %s\n' "$1" "$2" "$3" "$verdict"
}
echo "== aims (view p50 / real p50) =="
aim "delegated read (/proc/<pid>/status)" "$(p50_ratio "$latency_out" view:status)" "$AIM_DELEGATED"
aim "ps aux" "$(p50_ratio "$ps_out" view:ps_aux)" "$AIM_PS"
printf '  %-34s p50 ratio %5sx (no aim; daemon-served)\n' "smaps_rollup of an idle process" \
	"$(p50_ratio "$latency_out" view:smaps)"
