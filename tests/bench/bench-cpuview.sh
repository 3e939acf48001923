#!/usr/bin/env bash
# Latency of the CPU, memory, time and I/O views for a quota- and memory-limited
# caller: cgprocfs against the real files and against LXCFS, in one run.
#
#   tests/bench/bench-cpuview.sh [BUILD_DIR]   (default: build; needs root)
#
# Starts, each on a fresh temporary mountpoint,
#   the daemon from BUILD_DIR   (MNT),
#   lxcfs --enable-cfs -l -p PIDFILE   (LXMNT; LXCFS virtualizes the CPU
#                                    count from CFS quotas only with
#                                    --enable-cfs, and loadavg only with -l),
# and creates a temporary cgroup (cgroup v1) with a CFS quota of
# 50000 µs every 100000 µs, i.e. one CPU. Then, from a process inside that
# cgroup:
#   1. prints how many CPUs proc/cpuinfo, proc/stat and
#      sys/devices/system/cpu/online show in the real files, the view and
#      LXCFS, and stops unless the view shows the one CPU of the quota;
#   2. cgprocfs-bench-latency times open+read+close of the three files
#      through each of them, interleaved in one run, with the ratios
#      view / real (main table) and view / lxcfs (--vs lxcfs).
# Prints the aims at the end. They are reported, not enforced: the exit
# status says only whether the benchmark could run.
#
# The cgroup gets the same name in the cpu, cpuacct and cpuset hierarchies,
# as a container manager does: LXCFS looks the quota up in the cpu
# hierarchy at the caller's *cpuset* path (and the usage in cpuacct at it
# too), so a caller limited in cpu alone would see every CPU through LXCFS.
#
# Environment (all optional):
#   BENCH_ITERATIONS  latency rounds (default 20000)
#   BENCH_WARMUP      unrecorded latency rounds first (default 2000)
#   BENCH_DAEMON_ARGS extra cgprocfs arguments, split on spaces
#                     (e.g. "-d -o debug" to log every FUSE request)
#   BENCH_DAEMON_LOG  keep cgprocfs's stderr in this file
#   BENCH_LXCFS_ARGS  extra lxcfs arguments, split on spaces
#                     (e.g. "-d" to log every FUSE request)
#   BENCH_LXCFS_LOG   keep lxcfs's output in this file
set -euo pipefail

BUILD_DIR=${1:-build}
ITERATIONS=${BENCH_ITERATIONS:-20000}
WARMUP=${BENCH_WARMUP:-2000}
read -r -a DAEMON_ARGS <<<"${BENCH_DAEMON_ARGS:-}"
read -r -a LXCFS_ARGS <<<"${BENCH_LXCFS_ARGS:-}"
# The caller's limit: QUOTA_US of CPU time every PERIOD_US, i.e. one CPU.
QUOTA_US=50000
PERIOD_US=100000
# ... and MEMORY_LIMIT bytes of memory.
MEMORY_LIMIT=$((256 << 20))
CGROUP_ROOT=/sys/fs/cgroup
# Aims from the issue: p50 ratios.
AIM_VS_LXCFS=0.25
AIM_VS_REAL=4
# The rows: name, path under / (real), under MNT (view) and LXMNT (lxcfs).
FILES=(cpuinfo stat online meminfo uptime loadavg diskstats)
declare -A FILE_PATH=(
	[cpuinfo]=proc/cpuinfo
	[stat]=proc/stat
	[online]=sys/devices/system/cpu/online
	[meminfo]=proc/meminfo
	[uptime]=proc/uptime
	[loadavg]=proc/loadavg
	[diskstats]=proc/diskstats
)

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $# -le 1 ]] || die "usage: $0 [BUILD_DIR]"
[[ $(id -u) -eq 0 ]] || die "needs root (it mounts two filesystems and creates cgroups): sudo $0 ${1:-}"
for tool in lxcfs findmnt stat realpath; do
	command -v "$tool" >/dev/null || die "needs $tool"
done
DAEMON=$(realpath -e "$BUILD_DIR/daemon/cgprocfs" 2>/dev/null) ||
	die "no daemon at $BUILD_DIR/daemon/cgprocfs: build first (ninja -C $BUILD_DIR)"
LATENCY=$(realpath -e "$BUILD_DIR/tests/bench/cgprocfs-bench-latency" 2>/dev/null) ||
	die "no $BUILD_DIR/tests/bench/cgprocfs-bench-latency: build first (ninja -C $BUILD_DIR)"
LXCFS=$(command -v lxcfs)

# The v1 hierarchies to make the cgroup in: cpu (for the quota; required),
# and cpuacct and cpuset where they are mounted, for LXCFS (see the top).
# Co-mounted controllers (cpu,cpuacct) are one directory: listed once.
is_v1() { [[ -d $1 && $(stat -f -c %T "$1") == cgroupfs ]]; }
if ! is_v1 "$CGROUP_ROOT/cpu" || [[ ! -f $CGROUP_ROOT/cpu/cpu.cfs_quota_us ]]; then
	die "needs the cgroup v1 cpu controller (with CFS quotas) at $CGROUP_ROOT/cpu"
fi
HIERARCHIES=()
for controller in cpu cpuacct cpuset memory blkio; do
	is_v1 "$CGROUP_ROOT/$controller" || continue
	dir=$(realpath -e "$CGROUP_ROOT/$controller")
	[[ " ${HIERARCHIES[*]} " == *" $dir "* ]] || HIERARCHIES+=("$dir")
done

WORK=$(mktemp -d -t cgprocfs-bench-cpuview.XXXXXX)
MNT=$WORK/view
LXMNT=$WORK/lxcfs
LXCFS_PIDFILE=$WORK/lxcfs.pid
DAEMON_LOG=${BENCH_DAEMON_LOG:-$WORK/daemon.log}
LXCFS_LOG=${BENCH_LXCFS_LOG:-$WORK/lxcfs.log}
CG_NAME=${WORK##*/} # unique while WORK exists
CG_DIRS=()          # the cgroup directories this run made
daemon_pid='' lxcfs_pid='' caller_pid=''

# Mounts at or under WORK, deepest first.
mounts_under_work() { findmnt -rn -o TARGET | awk -v w="$WORK/" 'index($0 "/", w) == 1' | sort -r; }


cleanup() {
	local status=$? target dir
	trap - EXIT INT TERM HUP
	trap '' PIPE # a closed output must not stop the cleanup half-way
	# The process in the cgroup first: it reads from both mounts.
	if [[ -n $caller_pid ]]; then
		kill -TERM "$caller_pid" 2>/dev/null || true
		wait "$caller_pid" 2>/dev/null || true
	fi
	if [[ -n $daemon_pid ]]; then stop_daemon cgprocfs "$daemon_pid" || status=1; fi
	if [[ -n $lxcfs_pid ]]; then stop_daemon lxcfs "$lxcfs_pid" || status=1; fi
	while read -r target; do
		[[ -n $target ]] || continue
		echo "bench-cpuview: $target still mounted after the daemons stopped; unmounting it" >&2
		umount -l "$target" 2>/dev/null || true
		status=1
	done < <(mounts_under_work)
	if [[ $status -ne 0 ]]; then
		for log in "$DAEMON_LOG" "$LXCFS_LOG"; do
			[[ -s $log && $log == "$WORK"/* ]] || continue
			echo "bench-cpuview: ${log##*/}:" >&2
			sed 's/^/  /' "$log" >&2
		done
	fi
	# This shell never joins the cgroup (only the processes it starts do),
	# so once they are gone the directories are empty. A process that has
	# just exited can hold its cgroup for a moment: retry a little.
	for dir in "${CG_DIRS[@]}"; do
		for _ in $(seq 50); do
			rmdir "$dir" 2>/dev/null && break
			sleep 0.1
		done
		if [[ -d $dir ]]; then
			echo "bench-cpuview: could not remove cgroup $dir (processes: $(tr '\n' ' ' <"$dir/cgroup.procs"))" >&2
			status=1
		fi
	done
	# No rm -r: never walk into a mount that would still be there.
	rm -f "$WORK"/daemon.log "$WORK"/lxcfs.log "$WORK"/latency.txt "$LXCFS_PIDFILE"
	if [[ -n $(mounts_under_work) ]] || ! rmdir "$MNT" "$LXMNT" "$WORK" 2>/dev/null; then
		echo "bench-cpuview: left $WORK behind" >&2
	fi
	exit "$status"
}
trap cleanup EXIT
exit_on_signals

# --- the cgroup -------------------------------------------------------------
for hierarchy in "${HIERARCHIES[@]}"; do
	dir=$hierarchy/$CG_NAME
	mkdir "$dir" || die "cannot create cgroup $dir"
	CG_DIRS+=("$dir")
	if [[ -f $dir/cpuset.cpus ]]; then
		# A new cpuset is empty and takes no process: all of its parent's.
		cat "$hierarchy/cpuset.cpus" >"$dir/cpuset.cpus"
		cat "$hierarchy/cpuset.mems" >"$dir/cpuset.mems"
	fi
	if [[ -f $dir/memory.limit_in_bytes ]]; then
		echo "$MEMORY_LIMIT" >"$dir/memory.limit_in_bytes"
	fi
	if [[ -f $dir/cpu.cfs_quota_us ]]; then
		echo "$PERIOD_US" >"$dir/cpu.cfs_period_us"
		echo "$QUOTA_US" >"$dir/cpu.cfs_quota_us"
		CPU_DIR=$dir
	fi
done

# in_cgroup CMD [ARG...]: run CMD as a process in the cgroup (a bash that
# joins every hierarchy's group, then execs CMD; same pid).
in_cgroup() {
	# shellcheck disable=SC2016 # for the inner bash
	bash -c 'n=$1; shift
		for ((i = 0; i < n; i++)); do
			echo $$ >"$1/cgroup.procs" || exit 126
			shift
		done
		exec "$@"' in-cgroup "${#CG_DIRS[@]}" "${CG_DIRS[@]}" "$@"
}

# --- the two daemons --------------------------------------------------------
mkdir "$MNT" "$LXMNT"
"$DAEMON" "${DAEMON_ARGS[@]}" "$MNT" 2>"$DAEMON_LOG" &
daemon_pid=$!
# lxcfs stays in the foreground by default, so $! is lxcfs (checked below
# against its pidfile). No -f: lxcfs refuses -f together with -d.
"$LXCFS" --enable-cfs -l -p "$LXCFS_PIDFILE" "${LXCFS_ARGS[@]}" "$LXMNT" >"$LXCFS_LOG" 2>&1 &
lxcfs_pid=$!
for _ in $(seq 100); do
	[[ -e $MNT/proc/cpuinfo && -e $MNT/sys/devices/system/cpu/online && -e $LXMNT/proc/cpuinfo ]] && break
	kill -0 "$daemon_pid" 2>/dev/null || { wait "$daemon_pid" || true; daemon_pid=; die "cgprocfs exited at start-up"; }
	kill -0 "$lxcfs_pid" 2>/dev/null || { wait "$lxcfs_pid" || true; lxcfs_pid=; die "lxcfs exited at start-up"; }
	sleep 0.1
done
[[ -e $MNT/proc/cpuinfo && -e $MNT/sys/devices/system/cpu/online ]] ||
	die "cgprocfs not ready after 10 s ($MNT/proc/cpuinfo missing)"
[[ -e $LXMNT/proc/cpuinfo ]] || die "lxcfs not ready after 10 s ($LXMNT/proc/cpuinfo missing)"
[[ $(cat "$LXCFS_PIDFILE" 2>/dev/null) == "$lxcfs_pid" ]] ||
	die "lxcfs's pidfile does not name the process started ($lxcfs_pid): did it fork into the background?"

host_cpus=$(nproc --all)
echo "cgprocfs CPU view benchmark: $(nproc) CPUs online ($host_cpus configured), kernel $(uname -r)"
echo "cgprocfs: $DAEMON${DAEMON_ARGS[*]:+ ${DAEMON_ARGS[*]}}"
echo "lxcfs:    $LXCFS $("$LXCFS" --version 2>&1 | tr -d '"') --enable-cfs -l${LXCFS_ARGS[*]:+ ${LXCFS_ARGS[*]}}"
echo "caller:   in cgroup $CG_NAME, CFS quota $QUOTA_US µs per $PERIOD_US µs, memory limit $((MEMORY_LIMIT >> 20)) MiB"
in_cgroup cat /proc/self/cgroup | grep -F ":/$CG_NAME" | sed 's/^/          /' ||
	die "a process could not join cgroup $CG_NAME"
echo

# --- 1. CPU counts -----------------------------------------------------------
# cpus_shown KIND PATH: how many CPUs PATH shows to a process in the cgroup.
cpus_shown() {
	local content
	content=$(in_cgroup cat "$2") || die "cannot read $2 from a process in the cgroup"
	case $1 in
	cpuinfo) grep -c '^processor' <<<"$content" || true ;;
	stat) grep -c '^cpu[0-9]' <<<"$content" || true ;;
	online) # a list of ranges: 0-3,5,7-8
		awk -F, '{ for (i = 1; i <= NF; i++) { n = split($i, r, "-"); c += n == 2 ? r[2] - r[1] + 1 : 1 } }
			END { print c + 0 }' <<<"$content" ;;
	meminfo) # not CPUs: MemTotal, in MiB
		awk '$1 == "MemTotal:" { print int($2 / 1024) }' <<<"$content" ;;
	uptime) # not CPUs: minutes up (the caller is of the host's pid namespace)
		awk '{ print int($1 / 60) }' <<<"$content" ;;
	loadavg) # not CPUs: the threads counted (the cgroup's: the reader alone)
		awk '{ split($4, t, "/"); print t[2] }' <<<"$content" ;;
	diskstats) # not CPUs: the disks listed
		grep -c . <<<"$content" || true ;;
	esac
}
# What the quota allows: ceil(quota / period), at most the online CPUs.
real_online=$(cpus_shown online /sys/devices/system/cpu/online)
expected=$(((QUOTA_US + PERIOD_US - 1) / PERIOD_US))
((expected <= real_online)) || expected=$real_online

echo "== CPUs shown to a process in the cgroup (the quota allows $expected; meminfo: MemTotal in MiB," \
	"the limit is $((MEMORY_LIMIT >> 20)); uptime: minutes, the host's; loadavg: threads, the cgroup's;" \
	"diskstats: disks listed) =="
printf '  %-8s %6s %6s %6s\n' file real view lxcfs
view_wrong='' lxcfs_differs=''
for f in "${FILES[@]}"; do
	real=$(cpus_shown "$f" "/${FILE_PATH[$f]}")
	view=$(cpus_shown "$f" "$MNT/${FILE_PATH[$f]}")
	lx=$(cpus_shown "$f" "$LXMNT/${FILE_PATH[$f]}")
	printf '  %-8s %6s %6s %6s\n' "$f" "$real" "$view" "$lx"
	if [[ $f == uptime ]]; then
		[[ $view == "$real" ]] || view_wrong+=" $f ($view min)"
	elif [[ $f == loadavg ]]; then
		((view < real)) || view_wrong+=" $f ($view threads)"
	elif [[ $f == diskstats ]]; then
		((view > 0)) || view_wrong+=" $f (no disk)"
	elif [[ $f == meminfo ]]; then
		[[ $view == $((MEMORY_LIMIT >> 20)) ]] || view_wrong+=" $f ($view MiB)"
	else
		[[ $real == "$real_online" ]] ||
			echo "bench-cpuview: warning: the real $f shows $real CPUs, $real_online are online" >&2
		[[ $view == "$expected" ]] || view_wrong+=" $f ($view)"
	fi
	[[ $lx == "$view" ]] || lxcfs_differs+=" $f ($lx)"
done
[[ -z $view_wrong ]] ||
	die "the view does not show the caller's $expected CPU(s) in:$view_wrong; not timing a wrong answer"
if [[ -n $lxcfs_differs ]]; then
	echo "  lxcfs disagrees with the view in:$lxcfs_differs"
else
	echo "  the view and lxcfs agree"
fi
echo

# --- 2. open + read + close ----------------------------------------------------
paths=()
for f in "${FILES[@]}"; do
	paths+=("real:$f=/${FILE_PATH[$f]}" "view:$f=$MNT/${FILE_PATH[$f]}" "lxcfs:$f=$LXMNT/${FILE_PATH[$f]}")
done
throttled() { awk '$1 == "nr_throttled" { n = $2 } $1 == "throttled_time" { t = $2 } END { print n + 0, t + 0 }' "$CPU_DIR/cpu.stat"; }
read -r throttled_n0 throttled_ns0 < <(throttled)

echo "== open + read to EOF + close, from a process in the cgroup (µs) =="
echo "   real:X = /..., view:X = MNT/..., lxcfs:X = LXMNT/... (X: cpuinfo = proc/cpuinfo,"
echo "   stat = proc/stat, online = sys/devices/system/cpu/online, meminfo = proc/meminfo, uptime = proc/uptime,"
echo "   loadavg = proc/loadavg, diskstats = proc/diskstats)"
# In the background and waited for, so that a signal stops it at once
# (the trap runs during wait, and cleanup ends it by its pid).
in_cgroup "$LATENCY" --iterations "$ITERATIONS" --warmup "$WARMUP" --vs lxcfs "${paths[@]}" \
	>"$WORK/latency.txt" &
caller_pid=$!
wait "$caller_pid" || { caller_pid=; die "latency run failed"; }
caller_pid=
latency_out=$(<"$WORK/latency.txt")
echo "$latency_out"
read -r throttled_n1 throttled_ns1 < <(throttled)
# A throttled sample waits for the next period: tens of ms, in the mean
# and the max of its row, rarely in p99.
echo "(the caller was throttled by its quota $((throttled_n1 - throttled_n0)) times," \
	"$(((throttled_ns1 - throttled_ns0) / 1000000)) ms in all)"
echo

# --- aims ------------------------------------------------------------------------
ratio_vs_real() { # label: p50 ratio of the row in the main table (over real:X)
	awk -v l="$1" '/^ratios vs / { exit } $1 == l { sub(/x$/, "", $5); print $5; exit }' <<<"$latency_out"
}
ratio_vs_lxcfs() { # label: p50 ratio of the row in the "ratios vs lxcfs" table
	awk -v l="$1" '/^ratios vs lxcfs:/ { t = 1; next } t && $1 == l { sub(/x$/, "", $2); print $2; exit }' \
		<<<"$latency_out"
}
aim() { # what ratio limit
	local verdict
	verdict=$(awk -v r="$2" -v a="$3" 'BEGIN { print (r != "" && r <= a) ? "met" : "NOT met" }')
	printf '  %-44s p50 ratio %5sx (aim <= %sx): %s\n' "$1" "$2" "$3" "$verdict"
}
echo "== aims (p50 of the view over p50 of LXCFS, and over p50 of the real file) =="
for f in "${FILES[@]}"; do
	aim "${FILE_PATH[$f]}, view / lxcfs" "$(ratio_vs_lxcfs "view:$f")" "$AIM_VS_LXCFS"
	aim "${FILE_PATH[$f]}, view / real" "$(ratio_vs_real "view:$f")" "$AIM_VS_REAL"
done
