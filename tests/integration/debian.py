"""The Debian 12 base the Docker and LXC suites build on: one tar of a
debootstrap minbase with the packages contrib/Containerfile installs (the
DaemonSet's image, test_docker) and those the LXC system container needs
(systemd as init, test_lxc), so that one debootstrap serves both. Kept in
CACHE, keyed on the release, the package list and debootstrap's version,
and made again after CACHE_DAYS."""

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import time

import cgtest
from cgtest import check, describe

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONTAINERFILE = os.path.join(SOURCE, "contrib", "Containerfile")
RELEASE = "bookworm"
CACHE = "/var/cache/cgprocfs-tests"
CACHE_DAYS = 7
# systemd as the init of an LXC container: dbus for systemd-run --wait
# --pipe, libpam-systemd for a logind session of su -l; procps, psutil and
# util-linux for what the test runs there.
SYSTEM_PACKAGES = ["dbus", "libpam-systemd", "procps", "python3-psutil", "systemd", "systemd-sysv", "util-linux"]


def containerfile_packages():
    """The packages contrib/Containerfile's apt-get install lines name."""
    with open(CONTAINERFILE) as f:
        text = f.read().replace("\\\n", " ")
    found = set()
    for m in re.finditer(r"apt-get install ([^&\n]*)", text):
        found |= {w for w in m.group(1).split() if not w.startswith("-")}
    return sorted(found)


def base_tar(work):
    """The base's tar: the one in CACHE if it was made from the same inputs
    within CACHE_DAYS, or one made now in work with debootstrap (and kept
    there). One test makes it at a time (test_lxc and test_docker may run
    side by side): the other waits for it."""
    version = cgtest.run(["dpkg-query", "-W", "-f", "${Version}", "debootstrap"])[1].strip()
    packages = sorted(set(containerfile_packages()) | set(SYSTEM_PACKAGES))
    key = hashlib.sha256(json.dumps([RELEASE, "minbase", version, packages]).encode()).hexdigest()[:16]
    tar = os.path.join(CACHE, "debian-%s-%s.tar" % (RELEASE, key))
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with contextlib.suppress(OSError):
            if time.time() - os.stat(tar).st_mtime < CACHE_DAYS * 86400:
                cgtest.diag("the Debian base from %s (made %.1f h ago)"
                            % (tar, (time.time() - os.stat(tar).st_mtime) / 3600))
                return tar
        root = os.path.join(work, "debian")
        res = cgtest.run(["debootstrap", "--variant=minbase", "--include=" + ",".join(packages), RELEASE, root],
                         timeout=900)
        check(res[0] == 0, "debootstrap (it needs Debian's mirror, as apt-get does)", describe(res))
        res = cgtest.run(["tar", "-C", root, "-cf", tar + ".part", "."], timeout=300)
        shutil.rmtree(root)
        check(res[0] == 0, "tar of the Debian base", describe(res))
        os.replace(tar + ".part", tar)
        return tar
