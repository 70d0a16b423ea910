"""GPU (and CPU low-precision) kernels through torch or cupy, the optional ``roofline[gpu]``.

One small adapter per array library gives the probe three kernel kinds, each a
``roofline.probe.cpu_kernels.Kernel`` that synchronizes the device at the end of
``run(loops)`` so the host clock measures finished work: GEMM per dtype, device-memory copy,
and host-to-device copy from pinned memory (the PCIe / NVLink roof). Nothing here imports
torch or cupy at module level.

The torch backend ran on a real H100 SXM5 (torch 2.11.0+cu130; docs/probe.md); the cupy backend
is tested against a fake ``cupy`` module at this boundary only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import KernelCheckError
from .cpu import Kernel

TORCH_DTYPES = {"fp64": "float64", "fp32": "float32", "tf32": "float32", "fp16": "float16",
                "bf16": "bfloat16"}
CUPY_DTYPES = {"fp64": "float64", "fp32": "float32", "fp16": "float16"}
CHECK_RTOL = {"fp64": 1e-9, "fp32": 1e-4, "tf32": 1e-2, "fp16": 1e-2, "bf16": 3e-2}


#: A GEMM timed from a CUDA graph (``TorchBackend.graphed_gemm``): calls per graph, enough for
#: a replay of about this many seconds, at most this many calls
GRAPH_REPLAY_S, GRAPH_CALLS = 1e-3, 100
#: A, B and C as ``torch.matmul(A, B)`` keeps them row-major: A's rows run along K (2), B's
#: along N (1), C's along N (``model.gemm.PASS_ROWS``' convention: 0 M, 1 N, 2 K)
MATMUL_ROWS = (2, 1, 1)


def _laid_out(make: Callable[[tuple[int, ...]], Any], lead: tuple[int, ...], m: int, n: int,
              k: int, rows: tuple[int, int, int]) -> tuple[Any, Any, Any]:
    """``(a, b, c)`` for ``matmul(a, b, out=c)``: A (m x k) and B (k x n) made by
    ``make(shape)`` with their rows along ``rows[0]`` and ``rows[1]`` (a transposed view where
    that is not the row-major shape: cuBLAS reads it in place, as a Linear's weight), and C
    (m x n) when its rows run along N; when they run along M, C^T = B^T A^T instead (n x m,
    row-major: C stored along M)."""
    a = make(lead + (m, k)) if rows[0] == 2 else make(lead + (k, m)).swapaxes(-1, -2)
    b = make(lead + (k, n)) if rows[1] == 1 else make(lead + (n, k)).swapaxes(-1, -2)
    if rows[2] == 1:
        return a, b, make(lead + (m, n))
    return b.swapaxes(-1, -2), a.swapaxes(-1, -2), make(lead + (n, m))


def _label(name: str, dtype: str, m: int, n: int, k: int, rows: tuple[int, int, int]) -> str:
    from ..model.gemm import rows_text

    return f"{name} {dtype} GEMM {m}x{n}x{k}{'' if rows == MATMUL_ROWS else rows_text(rows)}"


def _matmul_run(matmul: Any, a: Any, b: Any, c: Any,
                sync: Callable[[], object]) -> Callable[[int], None]:
    """``run(loops)``: ``matmul(a, b, out=c)`` ``loops`` times, then one ``sync``; called once
    (the warm-up that also fills ``c`` for the check) before it is returned."""
    def run(loops: int) -> None:
        for _ in range(loops):
            matmul(a, b, out=c)
        sync()

    run(1)
    return run


class TorchBackend:
    """torch on ``device`` ("cuda:0" or "cpu")."""

    name = "torch"
    dtypes = tuple(TORCH_DTYPES)

    def __init__(self, torch: Any, device: str = "cuda:0") -> None:
        self.torch, self.device = torch, device
        self.is_gpu = device.startswith("cuda")
        if not self.is_gpu:
            self.dtypes = ("bf16", "fp16")  # numpy's BLAS covers fp64/fp32 on the CPU

    @property
    def version(self) -> str:
        return str(getattr(self.torch, "__version__", None) or "unknown")

    def sync(self) -> None:
        if self.is_gpu:
            self.torch.cuda.synchronize()

    def device_facts(self) -> dict[str, Any]:
        if not self.is_gpu:
            return {}
        index = int(self.device.split(":")[1])
        props = self.torch.cuda.get_device_properties(index)
        return {"name": self.torch.cuda.get_device_name(index),
                "sms": getattr(props, "multi_processor_count", None),
                "memory_bytes": getattr(props, "total_memory", None),
                "l2_bytes": getattr(props, "L2_cache_size", None)}

    def gemm(self, n: int, dtype: str) -> Kernel:
        t = self.torch
        dt = getattr(t, TORCH_DTYPES[dtype])
        if self.is_gpu:
            t.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        a = t.randn((n, n), device=self.device, dtype=dt)
        b = t.randn((n, n), device=self.device, dtype=dt)
        c = t.empty((n, n), device=self.device, dtype=dt)
        run = _matmul_run(t.matmul, a, b, c, self.sync)
        ref = t.matmul(a[:4].to(t.float64), b.to(t.float64))
        rtol = CHECK_RTOL[dtype]
        if not t.allclose(c[:4].to(t.float64), ref, rtol=rtol, atol=rtol * n ** 0.5 * 4):
            raise KernelCheckError(f"{self.name} {dtype} GEMM n={n}: wrong result")
        return Kernel(f"{self.name} {dtype} GEMM n={n} on {self.device}", run, 2.0 * n ** 3,
                      "FLOP")

    def _operands(self, m: int, n: int, k: int, g: int, dtype: str,
                  rows: tuple[int, int, int] = MATMUL_ROWS) -> tuple[Any, Any, Any]:
        """``g`` GEMMs' A, B and C in ``dtype`` (batched when g > 1), laid out along ``rows``
        (``_laid_out``), TF32 switched on for tf32 only."""
        t = self.torch
        dt = getattr(t, TORCH_DTYPES[dtype])
        if self.is_gpu:
            t.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        lead = (g,) if g > 1 else ()
        return _laid_out(lambda shape: t.randn(shape, device=self.device, dtype=dt),
                         lead, m, n, k, rows)

    def shaped_gemm(self, m: int, n: int, k: int, g: int, dtype: str,
                    rows: tuple[int, int, int] = MATMUL_ROWS) -> Kernel:
        """``g`` GEMMs (m, k) x (k, n) in ``dtype`` (batched when g > 1), one sync per call,
        A's, B's and C's rows along ``rows`` (``_laid_out``: a Linear's forward takes B, its
        weight, along K)."""
        a, b, c = self._operands(m, n, k, g, dtype, rows)
        run = _matmul_run(self.torch.matmul, a, b, c, self.sync)
        return Kernel(_label(self.name, dtype, m, n, k, rows), run, 2.0 * m * n * k * g, "FLOP")

    def device_copy(self, nbytes: int) -> Kernel:
        dst, src = self._copy_operands(nbytes)
        return self._copy_kernel(f"device copy {nbytes / 2**20:.0f} MiB", dst, src, 2 * nbytes)

    @property
    def graphs(self) -> bool:
        """Whether this torch can replay calls from a CUDA graph (``graphed``)."""
        return self.is_gpu and hasattr(self.torch.cuda, "CUDAGraph")

    def graphed(self, label: str, call: Callable[[], object], calls: int) -> Kernel:
        """``call`` made ``calls`` times in one CUDA graph: ``run(loops)`` replays it ``loops``
        times, then syncs, so a replay costs the GPU's time alone (its kernels and the gaps
        between them), not the host's: Python, torch's dispatcher and the launch, which an
        eager loop pays per call (NVIDIA, "Getting Started with CUDA Graphs", 2019). Its work
        is ``calls``, in "call": seconds per replay over it are seconds per call."""
        t = self.torch
        side = t.cuda.Stream()
        side.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(side):  # warm-up off the capture, as torch asks
            for _ in range(2):
                call()
        t.cuda.current_stream().wait_stream(side)
        graph = t.cuda.CUDAGraph()
        with t.cuda.graph(graph):
            for _ in range(calls):
                call()

        def run(loops: int, _operands: Callable[[], object] = call) -> None:
            # ``_operands`` keeps the call, and so the tensors the graph reads and writes,
            # alive as long as the graph is: freed, their memory goes to other tensors and a
            # replay writes into them (an illegal address on a lent H100)
            for _ in range(loops):
                graph.replay()
            self.sync()

        run(1)
        return Kernel(f"{label}, {calls} calls in a CUDA graph", run, float(calls), "call")

    def graphed_gemm(self, m: int, n: int, k: int, g: int, dtype: str,
                     rows: tuple[int, int, int] = MATMUL_ROWS) -> Kernel:
        """``shaped_gemm``'s GEMM replayed from a CUDA graph of enough calls that a replay
        lasts about ``GRAPH_REPLAY_S`` (at most ``GRAPH_CALLS``): the kernels' own time, as a
        graph-timed calibration predicts it (``analyze --measure``; an eager loop would time
        the host's per-call cost on a short GEMM). Its ``calls`` say how many GEMMs a run
        makes."""
        import time as clock

        a, b, c = self._operands(m, n, k, g, dtype, rows)

        def call() -> object:
            return self.torch.matmul(a, b, out=c)

        call()
        self.sync()
        start = clock.perf_counter()
        call()
        self.sync()
        one = max(clock.perf_counter() - start, 1e-7)  # from Python: at least the host's cost
        calls = max(1, min(GRAPH_CALLS, int(GRAPH_REPLAY_S / one)))
        label = _label(self.name, dtype, m, n, k, rows)
        replay = self.graphed(label, call, calls)
        return Kernel(replay.label, replay.run, 2.0 * m * n * k * g * calls, "FLOP", calls)

    def small_gemm_call(self, n: int, dtype: str) -> Callable[[], object]:
        """One ``n``^3 GEMM in ``dtype``, no sync: what ``graphed`` records."""
        a, b, c = self._operands(n, n, n, 1, dtype)
        return lambda: self.torch.matmul(a, b, out=c)

    def small_copy_call(self, nbytes: int) -> Callable[[], object]:
        """One device-to-device copy of ``nbytes``, no sync."""
        dst, src = self._copy_operands(nbytes)
        return lambda: dst.copy_(src, non_blocking=True)

    def _copy_operands(self, nbytes: int) -> tuple[Any, Any]:
        """``(dst, src)`` of a device-to-device copy of ``nbytes`` (src all ones)."""
        t = self.torch
        src = t.ones((nbytes // 4,), device=self.device, dtype=t.float32)
        return t.empty((nbytes // 4,), device=self.device, dtype=t.float32), src

    def host_to_device(self, nbytes: int) -> Kernel:
        t = self.torch
        src = t.ones((nbytes // 4,), dtype=t.float32, pin_memory=True)
        dst = t.empty((nbytes // 4,), device=self.device, dtype=t.float32)
        return self._copy_kernel(f"host-to-device {nbytes / 2**20:.0f} MiB (pinned)", dst, src,
                                 nbytes)

    def _copy_kernel(self, label: str, dst: Any, src: Any, work: int) -> Kernel:
        def run(loops: int) -> None:
            for _ in range(loops):
                dst.copy_(src, non_blocking=True)
            self.sync()

        run(1)
        if not bool((dst[-1:] == 1).all()):
            raise KernelCheckError(f"{label}: wrong result")
        return Kernel(label, run, float(work), "B")


class CupyBackend:
    """cupy on the current device (no bf16, no TF32 switch: fp64, fp32, fp16 only)."""

    name = "cupy"
    dtypes = tuple(CUPY_DTYPES)
    is_gpu = True

    def __init__(self, cupy: Any) -> None:
        self.cp = cupy

    @property
    def version(self) -> str:
        return str(getattr(self.cp, "__version__", None) or "unknown")

    def sync(self) -> None:
        self.cp.cuda.runtime.deviceSynchronize()

    def device_facts(self) -> dict[str, Any]:
        props = self.cp.cuda.runtime.getDeviceProperties(self.cp.cuda.runtime.getDevice())
        name = props.get("name", b"")
        return {"name": name.decode() if isinstance(name, bytes) else name,
                "sms": props.get("multiProcessorCount"),
                "memory_bytes": props.get("totalGlobalMem"),
                "l2_bytes": props.get("l2CacheSize")}

    def gemm(self, n: int, dtype: str) -> Kernel:
        cp = self.cp
        a = cp.random.standard_normal((n, n)).astype(CUPY_DTYPES[dtype])
        b = cp.random.standard_normal((n, n)).astype(CUPY_DTYPES[dtype])
        c = cp.empty((n, n), dtype=CUPY_DTYPES[dtype])
        run = _matmul_run(cp.matmul, a, b, c, self.sync)
        ref = cp.matmul(a[:4].astype("float64"), b.astype("float64"))
        rtol = CHECK_RTOL[dtype]
        if not bool(cp.allclose(c[:4].astype("float64"), ref, rtol=rtol,
                                atol=rtol * n ** 0.5 * 4)):
            raise KernelCheckError(f"cupy {dtype} GEMM n={n}: wrong result")
        return Kernel(f"cupy {dtype} GEMM n={n}", run, 2.0 * n ** 3, "FLOP")

    def shaped_gemm(self, m: int, n: int, k: int, g: int, dtype: str,
                    rows: tuple[int, int, int] = MATMUL_ROWS) -> Kernel:
        """``g`` GEMMs (m, k) x (k, n) in ``dtype`` (batched when g > 1), one sync per call,
        laid out along ``rows`` as the torch backend's."""
        cp = self.cp
        lead = (g,) if g > 1 else ()
        a, b, c = _laid_out(
            lambda shape: cp.random.standard_normal(shape).astype(CUPY_DTYPES[dtype]),
            lead, m, n, k, rows)
        run = _matmul_run(cp.matmul, a, b, c, self.sync)
        return Kernel(_label("cupy", dtype, m, n, k, rows), run, 2.0 * m * n * k * g, "FLOP")

    def device_copy(self, nbytes: int) -> Kernel:
        cp = self.cp
        src, dst = cp.ones(nbytes // 4, dtype="float32"), cp.empty(nbytes // 4, dtype="float32")

        def run(loops: int) -> None:
            for _ in range(loops):
                cp.copyto(dst, src)
            self.sync()

        run(1)
        return Kernel(f"device copy {nbytes / 2**20:.0f} MiB", run, 2.0 * nbytes, "B")

    def host_to_device(self, nbytes: int) -> Kernel:
        import cupyx

        host = cupyx.empty_pinned((nbytes // 4,), dtype="float32")
        host[...] = 1
        dst = self.cp.empty(nbytes // 4, dtype="float32")

        def run(loops: int) -> None:
            for _ in range(loops):
                dst.set(host)
            self.sync()

        run(1)
        return Kernel(f"host-to-device {nbytes / 2**20:.0f} MiB (pinned)", run, float(nbytes),
                      "B")


def gpu_backend() -> tuple[Any, str | None]:
    """A GPU backend (torch with CUDA first, then cupy), or None and the reason there is none."""
    reasons = []
    try:
        import torch

        if torch.cuda.is_available():
            return TorchBackend(torch, "cuda:0"), None
        reasons.append("torch is installed but sees no CUDA device")
    except ImportError:
        reasons.append("torch is not installed")
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return CupyBackend(cupy), None
        reasons.append("cupy sees no device")
    except ImportError:
        reasons.append("cupy is not installed")
    except Exception as exc:  # noqa: BLE001 - CUDARuntimeError without a driver
        reasons.append(f"cupy cannot reach a device ({exc})")
    return None, "; ".join(reasons) + " (pip install 'roofline[gpu]' on a CUDA machine)"


def cpu_lowp_backend() -> tuple[Any, str | None]:
    """torch on the CPU for bf16/fp16 GEMM (oneDNN; AMX where present), or why not."""
    try:
        import torch
    except ImportError:
        return None, ("numpy has no bf16/fp16 BLAS, and torch (which can run them on the CPU) "
                      "is not installed")
    return TorchBackend(torch, "cpu"), None
