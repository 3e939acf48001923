#!/usr/bin/env bash
# Install what cgprocfs needs to build and to be tested, on Debian 12.
# Sourced by setup-and-run.sh and setup-and-test.sh.
set -euo pipefail

# ccache: meson uses it by itself (and the test command names it for clang),
# so that a machine that built the tree before rebuilds what is unchanged
# from its cache.
cgprocfs_build_deps=(build-essential clang libclang-rt-14-dev meson ninja-build pkg-config ccache
	libfuse3-dev fuse3 libglib2.0-dev libjson-glib-dev libcriterion-dev libsystemd-dev)
# what building the Debian package needs beyond the build (build-deb.sh)
cgprocfs_deb_deps=(debhelper dpkg-dev systemd)
# what the tests run: psutil and its suite for /usr/bin/python3, ps/top/free,
# unshare/nsenter/setpriv, runc, crun and podman with a busybox rootfs for
# the container tests, LXCFS for the side-by-side benchmarks, and
# user-mode-linux for the tests on a real cgroup v2 kernel (tests/uml/uml-run),
# groff to check the man pages, python3-yaml to read the Kubernetes manifests,
# debootstrap for the Debian base the DaemonSet's image and the LXC system
# container are built on, LXC for the LXC hook's tests, and the programs
# that count CPUs through sched_getaffinity (musl's sysconf, Go, Node,
# hwloc; libgomp comes with gcc)
cgprocfs_test_deps=(python3 python3-psutil python3-yaml procps util-linux lxcfs runc crun podman busybox-static
	debootstrap lxc lxc-templates musl-tools golang-go nodejs hwloc-nox
	user-mode-linux groff-base "${cgprocfs_deb_deps[@]}")
# Incus for its test (LXCFS's largest user; incus-base: containers only, no QEMU): Debian 12 has it in
# bookworm-backports only, asked for by name so that nothing else comes from
# there (cgprocfs_install adds that source where the machine has none).
cgprocfs_test_deps+=(incus-base/bookworm-backports)
# Docker and containerd for the runtime wrapper's tests, unless a Docker is
# installed already (docker-ce's packages conflict with Debian's).
command -v dockerd >/dev/null || cgprocfs_test_deps+=(docker.io containerd)

# The bookworm-backports source, once: kept if any apt source names it.
cgprocfs_backports() {
	grep -qrs --include='*.list' --include='*.sources' --include=sources.list '^[^#]*bookworm-backports' /etc/apt/ ||
		echo 'deb http://deb.debian.org/debian bookworm-backports main' >/etc/apt/sources.list.d/bookworm-backports.list
}

cgprocfs_install() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "cgprocfs: run this as root (it installs packages and mounts filesystems)" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	case " $* " in *"/bookworm-backports "*) cgprocfs_backports ;; esac
	apt-get update -q
	apt-get install -y -q --no-install-recommends "$@"
	# lxcfs's package starts its own service at /var/lib/lxcfs; the
	# benchmarks start their own copy, so keep the machine as it was.
	if systemctl is-active --quiet lxcfs 2>/dev/null; then systemctl stop lxcfs || true; fi
}

cgprocfs_build() {
	if [ -f build/build.ninja ]; then
		meson setup --reconfigure build >/dev/null
	else
		meson setup build
	fi
	ninja -C build
}
