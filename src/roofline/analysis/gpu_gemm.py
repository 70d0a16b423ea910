"""A GPU GEMM as cuBLAS-class libraries run it: thread-block tiles, waves over the SMs, split-K,
the bandwidth one SM can draw, the main loop over K, a sustained fraction of the peak at the
clock the board holds, a kernel's fixed time and operands that stay in L2. Each term is a
documented effect or a stated fit; the fitted constants (``FITTED``) come from public
measurements (see there).

For C(M, N) = A(M, K) . B(K, N) in ``G`` = batch_count copies, element sizes e (A, B) and
e_C (C), on a GPU of S SMs at clock f, datasheet peak P for the dtype, DRAM bandwidth BW and an
L2 of L bytes, the library is assumed to run the fastest of its kernels: for each candidate
tile (tm, tn) (``device_for``: Tensor-Core tiles for a Tensor-Core dtype, CUDA-core tiles
otherwise) and each split-K factor s (1, 2, 4, ... while the tiles stay at most S and each
slice keeps ``SPLIT_K_MIN_SLICE`` of K)::

    blocks = ceil(M / tm) ceil(N / tn) s G        waves = ceil(blocks / S)
    iters  = ceil(ceil(K / s) / tk)               (tk: the K step of one main-loop iteration)
    t_iter = max((2 tm + d) tn tk / (F r P / S),  (the math of one iteration on one SM, at the
                 (tm + tn) tk e / (b f))           sustained fraction F of the peak at the clock
                                                   the board holds; or the loads of its A and B
                                                   slices at the b bytes per clock one SM can
                                                   draw, whichever is longer)
    d      = 2 for a stored weight format (int4, int8, fp8 B under wider math: each block
             converts and scales its own tn x tk slice of B, whatever its tm rows, once per
             iteration; B loaded at its own width; its kernels also offer the thin tiles
             ``WEIGHT_ONLY_TILES``, 16 and 32 rows, for a small batch), else 0
    f      = gpu.sustained_clock_ghz, else the boost clock; r = f / boost (``clock_share``;
             for FP32 and FP64 also boost / gpu.vector_clock_ghz where the vendor's figures
             for them assume another clock, ``peak_share``)
    t_main = waves (iters + c) t_iter / a         (c: iterations' worth of prologue/epilogue;
                                                   a: 1, or on a GPU whose Tensor-Core kernels
                                                   load through TMA the share kept when a row
                                                   misses 16 bytes, ``MISALIGNED_SHARES``, or
                                                   on Hopper in TF32 when A or B is not K-major,
                                                   ``STRIDED_SHARES``: the smaller)
    bytes  = [e(MK + KN) + e_C MN (x2 when C is read)] G unless it all fits in L (then 0: a
             timing loop that repeats the GEMM finds its operands in L2; in a step that keeps
             more than L, the kept operand's bytes, a weight or the KV cache read from DRAM at
             every use: ``analysis.residency``)
             + 8 s M N G when s > 1               (FP32 partial sums written and read back)
    t_dram = bytes / (D BW)                       (D: the sustained fraction of DRAM bandwidth)
    t_tail = C_last / (D BW)                      (C_last: the C bytes the last wave's tiles
                                                   write, C's bytes x last / blocks, last =
                                                   blocks - (waves - 1) S)
    t      = t_launch + max(t_main, t_dram)       (t_launch: a kernel's fixed time, launch to
             + t_tail                              drain, ``min_kernel_s``; as gpu_ops adds it)

and the prediction is the smallest t over tiles and splits. On a GPU whose Tensor-Core kernels
load through TMA (Hopper, Blackwell) a tile may also run stream-K (``stream_k_time``): where its
tiles leave the last wave part-empty, the tiles x iters main-loop iterations are dealt evenly over
the S SMs, ceil(tiles iters / S) each plus c for every tile an SM touches (at most
ceil(tiles / S) + 1), an SM that ends inside a tile writing its FP32 partial tile for another to
read (8 tm tn bytes, S of them at most), and every SM ends at once (t_tail charges C S / tiles);
only where there are more tiles than SMs (fewer: split-K, whose slices keep SPLIT_K_MIN_SLICE
of K; a stream-K there reduces up to S - 1 partial tiles one peer at a time, which the model
would not charge). CUTLASS runs it on both (``PersistentTileSchedulerSm90StreamK`` and its
Sm100 counterpart, include/cutlass/gemm/kernel/sm90_tile_scheduler_stream_k.hpp; Osama et al.,
"Stream-K", PPoPP 2023). Not fitted: added after the fit, it moved the lent H100's bf16
torch.matmul timings from 73% to 74% within 1.25x and the H200's (never fitted) from 74% to 76%
(TF32 91% to 93%), B200's XLA rows (never fitted) from 83% / 84% to 84% / 86% (bf16 / fp8);
fp8 on the lent GPUs from 28% to 24%; the weight gradients of GPT-2's FFN (3072 x 768 x 8192:
144 tiles on 132 SMs) ran at the full rate where waves of 128 x 128 tiles had them at 0.65.
``t_tail`` is a tile's epilogue:
it stores its C tile after its main loop. An earlier wave's stores drain while the next wave
computes; the last wave's start only when every main loop has ended, and the kernel ends when
they have drained, whether or not the GEMM fits in L2 (the first below, 37.7 MB, fits). XLA's H100
table shows more than that: bf16 4096 x 4096 x K took 21.6 / 31.1 / 50.1 / 93.4 us for K = 256
/ 512 / 1024 / 2048, each about the model's main loop plus 11 us, the time all 33.5 MB of C
take at 0.9 x 3.35 TB/s (TF32 likewise with 67 MB: 45.8 us against 20.9 + 25.0 at K = 256). The
model charges the last of its 4 waves of 256 x 128 tiles, a quarter of that: charged on the
whole of C the fit was worse over all the data (``FITTED``), and as it is it put B200's rows,
never fitted, 83% / 84% within 1.25x (bf16 / fp8) where they were 68% / 65% without it (84% /
86% with stream-K). A GEMM
with fewer blocks than SMs
thus streams its operands at blocks x b f, not at the device's bandwidth (the thin-GEMM case),
and a large one runs at F r P: at F P on a GPU that holds its boost clock, below it on one whose
entry gives a lower sustained clock (T4: ~0.9 GHz of its 1.59 GHz boost, its 70 W board power
capping the clock through continuous matrix math; a published measurement, see
hwdb/gpu/t4.yaml). No term here is fitted to one device: the constants are shared by every
NVIDIA GPU (per math unit), the device enters through its hwdb figures (SMs, clocks, L2,
bandwidth).

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
#: cuBLAS also ships a 32x32 SGEMM (``sgemm_32x32x32_NN`` / ``_NN_vec`` in the example output of
#: PyTorch's profiler recipe, pytorch/tutorials recipes_source/recipes/profiler_recipe.py), left
#: out on purpose: no term here makes a small tile slower per SM, so the model would run 32x32
#: wherever it quantizes less (the largest DeepBench SGEMMs included: 1024 x 24000 x 2048 on
#: P100). Added and refitted, it put 66% rather than 63% within 1.25x left out (P100 alone 64%
#: to 75% / 81%; GTX 1080 Ti, Titan Xp and T4 fp32 lost 1-3 points, 2x unchanged at 86%)
#: while the fit's own loss rose (0.2039 to 0.2088) and ``min_kernel_s`` with it (8.33 to
#: 10.4 us: +2 us on every kernel of every GPU, Tensor-Core GEMMs on A100 / H100 included).
DEFAULT_CUDA_CORE_TILES = ((128, 128), (128, 64), (64, 128), (64, 64), (128, 32), (32, 128))
#: Split-K keeps at least this much of K in each slice (as analysis.quantization).
SPLIT_K_MIN_SLICE = 256


@dataclass(frozen=True)
class GpuGemmConstants:
    """The shared constants of the model and where they come from.

    ``tensor_core_fraction`` / ``cuda_core_fraction``: the sustained share of the peak (at the
    clock the board holds, ``clock_share``) a large GEMM reaches (the main loop's efficiency);
    ``sm_bytes_per_clock``: what one SM can draw from L2 / DRAM per clock;
    ``tile_overhead_iterations``: the prologue (pipeline fill) and epilogue of one tile, in
    main-loop iterations; ``min_kernel_s``: a kernel's fixed time (launch, setup, drain),
    added to its main loop or DRAM stream, so no kernel takes less;
    ``dram_fraction``: the share of DRAM bandwidth a streaming kernel sustains.
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


#: Fitted by ``python benchmarks/bench_gpu_model.py --fit`` (a Nelder-Mead search on log
#: parameters minimising the mean over devices of the mean |log(measured / predicted)|) on
#: benchmarks/data/deepbench_gemm.csv (DeepBench's published GEMM timings: P100, GTX 1080 Ti,
#: Titan Xp, TITAN X (Pascal), T4; 1120 timings), benchmarks/data/mamf.csv (the best bf16
#: matmul rates published for A100 SXM, A100 PCIe and H100 SXM) and
#: benchmarks/data/xla_matmul.csv (XLA's default matmul performance table for H100 SXM: 750
#: kernel times, bf16 and TF32, batched dots of 256..4096; its B200 rows are checked, never
#: fitted; the H100 rows were added in 0.8.0: before them, the
#: constants predicted them out of sample 70% / 100% (bf16) and 49% / 99% (TF32) within 1.25x
#: / 2x, and refitted with them they moved little: 0.864 -> 0.863, 0.878 -> 0.873, 0.058 ->
#: 0.067, 8.33 -> 7.23 us). DeepBench times a GEMM as a loop's wall time per call, XLA as the
#: median CUPTI kernel time, so the fixed time is a blend of the two. DeepBench's V100 results are
#: held out. DeepBench's Maxwell timings (M40, GTX TITAN X; CUDA 7.5) are in the data but not
#: fitted: the benchmark checks the constants on them as they are (``CHECK_ONLY`` there).
#: Two constants are stated, not fitted. ``dram_fraction`` 0.9: what DeepBench's bandwidth-bound
#: T4 fp16 GEMMs reach (8448 x 16 x 2816: 47.6 MB in 161 us, 296 GB/s of 320).
#: ``sm_bytes_per_clock`` 64: an assumption, neither fitted nor cited. This data does not pin it
#: (with split-K and small tiles every value from ~48 B per clock up gives the same loss, 0.204;
#: 32 gives 0.226 and 24 0.275, though 24 puts 66% rather than 64% within 1.25x); 64 lets a
#: GEMM of few blocks stream at most blocks x 64 B per clock. What is published is the whole
#: L2's read rate, not one SM's: NVIDIA's A100 whitepaper (section "A100 L2 Cache") gives
#: 5120 B/clk for A100 and 2048 for V100, i.e. 47.4 / 25.6 B per clock per SM when every SM
#: reads at once, and te42kyfo/gpu-benches measures ~2.44 TB/s on V100 (~22 B/clk/SM at
#: 1.38 GHz) and ~128 B/clk/SM from L1 on V100 / A100 / H100. Refitted at 47.4 the loss is
#: 0.2058 with the same totals (in-sample and left out); at 25.6 the fit needs a Tensor-Core
#: fraction of 1.04 (above peak) and still predicts H100's best published rate 1.5x slow: the
#: L2 share per SM is not what bounds a cuBLAS main loop in this model (why, this data cannot
#: say), and a device's own L2 rate would be a per-device figure, which no source gives for the
#: Pascal and Turing cards.
#: ``tile_overhead_iterations`` came out near 0.06 and ``min_kernel_s`` (added to every kernel)
#: near 6.4 us: DeepBench's smallest GEMMs take 9-16 us, XLA's smallest H100 kernels 5-6 us. (The
#: helper figures above, for the 32x32 tile and the L2 share, were measured before XLA's table
#: joined the fit.) The last wave's tail (``t_tail``, 0.8.1) was refitted so: 0.863 -> 0.863,
#: 0.873 -> 0.868, 0.067 -> 0.057, 7.23 -> 6.40 us (loss 0.2219 -> 0.2190); in sample 61% -> 67%
#: within 1.25x over the fitted devices (H100 bf16 78% -> 93%, TF32 38% -> 51%), left out 60% ->
#: 62% (H100 bf16 70% -> 63%: without XLA's kernel times the fit's fixed time is DeepBench's
#: 8 us, too long for H100's small kernels), DeepBench's sheets within 2 points either way.
#: Charged on the whole of C (after the longer of the main loop and A's and B's stream), the data
#: liked it less (loss 0.2217, a Tensor-Core fraction of 0.97); the tail inside the DRAM stream
#: rather than after it, 0.2198. T4 enters at its published sustained clock (hwdb/gpu/t4.yaml:
#: ~0.9 GHz, a third-party measurement, not fitted), so no constant is pinned by one device:
#: left out, each device is predicted from the others' constants alone (README, "GPU
#: prediction"). In 0.7.0 a power-limit term (the clock lowered to
#: TDP / (SMs x GHz x w)) stood in for it, its two w's fitted on T4 alone, and T4 left out came
#: to 2% (fp32) / 28% (fp16) within 1.25x; with the sourced clock, 81% / 71%.
FITTED = GpuGemmConstants(
    tensor_core_fraction=0.863, cuda_core_fraction=0.868, sm_bytes_per_clock=64.0,
    tile_overhead_iterations=0.0574, min_kernel_s=6.4e-6, dram_fraction=0.9,
    data="DeepBench GEMM timings (P100, GTX 1080 Ti, Titan Xp, TITAN X Pascal, T4), XLA's H100 "
         "matmul table and published best matmul rates (A100, H100)",
    devices=("p100-pcie-16gb", "gtx-1080-ti", "titan-xp", "titan-x-pascal", "t4",
             "a100-sxm4-80gb", "a100-pcie-80gb", "h100-sxm5-80gb"),
    architectures=("Pascal", "Turing", "Ampere", "Hopper"))

#: dtypes a Tensor Core runs (on a GPU whose entry lists Tensor-Core tiles)
TENSOR_CORE_DTYPES = frozenset({"fp16", "bf16", "tf32", "int8", "fp8"})

#: Architectures whose fast Tensor-Core GEMM kernels load their tiles (and store C) through the
#: Tensor Memory Accelerator, which needs every row of a tensor to start on a 16-byte boundary
#: (NVIDIA/cutlass#1523: "TMA epilogue mandates 16B alignment for the leading dimension of C/D";
#: NVIDIA/Fuser#3320: "If the tensor is not 16B aligned, TMA will fail and you need to use
#: regular set accesses"). A GEMM whose rows miss it runs an older generation's kernel instead:
#: on a lent H100 (torch 2.11, CUDA 13.0's cuBLAS) GPT-2's LM head, N = 50257, ran
#: ``cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1`` at 95 TFLOP/s where the aligned
#: GEMMs of the same step ran ``nvjet_sm90`` kernels at 500-700 (benchmarks/data/
#: h100_live_steps.json). Blackwell's kernels load through TMA too; its share is not measured
#: and H100's is used.
TMA_ARCHITECTURES = frozenset({"Hopper", "Blackwell"})
#: The share of the aligned kernels' main-loop rate (math and loads alike) such a GEMM keeps,
#: by how many bytes its worst row is aligned to (``alignment.row_alignment_bytes``): 2 (one
#: 16-bit element: ``align1`` kernels) or less, and 4 or 8. Fitted (the share minimising the
#: mean |log(measured / predicted)|, 0.01 steps) on the 58 Tensor-Core rows of benchmarks/data/
#: h100_live_gemm.csv whose N or K misses 16 bytes (CUDA-graph kernel times): 0.15-0.16 for
#: fp16 / bf16 at 2 bytes, 0.25-0.31 for fp16 / bf16 / TF32 at 4 and 8 bytes; in sample, no
#: other data has such rows on a TMA GPU. Older cuBLAS releases differed: on an H100 in 2024 a
#: bf16 GEMM with K = 2501 ran at 509 TFLOP/s, as fast as with K padded to 16
#: (meta-pytorch/float8_experimental#145), so this share describes the library measured.
MISALIGNED_SHARES = ((2, 0.16), (8, 0.28))
#: The share kept where C's rows are the only ones off 16 bytes, at 2 bytes (a 16-bit Linear's
#: forward of an odd output width, ``alignment.misaligned_c_only``): cuBLAS runs another kernel
#: there, ``cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1`` for GPT-2's LM head
#: forward at 95 TFLOP/s, where its data and weight gradients (B's rows off too) ran
#: ``..._256x128_nn_align1`` and ``..._128x256_nt_align1`` at 144-151 (benchmarks/data/
#: h100_live_steps.json). Fitted on the three such forwards of benchmarks/data/
#: h100_live_passes.csv (N = 4097, 50257, 1001: at 0.16 they ran 1.70 / 1.40 / 1.41x the
#: prediction; the share minimising the mean |log|, 0.01 steps); the H200's same three, never
#: fitted, ran 1.53 / 1.43 / 1.42x at 0.16. At 4 or 8 bytes no such gap shows (0.87-0.92).
MISALIGNED_C_SHARE = 0.11

#: Architectures and dtypes whose fast Tensor-Core kernels take only K-major operands (A and B
#: each contiguous along K): CUTLASS lists its sm90 TensorOp GEMMs as ``{N,T} x {N,T}`` for
#: f16 and bf16 but ``{ T } x { N }`` only for ``{f32, tf32}`` and s8 (NVIDIA/cutlass,
#: media/docs/cpp/functionality.md, "CUTLASS 3.x Kernels"); Hopper's ``wgmma`` transposes an
#: operand in shared memory for 16-bit types only. A TF32 GEMM with an operand that is not
#: K-major (a data gradient's weight, a weight gradient's two operands, torch.matmul's row-major
#: B) runs another kernel. fp8 is left out: cuBLASLt runs it only in the "TN" format, both
#: K-major (cublasLtMatmul's requirements; NVIDIA/TransformerEngine's cublaslt_gemm.cu: "Hopper
#: only supports TN GEMMs for FP8"), so a framework copies an operand first, an op rather than a
#: slower GEMM; int8 is not measured here. Blackwell is left out too: TransformerEngine runs fp8
#: there in any layout, and XLA's B200 TF32 dots, whose B runs along N as on H100, came within
#: 1.25x for 95% without a layout share (median 0.95; with 0.78 they would be about 0.74).
K_MAJOR_ONLY = {"Hopper": frozenset({"tf32"})}
#: The share of the K-major kernels' main-loop rate such a GEMM keeps, by how many of A and B
#: are not K-major (``alignment.strided_operands``): 1, 2. Fitted (the pair minimising the mean
#: |log(measured / predicted)|, 0.02 steps) on the 110 TF32 rows of benchmarks/data/
#: h100_live_gemm.csv and h100_live_passes.csv whose rows are 16-byte aligned (92 torch.matmul
#: GEMMs, B row-major; a Linear's three passes at 6 shapes): within 1.25x 66% -> 93%, the data
#: gradients' median 1.39 -> 1.09, the weight gradients' 1.78 -> 0.99. Never fitted on the
#: H200's 110 (h200_live_*): 69% -> 95%, worst 2.0x -> 1.6x. A GEMM whose rows miss 16 bytes
#: runs an older kernel already (``MISALIGNED_SHARES``), which takes any layout: the smaller of
#: the two shares holds (the H100's misaligned TF32 weight gradients: median 0.95 so). A probed
#: entry's TF32 peak comes from torch.matmul's row-major squares (B not K-major), which lost
#: little to the layout there (the H100's 4096^3 ran at the K-major rate), so the shares apply to
#: a calibrated peak as to the datasheet's: on the H100's probed entry the three aligned TF32
#: passes came out alike (median measured / predicted 0.86 / 0.89 / 0.81, all three slow by the
#: quick probe's low peak).
STRIDED_SHARES = (0.78, 0.52)


#: The thin tiles a weight-only (stored weight format) GEMM adds to a Tensor-Core device's:
#: TensorRT-LLM's mixed-type CUTLASS kernels (fpA_intB) instantiate CTAs of 16 x 128, 16 x 256
#: and 32 x 128 beside 64- and 128-row ones for small batches (NVIDIA/TensorRT-LLM,
#: cpp/tensorrt_llm/kernels/cutlass_kernels/cutlass_heuristic.cpp, get_cta_shape_for_config).
#: Not fitted: no weight-only timing is in FITTED's data.
WEIGHT_ONLY_TILES = ((16, 128), (16, 256), (32, 128))

#: What torch's own quantized kernels took on a lent H100 SXM5 (torch 2.11.0+cu130, 2026-11-27,
#: CUDA-graph replays; benchmarks/data/h100_live_quant.csv, benchmarks/bench_gpu_quant.py) as
#: measured / this model's prediction on the datasheet entry, by tokens (M): never fitted (the
#: model predicts the kernel a serving library runs), said beside each such prediction
#: (``output.times.quantized_lines``). ``_weight_int4pack_mm`` (tinygemm, int4 weights in groups
#: of 128, bf16 activations) is a GEMV that grows linearly with M; ``_weight_int8pack_mm`` has
#: no tensor-core CUDA kernel; ``torch._int_mm`` calls cuBLASLt with no workspace, which keeps
#: it to Ampere-era kernels after Ampere (pytorch/pytorch#187094): its compute-bound GEMMs ran
#: at 1.4-5.4x the prediction, at best 988 TOPS, half of H100's 1979; its memory-bound ones
#: 0.51-23.7x (the slowest with K = 500,000).
TORCH_QUANT_MEASURED: dict[str, tuple[float, float]] = {
    "int4_1_2": (1.25, 1.67), "int4_16_64": (4.94, 18.60), "int8_weight_1_2": (20.25, 44.13),
    "int8_compute": (1.39, 5.37), "int8_memory": (0.51, 23.66)}
TORCH_INT8_BEST_TOPS = 988.0  # torch._int_mm's best on that H100 (4096 x 4096 x 11008)
#: fp8 GEMMs through ``torch._scaled_mm`` (e4m3, unit scales, bf16 out) on the lent H100 SXM5
#: (benchmarks/data/h100_live_gemm.csv, CUDA-graph replays), measured / this model's prediction
#: on the datasheet entry for the compute-bound ones it predicts at 50 us or more: the range,
#: the median and the best rate (TFLOP/s) of all the fp8 rows; the H200 alike (1.16-1.46,
#: median 1.29, at best 1,412). Others saw the same of ``_scaled_mm`` on an H100: 1,239-1,347
#: TFLOP/s on large shapes (pytorch/pytorch#143465), and 5-15% slower than TransformerEngine's
#: GEMM in a 1B-parameter model (pytorch/pytorch#123761). Never fitted; said beside a Hopper
#: fp8 prediction (``output.times.quantized_lines``).
TORCH_FP8_MEASURED: dict[str, float] = {"low": 1.15, "high": 1.43, "median": 1.30,
                                         "best_tflops": 1426.0}


@dataclass(frozen=True)
class GpuDevice:
    """What the model needs of one GPU for one dtype (``device_for``): ``clock_hz`` and
    ``peak_flops_per_s`` at the clock the board holds through a long GEMM (``clock_share``)."""

    sms: int
    clock_hz: float
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    l2_bytes: float
    tiles: tuple[tuple[int, int], ...]
    k_step: int
    tensor_core: bool
    tma: bool = False  # Tensor-Core kernels that need 16-byte rows (TMA_ARCHITECTURES)
    k_major_only: bool = False  # fast kernels only for K-major operands (K_MAJOR_ONLY)


def uses_tensor_cores(hardware: HardwareSpec, dtype: str) -> bool:
    """A Tensor-Core dtype on a GPU that lists Tensor-Core tiles (Volta and later); fp64 too
    where its peak is above the CUDA-core figure (A100's and H100's FP64 Tensor Cores)."""
    if not hardware.tiles:
        return False
    if dtype in TENSOR_CORE_DTYPES:
        return True
    vector = hardware.vector_tflops.get(dtype)
    return vector is not None and hardware.peak_tflops.get(dtype, 0.0) > vector


def clock_share(hardware: HardwareSpec) -> float:
    """The share of its boost clock (the clock its datasheet peaks assume) a GPU holds through
    a long GEMM: ``gpu.sustained_clock_ghz / gpu.boost_clock_ghz`` where the entry gives a
    published sustained clock (T4: 0.9 / 1.59, its 70 W capping the clock through continuous
    matrix math), else 1."""
    gpu = hardware.gpu
    if gpu is None or gpu.sustained_clock_ghz is None:
        return 1.0
    return gpu.sustained_clock_ghz / gpu.boost_clock_ghz


#: The dtypes whose peaks ``gpu.vector_clock_ghz`` is the clock of: FP32 on CUDA cores and FP64
#: (CUDA cores and, on H100, FP64 Tensor Cores: 67 TFLOP/s is twice the vector 34 at 1.98 GHz)
VECTOR_CLOCK_DTYPES = frozenset({"fp32", "fp64"})


def peak_share(hardware: HardwareSpec, dtype: str) -> float:
    """The share of its datasheet ``dtype`` peak a GPU's math unit runs at the clock the model
    runs it: ``clock_share``, and for the FP32 and FP64 peaks of an entry whose vendor computed
    them at a higher clock than its 16-bit Tensor-Core peaks (``gpu.vector_clock_ghz``; H100:
    1.98 against 1.83 GHz) ``boost / vector`` too. The model runs every unit at one clock, the
    one the Tensor-Core peaks assume (its per-SM loads are clocked so too): on the lent H100
    and H200 the largest FP32 GEMMs ran at 52-54 TFLOP/s, 0.78-0.81 of the 67 datasheet
    figure, where the CUDA-core fraction (0.868) at 1.83 GHz gives 53.7 and at 1.98 GHz 58.2
    (FP64 was not timed)."""
    share = clock_share(hardware)
    gpu = hardware.gpu
    if gpu is not None and gpu.vector_clock_ghz and dtype in VECTOR_CLOCK_DTYPES:
        share *= gpu.boost_clock_ghz / gpu.vector_clock_ghz
    return share


def runs_stream_k(hardware: HardwareSpec, dtype: str) -> bool:
    """``dtype``'s GEMMs run Tensor-Core kernels that load through TMA on ``hardware``
    (``TMA_ARCHITECTURES``), which may run stream-K (``stream_k_time``)."""
    return uses_tensor_cores(hardware, dtype) and hardware.architecture in TMA_ARCHITECTURES


def device_for(hardware: HardwareSpec, dtype: str) -> GpuDevice:
    """The model's view of ``hardware`` (a GPU entry) for ``dtype``, at the clock it holds."""
    gpu = hardware.gpu
    assert gpu is not None  # callers check hardware.kind == "gpu"
    tensor = uses_tensor_cores(hardware, dtype)
    tiles = gpu.tiles if tensor else (gpu.simt_tiles or DEFAULT_CUDA_CORE_TILES)
    share = clock_share(hardware)
    return GpuDevice(gpu.sms, gpu.boost_clock_ghz * 1e9 * share,
                     hardware.peak_flops_per_s(dtype) * peak_share(hardware, dtype),
                     hardware.bandwidth_bytes_per_s,
                     (hardware.llc_mb or 0.0) * 2**20, tiles,
                     TENSOR_CORE_K_STEP if tensor else CUDA_CORE_K_STEP, tensor,
                     runs_stream_k(hardware, dtype),
                     tensor and dtype in K_MAJOR_ONLY.get(hardware.architecture or "", ()))


def misaligned_share(dev: GpuDevice, row_bytes: int, c_only: bool = False) -> float:
    """The share of its main-loop rate a GEMM whose worst row is aligned to ``row_bytes``
    keeps on ``dev``: 1 unless ``dev`` runs Tensor-Core kernels through TMA and the rows miss 16
    bytes, then ``MISALIGNED_SHARES`` (``MISALIGNED_C_SHARE`` at 2 bytes when ``c_only``, C's
    rows the only ones off)."""
    if not dev.tma or row_bytes >= 16:
        return 1.0
    if c_only and row_bytes <= 2:
        return MISALIGNED_C_SHARE
    return next(share for limit, share in MISALIGNED_SHARES if row_bytes <= limit)


def layout_share(dev: GpuDevice, row_bytes: int, strided: int, c_only: bool = False) -> float:
    """The share of its main-loop rate a GEMM keeps on ``dev`` for the kernel its rows and its
    operands' layout leave it: the smaller of ``misaligned_share`` and, where ``dev``'s fast
    kernels take only K-major operands (``K_MAJOR_ONLY``), ``STRIDED_SHARES`` for the
    ``strided`` of A and B that are not."""
    share = misaligned_share(dev, row_bytes, c_only)
    if dev.k_major_only and strided:
        share = min(share, STRIDED_SHARES[strided - 1])
    return share


def _splits(base: int, k: int, sms: int) -> list[int]:
    """1, 2, 4, ... while base x s stays within the SMs and each slice keeps 256 of K."""
    splits = [1]
    while base * splits[-1] * 2 <= sms and k // (splits[-1] * 2) >= SPLIT_K_MIN_SLICE:
        splits.append(splits[-1] * 2)
    return splits


def tile_time(m: int, n: int, k: int, e: float, tile: tuple[int, int], split: int, count: int,
              dev: GpuDevice, c: GpuGemmConstants, e_b: float | None = None,
              dequant: float = 0.0, share: float = 1.0) -> float:
    """``waves x (iters + c) x t_iter / share`` for one tile and split (module docstring;
    ``share``: ``layout_share``). A stored weight format (int4, int8, fp8 under wider
    math) loads B at ``e_b`` bytes per element and adds ``dequant`` FLOPs per element of each
    block's B slice to its math (``d``: 2). It multiplied the padded tile's math by the GEMM's
    (FLOPs + dequantization) / FLOPs, 1 + 1 / M: at M = 1 a 64-row tile paid 64x the
    dequantization, and an int4 decode step was predicted slower than fp16."""
    tm, tn = tile
    blocks = -(-m // tm) * -(-n // tn) * split * count
    waves = -(-blocks // dev.sms)
    slice_k = -(-k // split)
    iters = -(-slice_k // dev.k_step)
    return (waves * (iters + c.tile_overhead_iterations)
            * iteration_s(e, tile, dev, c, e_b, dequant) / share)


def iteration_s(e: float, tile: tuple[int, int], dev: GpuDevice, c: GpuGemmConstants,
                e_b: float | None = None, dequant: float = 0.0) -> float:
    """``t_iter``: one main-loop iteration of one ``tile`` on one SM, its math at the sustained
    share of the peak or the loads of its A and B slices, whichever is longer."""
    tm, tn = tile
    fraction = c.tensor_core_fraction if dev.tensor_core else c.cuda_core_fraction
    math_s = (2.0 * tm + dequant) * tn * dev.k_step / (fraction * dev.peak_flops_per_s / dev.sms)
    load_s = (tm * e + tn * (e if e_b is None else e_b)) * dev.k_step / (
        c.sm_bytes_per_clock * dev.clock_hz)
    return max(math_s, load_s)


def stream_k_time(m: int, n: int, k: int, e: float, tile: tuple[int, int], count: int,
                  dev: GpuDevice, c: GpuGemmConstants, e_b: float | None = None,
                  dequant: float = 0.0, share: float = 1.0) -> tuple[float, int]:
    """Stream-K on a GPU whose kernels run it (``dev.tma``: Hopper, Blackwell): the tiles'
    main-loop iterations dealt evenly over the SMs, so no wave runs part-empty; each SM pays a
    prologue per tile it touches (at most ``ceil(tiles / SMs) + 1``). ``(main seconds, fixup
    bytes)``: an SM that ends inside a tile writes its FP32 partial tile and another reads it
    back, one per SM at most, none when the tiles fill whole waves (module docstring)."""
    base = -(-m // tile[0]) * -(-n // tile[1]) * count
    iters = -(-k // dev.k_step)
    segments = -(-base // dev.sms) + 1
    main = ((-(-base * iters // dev.sms) + c.tile_overhead_iterations * segments)
            * iteration_s(e, tile, dev, c, e_b, dequant) / share)
    fixup = 8 * tile[0] * tile[1] * min(dev.sms, base) if base % dev.sms else 0
    return main, fixup


def gemm_time(m: int, n: int, k: int, e: float, count: int, working: int, c_bytes: int,
              dev: GpuDevice, c: GpuGemmConstants = FITTED, e_b: float | None = None,
              dequant: float = 0.0, kept: int = 0,
              row_bytes: int = 16, strided: int = 0,
              c_only: bool = False) -> dict[str, float]:
    """The predicted time of ``count`` C(m, n) = A(m, k) B(k, n) GEMMs (one batched kernel)
    whose compulsory traffic is ``working`` bytes (``Gemm.bytes``: e(MK + KN) + e_C MN, x2 on
    C when read, for all ``count``; a convolution's tensors), ``c_bytes`` of them C's
    (``Gemm.bytes_by_operand["c"]``), of which ``kept`` come from DRAM even when the whole fits
    in L2 (``analysis.residency``), its worst row aligned to ``row_bytes`` bytes (``c_only``:
    C's the only rows off) and ``strided`` of A and B not K-major (``layout_share``), and the
    terms of the best tile and
    split: ``time_s``, ``main_s``, ``dram_s``, ``tail_s``, ``min_kernel_s``, ``tile_m``,
    ``tile_n``, ``split_k``, ``stream_k`` (1.0 where the tile runs stream-K, ``stream_k_time``),
    ``resident``, ``aligned_share`` (the layout share)."""
    share = layout_share(dev, row_bytes, strided, c_only)
    resident = working <= dev.l2_bytes
    from_dram = kept if resident else working
    bandwidth = c.dram_fraction * dev.bandwidth_bytes_per_s
    best: dict[str, float] | None = None

    def consider(tile: tuple[int, int], split: int, stream_k: bool, main: float,
                 extra: float, tail_share: float) -> None:
        """Keep this candidate when it is the fastest yet: its main loop, the ``extra`` bytes
        it moves (partial sums) and the share of C its last SMs drain after the loop."""
        nonlocal best
        dram = (from_dram + extra) / bandwidth
        tail = c_bytes * tail_share / bandwidth
        time = c.min_kernel_s + max(main, dram) + tail
        if best is None or time < best["time_s"]:
            best = {"time_s": time, "main_s": main, "dram_s": dram, "tail_s": tail,
                    "min_kernel_s": c.min_kernel_s, "tile_m": float(tile[0]),
                    "tile_n": float(tile[1]), "split_k": float(split),
                    "stream_k": float(stream_k), "resident": float(resident),
                    "aligned_share": share}

    for tile in dev.tiles:
        base = -(-m // tile[0]) * -(-n // tile[1]) * count
        for split in _splits(base, k, dev.sms):
            blocks = base * split
            last = blocks - (-(-blocks // dev.sms) - 1) * dev.sms
            consider(tile, split, False,
                     tile_time(m, n, k, e, tile, split, count, dev, c, e_b, dequant, share),
                     8 * split * m * n * count if split > 1 else 0, last / blocks)
        if dev.tma and base > dev.sms and base % dev.sms:
            # stream-K where the tiles fill more than a wave and leave the last part-empty
            # (fewer tiles than SMs: split-K above; a stream-K there reduces up to S - 1
            # partial tiles, one peer at a time, which this term does not charge); every SM
            # ends at once, draining S of the tiles' C
            main, fixup = stream_k_time(m, n, k, e, tile, count, dev, c, e_b, dequant, share)
            consider(tile, 1, True, main, fixup, dev.sms / base)
    assert best is not None  # device_for never gives an empty tile list
    return best
