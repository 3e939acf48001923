"""The served files on a kernel without the splice change of Linux 6.5 and
with pure cgroup v2: the daemon in a user-mode Linux guest (tests/uml/
uml-run, Linux 6.1), read every way by a caller under a cpu.max quota.
Compared with the same reads on this machine's kernel by test_served.py."""

import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
import test_served  # noqa: E402
from cgtest import check, check_equal  # noqa: E402

UML_RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "uml", "uml-run")

# In the guest: the daemon on /tmp/mnt, a cgroup with half a CPU, a
# sleeping process; then READ_WAYS as a caller in that cgroup.
GUEST = r"""
import json, os, subprocess, sys, time
exe, read_ways = sys.argv[1], sys.argv[2]
mnt = "/tmp/mnt"
os.mkdir(mnt)
log = open("/tmp/daemon.log", "w")
daemon = subprocess.Popen([exe, mnt], stdout=log, stderr=log)
for _ in range(200):
    if os.path.exists(mnt + "/proc/.real/self"):
        break
    time.sleep(0.05)
sleeper = subprocess.Popen(["sleep", "60"])
cg = "/sys/fs/cgroup/half"
os.mkdir(cg)
with open(cg + "/cpu.max", "w") as f:
    f.write("50000 100000")
files = ["proc/cpuinfo", "proc/stat", "sys/devices/system/cpu/online", "sys/devices/system/cpu/kernel_max",
         "sys/devices/system/cpu/cpu0/topology/core_siblings_list", "proc/%d/smaps_rollup" % sleeper.pid]
def join():
    with open(cg + "/cgroup.procs", "w") as f:
        f.write("0")
out = subprocess.run([sys.executable, "-c", read_ways, mnt] + files, preexec_fn=join,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
sleeper.kill()
daemon.terminate()
daemon.wait()
print(json.dumps({"kernel": os.uname().release, "rc": out.returncode, "err": out.stderr[-2000:],
                  "reads": json.loads(out.stdout) if out.returncode == 0 else None,
                  "log": open("/tmp/daemon.log").read()[-2000:]}))
"""


def main():
    cgtest.skip_all_unless_runnable()
    if shutil.which("linux.uml") is None:
        print("1..0 # SKIP user-mode-linux is not installed (apt-get install user-mode-linux)")
        return
    # The guest mounts empty tmpfs over /tmp, /run and /var/tmp: the daemon
    # it runs is a copy outside them.
    cache = "/var/cache/cgprocfs-uml"
    os.makedirs(cache, exist_ok=True)
    exe = os.path.join(cache, "cgprocfs-%d" % os.getpid())
    shutil.copy2(os.environ["CGPROCFS"], exe)
    try:
        run(exe)
    finally:
        os.unlink(exe)


def run(exe):
    t, test = cgtest.test_registry()
    state = {}

    @test("a user-mode Linux guest (Linux 6.1, cgroup v2) runs the daemon and a caller under cpu.max reads "
          "its files")
    def _():
        res = cgtest.run([UML_RUN, "--", "/usr/bin/python3", "-c", GUEST, exe, test_served.READ_WAYS], timeout=600)
        out = cgtest.check_ran(res, "the guest")
        got = json.loads(out.strip().splitlines()[-1])
        check_equal(got["rc"], 0, "the reader in the guest (stderr: %s; daemon log: %s)" % (got["err"], got["log"]))
        cgtest.diag("guest kernel %s" % got["kernel"])
        state.update(got["reads"])

    @test("in the guest every way of reading (read in any chunk, pread, sendfile, busybox cat, dd bs=1) gives "
          "one text for cpuinfo, stat, online, the mirror's kernel_max, a virtual CPU's file and smaps_rollup")
    def _():
        check(state, "the guest gave no reads")
        for name, r in state.items():
            test_served.check_ways("in the guest", name, r)
        check_equal(state["proc/cpuinfo"]["processors"], 1, "processors in the guest's cpuinfo")
        for name in ("proc/cpuinfo", "sys/devices/system/cpu/kernel_max",
                     "sys/devices/system/cpu/cpu0/topology/core_siblings_list"):
            check_equal(state[name]["size"], state[name]["len"], "st_size of " + name)

    cgtest.run_tests(t)


if __name__ == "__main__":
    main()
