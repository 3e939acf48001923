#!/usr/bin/env bash
# Fresh Debian 12 to a running cgprocfs: install, build, serve the view at
# /var/lib/cgprocfs in the foreground (Ctrl-C unmounts and stops). Run again
# while a cgprocfs serves there, it takes over from it (--replace): an
# upgrade that containers and binds of the view do not notice.
set -euo pipefail
cd "$(dirname "$0")/../.."
. contrib/scripts/deps.sh
cgprocfs_install "${cgprocfs_build_deps[@]}"
cgprocfs_build
mnt=/var/lib/cgprocfs
if [ $# -gt 0 ] && [ "${!#:0:1}" != "-" ]; then
	mnt=${!#}
fi
# Served (statfs answers), or held by the keeper of a daemon that died
# (statfs waits): take over. A dead mount (statfs fails) is cleaned up.
if findmnt -n -t fuse.cgprocfs --mountpoint "$mnt" >/dev/null 2>&1; then
	rc=0
	timeout 2 stat -f "$mnt" >/dev/null 2>&1 || rc=$?
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
		echo "a cgprocfs already serves $mnt: this one takes over from it (--replace)" >&2
		set -- --replace "$@"
	fi
fi
exec ./build/daemon/cgprocfs "$@"
