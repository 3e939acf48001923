#!/bin/bash
# What finding a caller's scope (fs/scope.h) costs the daemon: its openat,
# readlinkat and newfstatat calls (strace), per new process under a
# 1.5-CPU quota that reads stat, meminfo, loadavg, uptime and diskstats
# once each through the host view, as `top` or a monitoring agent does.
# Needs root, cgroup v1's cpu hierarchy and strace.
#
#   sudo tests/bench/bench-scope-reads.sh [BUILD_DIR] [PROCESSES]   (default: build, 50)
set -eu
exe=$(cd "${1:-build}" && pwd)/daemon/cgprocfs
n=${2:-50}
mnt=$(mktemp -d /tmp/cgprocfs-bench-XXXX)
log=$(mktemp)
cg=/sys/fs/cgroup/cpu/cgprocfs-bench-$$
"$exe" "$mnt" 2>/dev/null &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rmdir $cg $mnt 2>/dev/null; rm -f $log' EXIT
for _ in $(seq 100); do [ -e "$mnt/proc/.real/self" ] && break; sleep 0.05; done
mkdir $cg && echo 150000 >$cg/cpu.cfs_quota_us
strace -f -qq -e trace=openat,readlinkat,newfstatat -p $daemon -o "$log" &
tracer=$!
sleep 1
sh -c "echo \$\$ >$cg/cgroup.procs; for i in \$(seq $n); do
	cat $mnt/proc/stat $mnt/proc/meminfo $mnt/proc/loadavg $mnt/proc/uptime $mnt/proc/diskstats >/dev/null; done"
sleep 0.5
kill $tracer
wait $tracer 2>/dev/null || true
per() { awk -v n="$n" -v c="$1" 'BEGIN { printf "%.1f", c / n }'; }
echo "per reading process: $(per "$(grep -c '/cgroup"' "$log")") reads of <tid>/cgroup," \
	"$(per "$(grep -c 'ns/cgroup' "$log")") of <tid>/ns/cgroup," \
	"$(per "$(grep -Ec 'cfs_quota_us|memory.limit_in_bytes|cpuset.(effective_)?cpus' "$log")") of limit files," \
	"$(per "$(wc -l <"$log")") such calls in all"
