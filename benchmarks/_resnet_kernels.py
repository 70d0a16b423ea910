"""ResNet-50's batch norms and convolutions one layer shape at a time, kernel by kernel, for
gpu_measure.py's ``bnorms`` part (only torch is imported, and only by the caller): which kernels
torch and cuDNN run for them in NCHW and channels_last, and how long each takes.

- ``bnorms.csv``: ``F.batch_norm`` at every distinct (channels, side) of ResNet-50's batch norms
  (tools/torch_flops.py's module, batch ``BATCH``), in fp32, bf16 and fp16 with weights of their
  own dtype (a module ``.to(torch.bfloat16)``) and with fp32 weights (autocast's; fp16 since
  h100_live_bnorms_fp16.csv); NCHW and channels_last;
  ``train`` (batch statistics, forward), ``eval`` (running statistics) and ``backward`` (the
  input's, weight's and bias's gradients of a training forward).
- ``convkernels.csv``: each distinct convolution of the same module, fp32 (TF32, torch's default
  ``cudnn.allow_tf32``) and bf16, NCHW and channels_last, ``forward`` and ``backward`` (the
  input's and weight's gradients; the weight's alone for the 3-channel stem), its kernels split
  into cuDNN's layout transposes (``nchwToNhwc`` / ``nhwcToNchw``) and the rest.

Each row: the kernels' device time per call (``kernel_us``: five profiled calls' CUDA kernels,
summed, over five), the eager call timed back to back (``eager_us``, best of seven values), the
layer's ``count`` in ResNet-50, and the kernels by name (``kernels``: ``name=us x calls`` a call).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

BATCH = 64
#: batches whose batch norms are timed too, NCHW and channels_last, fp32 and bf16: to check a
#: model fitted at ``BATCH``
CHECK_BATCHES = (16, 256)
PROFILED_CALLS = 5
#: dtype rows: (name, input dtype, weight dtype) as torch names them
BN_DTYPES = (("fp32", "float32", "float32"), ("bf16", "bfloat16", "bfloat16"),
             ("bf16-fp32w", "bfloat16", "float32"), ("fp16", "float16", "float16"),
             ("fp16-fp32w", "float16", "float32"))
CONV_DTYPES = (("fp32", "float32"), ("bf16", "bfloat16"))
TRANSPOSES = ("nchwToNhwc", "nhwcToNchw")


def layer_shapes(torch: Any, batch: int) -> tuple[dict[tuple[int, int, int], int],
                                                   dict[tuple[int, ...], int]]:
    """ResNet-50's distinct batch norms (n, c, side) and convolutions (n, c, side, k, r,
    stride, padding), each with its count, from forward hooks on a meta-device module."""
    import torch_flops

    norms: dict[tuple[int, int, int], int] = {}
    convs: dict[tuple[int, ...], int] = {}

    def hook(mod: Any, args: tuple[Any, ...], _out: Any) -> None:
        if not isinstance(mod, (torch.nn.BatchNorm2d, torch.nn.Conv2d)):
            return
        n, c, side = args[0].shape[0], args[0].shape[1], args[0].shape[2]
        if isinstance(mod, torch.nn.BatchNorm2d):
            norms[(n, c, side)] = norms.get((n, c, side), 0) + 1
        elif isinstance(mod, torch.nn.Conv2d):
            key = (n, c, side, mod.out_channels, mod.kernel_size[0], mod.stride[0],
                   mod.padding[0])
            convs[key] = convs.get(key, 0) + 1
    with torch.device("meta"):
        module = torch_flops.resnet50()
        for m in module.modules():
            m.register_forward_hook(hook)
        module(torch.empty(batch, 3, 224, 224))
    return norms, convs


def profiled(torch: Any, fn: Callable[[], object],
             kernel_times: Callable[..., dict[str, Any]]) -> list[tuple[str, float, float]]:
    """The CUDA kernels of a call of ``fn``, profiled over ``PROFILED_CALLS`` calls by
    ``kernel_times`` (gpu_measure.py's): (name, microseconds a call, calls a call), longest
    first."""
    fn()
    found = kernel_times(torch, lambda: [fn() for _ in range(PROFILED_CALLS)])["kernels"]
    kernels = [(name[:110].replace(";", ",").replace("=", ":"), k["s"] * 1e6 / PROFILED_CALLS,
                k["calls"] / PROFILED_CALLS) for name, k in found.items() if k["s"] > 0]
    kernels.sort(key=lambda k: -k[1])
    return kernels


def bn_functions(torch: Any, n: int, c: int, side: int, dt: Any, wdt: Any,
                 channels_last: bool, dev: str) -> dict[str, Callable[[], object]]:
    """A batch norm's training forward, eval forward and backward (module docstring)."""
    import torch.nn.functional as F

    x = torch.randn(n, c, side, side, device=dev, dtype=dt)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    w = torch.ones(c, device=dev, dtype=wdt, requires_grad=True)
    b = torch.zeros(c, device=dev, dtype=wdt, requires_grad=True)
    mean, var = torch.zeros(c, device=dev, dtype=wdt), torch.ones(c, device=dev, dtype=wdt)
    xg = x.detach().requires_grad_()
    y = F.batch_norm(xg, mean, var, w, b, True, 0.1, 1e-5)
    dy = torch.randn_like(y)

    def train() -> object:
        with torch.no_grad():
            return F.batch_norm(x, mean, var, w, b, True, 0.1, 1e-5)

    def evaluate() -> object:
        with torch.no_grad():
            return F.batch_norm(x, mean, var, w, b, False, 0.1, 1e-5)
    return {"train": train, "eval": evaluate,
            "backward": lambda: torch.autograd.grad(y, (xg, w, b), dy, retain_graph=True)}


def conv_functions(torch: Any, key: tuple[int, ...], dt: Any, channels_last: bool,
                   dev: str) -> dict[str, Callable[[], object]]:
    """A convolution's forward and backward (module docstring)."""
    n, c, side, k, r, stride, pad = key
    conv = torch.nn.Conv2d(c, k, r, stride=stride, padding=pad, bias=False).to(dev, dt)
    x = torch.randn(n, c, side, side, device=dev, dtype=dt)
    if channels_last:
        conv = conv.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    xg = x.detach().requires_grad_(c != 3)
    y = conv(xg)
    dy = torch.randn_like(y)
    wrt = (xg, conv.weight) if c != 3 else (conv.weight,)

    def forward() -> object:
        with torch.no_grad():
            return conv(x)
    return {"forward": forward,
            "backward": lambda: torch.autograd.grad(y, wrt, dy, retain_graph=True)}


def measure_resnet_kernels(torch: Any, out: Path, quick: bool, dev: str,
                           time_calls: Callable[..., dict[str, float]],
                           kernel_times: Callable[..., dict[str, Any]],
                           log: Callable[[str], None]) -> None:
    """``bnorms.csv`` and ``convkernels.csv`` (module docstring)."""
    norms, convs = layer_shapes(torch, 2 if quick else BATCH)
    checks = {} if quick else {k: v for b in CHECK_BATCHES for k, v in
                               layer_shapes(torch, b)[0].items()}
    if quick:
        norms = dict(list(norms.items())[:2])
        convs = dict(list(convs.items())[:2])
    rows: list[dict[str, Any]] = []
    for dname, dt, wdt in BN_DTYPES:
        for cl in (False, True):
            rows += _norm_rows(torch, norms, dname, dt, wdt, cl, dev, time_calls, kernel_times)
            _write(out / "bnorms.csv", rows)
            log(f"bnorms {dname} {'nhwc' if cl else 'nchw'}: done")
    convs_rows: list[dict[str, Any]] = []
    for dname, dt in CONV_DTYPES:
        for cl in (False, True):
            for key, count in convs.items():
                for mode, fn in conv_functions(torch, key, getattr(torch, dt), cl, dev).items():
                    convs_rows.append(_row(torch, fn, time_calls, kernel_times)
                                      | {"op": "conv", "mode": mode, "dtype": dname,
                                         "layout": "nhwc" if cl else "nchw",
                                         **dict(zip(("n", "c", "side", "k", "r", "stride",
                                                     "pad"), key)), "count": count})
            _write(out / "convkernels.csv", convs_rows)
            log(f"convkernels {dname} {'nhwc' if cl else 'nchw'}: done")
    for dname, dt, wdt in BN_DTYPES[:2]:  # other batches: checks
        for cl in (False, True):
            rows += _norm_rows(torch, checks, dname, dt, wdt, cl, dev, time_calls,
                              kernel_times)
            _write(out / "bnorms.csv", rows)
            log(f"bnorms checks {dname} {'nhwc' if cl else 'nchw'}: done")


def _norm_rows(torch: Any, norms: dict[tuple[int, int, int], int], dname: str, dt: str,
               wdt: str, cl: bool, dev: str, time_calls: Callable[..., dict[str, float]],
               kernel_times: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for (n, c, side), count in norms.items():
        fns = bn_functions(torch, n, c, side, getattr(torch, dt), getattr(torch, wdt), cl, dev)
        for mode, fn in fns.items():
            rows.append(_row(torch, fn, time_calls, kernel_times)
                        | {"op": "batch_norm", "mode": mode, "dtype": dname,
                           "layout": "nhwc" if cl else "nchw", "n": n, "c": c, "side": side,
                           "count": count})
        fns = {}
        if dev == "cuda":
            torch.cuda.empty_cache()
    return rows


def _row(torch: Any, fn: Callable[[], object], time_calls: Callable[..., dict[str, float]],
         kernel_times: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    try:
        kernels = profiled(torch, fn, kernel_times)
        eager = time_calls(torch, fn)
    except Exception as exc:  # noqa: BLE001 - recorded, the next shape goes on
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    transpose = sum(t for name, t, _ in kernels if any(s in name for s in TRANSPOSES))
    return {"kernel_us": f"{sum(t for _, t, _ in kernels):.3f}",
            "transpose_us": f"{transpose:.3f}", "eager_us": f"{eager['best_s'] * 1e6:.3f}",
            "kernels": ";".join(f"{n}={t:.2f}x{c:g}" for n, t, c in kernels)}


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    first = ("op", "mode", "dtype", "layout", "n", "c", "side")
    fields = sorted({k for r in rows for k in r},
                    key=lambda s: (first.index(s) if s in first else len(first), s))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        w.writerows(rows)
