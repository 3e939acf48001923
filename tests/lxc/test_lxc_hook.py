"""contrib/lxc/cgprocfs-lxc-hook on a made-up view (a directory with the
daemon's control file and served files) and a made-up container rootfs,
run as LXC runs it: in a mount namespace of its own, LXC_ROOTFS_MOUNT set.
The rootfs is the image's: a target that is a link (or is below one) must
not be followed, or the bind lands where the image points. TAP; argv: HOOK."""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tap  # noqa: E402


def put(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    hook = sys.argv[1]
    tests, test = tap.registry()

    @test("the hook binds the view's files over the rootfs's, and follows no link of the image's: a target that "
          "is a link, or is below one, keeps what it points to")
    def _():
        if os.geteuid() != 0:
            return "skip", "needs root (the hook mounts, in a mount namespace of its own)"
        with tempfile.TemporaryDirectory(prefix="cgprocfs-lxc-hook-") as top:
            mnt, root = os.path.join(top, "view"), os.path.join(top, "rootfs")
            put(os.path.join(mnt, ".cgprocfs", "control"), "")
            for name in ("uptime", "meminfo", "stat"):
                put(os.path.join(mnt, "proc", name), "served %s\n" % name)
            put(os.path.join(mnt, "sys", "devices", "system", "cpu", "online"), "served online\n")
            put(os.path.join(root, "proc", "uptime"), "kernel uptime\n")  # a plain target: bound
            put(os.path.join(root, "victim"), "victim\n")
            os.symlink("../victim", os.path.join(root, "proc", "meminfo"))  # a link: not followed
            put(os.path.join(root, "elsewhere", "stat"), "elsewhere stat\n")
            os.makedirs(os.path.join(root, "sys", "devices", "system"))
            os.symlink("../../../elsewhere", os.path.join(root, "sys", "devices", "system", "cpu"))  # below a link
            script = ('"$1" "$2"; for f in proc/uptime victim elsewhere/stat; do printf "%s=" "$f"; '
                      'cat "$3/$f"; done')
            res = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", hook,
                                  mnt, root], env=dict(os.environ, LXC_ROOTFS_MOUNT=root, LXC_NAME="t"),
                                 capture_output=True, text=True, timeout=60)
            seen = dict(line.split("=", 1) for line in res.stdout.splitlines() if "=" in line)
            want = {"proc/uptime": "served uptime", "victim": "victim", "elsewhere/stat": "elsewhere stat"}
            ok = res.returncode == 0 and seen == want
            return ok, "exit %d; read %s, want %s; stderr: %s" % (res.returncode, seen, want, res.stderr.strip())

    return tap.run(tests)


if __name__ == "__main__":
    sys.exit(main())
