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
if findmnt -n -t fuse.cgprocfs --mountpoint "$mnt" >/dev/null 2>&1 && stat -f "$mnt" >/dev/null 2>&1; then
	echo "a cgprocfs already serves $mnt: this one takes over from it (--replace)" >&2
	set -- --replace "$@"
fi
exec ./build/daemon/cgprocfs "$@"
