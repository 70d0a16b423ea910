"""Fakes at the probe's boundaries: py-cpuinfo's dict, a pynvml module, a torch-like module.

The fake torch is backed by numpy, so the torch code path of roofline.probe.gpu_kernels runs for real on
tiny arrays; nothing here needs a GPU (and nothing here proves the code right on one).
"""

from __future__ import annotations

import contextlib
import types

import numpy as np

CPUINFO = {
    "brand_raw": "Intel(R) Xeon(R) Processor @ 2.10GHz", "vendor_id_raw": "GenuineIntel",
    "family": 6, "model": 207, "hz_advertised": [2100000000, 0], "count": 2,
    "flags": ["avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16",
              "amx_int8", "amx_tile", "sse2"],
    "l3_cache_size": 32 * 2**20, "l2_cache_size": 4 * 2**20,
}


def fake_pynvml(name: str = "NVIDIA A100-SXM4-80GB", count: int = 1, init_error=None):
    nv = types.ModuleType("pynvml")
    nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM = 1, 2
    nv.calls = []

    def init():
        if init_error is not None:
            raise init_error
        nv.calls.append("init")

    nv.nvmlInit = init
    nv.nvmlShutdown = lambda: nv.calls.append("shutdown")
    nv.nvmlDeviceGetCount = lambda: count
    nv.nvmlDeviceGetHandleByIndex = lambda i: f"handle{i}"
    nv.nvmlDeviceGetName = lambda h: name.encode()  # old pynvml returned bytes
    nv.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=80 * 10**9)
    nv.nvmlDeviceGetMaxClockInfo = lambda h, kind: {1: 1410, 2: 1593}[kind]
    nv.nvmlDeviceGetMemoryBusWidth = lambda h: 5120
    nv.nvmlDeviceGetMaxPcieLinkGeneration = lambda h: 4
    nv.nvmlDeviceGetMaxPcieLinkWidth = lambda h: 16

    def unsupported(h):
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    nv.nvmlDeviceGetCudaComputeCapability = unsupported
    return nv


class FakeTensor:
    def __init__(self, array):
        self.a = array

    def __getitem__(self, key):
        return FakeTensor(self.a[key])

    def to(self, dtype):
        return FakeTensor(self.a.astype(dtype))

    def swapaxes(self, i, j):
        return FakeTensor(self.a.swapaxes(i, j))

    def copy_(self, src, non_blocking=False):
        np.copyto(self.a, src.a)
        return self

    def __eq__(self, other):
        return FakeTensor(self.a == other)

    def all(self):
        return FakeTensor(np.all(self.a))

    def __bool__(self):
        return bool(self.a)


def fake_torch(cuda: bool = True, device_name: str = "NVIDIA A100-SXM4-80GB"):
    """A module with the few torch names gpu_kernels uses; bfloat16 is float32 underneath."""
    torch = types.ModuleType("torch")
    rng = np.random.default_rng(0)
    torch.float64, torch.float32, torch.float16, torch.bfloat16 = (
        np.float64, np.float32, np.float16, np.float32)
    torch.syncs = []
    torch.randn = lambda shape, device=None, dtype=None: FakeTensor(
        rng.standard_normal(shape).astype(dtype))
    torch.empty = lambda shape, device=None, dtype=None, pin_memory=False: FakeTensor(
        np.empty(shape, dtype))
    torch.ones = lambda shape, device=None, dtype=None, pin_memory=False: FakeTensor(
        np.ones(shape, dtype))

    def matmul(a, b, out=None):
        if torch.capturing is not None:
            torch.capturing.calls += 1
        if out is None:
            return FakeTensor(a.a @ b.a)
        np.matmul(a.a, b.a, out=out.a)
        return out

    torch.matmul = matmul
    torch.allclose = lambda x, y, rtol, atol: bool(np.allclose(x.a, y.a, rtol=rtol, atol=atol))
    class Graph:
        """A CUDA graph of the calls made while it captured: replay makes them again."""

        def __init__(self):
            self.calls = 0
            torch.graphs.append(self)

        def replay(self):
            torch.replays.append(self.calls)

    @contextlib.contextmanager
    def graph(g):
        torch.capturing = g
        yield
        torch.capturing = None

    stream = types.SimpleNamespace(wait_stream=lambda other: None)
    torch.graphs, torch.replays, torch.capturing = [], [], None
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: cuda, synchronize=lambda: torch.syncs.append(1),
        get_device_name=lambda i: device_name,
        get_device_properties=lambda i: types.SimpleNamespace(multi_processor_count=108,
                                                              total_memory=80 * 10**9),
        Stream=lambda: stream, current_stream=lambda: stream,
        stream=lambda s: contextlib.nullcontext(), CUDAGraph=Graph, graph=graph)
    torch.backends = types.SimpleNamespace(
        cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False)))
    return torch
