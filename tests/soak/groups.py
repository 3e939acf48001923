"""The soak's reader cgroups and the limits it changes (soak.py)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import benchlib  # noqa: E402
import cgtest  # noqa: E402
from roles import kib_field, read  # noqa: E402
from test_cpuview import parse_cpu_list  # noqa: E402

class Groups:
    """Three reader cgroups in the cpu, cpuset and memory hierarchies (v1)
    or one v2 directory each, with limits the soak changes, and what a
    reader of each must see. The third, for file-level binds, keeps its
    CPUs: a bind keeps the CPU class it was made in (see the README)."""

    PHASES = (
        # (CFS quota in CPUs or None, cpuset, memory MiB) of each group
        ((2, "0-1", 512), (1, "0-1", 384), (1, "0-1", 320)),
        ((None, "1", 256), (3, "0-1", 192), (1, "0-1", 160)),
    )

    def __init__(self, tag):
        self.v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
        self.online = parse_cpu_list(read("/sys/devices/system/cpu/online"))
        if not {0, 1} <= self.online:
            raise benchlib.BenchError("needs CPUs 0 and 1 online (the limits it sets name them)")
        self.host_kib = kib_field(read("/proc/meminfo"), "MemTotal")
        roots = ["/sys/fs/cgroup"] if self.v2 else ["/sys/fs/cgroup/%s" % c for c in ("cpu", "cpuset", "memory")]
        self.dirs = [[os.path.join(r, "cgprocfs-soak-%s-%d" % (tag, g)) for r in roots] for g in range(3)]
        self.made = []
        for dirs in self.dirs:
            for d in dirs:
                os.mkdir(d)
                self.made.append(d)
            if not self.v2:
                cpuset = next(d for d in dirs if "/cpuset/" in d)
                parent = os.path.dirname(cpuset)
                for f in ("cpuset.mems", "cpuset.cpus"):
                    with open(os.path.join(cpuset, f), "w") as out:
                        out.write(read(os.path.join(parent, f)).strip())
        self.phase = None
        self.set_phase(0)

    def write(self, g, controller, name, value):
        d = self.dirs[g][0] if self.v2 else next(x for x in self.dirs[g] if "/%s/" % controller in x)
        with open(os.path.join(d, name), "w") as f:
            f.write(value)

    def set_phase(self, phase):
        for g, (quota, cpus, mib) in enumerate(self.PHASES[phase]):
            if self.v2:
                self.write(g, "cpu", "cpu.max", "%s 100000" % (quota * 100000 if quota else "max"))
                self.write(g, "memory", "memory.max", str(mib << 20))
                self.write(g, "cpuset", "cpuset.cpus", cpus)
            else:
                self.write(g, "cpu", "cpu.cfs_quota_us", str(quota * 100000 if quota else -1))
                self.write(g, "memory", "memory.limit_in_bytes", str(mib << 20))
                self.write(g, "cpuset", "cpuset.cpus", cpus)
        self.phase = phase

    def expected(self, phase, g):
        """(CPUs, MemTotal kB) a reader of group g sees in phase."""
        quota, cpus, mib = self.PHASES[phase][g]
        n = len(parse_cpu_list(cpus) & self.online)
        if quota:
            n = min(n, quota)
        return max(1, n), min(self.host_kib, mib << 10)

    def move(self, pid, g):
        for d in self.dirs[g]:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(pid))

    def remove(self):
        for d in reversed(self.made):
            cgtest.remove_cgroups([d], os.path.dirname(d))
        return ["cgroup left: %s" % d for d in self.made if os.path.exists(d)]


# ------------------------------------------------------------------ soak --
