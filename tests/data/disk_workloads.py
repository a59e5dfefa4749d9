"""User workloads for the full-disk tests: a quick one, and one that fills the file system holding
$GPUPARITY_TEST_FILL while it is prepared (as another program filling the disk mid-run would)."""

import os

from gpuparity.workloads.base import Prepared, Workload


def fill(path: str) -> None:
    """Write zeros to `path` until its file system is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError:
        pass
    finally:
        os.close(fd)


class Small(Workload):
    name = "t_small"
    category = "kernel"
    suites = ()

    def cases(self, suite, ctx):
        return [{"n": 1}]

    def prepare(self, params, ctx):
        return Prepared(fn=lambda: sum(range(100)), work={"items": 1.0})


class Fill(Workload):
    name = "t_fill"
    category = "kernel"
    suites = ()

    def cases(self, suite, ctx):
        return [{"n": 1}]

    def prepare(self, params, ctx):
        fill(os.environ["GPUPARITY_TEST_FILL"])
        return Prepared(fn=lambda: sum(range(100)), work={"items": 1.0})


WORKLOADS = [Small(), Fill()]
