# Shell helpers shared by the benchmark scripts; sourced, not run.

die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

# stop_daemon NAME PID: SIGTERM it, give it 10 s to unmount, then SIGKILL.
# Returns 1 if it had to be killed. Messages name the calling script.
stop_daemon() {
	kill -0 "$2" 2>/dev/null || { wait "$2" 2>/dev/null || true; return 0; }
	kill -TERM "$2" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$2" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$2" 2>/dev/null; then
		echo "${0##*/}: $1 did not stop on SIGTERM within 10 s; killing it" >&2
		kill -KILL "$2" 2>/dev/null || true
		wait "$2" 2>/dev/null || true
		return 1
	fi
	wait "$2" 2>/dev/null || true
}

# Exit on the signals a benchmark can get, so that its EXIT trap cleans up.
exit_on_signals() {
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	trap 'exit 141' PIPE
}
