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

    def shaped_gemm(self, m: int, n: int, k: int, g: int, dtype: str) -> Kernel:
        """``g`` GEMMs (m, k) x (k, n) in ``dtype`` (batched when g > 1), one sync per call."""
        t = self.torch
        dt = getattr(t, TORCH_DTYPES[dtype])
        if self.is_gpu:
            t.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        lead = (g,) if g > 1 else ()
        a = t.randn(lead + (m, k), device=self.device, dtype=dt)
        b = t.randn(lead + (k, n), device=self.device, dtype=dt)
        c = t.empty(lead + (m, n), device=self.device, dtype=dt)
        run = _matmul_run(t.matmul, a, b, c, self.sync)
        return Kernel(f"{self.name} {dtype} GEMM {m}x{n}x{k}", run, 2.0 * m * n * k * g, "FLOP")

    def device_copy(self, nbytes: int) -> Kernel:
        t = self.torch
        src = t.ones((nbytes // 4,), device=self.device, dtype=t.float32)
        dst = t.empty((nbytes // 4,), device=self.device, dtype=t.float32)
        return self._copy_kernel(f"device copy {nbytes / 2**20:.0f} MiB", dst, src, 2 * nbytes)

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

    def shaped_gemm(self, m: int, n: int, k: int, g: int, dtype: str) -> Kernel:
        """``g`` GEMMs (m, k) x (k, n) in ``dtype`` (batched when g > 1), one sync per call."""
        cp = self.cp
        lead = (g,) if g > 1 else ()
        a = cp.random.standard_normal(lead + (m, k)).astype(CUPY_DTYPES[dtype])
        b = cp.random.standard_normal(lead + (k, n)).astype(CUPY_DTYPES[dtype])
        c = cp.empty(lead + (m, n), dtype=CUPY_DTYPES[dtype])
        run = _matmul_run(cp.matmul, a, b, c, self.sync)
        return Kernel(f"cupy {dtype} GEMM {m}x{n}x{k}", run, 2.0 * m * n * k * g, "FLOP")

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
