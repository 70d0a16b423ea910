"""How long torch's and cuDNN's batch-norm kernels take on a GPU: the part of
``analysis.gpu_ops`` for a captured batch norm over a map (``BATCH_NORM_MODES``; the capture
keeps the map's channels, values a channel and layout, ``Op.norm``) and a model.yaml
``batchnorm``'s training forward and backward (its map taken channels-last, fp32 weights under a
16-bit map: ``layers.batchnorm``).

Torch picks the kernels by dtype and layout (pytorch/pytorch aten/src/ATen/native/
Normalization.cpp; ``BATCH_NORM_SOURCE``): torch 2.11 with cuDNN 9.19 on a lent H100 ran an fp32
batch norm, and an fp16 one with fp32 weights (autocast's, ``NormShape.mixed``), through cuDNN,
and a bf16 one (with bf16 or fp32 weights) and an fp16 one with fp16 weights through its own
kernels, each with other kernels for NCHW and channels_last maps (benchmarks/data/
h100_live_bnorms_fp16.csv: the fp16 ones at one map, as fast as bf16's and fp32's on the same
kernels). For ResNet-50's maps (benchmarks/data/h100_live_bnorms.csv):

- fp32 (and fp16 under fp32 weights) NCHW: one cuDNN kernel a pass
  (``bn_fw_tr_1C11_kernel_NCHW`` or ``_singleread`` training, ``bn_fw_inf_1C11_kernel_NCHW`` in
  eval, ``bn_bw_1C11_kernel_new`` or ``_singleread`` backward), the training and backward ones a
  channel to a thread block;
- fp32 (alike) channels_last: cuDNN's ``batchnorm_fwtr_nhwc_semiPersist`` (and a memset),
  ``bn_fw_inf_1C11_kernel_NHWC``, ``batchnorm_bwtr_nhwc_semiPersist`` (and a memset);
- bf16 and fp16 NCHW: torch's ``batch_norm_collect_statistics_kernel`` (a channel to a block) then
  ``batch_norm_transform_input_kernel`` and a small update of the running statistics in
  training, the transform and two small kernels in eval, ``batch_norm_backward_kernel`` (a
  channel to a block) backward;
- bf16 and fp16 channels_last: ``batch_norm_collect_statistics_channels_last_kernel`` then
  ``batch_norm_transform_input_channels_last_kernel`` and two small ones in training, the
  transform and two small ones in eval, ``batch_norm_backward_reduce_channels_last_kernel`` then
  ``batch_norm_backward_elemt_channels_last_kernel`` and a small one backward.

None streams: each works through the map's values at a rate of its own, on every SM, or on at
most as many SMs as the map has channels where it runs a channel to a block::

    t = n x t_launch + max(sum over kernels of values / (V_k x min(C, S) x f), bytes / (D x BW))

with n the kernels (``BATCH_NORM_KERNELS``: its main kernels and its small ones), values the
map's (N.C.H.W), C its channels (S for a kernel that does not run a channel to a block), S and f
the SMs and the clock CUDA-core work runs at (``gpu_ops.sm_clocks_per_s``) and V_k
``BATCH_NORM_VALUES_PER_SM_CLOCK``: each kernel's values per busy SM and clock, the geometric
mean over ResNet-50's twelve maps at batch 64 of the values over its profiled time less a 0.9 us
launch (bf16 with bf16 weights and with fp32 weights, as autocast leaves them, ran the same
kernels at the same speed). Checked, never fitted, on the same maps at batch 16 and 256 and on a
lent H200 (the same SMs and clock, 1.43x the bandwidth: ResNet-50's batch norms summed 0.75-1.22x
of the prediction, cuDNN's fp32 channels_last kernels 20-25% faster than on the H100;
``benchmarks/bench_gpu_bnorms.py``). Fitted on one H100 and applied to every GPU at its SMs and
clock, as ``gpu_ops.STRIDED_COPY_VALUES`` is; what the kernels are is torch's and cuDNN's choice
per version. Only the standard library is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model.ops import Op

#: A captured batch norm's pass by its op (as ``model.capture`` names it)
BATCH_NORM_MODES = {"aten.native_batch_norm": "train", "aten._native_batch_norm_legit": "train",
                    "aten._native_batch_norm_legit_no_training": "eval",
                    "aten.native_batch_norm_backward": "backward",
                    # a model.yaml batchnorm's (its map taken channels-last)
                    "batchnorm": "train", "batchnorm-backward": "backward"}
#: (library, layout, pass) -> the main kernels (their names in ``BATCH_NORM_VALUES_PER_SM_CLOCK``)
#: and the small kernels beside them (a launch each: running statistics, memsets)
BATCH_NORM_KERNELS: dict[tuple[str, str, str], tuple[tuple[str, ...], int]] = {
    ("cudnn", "nchw", "train"): (("cudnn-nchw-train",), 0),
    ("cudnn", "nchw", "eval"): (("cudnn-nchw-eval",), 0),
    ("cudnn", "nchw", "backward"): (("cudnn-nchw-backward",), 0),
    ("cudnn", "nhwc", "train"): (("cudnn-nhwc-train",), 1),
    ("cudnn", "nhwc", "eval"): (("cudnn-nhwc-eval",), 0),
    ("cudnn", "nhwc", "backward"): (("cudnn-nhwc-backward",), 1),
    ("torch", "nchw", "train"): (("torch-nchw-statistics", "torch-nchw-transform"), 1),
    ("torch", "nchw", "eval"): (("torch-nchw-transform",), 2),
    ("torch", "nchw", "backward"): (("torch-nchw-backward",), 0),
    ("torch", "nhwc", "train"): (("torch-nhwc-statistics", "torch-nhwc-transform"), 2),
    ("torch", "nhwc", "eval"): (("torch-nhwc-transform",), 2),
    ("torch", "nhwc", "backward"): (("torch-nhwc-backward-reduce",
                                     "torch-nhwc-backward-elementwise"), 1),
}
#: The kernels that run a channel to a thread block (on at most C SMs)
PER_CHANNEL = frozenset({"cudnn-nchw-train", "cudnn-nchw-backward", "torch-nchw-statistics",
                         "torch-nchw-backward"})
#: Values a kernel works through per busy SM and clock (module docstring; a lent H100 SXM5,
#: torch 2.11.0+cu130, cuDNN 9.19, 1.98 GHz: benchmarks/data/h100_live_bnorms.csv, batch 64)
BATCH_NORM_VALUES_PER_SM_CLOCK = {
    "cudnn-nchw-train": 0.803, "cudnn-nchw-eval": 0.905, "cudnn-nchw-backward": 0.446,
    "cudnn-nhwc-train": 0.787, "cudnn-nhwc-eval": 1.034, "cudnn-nhwc-backward": 0.616,
    "torch-nchw-statistics": 0.917, "torch-nchw-transform": 1.099, "torch-nchw-backward": 0.421,
    "torch-nhwc-statistics": 1.101, "torch-nhwc-transform": 2.391,
    "torch-nhwc-backward-reduce": 1.624, "torch-nhwc-backward-elementwise": 1.748,
}
BATCH_NORM_SOURCE = ("fitted: a lent H100 SXM5, torch 2.11 and cuDNN 9.19's batch-norm kernels "
                     "on ResNet-50's maps, benchmarks/data/h100_live_bnorms.csv; the library by "
                     "dtype: https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/"
                     "Normalization.cpp")


def batch_norm_kernels(op: Op, dtype: str) -> tuple[tuple[str, ...], int] | None:
    """The main kernels and the small ones a captured batch norm ``op`` runs in ``dtype``
    (``BATCH_NORM_KERNELS``), None for any other op (or a batch norm without its map)."""
    mode = BATCH_NORM_MODES.get(op.kind)
    if mode is None or op.norm is None:
        return None
    library = ("cudnn" if dtype in ("fp32", "tf32") or (dtype == "fp16" and op.norm.mixed)
               else "torch")
    return BATCH_NORM_KERNELS[(library, "nhwc" if op.norm.channels_last else "nchw", mode)]


def batch_norm_s(op: Op, kernels: tuple[str, ...], sms: int, clocks_per_s: float) -> float:
    """The time ``kernels`` take to work through ``op``'s map on a GPU of ``sms`` SMs at
    ``clocks_per_s`` SM clocks a second over them all (module docstring), launches apart."""
    assert op.norm is not None  # batch_norm_kernels: a batch norm with its map
    values = op.norm.channels * op.norm.values
    per_sm = clocks_per_s / sms
    return sum(values / (BATCH_NORM_VALUES_PER_SM_CLOCK[k] * per_sm
                         * (min(op.norm.channels, sms) if k in PER_CHANNEL else sms))
               for k in kernels)
