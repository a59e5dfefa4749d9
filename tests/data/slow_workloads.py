"""User workloads for the failure-path tests: one quick, one that fails, one OOM, one that blocks."""

import os
import time

from gpuparity.workloads.base import Prepared, Workload


class Quick(Workload):
    name = "t_quick"
    category = "kernel"
    suites = ()

    def cases(self, suite, ctx):
        return [{"n": 1}]

    def prepare(self, params, ctx):
        return Prepared(fn=lambda: sum(range(100)), work={"items": 1.0})


class Broken(Workload):
    name = "t_broken"
    category = "kernel"
    suites = ()

    def cases(self, suite, ctx):
        return [{"n": 1}]

    def prepare(self, params, ctx):
        raise RuntimeError("kernel launch failed on purpose")


class Oom(Workload):
    name = "t_oom"
    category = "kernel"
    suites = ()

    def cases(self, suite, ctx):
        return [{"size": "huge"}]

    def prepare(self, params, ctx):
        raise MemoryError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 10 TB")


class Wrong(Workload):
    name = "t_wrong"
    category = "kernel"
    suites = ()

    def cases(self, suite, ctx):
        return [{"n": 1}]

    def prepare(self, params, ctx):
        return Prepared(fn=lambda: None, work={"items": 1.0}, check=lambda: (False, "max error 3.0"))


class Blocker(Workload):
    """Signals that it started (a marker file), then works for a long time: each call takes 60 s, so
    the test's Ctrl-C always lands in the middle of it, however slow the machine."""
    name = "t_block"
    category = "kernel"
    suites = ()

    def cases(self, suite, ctx):
        return [{"n": 1}]

    def prepare(self, params, ctx):
        marker = os.environ["GPUPARITY_TEST_MARKER"]
        with open(marker, "w") as fh:
            fh.write("started")
        return Prepared(fn=lambda: time.sleep(60), work={"items": 1.0})


WORKLOADS = [Quick(), Broken(), Oom(), Wrong(), Blocker()]


class Tick(Workload):
    """Ten short cases; each notes in GPUPARITY_TEST_LOG that it started (the signal test counts them)."""
    name = "t_tick"
    category = "kernel"
    suites = ()

    def cases(self, suite, ctx):
        return [{"n": n} for n in range(10)]

    def prepare(self, params, ctx):
        with open(os.environ["GPUPARITY_TEST_LOG"], "a") as fh:
            fh.write(f"start {params['n']}\n")
        return Prepared(fn=lambda: time.sleep(0.002), work={"items": 1.0})


class Segfault(Workload):
    """Dereferences a null pointer in native code: the process dies with SIGSEGV."""
    name = "t_segv"
    category = "kernel"
    suites = ()

    def cases(self, suite, ctx):
        return [{"n": 1}]

    def prepare(self, params, ctx):
        import ctypes

        ctypes.string_at(0)


class Sleeper(Workload):
    """An invocation that never ends in time: the watchdog must fail it (timeout_s from --set)."""
    name = "t_hang"
    category = "kernel"
    suites = ()
    axes = {"seconds": "how long one call sleeps"}

    def cases(self, suite, ctx):
        return [{"seconds": 120}]

    def prepare(self, params, ctx):
        return Prepared(fn=lambda: time.sleep(params["seconds"]), work={"items": 1.0})


WORKLOADS += [Tick(), Segfault(), Sleeper()]


class Fill(Workload):
    """Fills the file system holding $GPUPARITY_TEST_FILL while it is prepared, as another program
    filling the disk mid-run would (the full-disk tests)."""
    name = "t_fill"
    category = "kernel"
    suites = ()

    def cases(self, suite, ctx):
        return [{"n": 1}]

    def prepare(self, params, ctx):
        fd = os.open(os.environ["GPUPARITY_TEST_FILL"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while True:
                os.write(fd, b"\0" * 65536)
        except OSError:         # full
            pass
        finally:
            os.close(fd)
        return Prepared(fn=lambda: sum(range(100)), work={"items": 1.0})


WORKLOADS += [Fill()]
