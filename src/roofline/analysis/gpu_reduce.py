"""How long torch's reduce kernel takes on a GPU to sum a matrix over its rows or along them: the
part of ``analysis.gpu_ops`` for a captured sum or mean over a contiguous tensor's leading
dimensions (a Linear's bias gradient, dY summed over its tokens) or its trailing ones (an RMSNorm's
mean over each token's features; ``Op.summed``: the matrix's rows and columns, and which way it
is summed), a captured convolution's bias gradient, and a model.yaml Linear's, transformer
projection's or conv2d's ``bias-backward`` (a conv2d's as a channels-last map's).

Torch runs both through ``reduce_kernel`` (pytorch/pytorch aten/src/ATen/native/cuda/Reduce.cuh,
``setReduceConfig``; ``REDUCE_SOURCE``), whose launch ``launch`` works out from the matrix as torch
does:

- over rows (the summed dimension not the fastest-moving one), each thread sums a vector of v
  adjacent columns (v = 4, 2 or 1, the largest the columns divide by: ``get_output_vec_size``),
  so the block is at most 512 / v threads, 32 wide (a warp across the columns) and up to
  512 / v / 32 high; along rows, a warp's lanes split a row's values between them, each load a
  vector of 16 bytes (8 bf16 / fp16 values, 4 fp32: the template arguments torch 2.11's kernels
  ran with, ``benchmarks/data/h100_live_smallsums_templates.json``) where the row is longer than
  128 values and a whole number of vectors, else one value, and a block is up to 16 rows high;
- where the values summed leave a thread at least min(16 x height, 256), the block's warps split
  them between them (else each warp takes other outputs);
- where that still leaves a thread 256 values or more and the grid is no larger than S x
  (resident threads / block threads), the values are split across blocks too
  (``ctas_per_output``: max(min(ceil(target / grid), ceil(values / 16)), ceil(values / 256))),
  each block staging its partial sums in global memory for the last block of its outputs to add
  up after a semaphore (a memset a launch: two kernels);
- a thread loads ``VT0`` values (or one vector) a round and adds them.

So such a sum is no plain stream, and a few thousand outputs take the longest: a bias gradient
over 512 tokens of 768 columns runs 6 blocks of 128 threads, each thread 32 rounds of loads one
after the other; an RMSNorm's mean over one decode token's 4,096 fp32 features two rounds. Its
time::

    t = n x t_launch + max(bytes / (D x BW), t_first + waves x rounds x t_round) + tail x t_tail

with n its kernels (two where the values are split across blocks), D and BW as for any op
(``gpu_ops``), waves the grid over S x (resident threads / block threads) blocks at a time,
rounds a thread's, tail the partial sums one thread of the last block adds (ceil(blocks an
output group / block height); 0 where the values are not split across blocks), and four
constants in seconds fitted by least squares on the logs over 86 sums over rows a lent H100 timed
kernel by kernel (torch 2.11; bf16 and fp32, 768-50,257 columns, 16-32,768 rows:
benchmarks/data/h100_live_colsums.csv, h100_live_smallsums.csv): ``FIRST_S`` a kernel's first
load and its write, ``SPLIT_FIRST_S`` the same where the values are split across blocks (their
staging and semaphore too), ``ROUND_S`` a round of loads and ``TAIL_S`` a staged partial sum's
load. 80 of the 86 came within 1.25x (the stream: 24). The sums along rows were never fitted:
on the same H100, 76 of 86 within 1.25x (the stream: 41); on a lent H200 (the H100's constants
as they are) 76 of 86 over rows and 74 of 86 along them (the stream: 12 and 35); a decode step's
means along 1-32 rows of 4,096-8,192 values 2.2-8.9 us, 18 of 18 within 1.25x on another H100
and 18 of 18 on another H200
(``benchmarks/bench_gpu_norms.py``). 0.2 us a round is about an L2 round trip: the sums timed
call after call on one tensor find it in L2, as a step's sum finds the gradient the kernel
before it wrote. Misses: 50,257 bf16 columns (one value a thread, 1.3-1.8x on the H200), sums
along rows of 11,008 bf16 values over thousands of rows (1.3-1.5x), and tensors timed from L2
whose stream is priced from DRAM (0.6-0.8x).

A convolution's bias gradient over an NCHW map (``SumShape.indexed``: each channel's N runs of H W
values) runs the sum along rows a value a load, each one's offset computed through the input's two
reduced dimensions: its rounds take ``INDEXED_ROUND_S`` (0.54 us) and, where its blocks crowd the
SMs, its values ``INDEXED_VALUES_PER_SM_CLOCK`` (2.04) a clock of each SM, not DRAM: an H100 and an
H200 took the same time for the same maps. Both fitted on the first H100 run's 24 such sums
(ResNet-50's maps at batches 8 and 64, bf16 and fp32: 24 within 1.25x, as a stream 0); never
fitted, the repeat's and two H200 runs' 24 each; in channels_last (a sum over N H W rows, no
constant of its own) 16-18 of 24 on each (0.71-1.09x; as a stream 0-1); a Conv2d with a bias
trained through autograd (benchmarks/data/h1?0_live_convbias.csv), its bias gradient's kernel
against the captured op, 13 of 16 on an H100 and an H200 (0.77-1.41x: NCHW 8 x 64 x 112 x 112
read back from DRAM, not L2).
Which kernel runs is torch's choice, per version. Only the standard library is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec
    from ..model.ops import SumShape

REDUCE_SOURCE = ("https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/"
                 "Reduce.cuh (setReduceConfig, reduce_kernel); time constants fitted: a lent "
                 "H100 SXM5, torch 2.11, benchmarks/data/h100_live_colsums.csv and "
                 "h100_live_smallsums.csv (sums over rows)")
#: torch's most threads a reduce block (``ReduceConfig::MAX_NUM_THREADS``; over v when each
#: thread sums a vector of v columns)
MAX_THREADS = 512
#: rows a thread loads before it adds them (``ReduceOp``'s vt0)
VT0 = 4
#: a thread's values from which torch splits the rows across blocks, and the fewest and most it
#: leaves a thread then (``setReduceConfig``'s min and max_values_per_thread)
MIN_VALUES, MAX_VALUES = 16, 256
#: a kernel's first load and its write (SPLIT_FIRST_S: where it splits the values across
#: blocks, their staging and semaphore too), a round of loads, and one staged partial sum the
#: last block adds, in seconds (fitted: module docstring)
FIRST_S = 1.05e-6
SPLIT_FIRST_S = 3.2e-6
ROUND_S = 0.20e-6
TAIL_S = 0.31e-6
#: an indexed sum's round of loads (each value's offset computed: NCHW's N, H and W summed), and
#: the values it sums per SM and clock where its blocks crowd the SMs (fitted: module docstring)
INDEXED_ROUND_S = 0.54e-6
INDEXED_VALUES_PER_SM_CLOCK = 2.04
#: a vectorized load's bytes along a row (torch's input_vec_size: 8 bf16 / fp16 values, 4
#: fp32), and the row length up to which torch loads a value at a time
VECTOR_BYTES = 16
MIN_VECTORIZED = 128
#: threads an SM holds where the entry does not say (``gpu.resident_threads``): every NVIDIA
#: architecture's since Maxwell but Turing's (1,024) and the GA10x / Ada parts' (1,536)
RESIDENT_THREADS = 2048


@dataclass(frozen=True)
class ReduceLaunch:
    """The launch torch picks for a sum (module docstring): ``blocks`` of ``threads``, each
    thread ``rounds`` rounds of loads, and ``tail`` partial sums its last blocks add (0 where
    the values are not split across blocks, one kernel, else two)."""

    blocks: int
    threads: int
    height: int
    rounds: int
    tail: int

    @property
    def kernels(self) -> int:
        return 2 if self.tail else 1


def launch(summed: SumShape, sms: int, resident_threads: int, size: int = 4) -> ReduceLaunch:
    """The grid, block and work a thread ``setReduceConfig`` gives a sum over ``summed``'s rows
    (or, ``summed.along_rows``, along each row) of values of ``size`` bytes on ``sms`` SMs of
    ``resident_threads`` threads."""
    rows, columns = summed.rows, summed.columns
    if summed.along_rows:  # each output's values adjacent: lanes split them, loads of vectors
        vec = max(int(VECTOR_BYTES // size), 1)
        if columns <= MIN_VECTORIZED or columns % vec or summed.indexed:
            vec = 1
        inputs, outputs, dim0, dim1, most = columns, rows, columns // vec, rows, MAX_THREADS
    else:  # each thread a vector of adjacent outputs
        vec = next(v for v in (4, 2, 1) if columns % v == 0)
        inputs, outputs = rows, columns // vec
        dim0, dim1, most = outputs, rows, MAX_THREADS // vec
    width = min(_pow2_at_most(dim0, most), 32)
    height = min(_pow2_at_most(dim1, most), most // width)
    width = min(_pow2_at_most(dim0, most), most // height)
    step_in, step_out = (width, 1) if summed.along_rows else (1, width)
    split_warps = -(-inputs // step_in) >= min(height * MIN_VALUES, MAX_VALUES)
    if split_warps:
        step_in *= height
    else:
        step_out *= height
    grid = -(-outputs // step_out)
    values = -(-inputs // step_in)
    ctas = 1
    target = sms * (resident_threads // (width * height))
    if split_warps and values >= MAX_VALUES and grid <= target:
        ctas = max(min(-(-target // grid), -(-values // MIN_VALUES)), -(-values // MAX_VALUES))
        values = -(-values // ctas)
    # vectorized inputs: a vector a round (``input_vectorized_thread_reduce_impl``), else VT0
    per_round = vec if summed.along_rows and vec > 1 else VT0
    return ReduceLaunch(grid * ctas, width * height, height, -(-values // per_round),
                        -(-ctas // height) if ctas > 1 else 0)


def resident_threads(hardware: HardwareSpec) -> int:
    """The threads each SM of ``hardware`` (a GPU entry) holds at once: its entry's
    ``gpu.resident_threads``, else ``RESIDENT_THREADS``."""
    gpu = hardware.gpu
    assert gpu is not None  # gpu_ops.op_constants: a GPU entry
    return gpu.resident_threads or RESIDENT_THREADS


def waves(blocks: int, threads: int, hardware: HardwareSpec) -> int:
    """The waves ``blocks`` of ``threads`` threads run in on ``hardware``: as many at once as
    its SMs hold (``resident_threads``), one a SM at least."""
    gpu = hardware.gpu
    assert gpu is not None  # gpu_ops.op_constants: a GPU entry
    return -(-blocks // (gpu.sms * max(resident_threads(hardware) // threads, 1)))


def row_sum_s(summed: SumShape, hardware: HardwareSpec,
              size: int = 4) -> tuple[float, float, int]:
    """The time a sum of values of ``size`` bytes spends on its rounds of loads (its first
    load and its write, then its waves of blocks one after the other; an indexed sum's at
    ``INDEXED_ROUND_S``, and at least its values at ``INDEXED_VALUES_PER_SM_CLOCK`` a clock of
    each SM) and on its last blocks' partial sums (beside its stream: module docstring), and its
    kernels."""
    gpu = hardware.gpu
    assert gpu is not None  # gpu_ops.op_constants: a GPU entry
    run = launch(summed, gpu.sms, resident_threads(hardware), size)
    rounds = waves(run.blocks, run.threads, hardware) * run.rounds
    first = SPLIT_FIRST_S if run.tail else FIRST_S
    if summed.indexed:
        from .gpu_ops import sm_clocks_per_s  # gpu_ops imports this module

        values_s = summed.rows * summed.columns / (INDEXED_VALUES_PER_SM_CLOCK
                                                   * sm_clocks_per_s(hardware))
        rounds_s = max(rounds * INDEXED_ROUND_S, values_s)
    else:
        rounds_s = rounds * ROUND_S
    return first + rounds_s, run.tail * TAIL_S, run.kernels


def work_s(rounds_s: float, tail_s: float, stream_s: float) -> float:
    """A sum's time but its launches: its rounds of loads or its stream of ``stream_s``,
    whichever is longer, then its last blocks' partial sums (module docstring)."""
    return max(rounds_s, stream_s) + tail_s


def _pow2_at_most(n: int, most: int) -> int:
    """torch's bound on a block side: ``most`` where ``n`` reaches it, else the largest power
    of two not over ``n`` (``last_pow2``)."""
    if n >= most:
        return most
    p = 1
    while p * 2 <= n:
        p *= 2
    return p
