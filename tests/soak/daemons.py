"""The soak's daemon events: --replace and SIGKILL, plain, and with a
process killed at each step of the handover and of a takeover from the
keeper (CGPROCFS_FAULT, daemon/faults.h). After each, a daemon serves the
views, taken over from the one before or from a keeper: the survivor, or
one started again as systemd would.

One round of events, in this order (each kind of fault once):
- replace, kill (plain);
- replace and kill with the new daemon killed at each take-* step;
- replace with the old daemon killed at each give-* step (it was started
  by a plain replace just before, with the fault in its environment);
- kill with the keeper killed once it sent everything (keeper:give-end).
"""

import contextlib
import os
import re
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import cgtest  # noqa: E402

GIVE = ("give-paused", "give-sent", "give-end", "give-served")
TAKE = ("take-asked", "take-received", "take-host", "take-resumed", "take-serving")
ROUND = ([("replace", None), ("kill", None)]
         + [("replace", "daemon:" + s) for s in TAKE]
         + [("kill", "daemon:" + s) for s in TAKE]
         + [("give", "daemon:" + s) for s in GIVE]
         + [("keeper", "keeper:give-end")])
SETTLE_TIMEOUT = 75.0  # a giver waits up to 60 s for "serving"
FIRED = re.compile(r"fault injected: the (\w+) SIGKILLs itself at ([\w-]+)")


def alive(d):
    return d.process is not None and d.process.poll() is None


class Daemons:
    """The daemons of one mountpoint, through the soak's events.
    .current: the one serving (a cgtest.Daemon); .all: every one started;
    fail(what): how a problem is reported."""

    def __init__(self, first, fail):
        self.current = first
        self.all = [first]
        self.fail = fail
        self.done = 0  # events so far

    def start(self, fault=None, replace=False, wait=False):
        d = cgtest.Daemon(mountpoint=self.current.mnt, args=["--replace"] if replace else [],
                          prefix=["env", "CGPROCFS_FAULT=" + fault] if fault else [])
        self.all.append(d)
        return d.start(wait=wait)

    def log(self):
        return "".join(d.log() for d in self.all)

    def fired(self):
        """{"daemon:take-host": n, ...}: the faults that fired."""
        counts = {}
        for role, point in FIRED.findall(self.log()):
            counts[role + ":" + point] = counts.get(role + ":" + point, 0) + 1
        return counts

    def event(self):
        """The next event of the round; what it was, for the report."""
        kind, fault = ROUND[self.done % len(ROUND)]
        self.done += 1
        if kind == "replace":
            self.replace(fault)
        elif kind == "kill":
            self.kill(fault)
        elif kind == "give":  # the old daemon of the second replace dies
            self.replace(None, env=fault)
            self.replace(None)
        else:  # the keeper of the daemon started by the replace dies
            self.replace(None, env=fault)
            self.kill(None)
        return kind + (" " + fault if fault else "")

    def replace(self, fault, env=None):
        old = self.current
        mark = len(old.log())
        new = self.start(fault or env, replace=True, wait=not fault)
        self.settle(old, new, mark, fault)

    def kill(self, fault):
        old = self.current
        old.process.send_signal(signal.SIGKILL)
        old.process.wait(cgtest.STOP_TIMEOUT)
        old._stopped = True
        new = self.start(fault, wait=not fault)
        self.settle(None, new, 0, fault)

    def settle(self, old, new, mark, fault):
        """Wait until the event is over: the new daemon took over (and the
        old one exited 0, or died of its fault), or the new one died (or
        gave up, refused) and the old one serves on, or neither is left and
        one started again takes the views over from the keeper."""
        def over():
            if alive(new) and "took over" in new.log():
                return old is None or not alive(old)
            # A handover the old one refused (a request it answered took
            # 10 s) is a failed upgrade, not an outage: it serves on.
            serves_on = old is not None and re.search("serves on|was refused", old.log()[mark:])
            return not alive(new) and (old is None or not alive(old) or serves_on)
        if not cgtest.wait_until(over, timeout=SETTLE_TIMEOUT, step=0.05):
            self.fail("the daemons did not settle %.0f s after %s" % (SETTLE_TIMEOUT, fault or "a plain event"))
            return
        for d in (old, new):
            if d is not None and not alive(d):
                d._stopped = True
                rc = d.process.returncode
                if rc != 0 and not (rc == -signal.SIGKILL and "fault injected" in d.log()):
                    self.fail("a daemon exited with status %s (%s)" % (rc, fault or "a plain event"))
        if alive(new):
            self.current = new
        elif old is not None and alive(old):
            self.current = old
        else:
            self.current = self.start(wait=True)
            if not cgtest.wait_until(lambda: "keeper of a daemon that died" in self.current.log(), timeout=10):
                self.fail("the daemon started again after %s did not take the views from a keeper" % fault)

    def stop(self):
        """Stop the current daemon; kill any other left (and its keeper).
        The problems."""
        problems = self.current.stop()
        for d in self.all:
            if d is not self.current and alive(d):
                problems.append("a daemon (pid %d) still ran at the end" % d.process.pid)
                d.stop(signal.SIGKILL)
            d._stopped = True
        for k in cgtest.keepers_of(self.current.mnt):
            problems.append("a keeper (pid %d) still ran at the end" % k)
            with contextlib.suppress(ProcessLookupError):
                os.kill(k, signal.SIGKILL)
        return problems
