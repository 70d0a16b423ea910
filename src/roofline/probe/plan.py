"""What a probe run does: the presets (``Plan``: sizes, repeats, calibration shapes) and the
version numbers of the probe's method and of its JSON schema (their histories: CHANGES.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

#: The shape of ``probe --format json``, and how the probe measures: bump each when it changes
#: and say why in CHANGES.md, which keeps both histories.
SCHEMA_VERSION = 6
METHOD_VERSION = 9
#: What the probe's CPU GEMMs (and so a CPU calibration) can go through: numpy's BLAS
#: (``kernels.cpu``) or torch (``kernels.torch_cpu``); ``probe --library``.
GEMM_LIBRARIES = ("numpy", "torch")
MiB = 2**20
READ_STREAM_LLC_FACTOR = 16
READ_STREAM_MAX_BYTES = 2048 * MiB
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Plan:
    """Sizes and repetition counts of one preset."""

    name: str
    gemm_sizes: dict[str, tuple[int, ...]]
    repeats: int
    warmups: int
    min_time_s: float
    dram_array_bytes: tuple[int, int]  # (min, max) per array; 4 x LLC in between
    dram_llc_factor: float
    llc: bool
    small_gemm_n: int = 8
    dram_read_bytes: int | None = None  # the read stream's size; None: 16x the LLC (capped)
    # calibration of predicted_time_s (analysis.predict), per dtype: small squares; thin M at
    # N = K = cal_thin_nk (in cache) and at N = K sized so that B is cal_llc_factor x the LLC
    # (cal_thin_dram_nk when given); C's write cost on a GEMM of K = cal_c_k whose C, square,
    # is cal_llc_factor x the LLC (cal_c_m x cal_c_n when given): OpenBLAS writes C about 15%
    # slower per byte when M <= N, so a square C sits between the two
    cal_square: tuple[int, ...] = (32, 64, 128, 256, 512)
    cal_thin_m: tuple[int, ...] = (1, 4, 16, 64)
    cal_thin_nk: int = 1024
    cal_llc_factor: float = 3.0
    cal_thin_dram_nk: int | None = None
    cal_c_m: int | None = None
    cal_c_n: int | None = None
    cal_c_k: int = 16
    # short values, many of them: on a shared machine a preempted BLAS thread costs a whole
    # scheduler tick, and the best of many short values is the one that missed it; timed in
    # cal_rounds round-robin rounds of cal_values values each (kernels.rounds), their starts
    # spread over cal_span_s (idle between them), and up to cal_extra_rounds more while a
    # figure contradicts its neighbours or no round was quiet (probe.calibrate_rounds); the
    # read stream's values: 2 x cal_repeats
    cal_min_time_s: float = 0.002
    cal_repeats: int = 9
    cal_rounds: int = 6
    cal_values: int = 2
    cal_extra_rounds: int = 4
    cal_span_s: float = 40.0
    lowp_sizes: tuple[int, ...] = (1024,)
    # every timed kernel stops within this many seconds (one value past it at most;
    # kernels.timing.measure), and a GEMM size whose one call the smaller size says would
    # take longer is not run (runner.Session.best_over_sizes)
    kernel_budget_s: float = 10.0
    gpu_gemm_sizes: tuple[int, ...] = (4096, 8192)
    gpu_copy_bytes: int = 1024 * MiB
    gpu_cal_gemm_n: int = 64        # the GPU calibration's smallest GEMM (min_kernel_s)
    gpu_cal_copy_bytes: int = 4096  # and small copy (launch_s)
    gpu_cal_graph_calls: int = 100  # calls of each in one CUDA graph (timing "graph")
    gpu_h2d_bytes: int = 256 * MiB
    # op costs (probe.op_costs, analysis.cpu_ops): values per tensor of the in-cache kernels,
    # the DRAM add's three tensors together this many times the LLC (ops_dram_elements per
    # tensor when given), the NCHW map of batch norm and max pooling, and fused attention's
    # heads, head dim and sequence lengths
    ops_elements: int = 2**18
    ops_dram_llc_factor: float = 4.0
    ops_dram_elements: int | None = None
    ops_nchw: tuple[int, int, int, int] = (4, 64, 32, 32)
    ops_heads: int = 12
    ops_head_dim: int = 64
    ops_seqs: tuple[int, ...] = (128, 512)
    # shorter values than the GEMMs', more of them: a loaded 2-vCPU VM stalled 3% of 17 us op
    # calls for a scheduler tick (8 ms), so a 2 ms value of ~100 calls almost always held one
    ops_min_time_s: float = 0.0005
    ops_repeats: int = 15


PRESETS = {
    "full": Plan("full", {"fp32": (1024, 1536, 2560), "fp64": (1024, 1536, 2560)}, repeats=5,
                 warmups=1, min_time_s=0.1, dram_array_bytes=(64 * MiB, 512 * MiB),
                 dram_llc_factor=4.0, llc=True, lowp_sizes=(1024, 2048)),
    "quick": Plan("quick", {"fp32": (1536,), "fp64": (1024,)}, repeats=3, warmups=1,
                  min_time_s=0.03, dram_array_bytes=(32 * MiB, 128 * MiB), dram_llc_factor=1.0,
                  llc=False, gpu_gemm_sizes=(4096,), gpu_copy_bytes=256 * MiB,
                  gpu_h2d_bytes=64 * MiB, cal_square=(32, 64, 128, 256), cal_repeats=7,
                  cal_rounds=3, cal_extra_rounds=3, cal_span_s=0.0,
                  kernel_budget_s=3.0, ops_repeats=11),
    # for tests: finishes in well under a second, figures meaningless
    "tiny": Plan("tiny", {"fp32": (16, 32), "fp64": (16,)}, repeats=2, warmups=1,
                 min_time_s=0.0005, dram_array_bytes=(64 * 1024, 64 * 1024),
                 dram_llc_factor=1.0, llc=True, small_gemm_n=4, lowp_sizes=(16,),
                 dram_read_bytes=64 * 1024,
                 gpu_gemm_sizes=(16,), gpu_copy_bytes=4096, gpu_h2d_bytes=4096,
                 cal_square=(4, 8), cal_thin_m=(1, 2), cal_thin_nk=16, cal_thin_dram_nk=24,
                 cal_c_m=16, cal_c_n=16, cal_c_k=2,
                 cal_min_time_s=0.0005, cal_rounds=2, cal_values=1, cal_extra_rounds=1,
                 cal_span_s=0.0,
                 kernel_budget_s=0.5, ops_elements=4096,
                 ops_dram_elements=16384, ops_nchw=(1, 4, 8, 8), ops_heads=2, ops_head_dim=8,
                 ops_seqs=(16, 32), ops_min_time_s=0.0002, ops_repeats=5),
}
