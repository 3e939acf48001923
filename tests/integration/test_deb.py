"""The Debian package: contrib/scripts/build-deb.sh builds it
(dpkg-buildpackage -us -uc -b, the unit suite left to meson here); dpkg -i
installs the daemon, the hook, the runtime wrapper, the hooks.d file, a
unit systemd-analyze accepts and the man pages, and the installed programs
run; dpkg -r and dpkg -P take everything away again.

All of it in a mount namespace of its own where /usr, /etc and /var are
overlays of the machine's with their changes on a tmpfs: the machine
never has the package (its hooks.d file and LXC snippet would reach the
podman and LXC of the suites that run beside this one), and the test can
run beside them."""

import ctypes
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check, check_equal, describe  # noqa: E402

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
UNIT = "/lib/systemd/system/cgprocfs.service"
WANTS = "/etc/systemd/system/multi-user.target.wants/cgprocfs.service"
LXC_HOOK = "/usr/libexec/cgprocfs/cgprocfs-lxc-hook"
LXC_CONF = "/usr/share/lxc/config/common.conf.d/01-cgprocfs.conf"
INSTALLED = ["/usr/sbin/cgprocfs", "/usr/libexec/cgprocfs/cgprocfs-oci-hook", "/usr/bin/cgprocfs-runtime",
             "/usr/share/containers/oci/hooks.d/cgprocfs.json", UNIT,
             "/usr/share/man/man8/cgprocfs.8.gz", "/usr/share/man/man1/cgprocfs-oci-hook.1.gz",
             "/usr/share/man/man1/cgprocfs-runtime.1.gz", LXC_HOOK, LXC_CONF]


def installed():
    rc, out, _ = cgtest.run(["dpkg-query", "-W", "-f", "${Status}", "cgprocfs"])
    return rc == 0 and out.strip() != "" and "not-installed" not in out


def package_files(deb):
    """The regular files and links of the package, as paths."""
    rc, out, err = cgtest.run(["dpkg-deb", "-c", deb])
    check(rc == 0, "dpkg-deb cannot read the package", err)
    return [line.split()[5][1:] for line in out.splitlines() if not line.startswith("d")]


def make_tests(state):
    t, test = cgtest.test_registry()

    @test("build-deb.sh builds the package (dpkg-buildpackage -us -uc -b)")
    def _():
        for tool in ("dpkg-buildpackage", "dh"):
            if not shutil.which(tool):
                raise cgtest.Skip("%s is missing (apt-get install debhelper dpkg-dev)" % tool)
        if installed():
            raise cgtest.Skip("a cgprocfs package is installed on this machine: not touched")
        state["out"] = tempfile.mkdtemp(prefix="cgprocfs-deb-")
        res = cgtest.run([os.path.join(TOP, "contrib", "scripts", "build-deb.sh"), state["out"]],
                         env=dict(os.environ, DEB_BUILD_OPTIONS="nocheck"), timeout=900)
        check(res[0] == 0, "build-deb.sh failed", describe(res)[-4000:])
        debs = [f for f in os.listdir(state["out"]) if f.startswith("cgprocfs_") and f.endswith(".deb")]
        check_equal(len(debs), 1, "packages built")
        state["deb"] = os.path.join(state["out"], debs[0])
        files = package_files(state["deb"])
        for path in INSTALLED:
            check(path in files, "the package lacks %s" % path, files)
        state["files"] = files

    @test("dpkg -i installs it (in the test's namespace, not the machine's): the programs run, systemd-analyze "
          "verifies the unit, man finds the pages")
    def _():
        if "deb" not in state:
            raise cgtest.Skip("no package was built")
        res = cgtest.run(["dpkg", "-i", state["deb"]], timeout=300)
        check(res[0] == 0, "dpkg -i failed", describe(res))
        for path in INSTALLED:
            check(os.path.exists(path), "%s is not installed" % path)
            # ... here only: not in the machine's mount namespace (pid 1's)
            check(not os.path.lexists("/proc/1/root" + path), "%s is installed into the machine" % path)
        rc, out, err = cgtest.run(["/usr/sbin/cgprocfs", "--version"])
        check(rc == 0 and out.startswith("cgprocfs "), "cgprocfs --version", out, err)
        rc, out, err = cgtest.run(["/usr/bin/cgprocfs-runtime", "--version"], env=dict(os.environ, CGPROCFS_RUNTIME="runc"))
        check(rc == 0 and out.startswith("cgprocfs-runtime version ") and "runc version" in out,
              "cgprocfs-runtime --version (then runc's)", out, err)
        rc, out, err = cgtest.run(["/usr/libexec/cgprocfs/cgprocfs-oci-hook", "--help"])
        check(rc == 0 and out.startswith("usage: cgprocfs-oci-hook"), "cgprocfs-oci-hook --help", out, err)
        check(os.access(LXC_HOOK, os.X_OK), "%s is not executable" % LXC_HOOK)
        with open(LXC_CONF) as f:
            conf = f.read()
        check("lxc.hook.mount = %s /var/lib/cgprocfs\n" % LXC_HOOK in conf,
              "%s does not run the installed LXC hook" % LXC_CONF, conf)
        res = cgtest.run(["systemd-analyze", "verify", UNIT])
        check(res[0] == 0 and not res[2].strip(), "systemd-analyze verify " + UNIT, describe(res))
        rc, out, err = cgtest.run(["man", "-w", "cgprocfs", "cgprocfs-oci-hook", "cgprocfs-runtime"])
        check(rc == 0 and len(out.split()) == 3, "man -w finds the three pages", out, err)

    @test("dpkg -r removes the programs; dpkg -P then leaves nothing of the package, the unit's enablement "
          "included")
    def _():
        if "deb" not in state:
            raise cgtest.Skip("no package was built")
        res = cgtest.run(["dpkg", "-r", "cgprocfs"], timeout=300)
        check(res[0] == 0, "dpkg -r failed", describe(res))
        for path in INSTALLED:
            check(not os.path.exists(path), "%s is still there after dpkg -r" % path)
        res = cgtest.run(["dpkg", "-P", "cgprocfs"], timeout=300)
        check(res[0] == 0, "dpkg -P failed", describe(res))
        check(not installed(), "dpkg still knows the package after dpkg -P")
        left = [p for p in state["files"] + [WANTS, "/var/lib/cgprocfs"] if os.path.lexists(p)]
        check_equal(left, [], "left after dpkg -P")

    return t


CLONE_NEWNS = 0x00020000
OVERLAID = ("usr", "etc", "var")


def private_root(top):
    """This process in a mount namespace of its own, with OVERLAID as
    overlays of the machine's whose changes go to a tmpfs at top."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    steps = [["mount", "--make-rprivate", "/"], ["mount", "-t", "tmpfs", "-o", "mode=700", "cgprocfs-deb", top]]
    for d in OVERLAID:
        up, work = os.path.join(top, d), os.path.join(top, d + ".work")
        steps += [["mkdir", up, work], ["mount", "-t", "overlay", "cgprocfs-deb", "-o",
                                         "lowerdir=/%s,upperdir=%s,workdir=%s" % (d, up, work), "/" + d]]
    for argv in steps:
        rc, _, err = cgtest.run(argv)
        if rc != 0:
            return "%s: %s" % (" ".join(argv), err.strip())
    return None


def main():
    cgtest.skip_all_unless_runnable()
    state = {}
    top = tempfile.mkdtemp(prefix="cgprocfs-deb-root-")
    try:
        failed = private_root(top)
        if failed:  # nothing is installed into the machine itself
            print("1..1\nnot ok 1 - /usr, /etc and /var overlaid in a mount namespace of the test's own\n# " + failed)
            sys.exit(1)
        cgtest.run_tests(make_tests(state))
    finally:
        if installed():
            cgtest.run(["dpkg", "-P", "cgprocfs"], timeout=300)
        if "out" in state:
            shutil.rmtree(state["out"], ignore_errors=True)
        # The namespace's mounts go with this process; the directory
        # under them is the machine's.
        cgtest.run(["umount", "-l"] + ["/" + d for d in OVERLAID] + [top])
        os.rmdir(top)


if __name__ == "__main__":
    main()
