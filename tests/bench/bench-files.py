#!/usr/bin/python3
"""Every served file's cost, side by side: the view, LXCFS and the kernel's
own file, in a container and through the host's view, in one run.

    sudo /usr/bin/python3 tests/bench/bench-files.py [--build-dir build] [--rounds 2000] [--cold-rounds 100]

It starts the daemon from the build directory and Debian's LXCFS
(--enable-cfs -l, its own mountpoint and pidfile), each on a temporary
mountpoint, then times open + read to EOF + close from Python, the rounds
interleaved (each round reads every row once through each source):

1. in a runc container with the OCI hook, half a CPU and 256 MiB, whose
   rootfs binds the host's /usr, /etc (..) read-only: the view is /proc,
   the kernel's file /proc/.real, LXCFS's mount bound at /lxcfs;
   and again, cold: --cold-rounds rounds with 10 ms after each read, as
   a monitor reads (nothing stays awake between two reads);
2. through the host's view, for a caller of the host's namespaces in a
   cgroup with the same limits (as a Kubernetes pod with hostPath file
   binds reads it): MNT/proc, LXCFS's mount, /proc.

Every row of the table is a file the daemon serves (the static table's
rows that the running daemon shows, pressure/ included where the host has
it), so that a file added later is measured too; LXCFS's column says "-"
where it serves no such file. Then, for the host's view, the FUSE
requests one open + read + close of each row costs, from
.cgprocfs/stats (cgprocfs_requests_total, the stats file's own read
subtracted). It only reports; the exit status says whether it ran.

Last, the floor row: .cgprocfs/control, a file the daemon answers from
memory with nothing to compute, read past the page cache (OPEN and two
READs) as the files rendered per open are; in the container, the host's
MNT/.cgprocfs is bound at /cgprocfs-meta. The floor of a file the page
cache keeps is cpuinfo's and online's row (OPEN only)."""

import argparse
import contextlib
import importlib.util
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import BenchError  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
QUOTA, PERIOD, MEMORY = 50000, 100000, 256 << 20
REQUEST_ROUNDS = 200
COLD_PAUSE = 0.01
# The floor row: its name in the tables, its path in MNT, and where the
# container sees MNT/.cgprocfs.
FLOOR, FLOOR_PATH, META_IN_CONTAINER = "floor: control", ".cgprocfs/control", "/cgprocfs-meta"

# Run by the readers: argv[1] rounds, argv[2] JSON [[row, {source: path}]],
# argv[3] the pause after each read (s); prints {row: {source: [p50 µs,
# p99 µs]}} (a source whose file cannot be opened is left out of its row).
MEASURE = benchlib.READER_FUNCTIONS + r"""
import json, sys
rounds, rows, pause = int(sys.argv[1]), json.loads(sys.argv[2]), float(sys.argv[3])
todo = []
for row, sources in rows:
    for source, path in sources.items():
        try:
            once(path)
        except OSError:
            continue
        todo.append((row, source, path, []))
for _ in range(rounds):
    for row, source, path, samples in todo:
        samples.append(once(path))
        if pause:
            time.sleep(pause)
out = {}
for row, source, path, samples in todo:
    samples.sort()
    out.setdefault(row, {})[source] = [samples[len(samples) // 2] / 1000, samples[(len(samples) * 99) // 100] / 1000]
print(json.dumps(out))
"""

# Run in the host's view's caller: argv[1] MNT, argv[2] rounds, argv[3]
# JSON {row: path in MNT}; prints {row: requests per open + read + close}.
REQUESTS = benchlib.READER_FUNCTIONS + r"""
import json, sys
mnt, rounds, rows = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
def read(path):
    with open(path, "rb") as f:
        f.read()
own = -requests(mnt) + requests(mnt)  # what reading the stats costs
out = {}
for row, path in rows.items():
    before = requests(mnt)
    for _ in range(rounds):
        read(mnt + "/" + path)
    out[row] = (requests(mnt) - before - own) / rounds
print(__import__("json").dumps(out))
"""


def served_rows(mnt):
    """The served files of the running daemon: proc/'s regular files and
    pressure/'s, as the view lists them."""
    proc = os.path.join(mnt, "proc")
    rows = [n for n in sorted(os.listdir(proc)) if os.path.isfile(os.path.join(proc, n))
            and not os.path.islink(os.path.join(proc, n))]
    if os.path.isdir(os.path.join(proc, "pressure")):
        rows += ["pressure/" + n for n in sorted(os.listdir(os.path.join(proc, "pressure")))]
    return rows + ["../sys/devices/system/cpu/online"]


def sources(rows, view, lxcfs, kernel, meta):
    """MEASURE's rows: each served file through the three, then the floor
    (the view's only), meta being where MNT/.cgprocfs is."""
    return [[row, {"view": os.path.normpath(os.path.join(view, row)),
                   "lxcfs": os.path.normpath(os.path.join(lxcfs, row)),
                   "kernel": os.path.normpath(os.path.join(kernel, row))}] for row in rows] + \
        [[FLOOR, {"view": os.path.join(meta, os.path.basename(FLOOR_PATH))}]]


def containers_module():
    spec = importlib.util.spec_from_file_location("bench_containers", os.path.join(HERE, "bench-containers.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def in_container(bench, lxmnt, rows, rounds, pause=0.0):
    """MEASURE in a runc container with the hook and the limits, LXCFS at /lxcfs."""
    argv = ["/usr/bin/python3", "-c", MEASURE, str(rounds), json.dumps(sources(rows, "/proc", "/lxcfs/proc",
                                                                                "/proc/.real", META_IN_CONTAINER)),
            str(pause)]
    cid, path = bench.bundle(argv, hook=True)
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    config["mounts"].append({"destination": "/lxcfs", "type": "bind", "source": lxmnt, "options": ["rbind", "ro"]})
    config["mounts"].append({"destination": META_IN_CONTAINER, "type": "bind",
                             "source": os.path.join(bench.mnt, os.path.dirname(FLOOR_PATH)), "options": ["bind", "ro"]})
    config["linux"].setdefault("resources", {})["cpu"] = {"quota": QUOTA, "period": PERIOD}
    config["linux"]["resources"]["memory"] = {"limit": MEMORY}
    for d in ("lxcfs", META_IN_CONTAINER.lstrip("/")):
        os.makedirs(os.path.join(bench.rootfs, d), exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f)
    bench.ids.append(cid)
    try:
        r = bench.runc("run", "--bundle", path, cid, timeout=1800)
    finally:
        bench.runc("delete", "-f", cid)
        bench.ids.remove(cid)
    if r.returncode != 0:
        raise BenchError("the container's readers failed:\n" + r.stdout + r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def table(title, got, rows, requests=None):
    print("\n%s: p50 / p99 µs of open + read + close" % title)
    head = "%-22s %15s %15s %15s %12s %12s" % ("file", "view", "LXCFS", "kernel", "view/LXCFS", "view/kernel")
    print(head + ("  requests" if requests else ""))

    def cell(row, src):
        v = got.get(row, {}).get(src)
        return "%6.1f / %6.1f" % tuple(v) if v else "%15s" % "-"

    def ratio(row, a, b):
        x, y = got.get(row, {}).get(a), got.get(row, {}).get(b)
        return "%5.2f / %5.2f" % (x[0] / y[0], x[1] / y[1]) if x and y else "%12s" % "-"
    for row in rows + [FLOOR]:
        name = row.replace("../sys/devices/system/cpu/", "sys/…/cpu/")
        line = "%-22s %s %s %s %s %s" % (name, cell(row, "view"), cell(row, "lxcfs"), cell(row, "kernel"),
                                         ratio(row, "view", "lxcfs"), ratio(row, "view", "kernel"))
        print(line + ("  %8.2f" % requests[row] if requests and row in requests else ""))


class FilesBench:
    def __init__(self, args):
        self.args = args
        self.bench = containers_module().Bench(argparse.Namespace(build_dir=args.build_dir))
        self.lxmnt = os.path.join(self.bench.work, "lxcfs")
        self.lxcfs = self.group = None

    def run(self):
        b, rounds = self.bench, self.args.rounds
        b.start_daemon()
        os.mkdir(self.lxmnt)
        self.lxcfs = benchlib.start_lxcfs(self.lxmnt, os.path.join(b.work, "lxcfs.pid"),
                                          os.path.join(b.work, "lxcfs.log"), ["--enable-cfs", "-l"])
        rows = served_rows(b.mnt)
        os.mkdir(b.rootfs)
        b.build_rootfs()
        inside = in_container(b, self.lxmnt, rows, rounds)
        cold = in_container(b, self.lxmnt, rows, self.args.cold_rounds, COLD_PAUSE) if self.args.cold_rounds else None
        self.group = benchlib.Cgroup("cgprocfs-bench-files-%d" % os.getpid(), QUOTA, PERIOD, MEMORY)
        host = self.group.run([sys.executable, "-c", MEASURE, str(rounds), json.dumps(
            sources(rows, os.path.join(b.mnt, "proc"), os.path.join(self.lxmnt, "proc"), "/proc",
                    os.path.join(b.mnt, os.path.dirname(FLOOR_PATH)))), "0"])
        counted = {r: "proc/" + r for r in rows if not r.startswith("..")}
        counted[FLOOR] = FLOOR_PATH
        requests = self.group.run([sys.executable, "-c", REQUESTS, b.mnt, str(REQUEST_ROUNDS), json.dumps(counted)])
        print("%d rounds; a container with the hook and a host caller, each with half a CPU and 256 MiB" % rounds)
        table("In a runc container with the hook (the kernel's file: /proc/.real)", inside, rows)
        if cold:
            table("The same, cold: %d rounds, each read %.0f ms after the one before (a monitor's pace: idle "
                  "workers and readers wake for each)" % (self.args.cold_rounds, COLD_PAUSE * 1000), cold, rows)
        table("Through the host's view (MNT/proc; the kernel's: /proc); FUSE requests per open + read + close",
              host, rows, requests)

    def cleanup(self):
        if self.group:
            self.group.remove()
        with contextlib.suppress(subprocess.TimeoutExpired):
            benchlib.stop_served(self.lxcfs, self.lxmnt)
        return self.bench.cleanup()

    def daemon_log(self):
        return self.bench.daemon_log()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--cold-rounds", type=int, default=100, help="rounds 10 ms apart in the container (0: none)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        ap.error("needs root (runc, mounts, cgroups)")
    return benchlib.run_bench("bench-files", lambda: FilesBench(args))


if __name__ == "__main__":
    sys.exit(main())
