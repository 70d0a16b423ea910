"""The probe's CPU GEMM kernels through torch (``probe --library torch``): the same kernels as
``kernels.cpu``'s GEMMs, by the same names, timed through ``torch.matmul`` on CPU tensors.

PyTorch on a CPU multiplies through the library it was built with (MKL, oneDNN, OpenBLAS), not
numpy's BLAS, and the two ran the same shapes 1.0-1.7x apart on the development VM (GPT-2's
512 x 50257 x 768 output layer 1.44-1.70x slower in torch), so a model that runs in torch is
calibrated through torch. The operands are made by numpy's generator (the numpy kernels' own
values) and shared with torch (``torch.from_numpy``), so each product is checked against the
same float64 reference as the numpy kernels' (``kernels.cpu.check_gemm``) before it is timed.
torch runs with the threads it has (``torch.get_num_threads()``, as numpy's BLAS runs with its
own); nothing here changes them. torch and numpy are imported inside the functions.
"""

from __future__ import annotations

from typing import Any

from .cpu import NUMPY_GEMM_DTYPES, Kernel, check_gemm, cycled_run


def installed() -> bool:
    """Whether torch imports here: the one check of every path that runs through torch on the
    CPU (``probe --library torch``, ``--measure`` on a torch calibration, ``--hw local`` for a
    captured model, the op costs)."""
    try:
        import torch  # noqa: F401 - only whether it imports
    except ImportError:
        return False
    return True


def _operands(shapes: tuple[tuple[int, ...], ...], dtype: str, seed: int) -> list[Any]:
    """torch CPU tensors of ``shapes`` in ``dtype`` (fp64 or fp32), standard normal values from
    numpy's generator (the memory shared with numpy)."""
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    np_dtype = np.dtype(NUMPY_GEMM_DTYPES[dtype])
    return [torch.from_numpy(rng.standard_normal(shape, dtype=np_dtype)) for shape in shapes]


def _run(a: Any, b: Any, c: Any) -> Any:
    """``run(loops)``: ``torch.matmul(a, b, out=c)`` ``loops`` times (beta = 0)."""
    import torch

    return cycled_run(torch.matmul, a, [b], c)


def shaped_gemm_kernel(m: int, n: int, k: int, dtype: str, seed: int = 0,
                       batch_count: int = 1, weights: int = 1) -> Kernel:
    """C(m, n) = A(m, k) @ B(k, n) in ``dtype`` (fp64 or fp32) through torch, ``batch_count``
    products per call (one batched ``matmul`` when above 1): 2 m n k batch_count FLOPs per
    call; checked once against a float64 reference. With ``weights`` above 1, that many
    distinct B, each call the next one (``kernels.cpu.cycled_run``)."""
    import torch

    lead = (batch_count,) if batch_count > 1 else ()
    a, *bs = _operands((lead + (m, k),) + (lead + (k, n),) * weights, dtype, seed)
    c = torch.empty(lead + (m, n), dtype=a.dtype)
    run = cycled_run(torch.matmul, a, bs, c)
    label = (f"torch {dtype} GEMM {f'{batch_count} x ' if lead else ''}{m}x{n}x{k}"
             f"{f' over {weights} weights' if weights > 1 else ''}")
    run(1)
    check_gemm(a.numpy(), bs[0].numpy(), c.numpy(), dtype, label)
    return Kernel(label, run, 2.0 * m * n * k * batch_count, "FLOP")


def gemm_kernel(n: int, dtype: str, seed: int = 0) -> Kernel:
    """C = A @ B for square ``n`` matrices of ``dtype`` through torch: 2 n^3 FLOPs per call."""
    kernel = shaped_gemm_kernel(n, n, n, dtype, seed)
    return Kernel(f"torch {dtype} GEMM n={n}", kernel.run, kernel.work, kernel.unit)


def thin_gemm_kernels(ms: tuple[int, ...], nk: int, dtype: str, seed: int = 0) -> list[Kernel]:
    """C(m, nk) = A(m, nk) @ B(nk, nk) through torch for each m, sharing one B; each checked
    once against a float64 reference."""
    import torch

    (b,) = _operands(((nk, nk),), dtype, seed)
    kernels = []
    for i, m in enumerate(ms):
        (a,) = _operands(((m, nk),), dtype, seed + 1 + i)
        c = torch.empty((m, nk), dtype=a.dtype)
        run = _run(a, b, c)
        label = f"torch {dtype} GEMM {m}x{nk}x{nk}"
        run(1)
        check_gemm(a.numpy(), b.numpy(), c.numpy(), dtype, label)
        kernels.append(Kernel(label, run, 2.0 * m * nk * nk, "FLOP"))
    return kernels


def shaped_gemm(m: int, n: int, k: int, g: int, dtype: str, weights: int = 1) -> Kernel:
    """``shaped_gemm_kernel`` with the GPU backends' ``shaped_gemm`` signature: the kernel
    ``analyze --measure`` times on a CPU entry calibrated through torch, over ``weights``
    distinct B where a step reads its weight from DRAM."""
    return shaped_gemm_kernel(m, n, k, dtype, batch_count=g, weights=weights)


def small_gemm_kernel(n: int = 8, dtype: str = "fp32") -> Kernel:
    """A tiny ``n`` x ``n`` GEMM through torch: its time per call is the overhead any small
    layer pays in torch (its dispatcher, not numpy's)."""
    kernel = gemm_kernel(n, dtype)
    return Kernel(f"torch {dtype} GEMM n={n} (per call)", kernel.run, 1.0, "call")
