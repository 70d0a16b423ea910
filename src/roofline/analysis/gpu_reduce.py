"""How long torch's reduce kernel takes on a GPU to sum a matrix over its rows: the part of
``analysis.gpu_ops`` for a captured sum over a contiguous tensor's leading dimensions (a Linear's
bias gradient, dY summed over its tokens; ``Op.summed``: its rows and columns) and a model.yaml
Linear's or transformer projection's ``bias-backward``.

Torch runs it through ``reduce_kernel`` (pytorch/pytorch aten/src/ATen/native/cuda/Reduce.cuh,
``setReduceConfig``; ``REDUCE_SOURCE``), whose launch ``launch`` works out from the matrix as torch
does for a reduction along a dimension that is not the fastest-moving one:

- each thread sums a vector of v adjacent columns (v = 4, 2 or 1, the largest the columns divide
  by: ``get_output_vec_size``), so the block is at most 512 / v threads, 32 wide (a warp across
  the columns) and up to 512 / v / 32 high;
- where the rows leave a thread at least min(16 x height, 256) values, the block's warps split
  the rows between them (else each warp takes other columns);
- where that still leaves a thread 256 values or more and the grid is no larger than S x
  (resident threads / block threads), the rows are split across blocks too (``ctas_per_output``:
  max(min(ceil(target / grid), ceil(values / 16)), ceil(values / 256))), each block staging its
  partial sums in global memory for the last block of its columns to add up after a semaphore
  (a memset a launch: two kernels);
- a thread loads ``VT0`` rows of its vector at a time (``ReduceOp``'s vt0) and adds them.

So such a sum is no plain stream, and a bias gradient's few columns take the longest: 768
columns of 2,048 rows run 192 blocks of 128 threads, each thread four rounds of loads, and the
last block of each group of columns adds the group's 32 partial sums, eight a thread. Its
time::

    t = n x t_launch + max(bytes / (D x BW), waves x rounds x t_round) + tail x t_tail

with n its kernels (two where the rows are split across blocks), D and BW as for any op
(``gpu_ops``), waves the grid over S x (resident threads / block threads) blocks at a time,
rounds ceil(values a thread / ``VT0``), tail the partial sums one thread of the last block adds
(ceil(blocks a column group / block height); 0 where the rows are not split across blocks), and
``ROUND_S`` and ``TAIL_S``: a round of loads and a partial sum's load, in seconds, fitted by least
squares on the logs over 36 sums a lent H100 timed kernel by kernel (torch 2.11; bf16 and fp32,
768-50,257 columns, 2k-32k rows: benchmarks/data/h100_live_colsums.csv); fitted on fp32 alone
they came 0.97 / 0.255 us and held bf16's within 1.25x for 16 of 18, fitted on bf16 alone
0.87 / 0.345 us and held fp32's for 16 of 18. Over the 36 (``benchmarks/bench_gpu_norms.py``)
33 came within 1.25x (the stream: 18), 0.77-1.29x. 0.88 us is about a loaded DRAM round trip,
0.32 us an L2 one; both are the H100's, applied to every GPU as they are. Not measured below
2,048 rows: there (values a thread under 256) torch splits no rows across blocks, and a few
blocks loop over them all (512 rows of 4,096 columns: 32 blocks, 32 rounds), where a round on a
lightly loaded GPU may take less than the fitted one. Which kernel runs is torch's choice, per
version. Only the standard library is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec
    from ..model.ops import SumShape

REDUCE_SOURCE = ("https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/"
                 "Reduce.cuh (setReduceConfig, reduce_kernel); time constants fitted: a lent "
                 "H100 SXM5, torch 2.11, benchmarks/data/h100_live_colsums.csv")
#: torch's most threads a reduce block (``ReduceConfig::MAX_NUM_THREADS``; over v when each
#: thread sums a vector of v columns)
MAX_THREADS = 512
#: rows a thread loads before it adds them (``ReduceOp``'s vt0)
VT0 = 4
#: a thread's values from which torch splits the rows across blocks, and the fewest and most it
#: leaves a thread then (``setReduceConfig``'s min and max_values_per_thread)
MIN_VALUES, MAX_VALUES = 16, 256
#: a round of ``VT0`` loads, and one staged partial sum the last block adds, in seconds (fitted:
#: module docstring)
ROUND_S = 0.88e-6
TAIL_S = 0.315e-6
#: threads an SM holds where the entry does not say (``gpu.resident_threads``): every NVIDIA
#: architecture's since Maxwell but Turing's (1,024) and the GA10x / Ada parts' (1,536)
RESIDENT_THREADS = 2048


@dataclass(frozen=True)
class ReduceLaunch:
    """The launch torch picks for a sum over rows (module docstring): ``blocks`` of
    ``threads``, each thread ``rounds`` rounds of loads, and ``tail`` partial sums its last
    blocks add (0 where the rows are not split across blocks, one kernel, else two)."""

    blocks: int
    threads: int
    height: int
    rounds: int
    tail: int

    @property
    def kernels(self) -> int:
        return 2 if self.tail else 1


def launch(summed: SumShape, sms: int, resident_threads: int) -> ReduceLaunch:
    """The grid, block and work a thread ``setReduceConfig`` gives a sum of ``summed.rows`` rows
    of ``summed.columns`` adjacent columns on ``sms`` SMs of ``resident_threads`` threads."""
    rows, columns = summed.rows, summed.columns
    vec = next(v for v in (4, 2, 1) if columns % v == 0)
    most = MAX_THREADS // vec
    width = min(_pow2_at_most(columns // vec, most), 32)
    height = min(_pow2_at_most(rows, most), most // width)
    width = min(_pow2_at_most(columns // vec, most), most // height)
    step_out, step_in = width, 1
    split_warps = rows >= min(height * MIN_VALUES, MAX_VALUES)
    if split_warps:
        step_in *= height
    else:
        step_out *= height
    grid = -(-(columns // vec) // step_out)
    values = -(-rows // step_in)
    ctas = 1
    target = sms * (resident_threads // (width * height))
    if split_warps and values >= MAX_VALUES and grid <= target:
        ctas = max(min(-(-target // grid), -(-values // MIN_VALUES)), -(-values // MAX_VALUES))
        values = -(-values // ctas)
    return ReduceLaunch(grid * ctas, width * height, height, -(-values // VT0),
                        -(-ctas // height) if ctas > 1 else 0)


def resident_threads(hardware: HardwareSpec) -> int:
    """The threads each SM of ``hardware`` (a GPU entry) holds at once: its entry's
    ``gpu.resident_threads``, else ``RESIDENT_THREADS``."""
    gpu = hardware.gpu
    assert gpu is not None  # gpu_ops.op_constants: a GPU entry
    return gpu.resident_threads or RESIDENT_THREADS


def row_sum_s(summed: SumShape, hardware: HardwareSpec) -> tuple[float, float, int]:
    """The time a sum over rows spends on its rounds of loads (its waves of blocks one after
    the other) and on its last blocks' partial sums (beside its stream: module docstring), and
    its kernels."""
    gpu = hardware.gpu
    assert gpu is not None  # gpu_ops.op_constants: a GPU entry
    resident = resident_threads(hardware)
    run = launch(summed, gpu.sms, resident)
    at_once = gpu.sms * max(resident // run.threads, 1)
    waves = -(-run.blocks // at_once)
    return waves * run.rounds * ROUND_S, run.tail * TAIL_S, run.kernels


def work_s(rounds_s: float, tail_s: float, stream_s: float) -> float:
    """A sum over rows' time but its launches: its rounds of loads or its stream of
    ``stream_s``, whichever is longer, then its last blocks' partial sums (module docstring)."""
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
