"""The clock the cores really run at, measured with a chain of dependent integer adds.

Why this way: the advertised clock (py-cpuinfo's hz_advertised, the "@ 2.10GHz" in the brand)
is the base clock, and cores under load usually run above it (a Zen 4 VM ran near 3.5 GHz with
2.6 advertised). A loop in Python times the interpreter, not the core, and numpy kernels have
no published cycle counts. /proc/cpuinfo "cpu MHz" and sysfs ``scaling_cur_freq`` are
instantaneous readings that, in a VM, are only the TSC frequency (constant) and are often
absent. What does measure the core: a chain of dependent register adds, one cycle each on
every x86-64 core made (``add rax, rdx``: register to register, so no rename-time immediate
folding), run as a few bytes of machine code placed in an executable page and called through
ctypes, which releases the GIL, so one thread per usable CPU loads every core at once.

Linux on x86-64 only; elsewhere, or when the system forbids executable memory, the clock is
None and the probe falls back on the advertised clock, then on the measured GEMM rate.
The scalar clock is the non-AVX clock: Intel parts run AVX-512 and AMX code slower, so on
them it is an upper bound of the vector clock, never a lower one.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

ADDS_PER_ITERATION = 16
ITERATIONS = 500_000  # 8 M cycles: under 3 ms at 3 GHz, shorter than a scheduler slice


def _machine_code(iterations: int) -> bytes:
    """``mov ecx, n; mov edx, 1; xor eax, eax; loop: 16 x add rax, rdx; dec ecx; jnz; ret``.

    Only rax, rcx and rdx are touched: scratch registers in both the System V and the
    Windows x64 calling conventions. The count is built in, so the function takes no arguments.
    """
    body = bytes.fromhex("4801d0") * ADDS_PER_ITERATION + bytes.fromhex("ffc9")  # add; dec ecx
    jump = -(len(body) + 2)  # jnz back to the first add (rel8, from the end of the jnz)
    return (b"\xb9" + iterations.to_bytes(4, "little") + bytes.fromhex("ba01000000 31c0")
            + body + b"\x75" + jump.to_bytes(1, "little", signed=True) + b"\xc3")


def _chain_function(iterations: int) -> Callable[[], None] | None:
    """The add chain as a ctypes function, or None where it cannot run here."""
    import platform

    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64"):
        return None
    try:
        import ctypes
        import mmap

        code = _machine_code(iterations)
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE
                         | mmap.PROT_EXEC)
        page.write(code)
        address = ctypes.addressof(ctypes.c_char.from_buffer(page))
        function = ctypes.CFUNCTYPE(ctypes.c_uint64)(address)
        function.page = page  # type: ignore[attr-defined]  # keep the page mapped while it lives
        return function
    except (OSError, ValueError, AttributeError, ImportError):  # no PROT_EXEC, SELinux execmem
        return None


def _best_seconds(run: Callable[[], object], repeats: int, timer: Callable[[], float]) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = timer()
        run()
        best = min(best, timer() - start)
    return best


def chain_clock_ghz(threads: int, repeats: int = 10, iterations: int = ITERATIONS,
                    timer: Callable[[], float] = time.perf_counter,
                    function: Callable[[], None] | None = None) -> float | None:
    """The best clock, in GHz, seen by ``threads`` threads running the chain at once.

    Each thread runs the chain ``repeats`` times; a run that was preempted, or shared its
    core with another process, only takes longer, so the shortest run of any thread is the
    clock a core ran at while all were busy. (The highest, not the median: the probe wants a
    ceiling, and on a shared machine the median drops with the neighbours' load.)
    None when the chain cannot run here.
    """
    function = function or _chain_function(iterations)
    if function is None:
        return None
    expected = iterations * ADDS_PER_ITERATION
    if function() != expected:  # the code did not do what it says: trust nothing
        return None
    times: list[float] = []
    workers = [threading.Thread(target=lambda: times.append(
        _best_seconds(function, repeats, timer))) for _ in range(max(1, threads))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    seconds = min(times)
    return expected / seconds / 1e9 if seconds > 0 else None
