"""The time to expect for a non-GEMM op on a CPU whose entry carries the probe's op costs
(calibration version 4, ``ops``: ``hardware.spec.CpuOpsCalibration``, timed by
``probe.op_costs`` through torch, else numpy). Without them an op on a CPU is predicted at its
roofline time (``analysis.gpu_ops``, basis ``roofline``).

Every op is one call of the library, and::

    t = t_call + max(t_stream, t_work, t_flop)

- ``t_call``: one tiny op's time (``call_s``: Python, dispatch, allocating the output).
- ``t_stream = bytes / R_stream``: the op's bytes (as roofline counts them: each input read
  once, each output written once) at the rate an add reached: ``stream_cache`` when the bytes
  are at most ``RESIDENT_SHARE`` (1/32) of the last-level cache (``llc_mb``), else
  ``stream_dram``. Not the whole LLC, as for a GEMM's working set (``analysis.predict``): in a
  step the GEMMs between two ops stream their weights and activations through the LLC, and a
  framework's ops write fresh outputs; timed in whole fp32 torch steps on the development VM
  (32 MiB L3, 1 thread), GPT-2's 1.2 MB residual add took 100 us (the DRAM add's rate: 89 us;
  in cache: 26 us), ResNet-50's 3-13 MB ReLUs and adds ran at 8 GB/s (DRAM add 13.7, in cache
  51). 1/32 of an LLC is about one core's L2 there.
- ``t_work``: what the op's class costs beyond moving its bytes, from the kernel the probe timed
  for that class (``CLASSES``, one row per kind): ``bytes x e_cal / e / R_class`` for a
  ``transcendental`` (tanh, exp, erf-GELU), ``normalization`` (softmax, layer norm, batch
  norm), ``pooling`` (max pooling) or ``copy`` (a permuted copy: a captured copy the capture
  marks ``strided``, its source laid out unlike its output; one of operands laid out alike is a
  ``streaming`` op, a run) op, its rate ``R_class``
  measured in the calibration's dtype of element size ``e_cal`` and held per element for an op
  of element size ``e`` (the work is per value, not per byte); 0 for a ``streaming`` op; for
  fused attention (``flash-attention`` and its backward, at the forward's rate: the backward is
  not timed) ``FLOPs / (a x P)``, with ``a`` the share of the entry's peak P that torch's
  ``scaled_dot_product_attention`` reached at that key length (linear in log seq between the
  lengths timed, clamped at their ends; with or without the causal mask; at the head dim
  timed, 64, whatever the op's), and decode attention (one query row) streaming.
- ``t_flop = FLOPs / P``: no op outruns the entry's peak, whatever its class measured. It
  decides where nothing else prices the work: fused attention the probe did not time (``probe
  --quick`` times none), which streamed its bytes alone before, 15-20x under its own roofline
  time (GPT-2's at seq 1024 in fp32: 4.4 ms against 68 ms).

A convolution's forward bias (``EPILOGUE_KINDS`` following ``CPU_EPILOGUE_FOLLOWS``) costs
nothing: torch's CPU ``conv2d`` passes it to oneDNN (``ConvBackend::Mkldnn``), which adds it in
the convolution (timed on the development VM, torch 2.13, 2 threads, best of 40 alternating:
a 1 x 1 convolution of 64 x 64 x 28 x 28 to 64 channels 3.29 ms with its bias and 3.30 ms
without, where an ``add_`` of the bias alone takes 0.13 ms; a 3 x 3 one of 8 x 64 x 56 x 56,
10.44 / 10.43 ms against 0.08 ms), basis ``gemm-epilogue``. A Linear's bias is no epilogue on
a CPU: torch's ``addmm`` copies it into the output first (``model.capture``), a pass like any
other op's. A bias gradient stays an op (oneDNN's backward computes a convolution's at about
a read pass: 33.6 against 32.9 ms, median of 20, at 16 x 32 x 112 x 112).

A captured training dropout, which the capture records as the one kernel torch's CUDA runs
(``aten.native_dropout``: x read, y and a 1-byte mask written), is priced as torch's CPU runs it:
``bernoulli_``, ``div_`` and a multiply, 3 calls moving 6 values a value, its backward one
multiply of 3 (``CPU_DECOMPOSED``).

A kind no row maps, or whose class the calibration lacks (numpy cannot time GELU, batch norm,
pooling or attention: ``missing`` says why), streams, and its basis says so:
``calibrated: streaming (unmapped)`` or ``calibrated: streaming (not measured)``. Captured ops
(``aten.<op>``) are looked up by their aten name less ``_foreach_`` and a trailing ``_``, as
``model.capture`` costs them; a ``_foreach_`` op and a captured optimizer op summed over the
parameters pay one call, where torch pays one per parameter. Only the standard library is
imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model.capture_tables import COPIES
from ..model.dtypes import itemsize
from .gpu_ops import EPILOGUE_KINDS, OpPrediction
from .predict import interpolate

if TYPE_CHECKING:
    from ..hardware.spec import CpuOpsCalibration, HardwareSpec
    from ..model.ops import Op

#: the products (``model.ops.FOLLOWS``) whose bias a CPU adds inside them (module docstring)
CPU_EPILOGUE_FOLLOWS = frozenset({"conv"})
STREAMING, COPY, TRANSCENDENTAL = "streaming", "copy", "transcendental"
NORMALIZATION, POOLING, ATTENTION = "normalization", "pooling", "attention"
#: Every class, in the basis ``calibrated: <class>``.
CLASS_NAMES = (STREAMING, COPY, TRANSCENDENTAL, NORMALIZATION, POOLING, ATTENTION)
UNMAPPED = "calibrated: streaming (unmapped)"
RESIDENT_SHARE = 1 / 32  # of the LLC: an op this small streams at the in-cache rate
NOT_MEASURED = "calibrated: streaming (not measured)"

#: op kind -> (class, the calibration's rate that prices it; None: streaming or attention).
#: model.yaml's kinds (``model/ops.ELEMENTWISE``, the layers' own) and captured aten names.
CLASSES: dict[str, tuple[str, str | None]] = {
    # model.yaml's elementwise kinds (model/ops.ELEMENTWISE)
    "relu": (STREAMING, None),               # max(x, 0): one pass
    "gelu": (TRANSCENDENTAL, "gelu"),        # torch's F.gelu default, the erf form
    "silu": (TRANSCENDENTAL, "exp"),         # x * sigmoid(x): an exp a value
    "bias": (STREAMING, None),               # x + b
    "residual": (STREAMING, None),           # x + f(x)
    "gate": (TRANSCENDENTAL, "exp"),         # silu(a) * b: an exp a value
    "layernorm": (NORMALIZATION, "layernorm"),  # row statistics, then a pass
    "rmsnorm": (NORMALIZATION, "layernorm"),  # as layernorm, no mean
    "batchnorm": (NORMALIZATION, "batchnorm"),  # training: channel statistics over N.H.W
    "softmax": (NORMALIZATION, "softmax"),   # row max, exp, sum, divide
    "dropout": (STREAMING, None),            # a random mask: its generator is not timed
    "rotary": (STREAMING, None),             # x cos + rotate_half(x) sin: multiplies, adds
    "rotary-backward": (STREAMING, None),
    "kv-cache-write": (STREAMING, None),     # the new tokens' K and V copied into the cache
    "relu-backward": (STREAMING, None),      # dy * (x > 0)
    "gelu-backward": (TRANSCENDENTAL, "gelu"),  # erf and exp again: the forward's rate
    "silu-backward": (TRANSCENDENTAL, "exp"),   # sigmoid again
    "bias-backward": (STREAMING, None),      # a column sum: one read pass
    "residual-backward": (STREAMING, None),  # two gradients summed
    "gate-backward": (TRANSCENDENTAL, "exp"),   # silu(a) again
    "layernorm-backward": (NORMALIZATION, "layernorm"),  # two row reductions and a pass
    "rmsnorm-backward": (NORMALIZATION, "layernorm"),
    "batchnorm-backward": (NORMALIZATION, "batchnorm"),  # two channel reductions and a pass
    "softmax-backward": (STREAMING, None),   # p * (dp - sum(dp p)): a row sum, no exp
    "dropout-backward": (STREAMING, None),   # dy * mask
    # model.yaml's other layer ops
    "maxpool2d": (POOLING, "max_pool2d"),    # 3x3 windows over NCHW, as timed
    "maxpool2d-backward": (STREAMING, None),  # dY scattered by the saved argmax: one pass
    "avgpool2d": (POOLING, "max_pool2d"),    # the same window walk as max pooling
    "avgpool2d-backward": (STREAMING, None),  # dY spread over each window
    "flash-attention": (ATTENTION, None),    # scaled_dot_product_attention
    "flash-attention-backward": (ATTENTION, None),  # the forward's share (not timed)
    "embedding-gather": (STREAMING, None),   # whole rows copied out of the table
    "embedding-scatter-add": (STREAMING, None),  # rows added back
    "sparse-linear": (STREAMING, None),      # a sparse product: not timed
    "sparse-linear-backward-data": (STREAMING, None),
    "sparse-linear-backward-weight": (STREAMING, None),
    "sgd-update": (STREAMING, None),         # w -= lr g: one pass over the parameters
    "adam-update": (STREAMING, None),        # moments and update: passes, a sqrt a value
    # captured aten ops (model/capture_tables.FLOPS_PER_ELEMENT), by their aten name
    **{name: (STREAMING, None) for name in (  # one pass of arithmetic, compare or fill
        "add", "sub", "mul", "div", "neg", "relu", "threshold_backward", "rsqrt", "sqrt",
        "pow", "where", "maximum", "minimum", "clamp", "clamp_min", "addcmul", "addcdiv",
        "reciprocal", "abs", "sign", "sgn", "lerp", "fill", "zero", "masked_fill", "rsub",
        "eq", "ne", "lt", "gt", "le", "ge", "bitwise_not", "tanh_backward", "sigmoid_backward",
        "floor_divide", "remainder", "bitwise_and", "bitwise_or", "logical_and", "logical_or",
        "logical_not", "ones", "zeros", "full", "ones_like", "zeros_like", "full_like", "arange",
        "new_zeros", "new_ones", "new_full", "bernoulli", "native_dropout",
        "native_dropout_backward")},
    **{name: (STREAMING, None) for name in (  # a reduction: one read pass, a small output
        "sum", "mean", "amax", "amin", "max", "min", "cumsum", "histc", "topk", "sort",
        "argmax", "argmin")},
    **{name: (STREAMING, None) for name in (  # a gather or scatter of whole rows
        "embedding", "embedding_dense_backward", "index_select", "gather", "scatter",
        "scatter_add", "scatter_reduce", "index", "index_put", "index_copy", "index_add",
        "index_fill", "_unsafe_index", "masked_select")},
    **{name: (STREAMING, None) for name in (  # the loss after a log-softmax: a value gathered
        "nll_loss_forward", "nll_loss2d_forward",  # per target; backward, a zero fill and a
        "nll_loss_backward", "nll_loss2d_backward")},  # value written per target
    **{name: (STREAMING, None) for name in (  # multi-pass losses (capture_losses.LOSS_PASSES),
        "mse_loss", "mse_loss_backward", "huber_loss",  # each pass a stream: the log and exp
        "huber_loss_backward", "smooth_l1_loss",  # of the binary cross-entropies (2 of their
        "smooth_l1_loss_backward", "binary_cross_entropy",  # 4-11 values a value) not priced
        "binary_cross_entropy_backward", "binary_cross_entropy_with_logits")},  # apart
    **{name: (STREAMING, None) for name in (  # contiguous pieces written into a new tensor
        "cat", "stack", "constant_pad_nd", "tril", "triu", "slice_backward", "select_backward",
        "unfold_backward")},
    **{name: (COPY, "copy") for name in (  # a copy, usually of a permuted or strided view
        "clone", "copy", "_to_copy", "contiguous", "repeat", "roll")},
    "exp": (TRANSCENDENTAL, "exp"),
    "log": (TRANSCENDENTAL, "exp"),          # as costly as exp
    "xlogy": (TRANSCENDENTAL, "exp"),        # x log y: a log a value
    "sigmoid": (TRANSCENDENTAL, "exp"),
    "sin": (TRANSCENDENTAL, "exp"),          # one polynomial a value, as exp
    "cos": (TRANSCENDENTAL, "exp"),
    "tanh": (TRANSCENDENTAL, "tanh"),        # Hugging Face's GPT-2 GELU runs one
    "gelu_backward": (TRANSCENDENTAL, "gelu"),  # (gelu, silu: the rows above)
    "silu_backward": (TRANSCENDENTAL, "exp"),
    "_softmax": (NORMALIZATION, "softmax"),
    "_safe_softmax": (NORMALIZATION, "softmax"),
    "_log_softmax": (NORMALIZATION, "softmax"),
    "_softmax_backward_data": (STREAMING, None),
    "_log_softmax_backward_data": (STREAMING, None),
    "native_layer_norm": (NORMALIZATION, "layernorm"),
    "native_layer_norm_backward": (NORMALIZATION, "layernorm"),
    # a group norm: a layer norm's statistics over each group (the probe times a layer norm)
    "native_group_norm": (NORMALIZATION, "layernorm"),
    "native_group_norm_backward": (NORMALIZATION, "layernorm"),
    "native_batch_norm": (NORMALIZATION, "batchnorm"),  # training: batch statistics
    "_native_batch_norm_legit": (NORMALIZATION, "batchnorm"),
    "native_batch_norm_backward": (NORMALIZATION, "batchnorm"),
    "_native_batch_norm_legit_no_training": (STREAMING, None),  # eval: scale and shift
    "max_pool2d_with_indices": (POOLING, "max_pool2d"),
    "max_pool2d_with_indices_backward": (STREAMING, None),
    "avg_pool2d": (POOLING, "max_pool2d"),
    "avg_pool2d_backward": (STREAMING, None),
    "_adaptive_avg_pool2d": (STREAMING, None),  # a global mean per channel: one read pass
    "_adaptive_avg_pool2d_backward": (STREAMING, None),
    # a 3-D map's: the probe times 2-D windows; a 3-D window walks its planes the same way
    "max_pool3d_with_indices": (POOLING, "max_pool2d"),
    "max_pool3d_with_indices_backward": (STREAMING, None),
    "avg_pool3d": (POOLING, "max_pool2d"),
    "avg_pool3d_backward": (STREAMING, None),
    "_adaptive_avg_pool3d": (STREAMING, None),
    "_adaptive_avg_pool3d_backward": (STREAMING, None),
    # a weight norm: a pass over the filters, a sum a channel, and a pass writing them: the
    # filters stream (no kernel of the probe's is like it)
    "_weight_norm_interface": (STREAMING, None),
    "_weight_norm_interface_backward": (STREAMING, None),
}


#: Captured ops recorded as the one kernel torch's CUDA runs that torch's CPU runs as several
#: calls instead (``model.capture._fused_dropout``): by kind, the calls and the values of the
#: op's dtype they move a value, where the capture counted 2 values and a 1-byte mask a value.
#: A training dropout: ``empty_like(x).bernoulli_`` writes the noise (1 value), ``div_`` (2),
#: ``x * noise`` (3): 3 calls, 6 values; its backward ``dY * noise``: 1 call, 3 values
#: (aten/src/ATen/native/Dropout.cpp, ``_dropout_impl``: ``is_fused_kernel_acceptable`` takes
#: the fused kernel on CUDA only).
CPU_DECOMPOSED = {"aten.native_dropout": (3, 6), "aten.native_dropout_backward": (1, 3)}


def _as_cpu_runs(op: Op, dtype: str) -> tuple[float, int]:
    """The bytes and calls of ``op`` as torch's CPU runs it (``CPU_DECOMPOSED``); any other op's
    own bytes in one call."""
    if op.kind not in CPU_DECOMPOSED:
        return float(op.bytes), 1
    calls, per_value = CPU_DECOMPOSED[op.kind]
    e = itemsize(op.dtype or dtype)
    return per_value * e * op.bytes / (2 * e + 1), calls


def base_kind(kind: str) -> str:
    """The name ``CLASSES`` knows ``kind`` by: a captured ``aten.<op>`` less ``_foreach_`` and
    a trailing ``_`` (``aten._foreach_add_`` -> ``add``), as ``model.capture`` costs it."""
    if not kind.startswith("aten."):
        return kind
    return kind.removeprefix("aten.").removeprefix("_foreach_").rstrip("_")


def class_of(kind: str) -> tuple[str, str | None] | None:
    """``kind``'s (class, rate key), or None for a kind no row maps."""
    return CLASSES.get(base_kind(kind))


def cpu_ops_of(hardware: HardwareSpec) -> CpuOpsCalibration | None:
    """The probe's op costs of a CPU entry, or None (then ops stay at their roofline time)."""
    calibration = hardware.calibration
    if hardware.kind != "cpu" or calibration is None:
        return None
    return calibration.cpu_ops


def predict_cpu_op(op: Op, ops: CpuOpsCalibration, dtype: str, peak: float,
                   llc_bytes: float | None) -> OpPrediction:
    """The time to expect for ``op`` (module docstring); ``peak`` is the report dtype's."""
    if op.kind in EPILOGUE_KINDS and op.follows in CPU_EPILOGUE_FOLLOWS:
        return OpPrediction(0.0, "gemm-epilogue", {})
    nbytes, calls = _as_cpu_runs(op, dtype)
    resident = llc_bytes is not None and nbytes <= RESIDENT_SHARE * llc_bytes
    stream_gbs = ops.rates_gbs["stream_cache" if resident else "stream_dram"]
    stream_s = nbytes / (stream_gbs * 1e9)
    found = class_of(op.kind)
    if found is not None and found[0] == COPY and not op.strided and base_kind(
            op.kind) in COPIES:
        found = (STREAMING, None)  # a copy of operands laid out alike: one run, a stream
    name, key = found if found is not None else (STREAMING, None)
    basis = f"calibrated: {name}" if found is not None else UNMAPPED
    work_s, share = 0.0, 0.0
    if name == ATTENTION:
        table = ops.attention_causal if op.attention and op.attention.causal else ops.attention
        if op.attention is None or op.attention.q != op.attention.s:
            basis = f"calibrated: {STREAMING}"  # decode: one query row streams its KV cache
        elif not table:
            basis = NOT_MEASURED
        else:
            share = interpolate(table, op.attention.s)
            work_s = op.flops / (share * peak)
    elif key is not None and key in ops.rates_gbs:
        work_s = nbytes * itemsize(ops.dtype) / itemsize(dtype) / (ops.rates_gbs[key] * 1e9)
    elif key is not None:
        basis = NOT_MEASURED
    flop_s = op.flops / peak
    terms = {"call_s": calls * ops.call_s, "stream_s": stream_s, "work_s": work_s,
             "flop_s": flop_s, "resident": float(resident), "peak_share": share}
    return OpPrediction(calls * ops.call_s + max(stream_s, work_s, flop_s), basis, terms)


def op_sources(ops: CpuOpsCalibration) -> dict[str, Any]:
    """The JSON ``op_prediction`` object of a CPU entry with op costs: what the probe measured,
    through which library, and what it could not."""
    return {"basis": "calibrated", "library": ops.library, "dtype": ops.dtype,
            "threads": ops.threads, "call_s": ops.call_s, "rates_gbs": dict(ops.rates_gbs),
            "attention": {str(seq): share for seq, share in ops.attention},
            "attention_causal": {str(seq): share for seq, share in ops.attention_causal},
            "attention_head_dim": ops.attention_head_dim or None,
            "missing": dict(ops.missing), "sources": {"ops": "calibration"}}
