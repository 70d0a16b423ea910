"""A GPU GEMM as cuBLAS-class libraries run it: thread-block tiles, waves over the SMs, split-K,
the bandwidth one SM can draw, the main loop over K, a sustained fraction of the peak, a
minimum kernel duration and operands that stay in L2. Each term is a documented effect or a
stated fit; the fitted constants (``FITTED``) come from public measurements (see there).

For C(M, N) = A(M, K) . B(K, N) in ``G`` = batch_count copies, element sizes e (A, B) and
e_C (C), on a GPU of S SMs at clock f, datasheet peak P for the dtype, DRAM bandwidth BW and an
L2 of L bytes, the library is assumed to run the fastest of its kernels: for each candidate
tile (tm, tn) (``tiles_for``: Tensor-Core tiles for a Tensor-Core dtype, CUDA-core tiles
otherwise) and each split-K factor s (1, 2, 4, ... while the tiles stay at most S and each
slice keeps ``SPLIT_K_MIN_SLICE`` of K)::

    blocks = ceil(M / tm) ceil(N / tn) s G        waves = ceil(blocks / S)
    iters  = ceil(ceil(K / s) / tk)               (tk: the K step of one main-loop iteration)
    t_iter = max(2 tm tn tk / (F p P / S),        (the math of one iteration on one SM, at the
                 (tm + tn) tk e / (b f))           sustained fraction F and the power-limited
                                                   share p of the clock; or the loads of its A
                                                   and B slices at the b bytes per clock one SM
                                                   can draw, whichever is longer)
    p      = min(1, TDP / (S f_GHz w))            (w: the watts a full-rate GEMM draws per SM per
                                                   GHz, per math unit; ``power_clock_factor``)
    t_main = waves (iters + c) t_iter             (c: iterations' worth of prologue/epilogue)
    bytes  = [e(MK + KN) + e_C MN (x2 when C is read)] G unless it all fits in L (then 0: a
             timing loop that repeats the GEMM finds its operands in L2)
             + 8 s M N G when s > 1               (FP32 partial sums written and read back)
    t_dram = bytes / (D BW)                       (D: the sustained fraction of DRAM bandwidth)
    t      = max(t_min, t_main, t_dram)

and the prediction is the smallest t over tiles and splits. A GEMM with fewer blocks than SMs
thus streams its operands at blocks x b f, not at the device's bandwidth (the thin-GEMM case),
and a large one runs at F p P: at F P on a GPU whose board power covers its SMs at boost
(P100, V100, A100, H100), below it on a low-power part (T4: 70 W for 40 SMs at 1.59 GHz). No
term here is fitted to one device: the constants are shared by every NVIDIA GPU (per math
unit), the device enters through its hwdb figures (SMs, boost clock, TDP, L2, bandwidth).

Only the standard library is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec

#: The K step of one main-loop iteration: CUTLASS's default thread-block shapes, 128x128x32 for
#: Tensor-Core GEMMs (Volta and later) and 128x128x8 for SIMT (CUDA-core) SGEMM
#: (https://github.com/NVIDIA/cutlass, include/cutlass/gemm/device/default_gemm_configuration.h).
TENSOR_CORE_K_STEP = 32
CUDA_CORE_K_STEP = 8
#: CUDA-core (SIMT) tiles when an entry gives none (``gpu.simt_tiles``): the shapes of cuBLAS's
#: SGEMM kernels (``maxwell_sgemm_128x128``, ``_128x64``, ``_64x64``; kernel names as nvprof
#: lists them) and CUTLASS's SIMT tiles (128x32 / 32x128 for thin outputs).
DEFAULT_CUDA_CORE_TILES = ((128, 128), (128, 64), (64, 128), (64, 64), (128, 32), (32, 128))
#: Split-K keeps at least this much of K in each slice (as analysis.quantization).
SPLIT_K_MIN_SLICE = 256


@dataclass(frozen=True)
class GpuGemmConstants:
    """The shared constants of the model and where they come from.

    ``tensor_core_fraction`` / ``cuda_core_fraction``: the sustained share of the datasheet
    peak a large GEMM reaches (clocks under load, power, the main loop's efficiency);
    ``sm_bytes_per_clock``: what one SM can draw from L2 / DRAM per clock;
    ``tile_overhead_iterations``: the prologue (pipeline fill) and epilogue of one tile, in
    main-loop iterations; ``min_kernel_s``: the shortest kernel (launch, setup, drain);
    ``dram_fraction``: the share of DRAM bandwidth a streaming kernel sustains;
    ``tensor_core_watts_per_sm_ghz`` / ``cuda_core_watts_per_sm_ghz``: the board power a
    full-rate GEMM draws per SM per GHz of clock (``power_clock_factor``; 0, the default: no
    power limit, so constants built without them, a calibration's, predict as before).
    ``data`` names the measurements they were fitted on and ``devices`` the hwdb entries those
    were measured on (``architectures``: their architectures).
    """

    tensor_core_fraction: float
    cuda_core_fraction: float
    sm_bytes_per_clock: float
    tile_overhead_iterations: float
    min_kernel_s: float
    dram_fraction: float
    data: str
    devices: tuple[str, ...]
    architectures: tuple[str, ...]
    tensor_core_watts_per_sm_ghz: float = 0.0
    cuda_core_watts_per_sm_ghz: float = 0.0


#: Fitted by ``python benchmarks/bench_gpu_model.py --fit`` (a Nelder-Mead search on log
#: parameters minimising the mean over devices of the mean |log(measured / predicted)|) on
#: benchmarks/data/deepbench_gemm.csv (DeepBench's published GEMM timings: P100, GTX 1080 Ti,
#: Titan Xp, TITAN X (Pascal), T4; 1120 timings) and benchmarks/data/mamf.csv (the best bf16
#: matmul rates published for A100 SXM, A100 PCIe and H100 SXM). DeepBench's V100 results are
#: held out. DeepBench's Maxwell timings (M40, GTX TITAN X; CUDA 7.5) are in the data but not
#: fitted: the benchmark checks the constants on them as they are (``CHECK_ONLY`` there).
#: Two constants are stated, not fitted. ``dram_fraction`` 0.9: what DeepBench's bandwidth-bound
#: T4 fp16 GEMMs reach (8448 x 16 x 2816: 47.6 MB in 161 us, 296 GB/s of 320).
#: ``sm_bytes_per_clock`` 64: an assumption, neither fitted nor cited. This data does not pin it
#: (with split-K and small tiles every value above ~30 B per clock fits as well, and the fit
#: drives it to infinity); 64 lets a GEMM of few blocks stream at most blocks x 64 B per clock.
#: ``tile_overhead_iterations`` came out near 0.04 (a flat direction: 0.03-0.08 fit as well) and
#: ``min_kernel_s`` near 10 us: DeepBench's smallest GEMMs take 9-16 us. The watts per SM-GHz
#: are pinned by T4 alone (the one fitted device whose TDP is below its SMs x boost clock x w:
#: 70 / (40 x 1.59) = 1.10 W per SM-GHz, against 1.97 (A100 PCIe 80GB) to 5.8 (TITAN X Pascal)
#: for the others, which only bound w from above); they are Turing's and 12 nm's figures, so on
#: a newer process (Ada's L4 at 0.61 W per SM-GHz, L40S at 0.98) the power limit is likely
#: overstated. Before the power term the CUDA-core fraction was 0.815 (T4's fp32 GEMMs, at 0.58
#: of their peak, pulled it down) and P100 left out came to 16-18% within 1.25x.
FITTED = GpuGemmConstants(
    tensor_core_fraction=0.833, cuda_core_fraction=0.845, sm_bytes_per_clock=64.0,
    tile_overhead_iterations=0.0388, min_kernel_s=1.02e-5, dram_fraction=0.9,
    tensor_core_watts_per_sm_ghz=1.53, cuda_core_watts_per_sm_ghz=1.92,
    data="DeepBench GEMM timings (P100, GTX 1080 Ti, Titan Xp, TITAN X Pascal, T4) and "
         "published best matmul rates (A100, H100)",
    devices=("p100-pcie-16gb", "gtx-1080-ti", "titan-xp", "titan-x-pascal", "t4",
             "a100-sxm4-80gb", "a100-pcie-80gb", "h100-sxm5-80gb"),
    architectures=("Pascal", "Turing", "Ampere", "Hopper"))

#: dtypes a Tensor Core runs (on a GPU whose entry lists Tensor-Core tiles)
TENSOR_CORE_DTYPES = frozenset({"fp16", "bf16", "tf32", "int8", "fp8"})


@dataclass(frozen=True)
class GpuDevice:
    """What the model needs of one GPU for one dtype (``device_for``)."""

    sms: int
    clock_hz: float
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    l2_bytes: float
    tiles: tuple[tuple[int, int], ...]
    k_step: int
    tensor_core: bool
    tdp_w: float | None = None


def uses_tensor_cores(hardware: HardwareSpec, dtype: str) -> bool:
    """A Tensor-Core dtype on a GPU that lists Tensor-Core tiles (Volta and later); fp64 too
    where its peak is above the CUDA-core figure (A100's and H100's FP64 Tensor Cores)."""
    if not hardware.tiles:
        return False
    if dtype in TENSOR_CORE_DTYPES:
        return True
    vector = hardware.vector_tflops.get(dtype)
    return vector is not None and hardware.peak_tflops.get(dtype, 0.0) > vector


def device_for(hardware: HardwareSpec, dtype: str) -> GpuDevice:
    """The model's view of ``hardware`` (a GPU entry) for ``dtype``."""
    gpu = hardware.gpu
    assert gpu is not None  # callers check hardware.kind == "gpu"
    tensor = uses_tensor_cores(hardware, dtype)
    tiles = gpu.tiles if tensor else (gpu.simt_tiles or DEFAULT_CUDA_CORE_TILES)
    return GpuDevice(gpu.sms, gpu.boost_clock_ghz * 1e9, hardware.peak_flops_per_s(dtype),
                     hardware.bandwidth_bytes_per_s, (hardware.llc_mb or 0.0) * 2**20,
                     tiles, TENSOR_CORE_K_STEP if tensor else CUDA_CORE_K_STEP, tensor,
                     hardware.tdp_w)


def power_clock_factor(dev: GpuDevice, c: GpuGemmConstants) -> float:
    """The share of its boost clock a GPU holds through a long full-rate GEMM under its board
    power: ``min(1, TDP / (S x f_GHz x w))`` with w the watts a full-rate GEMM draws per SM per
    GHz (``c.tensor_core_watts_per_sm_ghz`` or ``c.cuda_core_watts_per_sm_ghz``). A part whose
    board power is low for its SMs and clock (T4: 70 W for 40 SMs at 1.59 GHz, 1.1 W per SM-GHz)
    cannot hold its boost clock through a long GEMM: its power limiter lowers the clock (NVIDIA's
    developer forum, "About GPU peak performance", a T4 cuBLAS FP16 GEMM at ~24 of 65 TFLOPS:
    "power capping ... expected behavior for approximately continuous matrix multiply operations
    on a T4", https://forums.developer.nvidia.com/t/about-gpu-peak-performance/264462). 1 when
    the entry gives no TDP or w is 0."""
    w = c.tensor_core_watts_per_sm_ghz if dev.tensor_core else c.cuda_core_watts_per_sm_ghz
    if dev.tdp_w is None or w <= 0.0:
        return 1.0
    return min(1.0, dev.tdp_w / (dev.sms * dev.clock_hz * 1e-9 * w))


def _splits(base: int, k: int, sms: int) -> list[int]:
    """1, 2, 4, ... while base x s stays within the SMs and each slice keeps 256 of K."""
    splits = [1]
    while base * splits[-1] * 2 <= sms and k // (splits[-1] * 2) >= SPLIT_K_MIN_SLICE:
        splits.append(splits[-1] * 2)
    return splits


def tile_time(m: int, n: int, k: int, e: float, tile: tuple[int, int], split: int, count: int,
              dev: GpuDevice, c: GpuGemmConstants, e_b: float | None = None,
              math_scale: float = 1.0) -> float:
    """``waves x (iters + c) x t_iter`` for one tile and split (module docstring). A stored
    weight format (int4, int8, fp8 under wider math) loads B at ``e_b`` bytes per element and
    multiplies the math by ``math_scale`` (the GEMM's FLOPs plus its dequantization, over its
    FLOPs)."""
    tm, tn = tile
    blocks = -(-m // tm) * -(-n // tn) * split * count
    waves = -(-blocks // dev.sms)
    slice_k = -(-k // split)
    iters = -(-slice_k // dev.k_step)
    fraction = c.tensor_core_fraction if dev.tensor_core else c.cuda_core_fraction
    fraction *= power_clock_factor(dev, c)
    math_s = math_scale * 2.0 * tm * tn * dev.k_step / (fraction * dev.peak_flops_per_s / dev.sms)
    load_s = (tm * e + tn * (e if e_b is None else e_b)) * dev.k_step / (
        c.sm_bytes_per_clock * dev.clock_hz)
    return waves * (iters + c.tile_overhead_iterations) * max(math_s, load_s)


def gemm_time(m: int, n: int, k: int, e: float, count: int, working: int, dev: GpuDevice,
              c: GpuGemmConstants = FITTED, e_b: float | None = None,
              math_scale: float = 1.0) -> dict[str, float]:
    """The predicted time of ``count`` C(m, n) = A(m, k) B(k, n) GEMMs (one batched kernel)
    whose compulsory traffic is ``working`` bytes (``Gemm.bytes``: e(MK + KN) + e_C MN, x2 on
    C when read, for all ``count``; a convolution's tensors), and the terms of the best tile
    and split: ``time_s``, ``main_s``, ``dram_s``, ``min_kernel_s``, ``tile_m``, ``tile_n``,
    ``split_k``, ``resident``."""
    resident = working <= dev.l2_bytes
    bandwidth = c.dram_fraction * dev.bandwidth_bytes_per_s
    best: dict[str, float] | None = None
    for tile in dev.tiles:
        base = -(-m // tile[0]) * -(-n // tile[1]) * count
        for split in _splits(base, k, dev.sms):
            main = tile_time(m, n, k, e, tile, split, count, dev, c, e_b, math_scale)
            extra = 8 * split * m * n * count if split > 1 else 0
            dram = ((0 if resident else working) + extra) / bandwidth
            time = max(c.min_kernel_s, main, dram)
            if best is None or time < best["time_s"]:
                best = {"time_s": time, "main_s": main, "dram_s": dram,
                        "min_kernel_s": c.min_kernel_s, "tile_m": float(tile[0]),
                        "tile_n": float(tile[1]), "split_k": float(split),
                        "resident": float(resident)}
    assert best is not None  # device_for never gives an empty tile list
    return best
