"""One child process timed for the benchmarks: its wall time, its own peak memory and CPU time
(from ``os.wait4``, so one child's peak never hides another's), its exit status and its
output.

Linux starts a child's peak at the parent's when it execs (the kernel carries the old memory's
high-water mark over), so the parent must stay small: a child's output that the caller does
not need is never read (``keep_output=False``; a 100,000-layer report's JSON is 370 MB, and
once read it became every later child's "peak")."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple


class ChildRun(NamedTuple):
    wall_s: float
    peak_mib: float
    code: int
    stdout: str
    stderr: str
    cpu_s: float = 0.0  # the child's own user + system time (less swayed by a shared machine)


def run_child(cmd: list[str], timeout_s: float, env: dict[str, str] | None = None,
              keep_output: bool = True) -> ChildRun:
    """Run ``cmd`` (killed after ``timeout_s``) and say what it took; its stdout is read back
    only with ``keep_output`` (else it is empty)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, text=True)
        deadline = start + timeout_s
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.01)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read() if keep_output else "", err.read()
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    return ChildRun(wall, usage.ru_maxrss * scale / 2**20, child.returncode, stdout, stderr,
                    usage.ru_utime + usage.ru_stime)


def best_of(cmd: list[str], repeat: int, timeout_s: float,
            env: dict[str, str] | None = None) -> str:
    """``cmd`` run ``repeat`` times (output not read) and its figures as a line's tail: the best
    wall time, the spread (the worst over the best), the best run's peak memory and exit."""
    runs = [run_child(cmd, timeout_s, env, keep_output=False) for _ in range(repeat)]
    wall, rss, code = min(run[:3] for run in runs)
    worst = max(r[0] for r in runs)
    return f"best {wall:6.2f} s  spread {worst / wall:5.2f}x  peak {rss:6.0f} MiB  exit {code}"
