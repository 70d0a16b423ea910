"""The op-cost kernels the probe times on a CPU: what the ops between the GEMMs cost here, each
through the library a model runs in (torch when it is installed, else numpy), in fp32.

Each maker returns a ``Kernel`` (``kernels.cpu``) whose work is counted as roofline counts the
same op (``model/ops.py``, ``model/capture.py``): every input read once and every output
written once, in bytes, so that ``analysis.cpu_ops`` can divide an op's bytes by the rate of
its class. Each is run once and checked against a reference before it is timed. Outputs are
allocated by each call, as a framework's ops allocate theirs, except the two streaming adds,
which write into a tensor made once: in a step the allocator hands a freed block back (glibc
raises its mmap threshold to a freed block's size, up to 32 MiB), so a step's ops rarely fault
their output's pages in, while a fresh 43 MiB output would (an add beyond the LLC ran 4.6 GB/s
allocating against 21.5 into a kept tensor on the development VM).

- ``call``: one tiny op (an add of 16 values): Python, dispatch and allocation, per call;
- ``stream_cache``: ``x + y`` into ``z`` over ``elements`` values each (12 B a value in fp32:
  two read, one written), the three tensors together inside the last-level cache;
- ``stream_dram``: the same over ``dram_elements`` values each, beyond it;
- ``copy``: a permuted copy, (rows, 16, 64) -> (16, rows, 64) made contiguous (what a
  transformer's head split and merge run; 8 B a value);
- ``tanh``, ``exp``, ``gelu`` (the exact erf form): one elementwise function (8 B a value);
- ``softmax`` over rows of 128 (attention scores at seq 128), ``layernorm`` over rows of 1024
  with a weight and a bias (8 B a value, plus the weight, bias and per-row statistics);
- ``batchnorm``: a training-mode batch norm over an NCHW map (batch statistics; 8 B a value);
- ``max_pool2d``: 3x3, stride 2, padding 1 over the same map, the input read and the output
  and its int64 indices written (torch's CPU kernel writes them; the capture counts them);
- ``attention``: ``scaled_dot_product_attention`` on (1, heads, s, head_dim) Q, K and V, work
  in FLOPs as the capture counts a fused attention op (4 s^2 d per head, half that causal).

numpy has no erf, batch norm, pooling or fused attention: without torch those are not timed
(``MISSING_WITHOUT_TORCH`` says why); numpy's softmax and layernorm are its several passes,
and its ufuncs run on one thread. Libraries are imported inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..errors import KernelCheckError
from .cpu import Kernel

SOFTMAX_ROW = 128
LAYERNORM_ROW = 1024
COPY_HEADS, COPY_DIM = 16, 64
INDEX_BYTES = 8  # max pooling's int64 indices
MISSING_WITHOUT_TORCH = {
    "gelu": "numpy has no erf (the exact GELU); timed only through torch",
    "batchnorm": "numpy has no batch norm; timed only through torch",
    "max_pool2d": "numpy has no pooling; timed only through torch",
    "attention": "numpy has no fused attention (scaled_dot_product_attention); timed only "
                 "through torch",
}


@dataclass(frozen=True)
class OpSizes:
    """The sizes the op kernels run at (``probe.plan.Plan`` holds them per preset)."""

    elements: int  # values per tensor, in cache
    dram_elements: int  # values per tensor of stream_dram
    nchw: tuple[int, int, int, int]  # the map of batchnorm and max_pool2d
    heads: int
    head_dim: int
    seqs: tuple[int, ...]


def torch_available() -> bool:
    """Whether a torch with ``scaled_dot_product_attention`` (2.0 on) imports here: the op costs
    then come from it."""
    from .torch_cpu import installed

    if not installed():
        return False
    import torch

    functional = getattr(getattr(torch, "nn", None), "functional", None)
    return hasattr(functional, "scaled_dot_product_attention")


def threads(library: str) -> int:
    """The threads ``library``'s ops run on: torch's intra-op pool; numpy's ufuncs one."""
    if library == "torch":
        import torch

        return int(torch.get_num_threads())
    return 1


def rate_kernels(library: str, sizes: OpSizes) -> dict[str, Callable[[], Kernel]]:
    """``call`` and every rate kernel ``library`` can run (``OP_RATE_KEYS`` less the missing
    ones), each a maker, so that one kernel's tensors are freed before the next is made."""
    makers = _TORCH if library == "torch" else _NUMPY
    return {key: partial(make, sizes) for key, make in makers.items()}


def _elementwise_check(name: str, x: Any, y: Any, ref: Callable[[float], float]) -> None:
    """``y`` holds ``ref`` of ``x`` at a few positions (as float64 in Python)."""
    n = len(x)
    for i in sorted({0, n // 3, n // 2, n - 1}):
        want, got = ref(float(x[i])), float(y[i])
        if not math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-5):
            raise KernelCheckError(f"op kernel {name}: value {i} is {got}, expected {want}")


def _gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


FUNCTIONS: dict[str, Callable[[float], float]] = {"tanh": math.tanh, "exp": math.exp,
                                                  "gelu": _gelu}
E = 4  # fp32: the op kernels' element size


def _kernel(label: str, call: Callable[[], Any], work: float, unit: str = "B") -> Kernel:
    """A Kernel that calls ``call`` once per loop."""
    def run(loops: int) -> None:
        for _ in range(loops):
            call()
    return Kernel(label, run, float(work), unit)


# -- torch --------------------------------------------------------------------------------


def _randn(*shape: int) -> Any:
    import torch

    return torch.randn(*shape, generator=torch.Generator().manual_seed(len(shape)),
                       dtype=torch.float32)


def _torch_call(sizes: OpSizes) -> Kernel:
    import torch

    a = torch.ones(16)
    if float(torch.add(a, a)[0]) != 2.0:
        raise KernelCheckError("op kernel call: 1 + 1 is not 2")
    return _kernel("torch tiny add (per call)", lambda: torch.add(a, a), 1.0, "call")


def _torch_stream(count: int, key: str) -> Kernel:
    import torch

    x, y, z = _randn(count), _randn(count) + 1.0, torch.empty(count)
    torch.add(x, y, out=z)
    _check_sum(key, x, y, z)
    return _kernel(f"torch add {3 * count * E / 2**20:.1f} MiB",
                   lambda: torch.add(x, y, out=z), 3 * count * E)


def _check_sum(key: str, x: Any, y: Any, out: Any) -> None:
    for i in (0, len(x) // 2, len(x) - 1):
        if not math.isclose(float(out[i]), float(x[i]) + float(y[i]), rel_tol=1e-6,
                            abs_tol=1e-6):
            raise KernelCheckError(f"op kernel {key}: wrong sum")


def _copy_rows(sizes: OpSizes) -> int:
    return max(1, sizes.elements // (COPY_HEADS * COPY_DIM))


def _check_copy(x: Any, y: Any) -> None:
    rows = x.shape[0]
    if (y[COPY_HEADS - 1, rows - 1] != x[rows - 1, COPY_HEADS - 1]).any():
        raise KernelCheckError("op kernel copy: the permuted copy misplaced a row")


def _torch_copy(sizes: OpSizes) -> Kernel:
    x = _randn(_copy_rows(sizes), COPY_HEADS, COPY_DIM)
    _check_copy(x, x.transpose(0, 1).contiguous())
    return _kernel(f"torch permuted copy {x.numel()} values",
                   lambda: x.transpose(0, 1).contiguous(), 2 * x.numel() * E)


def _torch_function(key: str) -> Callable[[OpSizes], Kernel]:
    def make(sizes: OpSizes) -> Kernel:
        import torch
        import torch.nn.functional as F

        x = _randn(sizes.elements)
        call = {"tanh": lambda: torch.tanh(x), "exp": lambda: torch.exp(x),
                "gelu": lambda: F.gelu(x)}[key]
        _elementwise_check(key, x.numpy(), call().numpy(), FUNCTIONS[key])
        return _kernel(f"torch {key} {sizes.elements} values", call, 2 * sizes.elements * E)
    return make


def _torch_softmax(sizes: OpSizes) -> Kernel:
    import torch

    x = _randn(max(1, sizes.elements // SOFTMAX_ROW), SOFTMAX_ROW)
    _check_softmax(x.numpy(), torch.softmax(x, -1).numpy())
    return _kernel(f"torch softmax {x.numel()} values", lambda: torch.softmax(x, -1),
                   2 * x.numel() * E)


def _layernorm_bytes(rows: int) -> int:
    """Read x, the weight and the bias; write y and each row's mean and rstd, as the capture
    counts native_layer_norm."""
    return (2 * rows * LAYERNORM_ROW + 2 * LAYERNORM_ROW + 2 * rows) * E


def _torch_layernorm(sizes: OpSizes) -> Kernel:
    import torch.nn.functional as F

    rows = max(1, sizes.elements // LAYERNORM_ROW)
    x, w, b = _randn(rows, LAYERNORM_ROW), _randn(LAYERNORM_ROW), _randn(LAYERNORM_ROW)
    shape = (LAYERNORM_ROW,)
    _check_layernorm(x.numpy(), F.layer_norm(x, shape, w, b).numpy(), w.numpy(), b.numpy())
    return _kernel(f"torch layernorm {x.numel()} values", lambda: F.layer_norm(x, shape, w, b),
                   _layernorm_bytes(rows))


def _torch_batchnorm(sizes: OpSizes) -> Kernel:
    import torch
    import torch.nn.functional as F

    x = _randn(*sizes.nchw)
    c = sizes.nchw[1]
    w, b, mean, var = torch.ones(c), torch.zeros(c), torch.zeros(c), torch.ones(c)

    def norm() -> Any:
        return F.batch_norm(x, mean, var, w, b, training=True, momentum=0.0)

    _check_batchnorm(x.numpy(), norm().numpy())
    # read x, the weight, the bias and the running statistics; write y and the saved ones
    return _kernel(f"torch batchnorm (training) {tuple(sizes.nchw)}", norm,
                   (2 * x.numel() + 6 * c) * E)


def _torch_max_pool(sizes: OpSizes) -> Kernel:
    import torch.nn.functional as F

    x = _randn(*sizes.nchw)
    y = F.max_pool2d(x, 3, 2, 1)
    _check_pool(x.numpy(), y.numpy())
    return _kernel(f"torch max_pool2d 3x3/2 {tuple(sizes.nchw)}",
                   lambda: F.max_pool2d(x, 3, 2, 1),
                   (x.numel() + y.numel()) * E + y.numel() * INDEX_BYTES)


_TORCH: dict[str, Callable[[OpSizes], Kernel]] = {
    "call": _torch_call,
    "stream_cache": lambda sizes: _torch_stream(sizes.elements, "stream_cache"),
    "stream_dram": lambda sizes: _torch_stream(sizes.dram_elements, "stream_dram"),
    "copy": _torch_copy, "tanh": _torch_function("tanh"), "exp": _torch_function("exp"),
    "gelu": _torch_function("gelu"), "softmax": _torch_softmax, "layernorm": _torch_layernorm,
    "batchnorm": _torch_batchnorm, "max_pool2d": _torch_max_pool,
}


def attention_kernel(seq: int, causal: bool, sizes: OpSizes) -> Kernel:
    """torch's ``scaled_dot_product_attention`` on (1, heads, seq, head_dim) fp32 Q, K, V:
    4 heads seq^2 head_dim FLOPs, half that causal (as the capture counts a fused op)."""
    import torch
    import torch.nn.functional as F

    q, k, v = (_randn(1, sizes.heads, seq, sizes.head_dim) * scale
               for scale in (1.0, 0.5, 2.0))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    scores = (q[0, 0].double() @ k[0, 0].double().T) / math.sqrt(sizes.head_dim)
    if causal:
        scores = scores.masked_fill(torch.ones(seq, seq).triu(1).bool(), float("-inf"))
    ref = torch.softmax(scores, -1) @ v[0, 0].double()
    if not torch.allclose(out[0, 0].double(), ref, rtol=1e-3, atol=1e-4):
        raise KernelCheckError(f"op kernel attention s={seq}: differs from the reference")
    flops = 4.0 * sizes.heads * seq * seq * sizes.head_dim * (0.5 if causal else 1.0)
    return _kernel(f"torch sdpa {sizes.heads} x {seq} x {sizes.head_dim}"
                   f"{' causal' if causal else ''}",
                   lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), flops,
                   "FLOP")


# -- numpy (one thread: its ufuncs) -------------------------------------------------------


def _np_randn(*shape: int) -> Any:
    import numpy as np

    return np.random.default_rng(len(shape)).standard_normal(shape, dtype=np.float32)


def _numpy_call(sizes: OpSizes) -> Kernel:
    import numpy as np

    a = np.ones(16, dtype=np.float32)
    if np.add(a, a)[0] != 2.0:
        raise KernelCheckError("op kernel call: 1 + 1 is not 2")
    return _kernel("numpy tiny add (per call)", lambda: np.add(a, a), 1.0, "call")


def _numpy_stream(count: int, key: str) -> Kernel:
    import numpy as np

    x, y, z = _np_randn(count), _np_randn(count) + 1.0, np.empty(count, dtype=np.float32)
    np.add(x, y, out=z)
    _check_sum(key, x, y, z)
    return _kernel(f"numpy add {3 * count * E / 2**20:.1f} MiB", lambda: np.add(x, y, out=z),
                   3 * count * E)


def _numpy_copy(sizes: OpSizes) -> Kernel:
    import numpy as np

    x = _np_randn(_copy_rows(sizes), COPY_HEADS, COPY_DIM)

    def copy() -> Any:
        return np.ascontiguousarray(x.transpose(1, 0, 2))

    _check_copy(x, copy())
    return _kernel(f"numpy permuted copy {x.size} values", copy, 2 * x.size * E)


def _numpy_function(key: str) -> Callable[[OpSizes], Kernel]:
    def make(sizes: OpSizes) -> Kernel:
        import numpy as np

        x = _np_randn(sizes.elements)
        call = {"tanh": lambda: np.tanh(x), "exp": lambda: np.exp(x)}[key]
        _elementwise_check(key, x, call(), FUNCTIONS[key])
        return _kernel(f"numpy {key} {sizes.elements} values", call, 2 * sizes.elements * E)
    return make


def _numpy_softmax(sizes: OpSizes) -> Kernel:
    import numpy as np

    x = _np_randn(max(1, sizes.elements // SOFTMAX_ROW), SOFTMAX_ROW)

    def softmax() -> Any:
        z = np.exp(x - x.max(axis=-1, keepdims=True))
        return z / z.sum(axis=-1, keepdims=True)

    _check_softmax(x, softmax())
    return _kernel(f"numpy softmax {x.size} values (several passes)", softmax, 2 * x.size * E)


def _numpy_layernorm(sizes: OpSizes) -> Kernel:
    import numpy as np

    rows = max(1, sizes.elements // LAYERNORM_ROW)
    x, w, b = _np_randn(rows, LAYERNORM_ROW), _np_randn(LAYERNORM_ROW), _np_randn(LAYERNORM_ROW)

    def layernorm() -> Any:
        centred = x - x.mean(axis=-1, keepdims=True)
        rstd = 1.0 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + 1e-5)
        return centred * rstd * w + b

    _check_layernorm(x, layernorm(), w, b)
    return _kernel(f"numpy layernorm {x.size} values (several passes)", layernorm,
                   _layernorm_bytes(rows))


_NUMPY: dict[str, Callable[[OpSizes], Kernel]] = {
    "call": _numpy_call,
    "stream_cache": lambda sizes: _numpy_stream(sizes.elements, "stream_cache"),
    "stream_dram": lambda sizes: _numpy_stream(sizes.dram_elements, "stream_dram"),
    "copy": _numpy_copy, "tanh": _numpy_function("tanh"), "exp": _numpy_function("exp"),
    "softmax": _numpy_softmax, "layernorm": _numpy_layernorm,
}


def _check_softmax(x: Any, y: Any) -> None:
    row = [math.exp(v) for v in (float(t) - max(map(float, x[0])) for t in x[0])]
    total = sum(row)
    for j in (0, len(row) // 2, len(row) - 1):
        if not math.isclose(float(y[0][j]), row[j] / total, rel_tol=1e-4, abs_tol=1e-7):
            raise KernelCheckError("op kernel softmax: differs from the reference")


def _check_layernorm(x: Any, y: Any, w: Any, b: Any) -> None:
    row = [float(v) for v in x[-1]]
    mean = sum(row) / len(row)
    var = sum((v - mean) ** 2 for v in row) / len(row)
    for j in (0, len(row) - 1):
        want = (row[j] - mean) / math.sqrt(var + 1e-5) * float(w[j]) + float(b[j])
        if not math.isclose(float(y[-1][j]), want, rel_tol=1e-3, abs_tol=1e-4):
            raise KernelCheckError("op kernel layernorm: differs from the reference")


def _check_batchnorm(x: Any, y: Any) -> None:
    values = [float(v) for v in x[:, 0].reshape(-1)]
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    want = (float(x[0, 0, 0, 0]) - mean) / math.sqrt(var + 1e-5)
    if not math.isclose(float(y[0, 0, 0, 0]), want, rel_tol=1e-3, abs_tol=1e-4):
        raise KernelCheckError("op kernel batchnorm: differs from the reference")


def _check_pool(x: Any, y: Any) -> None:
    """Output (0, c, i, j) of a 3x3, stride 2, padding 1 max pool at a few places."""
    _, channels, h, w = x.shape
    for c, i, j in {(0, 0, 0), (channels - 1, y.shape[2] - 1, y.shape[3] - 1),
                    (channels // 2, y.shape[2] // 2, y.shape[3] // 2)}:
        window = [float(x[0, c, r, s]) for r in range(max(0, 2 * i - 1), min(h, 2 * i + 2))
                  for s in range(max(0, 2 * j - 1), min(w, 2 * j + 2))]
        if float(y[0, c, i, j]) != max(window):
            raise KernelCheckError("op kernel max_pool2d: differs from the reference")
