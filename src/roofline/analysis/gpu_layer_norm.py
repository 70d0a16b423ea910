"""How long torch's layer norm backward takes on a GPU, kernel by kernel: the part of
``analysis.gpu_ops`` for a captured ``aten.native_layer_norm_backward`` whose weight gradients
are asked for (``Op.summed``: the M rows and N columns they sum over); and how long a few rows
of a layer norm, forward or dX, take to go round their loads (``row_rounds_s``).

Torch runs it as two kernels, one after the other (pytorch/pytorch aten/src/ATen/native/cuda/
layer_norm_kernel.cu, ``LayerNormBackwardKernelImplInternal``; ``LAYER_NORM_SOURCE``):

- dX, ``layer_norm_grad_input_kernel[_vectorized]``: a block a row, reading dY and X for the
  row's two sums, then again to write dX. Its three tensors stream (3 M N e bytes at the DRAM
  share D of BW, as any op's), times ``REREAD`` where a tensor's row is over ``REREAD_ROW_BYTES``:
  the second reads come from DRAM again once the rows a block holds outgrow the SM's cache;
- dgamma and dbeta, ``GammaBetaBackwardCUDAKernelTemplate``
  (``LaunchGammaBetaBackwardCUDAKernel``): ceil(N / 32) blocks of up to 32 x 32 threads, each
  summing its 32 columns over all M rows, so at a narrow N too few blocks to stream: its time is
  the longer of its stream (dY and X again, 2 M N e bytes) and M x 32 values over
  ``GAMMA_BETA_VALUES_PER_BLOCK_CLOCK`` a block and clock (its waves: 1,024-thread blocks,
  as many an SM as its resident threads hold, ``gpu_reduce.resident_threads``: two on an
  H100). Past 65,536 rows with fewer than S / 2 such blocks torch
  splits the rows over blocks of 32 rows (min(ceil(M / 32), 32,768 / ceil(N / 32)) of them)
  that write partial sums, which two ``.sum(0)`` calls add up (``analysis.gpu_reduce``): that
  pass streams, its partials are written and the two sums priced as any sum over rows.

So, with S SMs at the clock f CUDA-core work runs at (``gpu_ops.sm_clocks_per_s``)::

    t = n x t_launch + p x 3 M N e / (D x BW) + max(2 M N e / (D x BW), w x 32 M / (V x f))

(the split form: its stream, partials and sums instead of the max). Over a few rows neither
stream bounds the forward or dX kernel but the row's rounds of loads, one after the other
(``row_rounds_s``): a block of ``ROW_THREADS`` threads a row (``num_threads()``), each loading a
vector of ``ROW_VECTOR`` values a round (``vec_size``), over the row twice (the statistics, then
the output: 2 ceil(N / 512) rounds), its blocks in waves as the SMs hold them::

    t_rounds = t_first + waves x 2 ceil(N / 512) x t_round

dX's round 0.175 us (three loads and two multiply-adds a value: about an L2 round trip), the
forward's 0.29 us (Welford's updates on each vector); each kernel's first load and write and
round fitted by least squares on the logs on one lent H100's kernels over 1-512 rows of 768 and
4,096 (benchmarks/data/h100_live_smallsums.csv: 24 forwards, 24 dX kernels), never on the
repeat on another H100 or an H200's (``bench_gpu_norms.py``). The longer of the rounds and the
stream (dX) or the row passes (the forward, ``gpu_ops.ROW_PASSES``) is the kernel's time.

Fitted on the kernels a lent H100 profiled (torch 2.11, benchmarks/data/h100_live_norm_kernels.csv:
bf16 and fp32, 8,192 to 65,536 rows of 1,024-4,096): ``REREAD`` the geometric mean of the three dX
kernels with rows over 4 KB (1.51-1.60x their stream; those of 2 and 4 KB 0.89-1.13x), the boundary
between the 4 and 8 KB rows measured; V the geometric mean of the five gradient kernels whose
blocks, not DRAM, bound them (2.89-3.65 values a block-clock, less a 0.9 us launch). Checked, never
fitted, on the whole op at 2^23 and 2^26 values on both GPUs (benchmarks/data/h1?0_live_norms.csv,
``benchmarks/bench_gpu_norms.py``): 20 of 20 within 1.25x on the H100 (the row-pass model before:
16), 19 of 20 on an H200 (10), whose 1.43x bandwidth the stream terms follow. Under 256 rows
torch's gradient blocks are smaller (32 x 16 threads and fewer), priced at the same rate a block
(the whole backward over 1-512 rows, with dX's rounds: 20 of 24 within 1.25x on each H100 run, 23
of 24 on each of two H200 runs). Not measured: a row whose values a vector does not divide runs the
unvectorized kernels, priced as the vectorized ones a value a round. Which kernels run is torch's
choice, per version. Only the standard library is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec
    from ..model.ops import SumShape

LAYER_NORM_SOURCE = ("https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/"
                     "layer_norm_kernel.cu (LayerNormBackwardKernelImplInternal); constants "
                     "fitted: a lent H100 SXM5, torch 2.11, "
                     "benchmarks/data/h100_live_norm_kernels.csv")
#: A layer norm backward's captured kind
LAYER_NORM_BACKWARD = "aten.native_layer_norm_backward"
#: The dX kernel's traffic over its stream where a tensor's row is over ``REREAD_ROW_BYTES``
REREAD = 1.55
REREAD_ROW_BYTES = 4096
#: Values (of each of dY and X) a gradient block sums per clock (module docstring)
GAMMA_BETA_VALUES_PER_BLOCK_CLOCK = 3.3
#: Columns a gradient block sums; the rows past which torch splits them over blocks, and the
#: rows each such block sums, and the most blocks it makes (``LaunchGammaBetaBackwardCUDAKernel``)
BLOCK_COLUMNS = 32
#: Threads a gradient block runs from 256 rows (32 x 32): as many as the SM holds, over that, at
#: once (two on an SM of 2,048)
BLOCK_THREADS = 1024
SPLIT_ROWS, ROWS_PER_SPLIT, MAX_SPLIT_BLOCKS = 65536, 32, 32768
#: The forward's and dX's block a row (``num_threads()``) and the values a thread loads at once
#: (``vec_size``; a row the vector does not divide loads one at a time)
ROW_THREADS, ROW_VECTOR = 128, 4
#: Their first load and write, and one round of loads over the row, in seconds (fitted: module
#: docstring)
FORWARD_FIRST_S, FORWARD_ROUND_S = 1.19e-6, 0.29e-6
DX_FIRST_S, DX_ROUND_S = 0.58e-6, 0.175e-6
#: A layer norm forward's captured kind
LAYER_NORM_FORWARD = "aten.native_layer_norm"


def layer_norm_backward_s(summed: SumShape, size: int, hardware: HardwareSpec,
                          dram_bytes_per_s: float, sm_clocks_per_s: float,
                          data_gradient: bool = True) -> tuple[float, float, int]:
    """The dX kernel's and the weight gradients' seconds (module docstring) of a layer norm
    backward over ``summed.rows`` rows of ``summed.columns`` values of ``size`` bytes, and its
    kernels; ``dram_bytes_per_s``: D x BW, ``sm_clocks_per_s``: S x f; without
    ``data_gradient`` (the layer norm reads the step's input, whose gradient nothing asks for)
    no dX kernel runs."""
    from ..model.ops import SumShape
    from .gpu_reduce import row_sum_s, waves, work_s

    gpu = hardware.gpu
    assert gpu is not None  # gpu_ops.op_constants: a GPU entry
    m, n = summed.rows, summed.columns
    tensor = m * n * size
    rereads = REREAD if n * size > REREAD_ROW_BYTES else 1.0
    dx_s = max(rereads * 3 * tensor / dram_bytes_per_s,
               row_rounds_s(summed, hardware, DX_FIRST_S, DX_ROUND_S)) if data_gradient else 0.0
    dx_kernels = 1 if data_gradient else 0
    blocks = -(-n // BLOCK_COLUMNS)
    stream = 2 * tensor / dram_bytes_per_s
    if m > SPLIT_ROWS and blocks < gpu.sms // 2:
        split = min(-(-m // ROWS_PER_SPLIT), MAX_SPLIT_BLOCKS // blocks)
        partial = split * n * size
        rounds_s, tail_s, kernels = row_sum_s(SumShape(split, n), hardware)
        sum_s = work_s(rounds_s, tail_s, partial / dram_bytes_per_s)
        return (dx_s, stream + 2 * partial / dram_bytes_per_s + 2 * sum_s,
                dx_kernels + 1 + 2 * kernels)
    per_block = BLOCK_COLUMNS * m / (GAMMA_BETA_VALUES_PER_BLOCK_CLOCK
                                     * sm_clocks_per_s / gpu.sms)
    return dx_s, max(stream, waves(blocks, BLOCK_THREADS, hardware) * per_block), dx_kernels + 1


def row_rounds_s(summed: SumShape, hardware: HardwareSpec, first_s: float = FORWARD_FIRST_S,
                 round_s: float = FORWARD_ROUND_S) -> float:
    """The time torch's layer norm forward (or, with dX's constants, its dX kernel) spends going
    round its loads over ``summed.rows`` rows of ``summed.columns`` values: its first load and
    write, then twice over each row's vectors, its blocks a row in waves (module docstring)."""
    from .gpu_reduce import waves

    m, n = summed.rows, summed.columns
    vector = ROW_VECTOR if n % ROW_VECTOR == 0 else 1
    return first_s + waves(m, ROW_THREADS, hardware) * 2 * -(-n // (ROW_THREADS * vector)) * round_s
