"""How long torch's softmax forward kernels take on a GPU, by the row's width: the part of
``analysis.gpu_ops`` for a captured ``aten._softmax`` or ``aten._log_softmax`` over the last
dimension (``SOFTMAX_KINDS``; the capture keeps the row's width, ``Op.row``).

Torch picks its kernel by the row's width w (pytorch/pytorch aten/src/ATen/native/cuda/
SoftMax.cu, ``host_softmax``; ``SOFTMAX_SOURCE``): one warp a row up to 2,048 values
(``softmax_warp_forward``), one block of up to 1,024 threads a row holding it in registers while
ceil(w / 1024) < 10 (``cunn_SoftMaxForwardReg``, ``potential_register_count``: w up to
``SOFTMAX_REG_COLUMNS``), then one block of 1,024 threads a row that holds it in its shared
memory where the row fits the block's 48 KiB less its 32 warps' partial sums and w is a multiple
of the 16-byte vector (``cunn_SoftMaxForwardSmem``), else reads it from memory three times, for
the max, the sum of exponentials and the output (``cunn_SoftMaxForward``). torch 2.11 on a lent
H100 ran exactly those (benchmarks/data/h100_live_rows_kernels.json: the warp kernel at 32-768
columns, the shared-memory one at 16,384 bf16 columns, the three-pass one at 32,768 and 50,257).
Each works out every value's max, exponential, sum and quotient in fp32 on the SMs; that work,
not DRAM, sets a 16-bit softmax's time::

    t_row = values / (V(w) x S x f)

``values`` the elements read and written (the op's bytes over the dtype's size), S and f the
SMs and the clock CUDA-core work runs at (``gpu_ops.sm_clocks_per_s``), and V(w) the values one
SM works through per clock: ``SOFTMAX_VALUES_PER_SM_CLOCK`` for the warp and register kernels
(linear in log2 w between the widths timed, clamped at 32 and at 9,216: 2.7 at 32 columns, 4.7
at 512, 2.0 at 8,192), ``SOFTMAX_BLOCK_VALUES_PER_SM_CLOCK`` past them (3.9 at 16,384 and
32,768 alike). Both fitted on a lent H100's bf16 softmax at 2^23 and 2^26 values (CUDA-graph
replays: the geometric mean of each width's values over the time less a 0.9 us launch;
benchmarks/data/h100_live_norms.csv for 768-8,192 columns, h100_live_rows.csv for the others).

The three-pass kernel reads the row again twice; those reads come from L2 while the rows the
GPU works on at once fit the L2 share near their SMs, from DRAM past it. NVIDIA's A100
whitepaper ("A100 L2 Cache"; H100 alike): the L2 is two partitions, each caching data for the
SMs of the GPCs connected to it, so an SM's rows share half of it. The kernel keeps
``SOFTMAX_BLOCKS_PER_SM`` blocks (rows) on each SM at once (Nsight Compute on the lent H100: 32
registers a thread, 1,024 threads a block, the SM's 2,048 threads: 2 blocks;
benchmarks/data/h100_live_softmax_ncu.csv). With x the bytes of the rows held at once (2 x SMs
rows of w values, or all the rows where fewer) over half the L2, the share of the two re-reads
that miss grows linearly from none at x = 0.9 to all at x = 1.4 (``SOFTMAX_L2_RAMP``, read off
the H100's fp32 sweep, benchmarks/data/h100_live_softmax_l2.csv; Nsight Compute counted DRAM
reads of 1.1x the input at x = 0.66 and 2.8x at 1.32), and the kernel's stream is the op's
bytes times 1 + that share (``reread_share``). So an fp32 vocabulary of 50,257 on an H100
streams twice its bytes (x = 2.0) and a bf16 one barely more (x = 1.01): its values' work binds.
A GPU entry without an L2 figure rereads from DRAM.

Never fitted: the H100's fp32 rows, log-softmax in both dtypes, every H200 row (the same SMs and
clock, 60 MiB of L2, 1.43x the bandwidth) and the H200's L2 sweep (``bench_gpu_norms.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .predict import interpolate

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec

SOFTMAX_SOURCE = ("https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/"
                  "SoftMax.cu")
L2_PARTITIONS_SOURCE = ("https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/"
                        "nvidia-ampere-architecture-whitepaper.pdf")
#: Captured softmax forwards (``model.capture.SOFTMAXES``, over the last dimension: ``Op.row``).
SOFTMAX_KINDS = frozenset({"aten._softmax", "aten._log_softmax"})
#: The widest row torch's register kernel takes: ceil(w / 1024) < 10 (module docstring).
SOFTMAX_REG_COLUMNS = 9 * 1024
#: The bytes of a row the shared-memory kernel can hold: the block's 48 KiB
#: (``sharedMemPerBlock``) less 32 warps' fp32 partial sums.
SOFTMAX_SMEM_BYTES = 48 * 1024 - 32 * 4
#: Values (read and written) the warp and register kernels work through per SM and clock, by
#: the row's width (module docstring): fitted on a lent H100's bf16 rows.
SOFTMAX_VALUES_PER_SM_CLOCK = ((32, 2.7), (64, 3.7), (128, 4.3), (256, 4.6), (512, 4.7),
                               (768, 4.1), (1024, 4.4), (2048, 3.1), (4096, 2.4), (8192, 2.0))
#: The same for the block kernels past ``SOFTMAX_REG_COLUMNS`` (16,384 and 32,768 columns).
SOFTMAX_BLOCK_VALUES_PER_SM_CLOCK = 3.9
#: Rows (blocks of 1,024 threads) the three-pass kernel keeps on one SM at once.
SOFTMAX_BLOCKS_PER_SM = 2
#: (x, x): the resident rows' bytes over half the L2 where the re-reads start to miss and where
#: they all do (module docstring).
SOFTMAX_L2_RAMP = (0.9, 1.4)


def values_per_clock(row: int) -> float:
    """V(w): the values one SM works through per clock at a row of ``row`` values."""
    if row > SOFTMAX_REG_COLUMNS:
        return SOFTMAX_BLOCK_VALUES_PER_SM_CLOCK
    return interpolate(SOFTMAX_VALUES_PER_SM_CLOCK, row)


def three_pass(row: int, size: int) -> bool:
    """Whether torch runs its three-pass kernel for rows of ``row`` values of ``size`` bytes:
    past the register kernel, and the row too wide for shared memory or not a whole number of
    16-byte vectors."""
    return row > SOFTMAX_REG_COLUMNS and (row >= SOFTMAX_SMEM_BYTES // size
                                          or row % max(1, 16 // size) != 0)


def l2_fill(row: int, size: int, rows: int, hardware: HardwareSpec) -> float | None:
    """x: the bytes of the rows the three-pass kernel holds at once (``SOFTMAX_BLOCKS_PER_SM``
    on every SM, or all ``rows`` where fewer) over half the L2; None for an entry without an L2
    figure."""
    gpu = hardware.gpu
    if gpu is None or not hardware.llc_mb:
        return None
    held = min(rows, SOFTMAX_BLOCKS_PER_SM * gpu.sms)
    return held * row * size / (hardware.llc_mb * 2 ** 20 / 2)


def reread_share(row: int, size: int, rows: int, hardware: HardwareSpec) -> float:
    """The share of the three-pass kernel's two re-reads that come from DRAM (0 for the other
    kernels), by ``l2_fill`` (all of them where the entry gives no L2)."""
    if not three_pass(row, size):
        return 0.0
    x = l2_fill(row, size, rows, hardware)
    if x is None:
        return 1.0
    low, high = SOFTMAX_L2_RAMP
    return min(1.0, max(0.0, (x - low) / (high - low)))


def rows_s(nbytes: int, row: int, size: int, sm_clocks_per_s: float) -> float:
    """t_row: the op's values (``nbytes`` over ``size``) at V(``row``) on every SM."""
    return nbytes / size / (values_per_clock(row) * sm_clocks_per_s)
