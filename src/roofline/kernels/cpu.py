"""The numpy kernels the probe times: GEMM through numpy's BLAS (``kernels.torch_cpu`` has the
same GEMMs through torch), and STREAM-style bandwidth.

Each kernel is a ``run(loops)`` callable for ``roofline.probe.timing.measure`` plus the work
one call does (FLOPs or bytes), on preallocated arrays, checked once against a reference before
any timing is trusted. numpy is imported inside the functions.

Bandwidth kernels use every usable core: numpy's ufuncs are single-threaded but release the GIL
when given ``out=``, so each thread of a small pool streams its own contiguous share of the
arrays (first-touched by the same thread). Triad works block by block (``b*s`` into ``a``, then
``a += b``) so that the second pass over a block hits the cache and DRAM sees about the traffic
of a fused loop. Bytes are counted as STREAM does: copy 16 B and triad 24 B per element, the
write-allocate read not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..errors import KernelCheckError
from ..units import count

NUMPY_GEMM_DTYPES = {"fp64": "float64", "fp32": "float32"}
TRIAD_SCALAR = 3.0
STREAM_BYTES_PER_ELEMENT = {"copy": 16, "triad": 24}
BLOCK_ELEMENTS = 65536  # 512 KiB per array and block: two blocks stay in a core's L2


@dataclass(frozen=True)
class Kernel:
    """``run(loops)`` repeats one call ``loops`` times; ``work`` is what one call does.
    ``calls``: the operations one call makes (a CUDA graph's replay of several; 1 else), so a
    call's seconds over ``calls`` are one operation's."""

    label: str
    run: Callable[[int], None]
    work: float
    unit: str
    calls: int = 1


def gemm_kernel(n: int, dtype: str, seed: int = 0) -> Kernel:
    """C = A @ B for square ``n`` matrices of ``dtype`` (fp64 or fp32): 2 n^3 FLOPs per call."""
    kernel = shaped_gemm_kernel(n, n, n, dtype, seed)
    return Kernel(f"{dtype} GEMM n={n}", kernel.run, kernel.work, kernel.unit)


def check_gemm(a: Any, b: Any, c: Any, dtype: str, label: str | None = None) -> None:
    """Raise KernelCheckError unless ``c`` holds ``a @ b``, read on a corner (the first rows
    and columns); for a batched GEMM, on the first and the last product of the batch."""
    import numpy as np

    if a.ndim == 3:
        for i in sorted({0, a.shape[0] - 1}):
            check_gemm(a[i], b[i], c[i], dtype, label)
        return
    rows, cols = min(4, a.shape[0]), min(256, b.shape[1])  # a corner: cheap on a large B
    ref = a[:rows].astype(np.float64) @ b[:, :cols].astype(np.float64)
    tol = 1e-3 if dtype == "fp32" else 1e-9
    if not np.allclose(c[:rows, :cols], ref, rtol=tol, atol=tol * np.sqrt(a.shape[1])):
        name = label or f"{dtype} GEMM n={a.shape[0]}"
        raise KernelCheckError(f"{name}: result differs from the reference")


def shaped_gemm_kernel(m: int, n: int, k: int, dtype: str, seed: int = 0,
                       batch_count: int = 1, weights: int = 1) -> Kernel:
    """C(m, n) = A(m, k) @ B(k, n) in ``dtype`` (fp64 or fp32), beta = 0 (numpy's ``out=``),
    ``batch_count`` independent products per call (one batched ``matmul`` when above 1):
    2 m n k batch_count FLOPs per call; checked once against a float64 reference. With
    ``weights`` above 1, that many distinct B, each call the next one (``cycled_run``: a
    step's weights, read from DRAM when they together exceed the cache)."""
    import numpy as np

    np_dtype = np.dtype(NUMPY_GEMM_DTYPES[dtype])
    rng = np.random.default_rng(seed)
    lead = (batch_count,) if batch_count > 1 else ()
    a = rng.standard_normal(lead + (m, k), dtype=np_dtype)
    bs = [rng.standard_normal(lead + (k, n), dtype=np_dtype) for _ in range(weights)]
    c = np.empty(lead + (m, n), dtype=np_dtype)
    run = cycled_run(np.matmul, a, bs, c)
    label = (f"{dtype} GEMM {f'{batch_count} x ' if lead else ''}{m}x{n}x{k}"
             f"{f' over {weights} weights' if weights > 1 else ''}")
    run(1)
    check_gemm(a, bs[0], c, dtype, label)
    return Kernel(label, run, 2.0 * m * n * k * batch_count, "FLOP")


def cycled_run(matmul: Callable[..., Any], a: Any, bs: list[Any],
               c: Any) -> Callable[[int], None]:
    """``run(loops)``: ``matmul(a, b, out=c)`` ``loops`` times, ``b`` the next of ``bs`` at
    each call (one B: the same GEMM repeated); the first call uses ``bs[0]``, and a call picks
    up where the last one stopped."""
    if len(bs) == 1:
        b = bs[0]

        def repeated(loops: int) -> None:
            for _ in range(loops):
                matmul(a, b, out=c)

        return repeated
    turn = [0]

    def cycled(loops: int) -> None:
        i = turn[0]
        for _ in range(loops):
            matmul(a, bs[i], out=c)
            i = (i + 1) % len(bs)
        turn[0] = i

    return cycled


def shaped_gemm(m: int, n: int, k: int, g: int, dtype: str, weights: int = 1) -> Kernel:
    """``shaped_gemm_kernel`` with the GPU backends' ``shaped_gemm`` signature (the batch
    count ``g`` before the dtype): the kernel ``analyze --measure`` times on a CPU, over
    ``weights`` distinct B where a step reads its weight from DRAM."""
    return shaped_gemm_kernel(m, n, k, dtype, batch_count=g, weights=weights)


def touch_share(fills: tuple, part: int, threads: int) -> None:
    """Write ``value`` into share ``part`` of ``threads`` equal shares of each ``(array,
    value)`` in ``fills``: run by thread ``part``, so each thread first-touches its own share
    (a thread per CPU also maps the pages 10x faster than one thread does in a VM)."""
    for array, value in fills:
        lo, hi = part * len(array) // threads, (part + 1) * len(array) // threads
        array[lo:hi] = value


def read_stream_kernel(elements: int, threads: int) -> Kernel:
    """DRAM as the memory delivers it to the BLAS: a dot product x . y of two float64 vectors
    of ``elements / 2`` values each (numpy's ``dot``, the BLAS's ddot and its threads), read
    once and nothing written: 8 B per element. Read-only, so no write-allocate traffic to
    count or to argue about; over 16x the LLC, 1.04-1.16x of a compiled C triad on the
    development VM. A GEMV (an M = 1 GEMM) can read slower than this (OpenBLAS's, 0.7-1.0x on
    that VM): that is the BLAS's efficiency, which the calibration's out-of-cache thin GEMMs
    measure, not the memory's speed. The vectors are first-touched by ``threads`` threads."""
    import numpy as np

    half = max(1, elements // 2)
    x, y = np.empty(half), np.empty(half)
    threads = max(1, min(threads, half))
    with ThreadPoolExecutor(threads, thread_name_prefix="roofline-touch") as pool:
        for _ in pool.map(touch_share, [((x, 0.5), (y, 2.0))] * threads, range(threads),
                          [threads] * threads):
            pass
    result = [0.0]

    def run(loops: int) -> None:
        for _ in range(loops):
            result[0] = np.dot(x, y)

    run(1)
    if result[0] != float(half):
        raise KernelCheckError("read stream (dot product): wrong result, bandwidth not trusted")
    return Kernel(f"read stream (dot product) 2 x {x.nbytes / 2**20:.0f} MiB", run,
                  8.0 * 2 * half, "B")


def thin_gemm_kernels(ms: tuple[int, ...], nk: int, dtype: str, seed: int = 0) -> list[Kernel]:
    """C(m, nk) = A(m, nk) @ B(nk, nk) for each m, sharing one B (the large operand is made
    once, not once per m); each checked once against a float64 reference."""
    import numpy as np

    np_dtype = np.dtype(NUMPY_GEMM_DTYPES[dtype])
    rng = np.random.default_rng(seed)
    b = rng.random((nk, nk), dtype=np_dtype) - 0.5
    kernels = []
    for m in ms:
        a = rng.random((m, nk), dtype=np_dtype) - 0.5
        c = np.empty((m, nk), dtype=np_dtype)

        def run(loops: int, a: Any = a, c: Any = c) -> None:
            for _ in range(loops):
                np.matmul(a, b, out=c)

        run(1)
        check_gemm(a, b, c, dtype)
        kernels.append(Kernel(f"{dtype} GEMM {m}x{nk}x{nk}", run, 2.0 * m * nk * nk, "FLOP"))
    return kernels


def small_gemm_kernel(n: int = 8, dtype: str = "fp32") -> Kernel:
    """A tiny ``n`` x ``n`` GEMM: its time per call is the overhead any small layer pays."""
    kernel = gemm_kernel(n, dtype)
    return Kernel(f"{dtype} GEMM n={n} (per call)", kernel.run, 1.0, "call")


class StreamArrays:
    """Three float64 arrays of ``elements`` each, shared out over ``threads`` threads.

    Use as a context manager; ``kernel("triad")`` / ``kernel("copy")`` give timed kernels.
    """

    def __init__(self, elements: int, threads: int, block: int = BLOCK_ELEMENTS) -> None:
        import numpy as np

        self.elements = elements
        self.threads = max(1, min(threads, elements))
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="roofline-stream")
        self.a, self.b, self.c = (np.empty(elements) for _ in range(3))
        self._bounds = [(i * elements // self.threads, (i + 1) * elements // self.threads)
                        for i in range(self.threads)]
        self._blocks = [self._views(lo, hi, max(1, block)) for lo, hi in self._bounds]
        self._parallel(self._first_touch)

    @property
    def nbytes(self) -> int:
        return 3 * self.a.nbytes

    def _views(self, lo: int, hi: int, block: int) -> list:
        return [(self.a[i:min(i + block, hi)], self.b[i:min(i + block, hi)],
                 self.c[i:min(i + block, hi)]) for i in range(lo, hi, block)]

    def _parallel(self, part: Callable[[int], None]) -> None:
        for _ in self._pool.map(part, range(self.threads)):
            pass

    def _first_touch(self, k: int) -> None:
        touch_share(((self.a, 0.0), (self.b, 1.0), (self.c, 2.0)), k, self.threads)

    def _triad_part(self, k: int) -> None:
        import numpy as np

        multiply, add, s = np.multiply, np.add, TRIAD_SCALAR
        for av, bv, cv in self._blocks[k]:
            multiply(cv, s, out=av)
            add(av, bv, out=av)

    def _copy_part(self, k: int) -> None:
        import numpy as np

        lo, hi = self._bounds[k]
        np.copyto(self.a[lo:hi], self.b[lo:hi])

    def kernel(self, name: str) -> Kernel:
        """``triad``: a = b + s*c (24 B/element); ``copy``: a = b (16 B/element); checked once."""
        part = {"triad": self._triad_part, "copy": self._copy_part}[name]

        def run(loops: int) -> None:
            for _ in range(loops):
                self._parallel(part)

        run(1)
        self._check(name)
        work = STREAM_BYTES_PER_ELEMENT[name] * self.elements
        return Kernel(f"{name} {self.nbytes / 2**20:.0f} MiB x{count(self.threads, 'thread')}", run,
                      float(work), "B")

    def _check(self, name: str) -> None:
        import numpy as np

        expected = 1.0 + TRIAD_SCALAR * 2.0 if name == "triad" else 1.0
        step = max(1, self.elements // 4096)
        if not np.all(self.a[::step] == expected) or self.a[-1] != expected:
            raise KernelCheckError(f"{name}: wrong result, bandwidth not trusted")

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        del self.a, self.b, self.c  # the arrays go now, not when the object does
        self._blocks = []

    def __enter__(self) -> StreamArrays:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
