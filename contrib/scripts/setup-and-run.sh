#!/usr/bin/env bash
# Fresh Debian 12 to a running cgprocfs: install, build, serve the view at
# /var/lib/cgprocfs in the foreground (Ctrl-C unmounts and stops).
set -euo pipefail
cd "$(dirname "$0")/../.."
. contrib/scripts/deps.sh
cgprocfs_install "${cgprocfs_build_deps[@]}"
cgprocfs_build
exec ./build/daemon/cgprocfs "$@"
