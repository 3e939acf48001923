#!/bin/sh
# The soak (soak.py) against the daemon and hook of a build directory.
#
#   sudo tests/soak/run-soak.sh [BUILD_DIR] [soak.py options]   (default: build)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-build}
[ $# -gt 0 ] && shift
CGPROCFS=$(cd "$dir" && pwd)/daemon/cgprocfs
CGPROCFS_OCI_HOOK=$(cd "$dir" && pwd)/contrib/oci/cgprocfs-oci-hook
export CGPROCFS CGPROCFS_OCI_HOOK
exec /usr/bin/python3 "$here/soak.py" "$@"
