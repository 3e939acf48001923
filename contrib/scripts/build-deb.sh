#!/usr/bin/env bash
# Build the Debian package from this tree: a copy of the source with
# contrib/debian as its debian/, built by dpkg-buildpackage -us -uc -b
# (-jauto).
#
#   contrib/scripts/build-deb.sh [OUTDIR]   (default: the current directory)
#
# Needs the build dependencies of contrib/debian/control (deps.sh has them:
# cgprocfs_deb_deps) and dpkg-dev.
set -euo pipefail
out=$(realpath -m "${1:-.}")
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap '[ -n "${CGPROCFS_KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
src="$work/cgprocfs"
mkdir -p "$src" "$out"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# What is tracked or new, as it is in the working tree; not build/.
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do { [ -e "$f" ] || [ -L "$f" ]; } && printf '%s\0' "$f"; done |
		xargs -0 cp -P --parents -t "$src"
else
	tar --exclude='./build*' -cf - . | tar -xf - -C "$src"
fi
cp -a contrib/debian "$src/debian"
(cd "$src" && dpkg-buildpackage -us -uc -b -jauto)
mv "$work"/*.deb "$out"/
ls "$out"/cgprocfs_*.deb
