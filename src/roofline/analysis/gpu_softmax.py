"""How long torch's softmax kernels, forward and backward, take on a GPU, by the row's width:
the part of ``analysis.gpu_ops`` for a captured ``aten._softmax`` or ``aten._log_softmax`` over
the last dimension (``SOFTMAX_KINDS``; the capture keeps the row's width, ``Op.row``) and for
their backwards, ``aten._softmax_backward_data`` and ``aten._log_softmax_backward_data``
(``SOFTMAX_BACKWARD_KINDS``, where the op carries its row; one without streams, as
``gpu_ops.KERNELS`` has it). ``kernel_terms`` gives ``gpu_ops`` both terms for either.

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

The backward (``host_softmax_backward``, for both ops; the softmax's on the product of the
gradient and the output torch makes first, ``softmax_backward_cuda_out``) picks its kernel by
width too: one warp a row while w <= 1,024 and its row is at most 4 KiB
(``SOFTMAX_BACKWARD_WARP_COLUMNS``, ``SOFTMAX_BACKWARD_WARP_BYTES``; ``dispatch_softmax_backward``,
PersistentSoftmax.cuh ``softmax_warp_backward``: the row's gradient and output held in
registers, read once), else one block a row (``dispatch_host_softmax_backward``; 512 threads
from 8,192 bf16 or 4,096 fp32 values, ``SoftMax_getBlockSize``) that keeps the gradient's row in
shared memory where it fits the block's 48 KiB less its 16 warps' partial sums and w is a
multiple of the 16-byte vector (``cunn_SoftMaxBackwardSmem``: each tensor read or written once),
else reads the gradient twice, for its sum and again beside the output to write the input's
gradient (``cunn_SoftMaxBackward``: ``ilpReduce``, then ``WriteBpropResults[Vectorized]``;
``two_pass``). torch 2.11 on the lent H100 ran the warp kernel at 32-1,024 columns, the
shared-memory one at 2,048 and 4,096 in both dtypes and 16,384 bf16, the two-pass one at 32,768
bf16 and 50,257 (h100_live_rows_kernels.json, h100_live_norm_kernels.csv).

The warp backward works through its values on the SMs as the forward's kernels do, t_row =
values / (V_b(w) x S x f), ``values`` the op's bytes over the dtype's size (the gradient and
output read, the input's gradient written) and V_b(w) ``SOFTMAX_BACKWARD_VALUES_PER_SM_CLOCK``
(linear in log2 w between the widths timed, clamped at 32 and 1,024: 4.8 at 32 columns, 5.4-5.6
at 64-512, 4.4 at 768, 4.8 at 1,024), fitted as the forward's rates were on the lent H100's bf16
softmax and log-softmax backwards at 2^23 and 2^26 values (the softmax backward's kernel: its
time less two launches and its multiply's stream at ``gpu_ops.DRAM_FRACTION``; 32-768 columns
from h100_live_rows.csv, 1,024 from h100_live_norms.csv, the softmax backward's only). A bf16
stream at 0.88 of an H100's bandwidth moves 5.6 values an SM clock: from 64 to 512 columns the
rate barely binds, at 32 and 768-1,024 it does (the H100 took 1.1-1.6x the stream there); an
fp32 warp backward streams. The block kernels stream (no rate: the H100's shared-memory
backward took 0.93-0.98 of its stream's time at 2^26 values).

The two-pass kernel's second read of the gradient, a third of the op's bytes
(``SOFTMAX_BACKWARD_REREAD``), comes from L2 or DRAM as the three-pass forward's re-reads do:
``l2_fill`` of ``SOFTMAX_BACKWARD_BLOCKS_PER_SM`` rows an SM (4: an SM's 2,048 threads over a
block's 512; registers not counted, and of 2-6 rows an SM, 4 fits the H100's two-pass rows
best), the same ramp (``miss_share``), a stream of the op's bytes times 1 + 1/3 of that share
(``backward_reread_share``). So an fp32 vocabulary's backward on an H100 (x = 4.05 at 50,257
columns) streams 4/3 of its bytes, a bf16 one at 32,768 columns (x = 1.32) 1.28.

Never fitted: the H100's fp32 rows, log-softmax in both dtypes, every H200 row (the same SMs and
clock, 60 MiB of L2, 1.43x the bandwidth) and the H200's L2 sweep (``bench_gpu_norms.py``); of
the backward, the H100's fp32 and block kernels' rows (within 1.25x: 46 of 48 rows of 32-50,257
columns, 18 of 18 of 768-8,192 timed again) and every H200 row (67 of 72 and 20 of 20). Left:
the H200 runs the bf16 warp backward 1.1-1.3x faster a clock than the H100 at 64-1,024 columns
(its memory, not its SMs, held the H100 back there): 0.79-0.92 of the prediction at 64-512; 166
bf16 rows of 50,257 (2^23 values), too few to keep every SM busy, take 1.43x (H100) and 1.51x
(H200) in the log-softmax backward; the H200's fp32 two-pass rows at 2^23 values 1.07-1.63x, as
its fp32 forward's take more below the turn.
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
#: Captured softmax forwards (``model.capture_shapes.SOFTMAXES``, over the last dimension:
#: ``Op.row``).
SOFTMAX_KINDS = frozenset({"aten._softmax", "aten._log_softmax"})
#: The widest row torch's register kernel takes: ceil(w / 1024) < 10 (module docstring).
SOFTMAX_REG_COLUMNS = 9 * 1024
#: The shared memory a block may use (``sharedMemPerBlock``: 48 KiB on every CUDA GPU).
SHARED_MEMORY_PER_BLOCK = 48 * 1024


def smem_row_bytes(threads: int) -> int:
    """The bytes of a row torch's shared-memory kernels (forward and backward) can hold in a
    block of ``threads``: ``SHARED_MEMORY_PER_BLOCK`` less one fp32 partial sum per warp."""
    return SHARED_MEMORY_PER_BLOCK - threads // 32 * 4


#: The bytes of a row the forward's shared-memory kernel can hold (1,024 threads a block).
SOFTMAX_SMEM_BYTES = smem_row_bytes(1024)
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
#: Captured softmax backwards over the last dimension (``Op.row``): torch's
#: ``host_softmax_backward`` runs both (module docstring).
SOFTMAX_BACKWARD_KINDS = frozenset({"aten._softmax_backward_data",
                                    "aten._log_softmax_backward_data"})
#: The widest row torch's warp backward takes: ``dim_size <= 1024 && dim_size *
#: sizeof(scalar_t) <= 4096`` (``host_softmax_backward``).
SOFTMAX_BACKWARD_WARP_COLUMNS = 1024
SOFTMAX_BACKWARD_WARP_BYTES = 4096
#: Values (the gradient and output read, the input gradient written) the warp backward works
#: through per SM and clock, by the row's width: fitted on a lent H100's bf16 softmax and
#: log-softmax backwards at 2^23 and 2^26 values, as ``SOFTMAX_VALUES_PER_SM_CLOCK`` was (module
#: docstring).
SOFTMAX_BACKWARD_VALUES_PER_SM_CLOCK = ((32, 4.8), (64, 5.6), (128, 5.5), (256, 5.6), (512, 5.4),
                                        (768, 4.4), (1024, 4.8))
#: Threads a block of torch's backward block kernels where a row may outgrow shared memory
#: (``SoftMax_getBlockSize(ILP, w)``: the least power of two at or above half of min(w / ILP,
#: 1,024), 512 once w is 8,192 bf16 or 4,096 fp32 values).
SOFTMAX_BACKWARD_THREADS = 512
#: The bytes of a row the backward's shared-memory kernel can hold.
SOFTMAX_BACKWARD_SMEM_BYTES = smem_row_bytes(SOFTMAX_BACKWARD_THREADS)
#: Rows the two-pass backward keeps on one SM at once: an SM's 2,048 threads over the block's 512
#: (registers not counted: no Nsight Compute run of the backward; module docstring).
SOFTMAX_BACKWARD_BLOCKS_PER_SM = 4
#: The two-pass backward's second read of the gradient, over the op's bytes: one of the three
#: tensors it moves.
SOFTMAX_BACKWARD_REREAD = 1 / 3


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


def backward_warp(row: int, size: int) -> bool:
    """Whether torch runs its warp backward (``dispatch_softmax_backward``) for rows of ``row``
    values of ``size`` bytes."""
    return row <= SOFTMAX_BACKWARD_WARP_COLUMNS and row * size <= SOFTMAX_BACKWARD_WARP_BYTES


def two_pass(row: int, size: int) -> bool:
    """Whether torch runs its two-pass backward (``cunn_SoftMaxBackward``) for rows of ``row``
    values of ``size`` bytes: past the warp kernel, and the row too wide for shared memory or not
    a whole number of 16-byte vectors."""
    return not backward_warp(row, size) and (row >= SOFTMAX_BACKWARD_SMEM_BYTES // size
                                             or row % max(1, 16 // size) != 0)


def l2_fill(row: int, size: int, rows: int, hardware: HardwareSpec,
            blocks_per_sm: int = SOFTMAX_BLOCKS_PER_SM) -> float | None:
    """x: the bytes of the rows a block kernel holds at once (``blocks_per_sm`` on every SM, the
    three-pass kernel's ``SOFTMAX_BLOCKS_PER_SM`` unless given, or all ``rows`` where fewer) over
    half the L2; None for an entry without an L2 figure."""
    gpu = hardware.gpu
    if gpu is None or not hardware.llc_mb:
        return None
    held = min(rows, blocks_per_sm * gpu.sms)
    return held * row * size / (hardware.llc_mb * 2 ** 20 / 2)


def miss_share(x: float | None) -> float:
    """The share of a block kernel's re-reads that come from DRAM at ``l2_fill`` x: none up to
    ``SOFTMAX_L2_RAMP``'s start, all from its end, linear between (all where x is None: no L2)."""
    if x is None:
        return 1.0
    low, high = SOFTMAX_L2_RAMP
    return min(1.0, max(0.0, (x - low) / (high - low)))


def reread_share(row: int, size: int, rows: int, hardware: HardwareSpec) -> float:
    """The share of the three-pass kernel's two re-reads that come from DRAM (0 for the other
    kernels), by ``l2_fill`` (all of them where the entry gives no L2)."""
    if not three_pass(row, size):
        return 0.0
    return miss_share(l2_fill(row, size, rows, hardware))


def backward_reread_share(row: int, size: int, rows: int, hardware: HardwareSpec) -> float:
    """The share of the two-pass backward's second read of the gradient that comes from DRAM (0
    for the other backward kernels): ``miss_share`` of its ``SOFTMAX_BACKWARD_BLOCKS_PER_SM``
    rows an SM."""
    if not two_pass(row, size):
        return 0.0
    return miss_share(l2_fill(row, size, rows, hardware, SOFTMAX_BACKWARD_BLOCKS_PER_SM))


def rows_s(nbytes: int, row: int, size: int, sm_clocks_per_s: float) -> float:
    """t_row: the op's values (``nbytes`` over ``size``) at V(``row``) on every SM."""
    return nbytes / size / (values_per_clock(row) * sm_clocks_per_s)


def kernel_terms(kind: str, nbytes: int, row: int, size: int, sm_clocks_per_s: float,
                 hardware: HardwareSpec) -> tuple[float, float]:
    """(t_row, stream) of torch's softmax kernel for a captured ``kind`` (``SOFTMAX_KINDS`` or
    ``SOFTMAX_BACKWARD_KINDS``) moving ``nbytes`` over rows of ``row`` values of ``size`` bytes:
    the time its values take on the SMs at its width's rate (0 where none is modelled: the
    backward's block kernels) and its stream over the op's bytes, 1 plus its re-reads that miss
    the L2 (module docstring)."""
    if kind in SOFTMAX_BACKWARD_KINDS:
        rows = nbytes // (3 * size * row)  # the gradient and output read, the input's written
        row_s = 0.0
        if backward_warp(row, size):
            row_s = nbytes / size / (interpolate(SOFTMAX_BACKWARD_VALUES_PER_SM_CLOCK, row)
                                     * sm_clocks_per_s)
        return row_s, 1.0 + SOFTMAX_BACKWARD_REREAD * backward_reread_share(row, size, rows,
                                                                            hardware)
    rows = nbytes // (2 * size * row)  # the op reads its input and writes its output
    # the three-pass kernel's two re-reads of its input: the op's bytes again
    return rows_s(nbytes, row, size, sm_clocks_per_s), 1.0 + reread_share(row, size, rows,
                                                                          hardware)
