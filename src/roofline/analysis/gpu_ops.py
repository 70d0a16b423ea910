"""The time to expect for a non-GEMM op (elementwise, reduction, norm, softmax, embedding
gather, optimizer update, fused attention) on a GPU, beside its roofline bound.

On a CPU entry an op's prediction is its roofline time (basis ``roofline``). On a GPU entry
every op is one kernel (a captured softmax or layer norm backward two, ``KERNELS``, below),
and::

    t = t_launch + max(t_flop, bytes / (D x BW))

(a captured op torch runs as several kernels, ``KERNELS``: each kernel's launch and stream in
turn, the first also bound by its FLOPs and, for a captured layer norm, its row passes,
``ROW_PASSES`` below, and for a captured softmax forward or backward its values at the rate its
row's width allows and its re-reads past half the L2, ``analysis.gpu_softmax``)

- ``t_launch``: the per-kernel cost the GPU does not hide, ``predict.LAUNCH_LATENCY_S`` (NVIDIA's
  CUDA Graphs post: a 2.9 us kernel launched back to back took 3.8 us per kernel).
- ``D``: the share of the DRAM bandwidth BW an elementwise or reduction kernel sustains,
  ``DRAM_FRACTION`` 0.88: a streaming read kernel on an A100 80GB SXM reached 1.80 TB/s of the
  datasheet's 2.04 TB/s, 88% by Nsight Compute, and the same thread cites NVIDIA's GTC material
  where no kernel passed about 90% (``DRAM_FRACTION_SOURCE``). One figure for every NVIDIA GPU
  and for reductions too (a reduction reads its input and writes a far smaller output, so it
  streams like an elementwise kernel).
- ``t_flop``: for every op but fused attention, FLOPs / P (the peak of the report's dtype;
  these ops are memory-bound, basis ``streaming``). For a ``flash-attention`` op (and its
  backward) FLOPs / (a x P), with the share a of the peak its authors published
  (``analysis.attention_rates``), chosen by these rules, the first that applies:

  1. decode (one query row against a KV cache: no published figure is for it): basis
     ``streaming``, as an elementwise kernel;
  2. fp16 or bf16 on a Hopper GPU: FlashAttention-3's published rate (H100 SXM5) for the pass,
     the causal mask (backward: the unmasked figure, the only one published, times the share
     the causal forward keeps of the unmasked one, ``causal_share``), the head dimension
     and the sequence length, linear in log2 of each between the published points and clamped
     at their ends (head dim 64..256 forward, 64..128 backward; seq 512..16k; the backward
     below 512 goes on at its first doubling's slope down to ``BACKWARD_SHORTEST``), as a share
     of H100 SXM5's peak; basis ``flash-attention-3``;
  3. fp16 or bf16 on an Ampere GPU: FlashAttention-2's best published share of the A100's peak
     for the pass, 73% forward and 63% backward, at every shape (optimistic at short
     sequences); basis ``flash-attention-2``;
  4. otherwise (another architecture or dtype; no published figure): the sustained share of the
     peak the GPU GEMM model uses for its math unit (``gpu_gemm.FITTED``: Tensor-Core or
     CUDA-core fraction, times the share of its peak at the clock the board holds,
     ``peak_share``);
     basis ``gemm-sustained``.

  Rules 2-4 (and the memory-efficient kernel's rate, below) are rates over whole blocks of
  queries and keys: at a length off a multiple of the kernel's blocks (``ATTENTION_TILES``) its
  last blocks are computed in full, so the share is times ``tile_share`` (ViT's 197 tokens:
  (197 / 256)^2 = 0.59).

  A fused attention that reads a mask for every score (a padded batch's, materialized over
  every pair: no causal blocks skipped) or applies dropout to the scores (a training step's)
  does per-score work the published rates leave out: ``t_flop`` gains, for each, the scores it
  computes (FLOPs over 4 x head dim forward, 10 x head dim backward) times
  ``ATTENTION_SCORE_CLOCKS`` SM clocks over S x f (as below). Fitted on a lent H100's torch 2.11
  ``scaled_dot_product_attention`` (cuDNN 9.19's kernels; benchmarks/data/h100_live_masks.csv,
  four shapes: GPT-2's, BERT's, a Llama-2-7B prefill's and FlashAttention-3's at 1k tokens):
  the median over them of the time a mask or dropout added per score; unchecked on other GPUs.
  A mask that needs its gradient (T5's learned position bias) is computed by torch's
  memory-efficient kernel only, which on a Hopper GPU runs at its measured rate instead, by
  pass (``EFFICIENT_TFLOPS``, basis ``memory-efficient``; the mask's reading included), its
  dropout at ``EFFICIENT_DROPOUT_CLOCKS`` a score (the same H100, a second run: data/
  h100_live_masks_repeat.csv); elsewhere rules 2-4 and the per-score work stand.

A permuted copy (an op ``model.capture`` marks ``strided``: ``contiguous()`` of a transposed
view, or the copy ``torch.matmul`` makes of a head-split Q, K or V) is no stream: torch runs a
copy whose operands are laid out alike through its vectorized elementwise kernel, and any other
through one that computes each value's offsets from the strides, dimension by dimension, with
integer arithmetic (pytorch/pytorch aten/src/ATen/native/cuda/CUDALoops.cuh,
``gpu_kernel_impl_nocast``: ``launch_vectorized_kernel`` when ``iter.is_contiguous()``, else
``launch_legacy_kernel<128, unroll>`` over an ``OffsetCalculator``, unroll 4 for an element
under 4 bytes, 2 from 4). That work, not DRAM, sets its time::

    t = t_launch + max(bytes / (D x BW), values / (V x S x f))

with ``values`` the elements read and written (bytes over the dtype's size), S the SMs, f the
clock they run CUDA-core work at (``gpu.vector_clock_ghz`` where the entry gives one, else the
boost clock; times ``clock_share`` where it gives a sustained one) and V ``STRIDED_COPY_VALUES``
per SM and clock, by element size: fitted on a lent H100's GPT-2 and BERT forward steps (48
such copies each, torch 2.11; benchmarks/data/h100_live_steps.json), where they moved 0.49
(fp32) and 0.28 (bf16) of the DRAM bandwidth; an H200, with 1.43x the bandwidth, ran the same
copies only 1.01-1.09x faster (basis ``strided-copy``).

A captured softmax backward (``aten._softmax_backward_data``) is two kernels on a GPU: torch's
CUDA implementation multiplies the output gradient by the output into a temporary, then runs its
softmax backward kernel on that temporary and the output (pytorch/pytorch
aten/src/ATen/native/cuda/SoftMax.cu, ``softmax_backward_cuda_out``: ``Tensor tmp = grad *
output;`` then ``host_softmax_backward``), each reading two of the op's tensors and writing one,
so each moves the op's bytes (``KERNELS``; the meta device a capture runs on makes no temporary,
so the capture records one op). On a lent H100 the multiply streamed at 0.90 of the DRAM
bandwidth in GPT-2's bf16 and fp32 training steps, and 0.89 on the H200 (12 calls a step, 2.40 /
4.78 / 1.69 ms: benchmarks/data/h1?0_live_steps.json), as ``DRAM_FRACTION`` has it; as a
lone op of 2^23 and 2^26 values over rows of 768-8192 (benchmarks/data/h1?0_live_norms.csv,
``bench_gpu_norms.py``) it took 0.91-1.20x of the two kernels' streams on both GPUs. Where the
op carries its row's width (``Op.row``), its softmax kernel is priced by that width, as the
log-softmax backward's one kernel is (``analysis.gpu_softmax``), the multiply streaming beside
it: 0.91-1.03x there on the H100, 0.81-1.04x on the H200.

A captured layer norm backward (``aten.native_layer_norm_backward``) is two kernels too, one
after the other: torch computes dX (reading dY and X, writing dX), then the weight's and bias's
gradients in a column reduction that reads dY and X again (aten/src/ATen/native/cuda/
layer_norm_kernel.cu, ``LayerNormBackwardKernelImplInternal``:
``layer_norm_grad_input_kernel[_vectorized]``, then ``GammaBetaBackward*Kernel``). Where the
capture keeps the rows and columns its weight gradients sum over (``Op.summed``), each kernel
is priced by what torch launches (``analysis.gpu_layer_norm``: dX's stream with its re-reads
past 4 KB rows, the gradients' ceil(columns / 32) blocks or their stream, and past 65,536 rows
the split torch makes; basis ``layer-norm-kernels``); a captured one without weight gradients
as ``KERNELS`` says, the op's bytes, then 2/3 of them; a model.yaml ``layernorm-backward``, which
says nothing of the framework, streams as one kernel.

Torch's layer norm kernels are no plain stream either: one block a row passes each row through
the SM more than once, the forward (``vectorized_layer_norm_kernel``) reading X for the
statistics and again to write Y, the backward's dX kernel reading X and dY for its two sums and
again to write dX. Their bytes (``ROW_PASSES``: 3/2 and 5/3 of the op's) at
``ROW_BYTES_PER_SM_CLOCK`` on every SM bound that kernel (basis ``row-passes``)::

    t_row = p x bytes / (B_row x S x f)

with S the SMs and f their clock as for a permuted copy; over a few rows (a captured layer norm
forward keeps them, ``Op.summed``) at least the row's rounds of loads, one after the other
(``gpu_layer_norm.row_rounds_s``). An H200, with 1.43x an H100's bandwidth
and the same SMs and clock, ran the bf16 forward in the same time within 1.00-1.29x. Fitted on
Hopper only, and applied to every GPU as ``STRIDED_COPY_VALUES`` is; on Ampere, never fitted,
Liger-Kernel's published ``torch.nn.LayerNorm`` fp32 forwards (4096 rows of 1024-16384 on an
A100 SXM4 80GB and an A100 80GB PCIe, benchmarks/data/liger_layer_norm.csv) came within 1.25x
for all 10 (0.96-1.15x; as a stream 1.40-1.74x), the two A100s in the same time though their
bandwidths differ by 5%: the SMs, not DRAM, set it there too. At 2^23 and 2^26 values
(``bench_gpu_norms.py``) the forward came within 1.25x for 80% of the H100's rows and 70% of
the H200's (a stream alone: 15% and 0%). The backward, priced so, came 80% and 50%: its
gradient kernel runs ceil(cols / 32) blocks, too few to stream at narrow rows (32 at 1024
columns on 132 SMs: 24-28% of an H100's bandwidth in bf16), and its dX kernel streams near the
bandwidth up to 4 KB rows, where the row rate, fitted on the forward, charged more: since
``analysis.gpu_layer_norm`` prices those two kernels, 100% on the H100 and 95% on the H200.

Torch's softmax forward over the last dimension (a captured ``aten._softmax`` or
``aten._log_softmax``, ``SOFTMAX_KINDS``) works out each value in fp32 on the SMs, at a rate set
by the row's width and the kernel torch picks for it, and past 9,216 columns may read each row
three times, from DRAM once the rows it holds outgrow half the L2: ``analysis.gpu_softmax``. Its
backward (``SOFTMAX_BACKWARD_KINDS``, where the op carries its row) alike: a warp a row at a
rate by width up to 1,024 columns, then a block a row that reads the gradient once where it
fits shared memory, else twice, the second read from DRAM past half the L2 (``gpu_softmax``).
Basis ``softmax-rows`` where either binds (the row rate over the stream, or re-reads adding to
the stream). A model.yaml ``softmax`` (an unfused attention's scores) says nothing of the
framework and streams.

A captured batch norm over a map (``Op.norm``; a model.yaml ``batchnorm``'s, its map taken
channels-last) runs torch's or cuDNN's kernels for its dtype and layout, the NCHW reductions a
channel to a thread block, each at its own rate per busy SM (``analysis.gpu_batch_norm``, basis
``batch-norm-kernels`` where that work outlasts the stream).

A sum over a matrix's rows or along them (``Op.summed``: a captured ``aten.sum`` or
``aten.mean`` over a contiguous tensor's leading dimensions, its trailing ones or all but its
channels, a captured convolution's and a model.yaml Linear's, transformer projection's or
conv2d's ``bias-backward``, the last as a channels-last map's) runs torch's reduce kernel,
whose blocks load their values in rounds and, where the values are split across blocks, leave
their partial sums for the last block of their outputs to add up: ``analysis.gpu_reduce``,
basis ``reduce-kernel`` where that work adds to the stream.

A Linear's forward ``bias`` op (``EPILOGUE_KINDS`` following ``GPU_EPILOGUE_FOLLOWS``) is no
kernel on a GPU: the GEMM before it adds the bias in its epilogue, as torch's CUDA ``addmm``
does for a Linear's bias through cuBLASLt's bias epilogue (``at::cuda::blas::gemm_and_bias``;
pytorch/pytorch aten/src/ATen/native/cuda/Blas.cpp, ``addmm_out_cuda_impl``: a 1-D contiguous
bias, beta 1, fp32/fp16/bf16, CUDA 11.4 on; ``at::linear`` folds a contiguous 3-D input into
that 2-D ``addmm``), and as XLA and TensorRT fuse it: time 0, basis ``gemm-epilogue``; its
roofline time stays what the op moves unfused. A convolution's bias is a kernel: torch's CUDA
``conv2d`` runs cuDNN's convolution, then ``output.add_(reshape_bias(...))``
(aten/src/ATen/native/Convolution.cpp, ``ConvBackend::Cudnn``); so is a sparse layer's (no GEMM
runs before it).

A calibrated GPU entry (``roofline probe`` on a GPU) supplies its own D and t_launch
(``calibration.gpu_ops``; the probe times no permuted copy: ``STRIDED_COPY_VALUES`` stay the
fitted ones, at the SMs and clock the entry gives); the attention shares stay the published
ones, of the datasheet peak its ``theoretical:`` block keeps (``datasheet_peak``): its own
peaks are the GEMM rates the probe measured, and applied to those the shares put torch's
attention on a lent H100 at 0.5-0.8 of its measured time (benchmarks/data/h100_live_ops.csv).
Only the standard library is imported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..roof import roofline_time_s
from .attention_rates import FA2_AMPERE_FRACTION, FA3_FIGURES, MEASURED_ON_PEAK_TFLOPS, SEQS, Curve
from .gpu_batch_norm import BATCH_NORM_SOURCE, batch_norm_kernels, batch_norm_s
from .gpu_layer_norm import (
    LAYER_NORM_BACKWARD,
    LAYER_NORM_FORWARD,
    LAYER_NORM_SOURCE,
    layer_norm_backward_s,
    row_rounds_s,
)
from .gpu_reduce import REDUCE_SOURCE, row_sum_s, work_s
from .gpu_softmax import (
    L2_PARTITIONS_SOURCE,
    SOFTMAX_BACKWARD_KINDS,
    SOFTMAX_KINDS,
    SOFTMAX_SOURCE,
    kernel_terms,
)
from .predict import LAUNCH_LATENCY_S, LAUNCH_SOURCE, interpolate

#: One Llama-2-7B decode step in plain PyTorch (benchmarks/_decode_step.py: Hugging Face's
#: unfused RMSNorm and rotary embedding, 1,290 kernels at batch 1) on a lent H100 SXM5 (torch
#: 2.11.0+cu130, 2026-11-27; benchmarks/data/h100_live_decode.json): seconds replayed from a CUDA
#: graph (the kernels alone, as an engine launches them) and called eagerly from Python (each
#: kernel's host dispatch and launch too), at batch 1 and a KV cache of 1,024 tokens. Said
#: beside a GPU's decode prediction (``output.times.launch_lines``): the prediction is the
#: kernels' time, and eager PyTorch decoding is host-bound.
EAGER_DECODE_MEASURED = {"kernels": 1290, "graph_s": 7.652e-3, "eager_s": 22.29e-3}

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec
    from ..model.ops import AttentionShape, Op

DRAM_FRACTION = 0.88
DRAM_FRACTION_SOURCE = ("https://forums.developer.nvidia.com/t/"
                        "trouble-to-reach-peak-bandwidth-of-a100/339083")

#: Every op basis, in the JSON's ``predicted_basis`` of an op.
OP_BASES = ("roofline", "streaming", "flash-attention-3", "flash-attention-2", "gemm-sustained",
            "gemm-epilogue", "strided-copy", "row-passes", "softmax-rows", "memory-efficient",
            "batch-norm-kernels", "reduce-kernel", "layer-norm-kernels")
#: Values (elements read and written) a permuted copy moves per SM and clock, by whether its
#: element is 4 bytes or more (torch unrolls its loop 2 deep there, 4 below: module docstring).
#: The geometric mean over a lent H100's GPT-2 and BERT forward steps of each dtype (their
#: copies' profiled kernel time less a 0.9 us launch each), at the 1.98 GHz its SMs held (fp32:
#: 1.61, 1.62; bf16: 1.89, 1.93); checked, never fitted, on the same steps on an H200 (measured
#: / predicted 0.91-0.96) and on the GPT-2 bf16 training step's 84 copies (0.86-0.87 on both
#: GPUs: its backward's copies run faster).
STRIDED_COPY_VALUES = {"wide": 1.6, "narrow": 1.9}
STRIDED_COPY_SOURCE = ("https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/"
                       "CUDALoops.cuh")
#: Captured ops torch runs as more than one kernel on a GPU: each kernel's traffic over the op's
#: bytes, the kernel a row rate binds first. The softmax backward's kernel and the multiply into
#: a temporary torch runs before it, each moving the op's bytes (its kernel's re-reads past the
#: L2 added where the capture keeps its row, ``analysis.gpu_softmax``); the layer norm
#: backward's dX kernel (dY and X read, dX written) and then its weight and bias gradients'
#: kernel, reading dY and X again (module docstring).
KERNELS = {"aten._softmax_backward_data": (1.0, 1.0),
           "aten.native_layer_norm_backward": (1.0, 2 / 3)}
KERNELS_SOURCE = ("https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/"
                  "SoftMax.cu")
#: Captured ops torch runs as a kernel of one block per row that passes each row through the SM
#: more than once (module docstring): the bytes those passes move, over the op's bytes. Layer
#: norm: X read for the statistics, read again and Y written (3 passes over X and Y's 2); its
#: backward's dX kernel: X and dY read for the two sums, read again and dX written (5 over 3).
ROW_PASSES = {"aten.native_layer_norm": 3 / 2, "aten.native_layer_norm_backward": 5 / 3}
#: Bytes one SM moves through such a row kernel per clock (at the clock CUDA-core work runs
#: at): the geometric mean over a lent H100's layer norm forward at 2^23 and 2^26 values, rows of
#: 768-8192, bf16 and fp32 (benchmarks/data/h100_live_norms.csv: 8.4-15.4 per row); checked,
#: never fitted, on the H200's (the same SMs and clock, 1.43x the bandwidth) and on both GPUs'
#: backward (``bench_gpu_norms.py``), and on Liger-Kernel's published A100 forwards
#: (benchmarks/data/liger_layer_norm.csv).
ROW_BYTES_PER_SM_CLOCK = 11.5
#: Ops a product can run in its epilogue: a forward bias add; ``GPU_EPILOGUE_FOLLOWS``: the
#: products (``model.ops.FOLLOWS``) that do so on a GPU (module docstring).
EPILOGUE_KINDS = frozenset({"bias"})
GPU_EPILOGUE_FOLLOWS = frozenset({"linear"})
ATTENTION_KINDS = frozenset({"flash-attention", "flash-attention-backward"})
#: Query and key rows a fused attention kernel computes a block at a time, by pass: a length off
#: a multiple of them computes its last block in full (``tile_share``). The backward's: cuDNN's
#: bprop kernel on a lent H100 (torch 2.11, cuDNN 9.19: ``..._flash_bprop_wgmma_f16_knob_26_
#: 64x64x64``); the forward's 128 x 128, which its times at lengths off 128 fit better than its
#: kernel's name's 64 x 128 (benchmarks/data/h100_live_seqs.csv: 192, 197, 257, 320, 577 and
#: 1025 tokens at head dim 64 took 1.55, 1.55, 2.1, 1.44, 1.22 and 1.43x the rate at the
#: multiples of 128 beside them, where whole 128 x 128 blocks give 1.78, 1.69, 2.23, 1.44, 1.23
#: and 1.26). FlashAttention-3's published lengths (512..16k) are multiples of both.
ATTENTION_TILES = {"forward": (128, 128), "backward": (64, 64)}
#: The shortest length the backward's rate is extrapolated to below FlashAttention-3's 512
#: (``fa3_tflops``): torch's backward on a lent H100 (cuDNN 9.19) ran 94, 161 and 212 TFLOP/s
#: at 128, 256 and 384 tokens, head dim 64, where the published 512-to-1k slope gives 90, 181
#: and 234, and clamping at 512 gave 272 (benchmarks/data/h100_live_seqs.csv); its forward held
#: the published 512 figure there, and stays clamped
BACKWARD_SHORTEST = 128
ATTENTION_TILES_SOURCE = ("fitted: a lent H100 SXM5, torch 2.11 scaled_dot_product_attention "
                          "(cuDNN 9.19) at lengths off 128, benchmarks/data/h100_live_seqs.csv")
#: SM clocks a fused attention spends per score it computes on a mask it reads and on dropout,
#: by pass (module docstring): on the lent H100 (132 SMs at 1.98 GHz) the median added time per
#: score was, forward, 0.88 ps for a boolean mask (0.59-1.11 over the four shapes) and 1.01 ps
#: for dropout 0.1 (0.67-1.35, unmasked, causal and masked alike); backward 0.92 ps (0.29-2.2)
#: and 0.58 ps (-0.5-1.33): times 132 x 1.98e9 clocks a second
ATTENTION_SCORE_CLOCKS = {("forward", "masked"): 0.229, ("forward", "dropout"): 0.264,
                          ("backward", "masked"): 0.239, ("backward", "dropout"): 0.150}
#: TFLOP/s of torch's memory-efficient attention kernel (cutlass, built for sm80) on the lent
#: H100, by pass: what torch runs for a mask that needs its gradient, which cuDNN's and
#: FlashAttention's kernels do not give. The median over the four shapes of
#: benchmarks/data/h100_live_masks_repeat.csv (a bf16 bias over every pair): forward 80-125,
#: backward 75-102 (the highest at head dim 128, Llama-2-7B's prefill shape)
EFFICIENT_TFLOPS = {"forward": 85.2, "backward": 80.1}
#: SM clocks a score that dropout adds in that kernel, by pass: 1.82 ps a score forward
#: (1.79-1.91) and 3.55 backward (3.23-7.88) on the lent H100, times 132 x 1.98e9 clocks a second
EFFICIENT_DROPOUT_CLOCKS = {"forward": 0.476, "backward": 0.928}
EFFICIENT_SOURCE = ("fitted: a lent H100 SXM5, torch 2.11's memory-efficient attention with a "
                    "bias that needs its gradient, benchmarks/data/h100_live_masks_repeat.csv")
ATTENTION_SCORE_SOURCE = ("fitted: a lent H100 SXM5, torch 2.11 scaled_dot_product_attention "
                          "(cuDNN 9.19), benchmarks/data/h100_live_masks.csv")
_FLASH_DTYPES = frozenset({"fp16", "bf16"})


@dataclass(frozen=True)
class OpConstants:
    """The DRAM share ``dram_fraction`` and per-kernel ``launch_s`` ops are predicted with,
    and where they come from (``basis``: ``published`` or ``calibrated``)."""

    dram_fraction: float
    launch_s: float
    basis: str


PUBLISHED = OpConstants(DRAM_FRACTION, LAUNCH_LATENCY_S, "published")


@dataclass(frozen=True)
class OpPrediction:
    """One op's ``time_s``, its ``basis`` (one of ``OP_BASES``) and the terms."""

    time_s: float
    basis: str
    terms: dict[str, float]


def op_constants(hardware: HardwareSpec) -> OpConstants | None:
    """The constants ops are predicted with on ``hardware``: a GPU calibration's own, else the
    published ones; None on a CPU (ops at their roofline)."""
    if hardware.kind != "gpu" or hardware.gpu is None:
        return None
    calibration = hardware.calibration
    ops = calibration.gpu_ops if calibration is not None else None
    if ops is not None:
        return OpConstants(ops.dram_fraction, ops.launch_s, "calibrated")
    return PUBLISHED


def op_sources(constants: OpConstants) -> dict[str, object]:
    """The JSON ``op_prediction`` object: the constants and where each comes from."""
    return {"dram_fraction": constants.dram_fraction, "launch_s": constants.launch_s,
            "basis": constants.basis,
            "sources": {"dram_fraction": DRAM_FRACTION_SOURCE if constants.basis == "published"
                        else "calibration", "launch_s": LAUNCH_SOURCE
                        if constants.basis == "published" else "calibration",
                        "strided-copy": STRIDED_COPY_SOURCE,
                        "kernels": KERNELS_SOURCE,
                        "layer-norm-kernels": LAYER_NORM_SOURCE,
                        "softmax-rows": SOFTMAX_SOURCE,
                        "l2-partitions": L2_PARTITIONS_SOURCE,
                        "flash-attention-3": "https://arxiv.org/abs/2407.08608",
                        "flash-attention-2": "https://arxiv.org/abs/2307.08691",
                        "attention-score-work": ATTENTION_SCORE_SOURCE,
                        "memory-efficient": EFFICIENT_SOURCE,
                        "attention-tiles": ATTENTION_TILES_SOURCE,
                        "batch-norm-kernels": BATCH_NORM_SOURCE,
                        "reduce-kernel": REDUCE_SOURCE}}


def predict_op(op: Op, hardware: HardwareSpec, dtype: str, peak: float,
               bandwidth: float) -> OpPrediction:
    """The time to expect for ``op`` (module docstring); ``peak`` is the report dtype's."""
    constants = op_constants(hardware)
    if constants is None:
        return OpPrediction(roofline_time_s(op.flops, op.bytes, peak, bandwidth), "roofline", {})
    if op.kind in EPILOGUE_KINDS and op.follows in GPU_EPILOGUE_FOLLOWS:
        return OpPrediction(0.0, "gemm-epilogue", {})
    memory_s = op.bytes / (constants.dram_fraction * bandwidth)
    laid_out = laid_out_prediction(op, hardware, dtype, constants, memory_s)
    if laid_out is not None:
        return laid_out
    share, basis, score_s = 1.0, "streaming", 0.0
    if op.kind in ATTENTION_KINDS and op.attention is not None:
        share, basis = attention_share(op.attention, op.pass_, hardware, dtype)
        if basis != "streaming":
            peak = datasheet_peak(hardware, dtype, peak)
            share *= tile_share(op.attention, "forward" if op.kind == "flash-attention"
                                else "backward")
        score_s = score_work_s(op, hardware, dtype)
    flop_s = op.flops / (share * peak) + score_s
    traffic = KERNELS.get(op.kind, (1.0,))
    row_s, row_basis = 0.0, ""
    if op.kind in ROW_PASSES:
        row_s, row_basis = row_passes_s(op, hardware), "row-passes"
    elif op.row and (op.kind in SOFTMAX_KINDS or op.kind in SOFTMAX_BACKWARD_KINDS):
        from ..model.dtypes import itemsize

        row_s, stream = kernel_terms(op.kind, op.bytes, op.row, itemsize(dtype),
                                     sm_clocks_per_s(hardware), hardware)
        row_basis = "softmax-rows"
        # torch's softmax kernel, with its re-reads that miss L2; a softmax backward's multiply
        # streams after it (``KERNELS``)
        traffic = (stream, *traffic[1:])
    if row_s > max(flop_s, traffic[0] * memory_s) or (
            row_basis and traffic[0] > 1.0 and traffic[0] * memory_s > flop_s):
        basis = row_basis
    # the first kernel bound by its FLOPs, its stream or its row passes; the rest stream after
    time = (len(traffic) * constants.launch_s + max(flop_s, traffic[0] * memory_s, row_s)
            + sum(traffic[1:]) * memory_s)
    terms = {"launch_s": constants.launch_s, "flop_s": flop_s,
             "memory_s": sum(traffic) * memory_s, "peak_share": share,
             "kernels": len(traffic)}
    if row_s:
        terms["row_s"] = row_s
    return OpPrediction(time, basis, terms)


def laid_out_prediction(op: Op, hardware: HardwareSpec, dtype: str, constants: OpConstants,
                        memory_s: float) -> OpPrediction | None:
    """An op whose kernel the capture chose by its tensors' layout: a permuted copy's (offsets
    computed value by value, ``strided_copy_s``), a layer norm backward's with its rows
    (``layer_norm_prediction``), a sum over a matrix's rows (``row_sum_prediction``) or a batch
    norm's (``batch_norm_prediction``); None for any other op."""
    if op.strided:
        index_s = strided_copy_s(op.bytes, hardware, dtype)
        return OpPrediction(constants.launch_s + max(index_s, memory_s), "strided-copy",
                            {"launch_s": constants.launch_s, "index_s": index_s,
                             "memory_s": memory_s})
    if op.summed is not None and op.kind == LAYER_NORM_BACKWARD:
        return layer_norm_prediction(op, hardware, dtype, constants)
    if op.summed is not None and op.kind != LAYER_NORM_FORWARD:
        return row_sum_prediction(op, hardware, dtype, constants, memory_s)
    return batch_norm_prediction(op, hardware, dtype, constants, memory_s)


def layer_norm_prediction(op: Op, hardware: HardwareSpec, dtype: str,
                          constants: OpConstants) -> OpPrediction:
    """A captured layer norm backward whose weight gradients are asked for (``Op.summed``: the
    rows and columns they sum over) through torch's two kernels, the dX kernel's stream with its
    re-reads, then the weight gradients' blocks or stream (``analysis.gpu_layer_norm``)."""
    from ..model.dtypes import itemsize

    assert op.summed is not None  # laid_out_prediction: a layer norm backward with its rows
    dram = constants.dram_fraction * hardware.bandwidth_bytes_per_s
    size = itemsize(op.dtype or dtype)
    # dX written (the op moves dY, X and dX: three of its tensors), or not (the norm of the
    # step's input: dY and X only)
    data = op.bytes >= 3 * op.summed.rows * op.summed.columns * size
    dx_s, gradients_s, kernels = layer_norm_backward_s(
        op.summed, size, hardware, dram, sm_clocks_per_s(hardware), data)
    return OpPrediction(kernels * constants.launch_s + dx_s + gradients_s,
                        "layer-norm-kernels",
                        {"launch_s": constants.launch_s, "dx_s": dx_s,
                         "gradients_s": gradients_s, "kernels": kernels})


def row_sum_prediction(op: Op, hardware: HardwareSpec, dtype: str, constants: OpConstants,
                       memory_s: float) -> OpPrediction:
    """A sum over a matrix's rows or along them (``Op.summed``: a bias gradient, an RMSNorm's
    mean) through torch's reduce kernel (``analysis.gpu_reduce``): its launches, its rounds of
    loads or its stream, whichever is longer, then its last blocks' partial sums; basis
    ``reduce-kernel`` where the kernel's work adds to the stream."""
    from ..model.dtypes import itemsize

    assert op.summed is not None  # laid_out_prediction: a sum over rows
    rounds_s, tail_s, kernels = row_sum_s(op.summed, hardware, itemsize(op.dtype or dtype))
    summing_s = work_s(rounds_s, tail_s, memory_s)
    return OpPrediction(kernels * constants.launch_s + summing_s,
                        "reduce-kernel" if summing_s > memory_s else "streaming",
                        {"launch_s": constants.launch_s, "rounds_s": rounds_s,
                         "tail_s": tail_s, "memory_s": memory_s, "kernels": kernels})


def batch_norm_prediction(op: Op, hardware: HardwareSpec, dtype: str, constants: OpConstants,
                          memory_s: float) -> OpPrediction | None:
    """A captured batch norm's time on a GPU through torch's or cuDNN's kernels (its launches,
    then its values' work or its stream, whichever is longer: ``analysis.gpu_batch_norm``);
    None for any other op."""
    norm = batch_norm_kernels(op, dtype)
    if norm is None:
        return None
    kernels, small = norm
    gpu = hardware.gpu
    assert gpu is not None  # op_constants: a GPU entry
    work_s = batch_norm_s(op, kernels, gpu.sms, sm_clocks_per_s(hardware))
    launches = len(kernels) + small
    return OpPrediction(launches * constants.launch_s + max(work_s, memory_s),
                        "batch-norm-kernels" if work_s > memory_s else "streaming",
                        {"launch_s": constants.launch_s, "work_s": work_s,
                         "memory_s": memory_s, "kernels": launches})


def row_passes_s(op: Op, hardware: HardwareSpec) -> float:
    """The time torch's row kernel of ``op`` takes to pass its rows through the SMs: the bytes
    of its passes (``ROW_PASSES``) at ``ROW_BYTES_PER_SM_CLOCK`` on every SM, at the clock
    CUDA-core work runs at (as ``strided_copy_s``); for a captured layer norm forward with its
    rows (``Op.summed``), at least their rounds of loads (``gpu_layer_norm.row_rounds_s``)."""
    passes_s = ROW_PASSES[op.kind] * op.bytes / (ROW_BYTES_PER_SM_CLOCK
                                                 * sm_clocks_per_s(hardware))
    if op.summed is not None and op.kind == LAYER_NORM_FORWARD:
        return max(passes_s, row_rounds_s(op.summed, hardware))
    return passes_s


def strided_copy_s(nbytes: int, hardware: HardwareSpec, dtype: str) -> float:
    """The time a permuted copy of ``nbytes`` (read and written) spends computing offsets: its
    values over ``STRIDED_COPY_VALUES`` per SM and clock, on every SM at the clock CUDA-core
    work runs at (module docstring)."""
    from ..model.dtypes import itemsize

    size = itemsize(dtype)
    per_clock = STRIDED_COPY_VALUES["wide" if size >= 4 else "narrow"]
    return nbytes / size / (per_clock * sm_clocks_per_s(hardware))


def efficient_kernel(shape: AttentionShape, hardware: HardwareSpec, dtype: str) -> bool:
    """Whether a fused attention runs torch's memory-efficient kernel at its measured rate
    (``EFFICIENT_TFLOPS``): a mask that needs its gradient, 16-bit, on a Hopper GPU, where it was
    measured (elsewhere the rules of the module docstring stand)."""
    return shape.mask_grad and dtype in _FLASH_DTYPES and hardware.architecture == "Hopper"


def score_work_s(op: Op, hardware: HardwareSpec, dtype: str) -> float:
    """The time a fused attention ``op`` spends on a mask it reads for every score and on
    dropout, beyond its published rate: its scores times ``ATTENTION_SCORE_CLOCKS`` (module
    docstring), or, in the memory-efficient kernel, whose measured rate includes its mask,
    dropout's ``EFFICIENT_DROPOUT_CLOCKS``; 0 for neither, and for decode (no published rate to
    add to: it streams)."""
    shape = op.attention
    if shape is None or not (shape.masked or shape.dropout) or shape.q != shape.s:
        return 0.0
    pass_ = "forward" if op.kind == "flash-attention" else "backward"
    scores = op.flops / ((4 if pass_ == "forward" else 10) * shape.head_dim)
    if efficient_kernel(shape, hardware, dtype):
        clocks = EFFICIENT_DROPOUT_CLOCKS[pass_] * shape.dropout
    else:
        clocks = (ATTENTION_SCORE_CLOCKS[(pass_, "masked")] * shape.masked
                  + ATTENTION_SCORE_CLOCKS[(pass_, "dropout")] * shape.dropout)
    return scores * clocks / sm_clocks_per_s(hardware)


def sm_clocks_per_s(hardware: HardwareSpec) -> float:
    """SM clocks per second over the whole GPU: its SMs at the clock CUDA-core work runs at
    (``gpu.vector_clock_ghz`` where the entry gives one, else the boost clock; times
    ``clock_share`` where it gives a sustained one)."""
    from .gpu_gemm import clock_share

    gpu = hardware.gpu
    assert gpu is not None  # op_constants: a GPU entry
    return gpu.sms * (gpu.vector_clock_ghz or gpu.boost_clock_ghz) * 1e9 * clock_share(hardware)


def tile_share(shape: AttentionShape, pass_: str) -> float:
    """The share of a fused attention kernel's blocks that holds real rows: its query and key
    lengths over those rounded up to ``ATTENTION_TILES``' blocks (1 at their multiples)."""
    tq, tk = ATTENTION_TILES[pass_]
    return (shape.q / (-(-shape.q // tq) * tq)) * (shape.s / (-(-shape.s // tk) * tk))


def datasheet_peak(hardware: HardwareSpec, dtype: str, peak: float) -> float:
    """The datasheet peak a published attention share is of: a measured entry's
    ``theoretical:`` figure for ``dtype`` where it has one (its own ``peak_tflops`` are the
    GEMM rates the probe measured: on an H100, bf16 697 of the datasheet's 989.5 TFLOP/s, and
    FlashAttention's kernels are no GEMM), else ``peak``."""
    theoretical = hardware.theoretical
    if hardware.origin == "measured" and theoretical is not None:
        tflops = theoretical.peak_tflops.get(dtype)
        if tflops:
            return tflops * 1e12
    return peak


def attention_share(shape: AttentionShape, pass_: str, hardware: HardwareSpec,
                    dtype: str) -> tuple[float, str]:
    """The share of the peak a fused attention kernel runs at, and its basis (rules 1-4 of
    the module docstring)."""
    if shape.q != shape.s:
        return 1.0, "streaming"
    if efficient_kernel(shape, hardware, dtype):
        return EFFICIENT_TFLOPS["forward" if pass_ == "forward" else "backward"] / (
            MEASURED_ON_PEAK_TFLOPS), "memory-efficient"
    if dtype in _FLASH_DTYPES and hardware.architecture == "Hopper":
        return fa3_tflops(pass_, shape.head_dim, shape.s, shape.causal) / (
            MEASURED_ON_PEAK_TFLOPS), "flash-attention-3"
    if dtype in _FLASH_DTYPES and hardware.architecture == "Ampere":
        return FA2_AMPERE_FRACTION["forward" if pass_ == "forward" else "backward"], (
            "flash-attention-2")
    from .gpu_gemm import FITTED, peak_share, uses_tensor_cores

    tensor = uses_tensor_cores(hardware, dtype)
    fraction = FITTED.tensor_core_fraction if tensor else FITTED.cuda_core_fraction
    return fraction * peak_share(hardware, dtype), "gemm-sustained"


def fa3_tflops(pass_: str, head_dim: int, seq: int, causal: bool) -> float:
    """FlashAttention-3's published TFLOP/s on H100 SXM5 at this shape: linear in log2 of the
    sequence length along each head dimension's figure, then in log2 of the head dimension,
    clamped at the published ends, but for the backward below 512 tokens, which goes on falling
    at the slope of its first doubling (512 to 1k) down to ``BACKWARD_SHORTEST`` and is clamped
    below. The backward pass has unmasked figures only: a causal
    backward is the unmasked backward times the share the causal forward keeps of the unmasked
    forward at the same head dimension and length (``causal_share``)."""
    if pass_ != "forward":
        rate = _fa3_curve("backward", head_dim, seq, False)
        if seq < SEQS[0]:  # below the published lengths: on at the slope of the first doubling
            first = _fa3_curve("backward", head_dim, 2 * SEQS[0], False) - rate
            rate -= first * math.log2(SEQS[0] / max(seq, BACKWARD_SHORTEST))
        return rate * causal_share(head_dim, seq) if causal else rate
    return _fa3_curve("forward", head_dim, seq, causal)


def causal_share(head_dim: int, seq: int) -> float:
    """The share of the unmasked rate FlashAttention-3's causal forward keeps (its published
    figures): the diagonal blocks the mask cuts through and the uneven work per block of rows,
    which its backward, tiled the same way over the same blocks, has too. 0.59 at head dim 64
    and 512 tokens, 0.95 at 16k. Checked, never fitted: the causal backward torch (cuDNN's
    kernel) ran on a lent H100 kept 0.60 / 0.68 / 0.76 / 0.88 / 0.88 of its unmasked rate at
    512..8k tokens, head dim 64, where this gives 0.59 / 0.68 / 0.81 / 0.88 / 0.93
    (benchmarks/data/h100_live_ops.csv)."""
    return (_fa3_curve("forward", head_dim, seq, True)
            / _fa3_curve("forward", head_dim, seq, False))


def _fa3_curve(pass_: str, head_dim: int, seq: int, causal: bool) -> float:
    """One pass's and mask's published figures at this shape, interpolated and clamped."""
    curves: dict[int, Curve] = {c.head_dim: c for c in FA3_FIGURES
                                if c.pass_ == pass_ and c.causal == causal}
    by_dim = tuple((d, interpolate(tuple(zip(SEQS, curves[d].tflops)), seq))
                   for d in sorted(curves))
    return interpolate(by_dim, head_dim)
