"""Time GEMMs, non-GEMM ops and whole PyTorch steps on this machine's GPU, for
bench_gpu_live.py to hold against roofline's predictions. Run on demand on a CUDA machine:

    python benchmarks/gpu_measure.py --out DIR [--quick] [--parts gemm,ops,steps]

Needs torch with CUDA (nothing of roofline is imported: the prediction is made elsewhere, from
the files this writes). Every figure is timed with CUDA events after warm-up calls: one value is
``calls`` back-to-back calls between two events (calls chosen so that a value lasts about
``VALUE_S``), ``VALUES`` values; best, median and spread (MAD / median) per call.

- ``gemm.csv``: torch.matmul of (m, k) x (k, n), one set of operands reused call after call (as
  DeepBench times), on DeepBench's 86 training shapes (m, n, k of benchmarks/data/
  deepbench_gemm.csv; the shapes only), squares 512..16384 and a decode step's GEMMs (``DECODE``),
  in fp32 (TF32 off: torch's
  default), tf32 (``allow_tf32``), fp16, bf16 and, on a GPU with fp8, fp8 e4m3 through
  ``torch._scaled_mm`` (unit scales, bf16 out; shapes whose m, n, k are multiples of 16).
  Columns: deepbench_gemm.csv's (device: the hwdb entry named by ``--device-entry``) and best /
  median / spread.
- ``ops.csv``: elementwise add, GELU, layer norm and softmax at several sizes (bf16 and fp32),
  and ``scaled_dot_product_attention`` forward and backward in bf16 (FlashAttention-3's
  setting: 16k tokens, hidden 2048, head dim 64 and 128, seq 512..8192, causal or not) and
  decode (one query row, batch 16, 32 heads of 128, KV 1024..16384), under torch's default
  backend choice and each backend forced (flash, cuDNN, efficient) where it runs.
- ``steps.json``: whole steps of tools/torch_flops.py's modules (the ones bench_torch_steps.py
  times on a CPU) on the GPU, fp32 and bf16: best / median per step and, from one profiled
  step, the CUDA kernels' summed time by kernel name.
- ``passes.csv`` (``--parts passes``): a Linear's forward, data gradient and weight gradient as
  autograd runs them (``PASS_SHAPES``: aligned, and the batch, the inputs or the outputs odd or
  4-byte aligned), bf16 and TF32: which dimensions are rows (``gemm.PASS_ROWS``).
- ``quant.csv`` (``--parts quant``): int4 and int8 weight-only GEMMs (bf16 activations) and
  int8 x int8 GEMMs as torch runs them, beside bf16 on the same shapes (``_quant_gemms``).
- ``decode.json`` (``--parts decode``): one Llama-2-7B decode step in plain PyTorch
  (``_decode_step``) at ``DECODE_STEPS``, replayed from a CUDA graph and called eagerly, and
  its kernels counted in one profiled step.
- ``waves.csv`` (``--parts waves``): bf16 GEMMs ``x @ W.t()`` (``F.linear``'s, A and B along K)
  swept in M at fixed N and K (``WAVE_SWEEPS``) across the counts of output tiles where a wave
  of one tile per SM would fill and a next one start part-empty: whether the time steps with
  the waves or grows with M (stream-K); then the shapes the wave-only advice suggested for them.
- ``norms.csv`` (``--parts norms``): torch's layer norm and softmax over the last dimension,
  forward and backward as autograd calls them (``aten.native_layer_norm_backward`` with the
  weight's and bias's gradients, ``aten._softmax_backward_data``), bf16 and fp32, rows of
  ``NORM_COLS`` values, ``NORM_VALUES`` values in all: where they stream and where each value's
  work sets the time.
- ``rows.csv`` (``--parts rows``): the widths ``norms`` left out (``ROW_COLS``: rows of 32-512
  values, a router's or a short sequence's scores, and 16,384-50,257, a vocabulary's, with 768
  again as the link to norms.csv), softmax and log-softmax forward and backward, bf16 and
  fp32, at ``NORM_VALUES[1:]`` values; then the loss after a vocabulary's log-softmax
  (``LOSS_SHAPES``): ``aten.nll_loss_forward`` and ``aten.nll_loss_backward`` with int64
  targets, and ``F.cross_entropy`` forward and forward with backward (not under ``--graph``:
  autograd's). ``rows_kernels.json``: each op's CUDA kernels by name, from one profiled call
  per width (bf16, 2^23 values). ``softmax_l2.csv``: softmax and log-softmax forward at 2^26
  values over ``SOFTMAX_L2_COLS``, where the rows torch's three-pass kernel holds at once
  outgrow half the L2.
- ``hf_steps.json`` (``--parts hf``): Hugging Face models (_hf_steps.py: GPT-2, BERT, Llama-2 and
  Mixtral with fewer layers) trained with their labels' loss and served (prefill) as a user runs
  them, bf16: best / median per step, peak memory, one profiled step's kernels.
- ``masks.csv`` (``--parts masks``): scaled_dot_product_attention at ``MASK_SHAPES`` under
  torch's default backend, causal, unmasked and through a boolean mask over every pair, without
  and with dropout, forward and backward, and the kernel each ran.
- ``fits.json`` (``--parts fits``): whether a Llama-2-7B decode step with its KV cache runs or
  runs out of memory at the batches around the largest that analyze says fits (``FIT_BATCHES``).
- ``convs.csv`` (``--parts convs``): fp32 convolutions of ResNet-50 (``CONV_SHAPES``) forward
  and with both gradients, ``cudnn.allow_tf32`` on and off.
- ``bnorms.csv``, ``convkernels.csv`` (``--parts bnorms``): ResNet-50's batch norms and
  convolutions one layer shape at a time, kernel by kernel (_resnet_kernels.py).
- ``resnets.json`` (``--parts resnets``): ResNet-50's forward and training steps at
  ``RESNET_BATCHES``, NCHW and channels_last, fp32 and bf16 (as ``steps.json``).
- ``seqs.csv`` (``--parts seqs``): fused attention (torch's default backend) at sequence
  lengths off the multiples of 128 (``SEQ_SWEEPS``), forward and backward, causal and not.
- ``colsums.csv`` (``--parts colsums``): sums over a matrix's rows (a bias gradient) and over
  its columns (``COLSUM_SHAPES``), bf16 and fp32.
- ``smallsums.csv`` (``--parts smallsums``): the same sums at fewer rows (``SMALLSUM_SHAPES``),
  a convolution's bias gradient over NCHW and channels_last maps (``CONVSUM_SHAPES``), and
  layer norm and softmax forward and backward over a few rows (``SMALLNORM_SHAPES``) and means
  along a few rows (``SMALLMEAN_SHAPES``), bf16 and fp32, each call's kernels;
  ``smallsums_templates.json``: the template arguments (vt0, input vector) of a few sums'
  reduce kernels.
- ``convbias.csv`` (``--parts convbias``): a Conv2d with a bias (``CONVBIAS_SHAPES``), its three
  gradients as autograd asks for them, NCHW and channels_last, bf16, and the call's kernels
  (``reduce_ms``: torch's reduce kernel, the bias gradient).
- ``convs3d.csv``, ``video_steps.json`` (``--parts video``): R3D-18's 3-D convolutions and
  3-D U-Net's up-convolutions one layer at a time, kernel by kernel, and R3D-18's whole steps
  (_video.py).
- ``env.json``: the GPU, its SMs, L2, clocks read before and after, torch and CUDA versions.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

from _decode_step import decode_step
from _hf_steps import HF_STEPS, hf_step
from _quant_gemms import measure_quant
from _resnet_kernels import measure_resnet_kernels
from _steps import step_function
from _video import measure_video

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
VALUE_S = 0.004   # one timed value lasts about this long
VALUES = 7
MAX_CALLS = 2000
SQUARES = (512, 1024, 2048, 4096, 8192, 16384)
#: a decode step's GEMMs (tokens m; Llama-2-7B's n x k: the fused q/k/v, the MLP's gate or up
#: and its down projection, the LM head) and the prefill of 128 tokens
DECODE = tuple((m, n, k) for m in (1, 8, 32, 128)
               for n, k in ((12288, 4096), (11008, 4096), (4096, 11008), (32000, 4096)))
GEMM_DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8")
PARTS = ("gemm", "ops", "steps", "passes", "quant", "decode", "waves", "norms",
         "rows", "hf", "masks", "fits", "convs", "bnorms", "resnets", "seqs",
         "colsums", "smallsums", "convbias", "video")  # --parts
#: row widths and total values of ``--parts norms``
NORM_COLS = (768, 1024, 2048, 4096, 8192)
NORM_VALUES = (2**20, 2**23, 2**26)
#: row widths of ``--parts rows``
ROW_COLS = (32, 64, 128, 256, 512, 768, 16384, 32768, 50257)
#: (rows, classes) of ``--parts rows``' losses: GPT-2's vocabulary over 2,048 and 8,192 tokens,
#: Llama-2's over 8,192, Llama-3's over 4,096
LOSS_SHAPES = ((2048, 50257), (8192, 50257), (8192, 32000), (4096, 128256))
#: widths of ``--parts rows``' L2 sweep (2^26 values): where the rows torch's three-pass softmax
#: kernel holds at once (2 per SM) outgrow half an H100's (50 MiB) or H200's (60 MiB) L2
SOFTMAX_L2_COLS = {"bf16": (16384, 24576, 32768, 40960, 45056, 49152, 53248, 57344, 61440,
                            65536, 81920, 98304, 128256),
                   "fp32": (12288, 16384, 20480, 22528, 24576, 26624, 28672, 30720, 32768,
                            40960, 50257, 65536)}
#: (n, k, m from, m to, m step) of ``--parts waves``: 128x128 tiles, 8 or 32 columns of them,
#: so one wave of 132 tiles ends at m = 2112 or 528 on an H100 SXM
WAVE_SWEEPS = ((1024, 4096, 128, 6144, 128), (4096, 4096, 64, 2048, 64),
               (768, 8192, 256, 6144, 256))
#: (m, n, k) the wave-only tile advice of roofline 0.8 suggested for the sweeps' shapes ("nearest
#: shape losing less"), timed after them: does the suggestion run faster per FLOP?
WAVE_SUGGESTIONS = (
    (384, 1280, 4096), (640, 832, 4096), (768, 1280, 4096), (896, 1152, 4096),
    (1280, 1152, 4096), (1408, 1152, 4096), (1664, 960, 4096), (1792, 896, 4096),
    (2112, 1024, 4096), (2624, 1024, 4096), (2816, 960, 4096), (3136, 1024, 4096),
    (3648, 1024, 4096), (64, 6144, 4096), (192, 5120, 4096), (320, 4608, 4096),
    (448, 3584, 4096), (576, 3712, 4096), (704, 3840, 4096), (512, 960, 8192),
    (704, 768, 8192), (1024, 960, 8192), (1408, 768, 8192), (2112, 768, 8192),
    (2816, 768, 8192), (3520, 768, 8192), (4224, 768, 8192))
#: (batch, KV tokens) of the decode steps (``--parts decode``)
DECODE_STEPS = ((1, 1024), (8, 1024), (32, 1024), (1, 4096), (16, 4096))
MAX_GRAPH_CALLS = 400
#: --graph: each value is the replay of a CUDA graph of ``calls`` calls, so that the host's
#: per-call cost (Python, torch's dispatcher, the launch) leaves the figure: the kernels' own
#: time and the GPU's gap between them
GRAPH = False
DEV = "cuda"  # --device cpu: a dry run of the script itself (figures meaningless)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def time_calls(torch: Any, fn: Callable[[], object], values: int = VALUES,
               value_s: float = VALUE_S, warmups: int = 3) -> dict[str, float]:
    """Per-call seconds of ``fn``: best, median, spread (MAD / median), calls per value."""
    for _ in range(warmups):
        fn()
    sync(torch)
    one = max(timed(torch, fn, 1), 1e-7)
    calls = max(1, min(MAX_CALLS, int(value_s / one)))
    if GRAPH:
        calls = min(calls, MAX_GRAPH_CALLS)
        graph = graph_of(torch, fn, calls)
        graph.replay()
        samples = [timed(torch, graph.replay, 1) / calls for _ in range(values)]
    else:
        samples = [timed(torch, fn, calls) / calls for _ in range(values)]
    med = statistics.median(samples)
    mad = statistics.median(abs(s - med) for s in samples)
    return {"best_s": min(samples), "median_s": med, "spread": mad / med, "calls": calls}


def timing_fields(torch: Any, fn: Callable[[], object]) -> dict[str, Any]:
    """A CSV row's ``time_ms``, ``median_ms`` and ``spread`` of ``fn`` (``time_calls``), or its
    ``error``: one shape's failure is recorded and the others go on."""
    try:
        r = time_calls(torch, fn)
    except Exception as exc:  # noqa: BLE001 - recorded
        return {"error": f"{type(exc).__name__}: {exc}"[:200]}
    return {"time_ms": f"{r['best_s'] * 1e3:.6g}", "median_ms": f"{r['median_s'] * 1e3:.6g}",
            "spread": f"{r['spread']:.3g}"}


def graph_of(torch: Any, fn: Callable[[], object], calls: int) -> Any:
    """A CUDA graph of ``calls`` calls of ``fn`` (warmed up on a side stream, as torch asks)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return graph


def sync(torch: Any) -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def timed(torch: Any, fn: Callable[[], object], calls: int) -> float:
    """Seconds for ``calls`` back-to-back calls of ``fn``: between two CUDA events on a GPU."""
    if DEV != "cuda":
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        return time.perf_counter() - t0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3


def empty_cache(torch: Any) -> None:
    if DEV == "cuda":
        torch.cuda.empty_cache()


def deepbench_shapes() -> list[tuple[int, int, int]]:
    with open(ROOT / "benchmarks" / "data" / "deepbench_gemm.csv", newline="") as f:
        shapes = {(int(r["m"]), int(r["n"]), int(r["k"])) for r in csv.DictReader(f)}
    extra = [(n, n, n) for n in SQUARES] + list(DECODE)
    return sorted(shapes) + [s for s in extra if s not in shapes]


def gemm_function(torch: Any, m: int, n: int, k: int, dtype: str) -> Callable[[], object]:
    dev = DEV
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    if dtype == "fp8":
        a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()  # column-major B
        one = torch.tensor(1.0, device=dev)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                        out_dtype=torch.bfloat16)
    dt = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
          "bf16": torch.bfloat16}[dtype]
    a = torch.randn(m, k, device=dev, dtype=dt)
    b = torch.randn(k, n, device=dev, dtype=dt)
    c = torch.empty(m, n, device=dev, dtype=dt)
    return lambda: torch.matmul(a, b, out=c)


def measure_gemms(torch: Any, out: Path, entry: str, quick: bool, fp8: bool) -> None:
    shapes = deepbench_shapes()
    if quick:
        shapes = shapes[::12] + [(512, 512, 512)]
    if DEV != "cuda":
        shapes = [(64, 32, 48), (128, 128, 128)]
    dtypes = [d for d in GEMM_DTYPES if d != "fp8" or fp8]
    fields = ["device", "dtype", "math", "m", "n", "k", "a_t", "b_t", "time_ms", "median_ms",
              "spread", "calls"]
    started = time.perf_counter()
    errors: dict[str, str] = {}
    with open(out / "gemm.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        for dtype in dtypes:
            for m, n, k in shapes:
                if dtype == "fp8" and (m % 16 or n % 16 or k % 16):
                    continue
                try:
                    r = time_calls(torch, gemm_function(torch, m, n, k, dtype))
                except Exception as exc:  # noqa: BLE001 - one shape's failure is recorded
                    errors.setdefault(dtype, f"{m}x{n}x{k}: {type(exc).__name__}: {exc}")
                    continue
                finally:
                    empty_cache(torch)
                math_ = {"fp16": "fp32", "bf16": "fp32", "fp8": "fp32"}.get(dtype, dtype)
                w.writerow({"device": entry, "dtype": dtype, "math": math_, "m": m, "n": n,
                            "k": k, "a_t": "N", "b_t": "N" if dtype != "fp8" else "T",
                            "time_ms": f"{r['best_s'] * 1e3:.6g}",
                            "median_ms": f"{r['median_s'] * 1e3:.6g}",
                            "spread": f"{r['spread']:.3g}", "calls": r["calls"]})
            f.flush()
            log(f"gemm {dtype}: done at {time.perf_counter() - started:.0f} s")
    torch.backends.cuda.matmul.allow_tf32 = False
    if errors:
        (out / "gemm_errors.json").write_text(json.dumps(errors, indent=1))
        log(f"gemm errors: {errors}")


#: (batch, out, in) of a Linear whose forward, data gradient and weight gradient
#: ``measure_passes`` times: aligned, and each of out, in and the batch odd; and a 2024 H100
#: measurement's shape (meta-pytorch/float8_experimental#145: 8193 x 2501 x 5008)
PASS_SHAPES = ((8192, 4096, 4096), (8192, 4097, 4096), (8192, 4096, 4097), (8191, 4096, 4096),
               (8192, 4100, 4096), (8192, 4096, 4100), (4096, 50257, 768), (8193, 5008, 2501),
               (2048, 1000, 1024), (2047, 1000, 1024), (2048, 1001, 1024), (2048, 1000, 1025))


def pass_functions(torch: Any, batch: int, out: int, inp: int,
                   dt: Any) -> dict[str, Callable[[], object]]:
    """A Linear's three products as torch's autograd runs them: forward ``F.linear(x, W)``
    (x batch x in, W out x in), data gradient ``dy @ W``, weight gradient ``dy.t() @ x``."""
    import torch.nn.functional as F

    x = torch.randn(batch, inp, device=DEV, dtype=dt)
    w = torch.randn(out, inp, device=DEV, dtype=dt)
    dy = torch.randn(batch, out, device=DEV, dtype=dt)
    return {"forward": lambda: F.linear(x, w), "backward-data": lambda: dy @ w,
            "backward-weight": lambda: dy.t() @ x}


def measure_passes(torch: Any, out: Path, entry: str) -> None:
    """passes.csv: each pass of each ``PASS_SHAPES`` Linear in bf16 and TF32, with the GEMM in
    roofline's terms (forward M batch, N out, K in; data gradient M batch, N in, K out; weight
    gradient M in, N out, K batch)."""
    fields = ["device", "dtype", "pass", "batch", "out", "in", "m", "n", "k", "time_ms",
              "median_ms", "spread", "error"]
    with open(out / "passes.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        for dname, dt in (("bf16", torch.bfloat16), ("tf32", torch.float32)):
            torch.backends.cuda.matmul.allow_tf32 = dname == "tf32"
            for batch, out_, inp in PASS_SHAPES:
                mnk = {"forward": (batch, out_, inp), "backward-data": (batch, inp, out_),
                       "backward-weight": (inp, out_, batch)}
                for pass_, fn in pass_functions(torch, batch, out_, inp, dt).items():
                    w.writerow({"device": entry, "dtype": dname, "pass": pass_,
                                "batch": batch, "out": out_, "in": inp,
                                **dict(zip("mnk", mnk[pass_])), **timing_fields(torch, fn)})
                empty_cache(torch)
            log(f"passes {dname}: done")
    torch.backends.cuda.matmul.allow_tf32 = False


def measure_waves(torch: Any, out: Path, entry: str) -> None:
    """waves.csv: ``F.linear``'s GEMM in bf16 (x m x k, W n x k: C = x W^T), each ``WAVE_SWEEPS``
    sweep of m, then each of ``WAVE_SUGGESTIONS``."""
    fields = ["device", "dtype", "m", "n", "k", "time_ms", "median_ms", "spread", "error"]
    sweeps = WAVE_SWEEPS if DEV == "cuda" else ((64, 64, 32, 64, 32),)
    shapes = [(m, n, k) for n, k, low, high, step in sweeps
              for m in range(low, high + 1, step)]
    shapes += WAVE_SUGGESTIONS if DEV == "cuda" else [(32, 96, 64)]
    with open(out / "waves.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        for i, (m, n, k) in enumerate(shapes):
            if i == 0 or (n, k) != shapes[i - 1][1:]:
                wt = torch.randn(n, k, device=DEV, dtype=torch.bfloat16)
            x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
            c = torch.empty(m, n, device=DEV, dtype=torch.bfloat16)
            w.writerow({"device": entry, "dtype": "bf16", "m": m, "n": n, "k": k,
                        **timing_fields(torch, lambda x=x, c=c, wt=wt: torch.matmul(
                            x, wt.t(), out=c))})
        empty_cache(torch)
        log(f"waves: {len(shapes)} shapes done")


def norm_functions(torch: Any, rows: int, cols: int,
                   dt: Any) -> dict[str, Callable[[], object]]:
    """Layer norm (with weight and bias) and softmax over rows x cols, forward and backward."""
    aten = torch.ops.aten
    x = torch.randn(rows, cols, device=DEV, dtype=dt)
    dy = torch.randn(rows, cols, device=DEV, dtype=dt)
    w = torch.randn(cols, device=DEV, dtype=dt)
    b = torch.randn(cols, device=DEV, dtype=dt)
    _, mean, rstd = aten.native_layer_norm(x, [cols], w, b, 1e-5)
    p = torch.softmax(x, -1)
    return {"layer-norm": lambda: aten.native_layer_norm(x, [cols], w, b, 1e-5),
            "layer-norm-backward": lambda: aten.native_layer_norm_backward(
                dy, x, [cols], mean, rstd, w, b, [True, True, True]),
            "softmax": lambda: aten._softmax(x, -1, False),
            "softmax-backward": lambda: aten._softmax_backward_data(dy, p, -1, dt)}


def measure_norms(torch: Any, out: Path) -> None:
    """norms.csv: each of ``norm_functions`` at every ``NORM_COLS`` width and ``NORM_VALUES``
    size, bf16 and fp32."""
    fields = ["op", "dtype", "rows", "cols", "time_ms", "median_ms", "spread", "error"]
    sizes = [(v // c, c) for v in NORM_VALUES for c in NORM_COLS]
    if DEV != "cuda":
        sizes = [(4, 64)]
    with open(out / "norms.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        for dname, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
            for rows, cols in sizes:
                for op, fn in norm_functions(torch, rows, cols, dt).items():
                    w.writerow({"op": op, "dtype": dname, "rows": rows, "cols": cols,
                                **timing_fields(torch, fn)})
                empty_cache(torch)
            log(f"norms {dname}: done")


def row_functions(torch: Any, rows: int, cols: int,
                  dt: Any) -> dict[str, Callable[[], object]]:
    """Softmax and log-softmax forward and backward over rows x cols."""
    aten = torch.ops.aten
    x = torch.randn(rows, cols, device=DEV, dtype=dt)
    dy = torch.randn(rows, cols, device=DEV, dtype=dt)
    lp = torch.log_softmax(x, -1)
    p = torch.softmax(x, -1)
    return {"softmax": lambda: aten._softmax(x, -1, False),
            "log-softmax": lambda: aten._log_softmax(x, -1, False),
            "log-softmax-backward": lambda: aten._log_softmax_backward_data(dy, lp, -1, dt),
            "softmax-backward": lambda: aten._softmax_backward_data(dy, p, -1, dt)}


def loss_functions(torch: Any, rows: int, classes: int,
                   dt: Any) -> dict[str, Callable[[], object]]:
    """The loss over a vocabulary: nll_loss forward and backward on log-probabilities, and
    F.cross_entropy forward, and forward with backward, on logits (mean reduction)."""
    aten = torch.ops.aten
    logits = torch.randn(rows, classes, device=DEV, dtype=dt, requires_grad=True)
    lp = torch.log_softmax(logits.detach(), -1)
    target = torch.randint(0, classes, (rows,), device=DEV)
    loss, total = aten.nll_loss_forward(lp, target, None, 1, -100)
    g = torch.ones((), device=DEV, dtype=dt)

    def both() -> object:  # the gradient returned, not accumulated into logits.grad
        return torch.autograd.grad(torch.nn.functional.cross_entropy(logits, target), logits)

    return {"nll-loss": lambda: aten.nll_loss_forward(lp, target, None, 1, -100),
            "nll-loss-backward": lambda: aten.nll_loss_backward(g, lp, target, None, 1, -100,
                                                                total),
            "cross-entropy": lambda: torch.nn.functional.cross_entropy(logits.detach(), target),
            "cross-entropy-train": both}


def measure_rows(torch: Any, out: Path) -> None:
    """rows.csv, rows_kernels.json and softmax_l2.csv (module docstring)."""
    fields = ["op", "dtype", "rows", "cols", "time_ms", "median_ms", "spread", "error"]
    sizes = [(v // c, c) for v in NORM_VALUES[1:] for c in ROW_COLS]
    losses = list(LOSS_SHAPES)
    if DEV != "cuda":
        sizes, losses = [(4, 64), (2, 50257)], [(4, 1000)]
    kernels: dict[str, Any] = {}
    with open(out / "rows.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        for dname, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
            for rows, cols in sizes:
                fns = row_functions(torch, rows, cols, dt)
                for op, fn in fns.items():
                    w.writerow({"op": op, "dtype": dname, "rows": rows, "cols": cols,
                                **timing_fields(torch, fn)})
                    if dname == "bf16" and rows * cols <= NORM_VALUES[1]:
                        kernels[f"{op} {rows}x{cols}"] = kernel_times(torch, fn)["kernels"]
                empty_cache(torch)
            for rows, cols in losses:
                fns = loss_functions(torch, rows, cols, dt)
                if GRAPH:  # autograd is not captured into a CUDA graph here: eager only
                    del fns["cross-entropy-train"]
                for op, fn in fns.items():
                    w.writerow({"op": op, "dtype": dname, "rows": rows, "cols": cols,
                                **timing_fields(torch, fn)})
                    if dname == "bf16" and (rows, cols) == losses[0]:
                        kernels[f"{op} {rows}x{cols}"] = kernel_times(torch, fn)["kernels"]
                empty_cache(torch)
            log(f"rows {dname}: done")
    (out / "rows_kernels.json").write_text(json.dumps(kernels, indent=1))
    measure_softmax_l2(torch, out, fields)


def measure_softmax_l2(torch: Any, out: Path, fields: list[str]) -> None:
    """softmax_l2.csv (module docstring)."""
    with open(out / "softmax_l2.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        for dname, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
            for cols in SOFTMAX_L2_COLS[dname] if DEV == "cuda" else (64,):
                x = torch.randn(NORM_VALUES[2] // cols if DEV == "cuda" else 4, cols,
                                device=DEV, dtype=dt)
                for op, fn in (("softmax", lambda x=x: torch.ops.aten._softmax(x, -1, False)),
                               ("log-softmax",
                                lambda x=x: torch.ops.aten._log_softmax(x, -1, False))):
                    w.writerow({"op": op, "dtype": dname, "rows": x.shape[0], "cols": cols,
                                **timing_fields(torch, fn)})
                del x
                empty_cache(torch)
        log("rows: L2 sweep done")


def sdpa_backends(torch: Any) -> dict[str, Any]:
    from torch.nn.attention import SDPBackend

    found = {"default": None}
    for name, attr in (("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"),
                       ("efficient", "EFFICIENT_ATTENTION")):
        if hasattr(SDPBackend, attr):
            found[name] = getattr(SDPBackend, attr)
    return found


class OpRows:
    """The rows of ops.csv: each op timed (``time_calls``) or its error recorded."""

    def __init__(self, torch: Any) -> None:
        self.torch, self.rows = torch, []  # type: ignore[var-annotated]

    def under(self, backend: Any, fn: Callable[[], Any]) -> Any:
        """``fn()`` with SDPA held to ``backend`` (None: torch's own choice)."""
        from torch.nn.attention import sdpa_kernel

        if backend is None:
            return fn()
        with sdpa_kernel(backend):
            return fn()

    def add(self, op: str, dtype: str, shape: tuple[int, ...], fn: Callable[[], object],
            sdpa_backend: Any = None, **extra: Any) -> None:
        row = {"op": op, "dtype": dtype, "shape": "x".join(map(str, shape)), **extra}
        try:
            r = self.under(sdpa_backend, lambda: time_calls(self.torch, fn))
        except Exception as exc:  # noqa: BLE001 - recorded, the rest goes on
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        else:
            row |= {"time_ms": f"{r['best_s'] * 1e3:.6g}",
                    "median_ms": f"{r['median_s'] * 1e3:.6g}", "spread": f"{r['spread']:.3g}",
                    "calls": r["calls"]}
        self.rows.append(row)


def elementwise_ops(torch: Any, rec: OpRows, quick: bool) -> None:
    """add, GELU (erf and tanh forms) over 1-D tensors; layer norm and softmax over rows."""
    import torch.nn.functional as F

    sizes = (2**12, 2**16, 2**20, 2**24, 2**27) if not quick else (2**12, 2**20)
    tables = ((512, 768), (8192, 768), (16384, 4096)) if not quick else ((512, 768),)
    for dname, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        for n in sizes:
            a, b = torch.randn(n, device=DEV, dtype=dt), torch.randn(n, device=DEV, dtype=dt)
            c = torch.empty_like(a)
            rec.add("add", dname, (n,), lambda a=a, b=b, c=c: torch.add(a, b, out=c))
            rec.add("gelu", dname, (n,), lambda a=a: F.gelu(a))
            rec.add("gelu-tanh", dname, (n,), lambda a=a: F.gelu(a, approximate="tanh"))
            del a, b, c
        for rows, cols in tables:
            x = torch.randn(rows, cols, device=DEV, dtype=dt)
            ln = torch.nn.LayerNorm(cols, device=DEV, dtype=dt)
            with torch.no_grad():
                rec.add("layer-norm", dname, (rows, cols), lambda x=x, ln=ln: ln(x))
            rec.add("softmax", dname, (rows, cols), lambda x=x: torch.softmax(x, dim=-1))
            del x, ln
        empty_cache(torch)


def attention_ops(torch: Any, rec: OpRows, quick: bool) -> None:
    """scaled_dot_product_attention forward and (eager only) backward at FlashAttention-3's
    setting, under each backend."""
    import torch.nn.functional as F

    backends = sdpa_backends(torch)
    seqs = (512, 1024, 2048, 4096, 8192) if not quick else (512,)
    for hd in (64, 128):
        heads = 2048 // hd
        for seq, causal in ((s, c) for s in seqs for c in (False, True)):
            batch = max(1, 16384 // seq) if not quick else 1
            q, k, v = (torch.randn(batch, heads, seq, hd, device=DEV, dtype=torch.bfloat16,
                                   requires_grad=True) for _ in range(3))
            shape = (batch, heads, seq, hd)

            def attend(q=q, k=k, v=v, causal=causal) -> Any:
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

            def fwd(attend=attend) -> Any:
                with torch.no_grad():
                    return attend()

            for bname, backend in backends.items():
                rec.add("sdpa", "bf16", shape, fwd, backend, causal=causal, backend=bname)
                if GRAPH:  # autograd in a capture: not attempted
                    continue
                try:  # the backward alone: one forward kept, its graph retained
                    o = rec.under(backend, attend)
                except Exception:  # noqa: BLE001 - the forward's row has the error
                    continue
                g = torch.randn_like(o)
                rec.add("sdpa-backward", "bf16", shape,
                        lambda o=o, g=g, q=q, k=k, v=v: torch.autograd.grad(
                            o, (q, k, v), g, retain_graph=True), backend, causal=causal,
                        backend=bname)
                del o, g
            del q, k, v
            empty_cache(torch)
        log(f"ops: head dim {hd} done")


def decode_attention_ops(torch: Any, rec: OpRows, quick: bool) -> None:
    """One query row against a KV cache (a decode step's attention), under each backend."""
    import torch.nn.functional as F

    batch, heads, hd = (16, 32, 128) if not quick else (1, 4, 64)
    for kv in (1024, 4096, 16384) if not quick else (256,):
        q = torch.randn(batch, heads, 1, hd, device=DEV, dtype=torch.bfloat16)
        k, v = (torch.randn(batch, heads, kv, hd, device=DEV, dtype=torch.bfloat16)
                for _ in range(2))

        def dec(q=q, k=k, v=v) -> Any:
            with torch.no_grad():
                return F.scaled_dot_product_attention(q, k, v)
        for bname, backend in sdpa_backends(torch).items():
            rec.add("sdpa-decode", "bf16", (batch, heads, kv, hd), dec, backend, backend=bname)
        del q, k, v
        empty_cache(torch)


#: (batch, heads, seq, head dim) of ``--parts masks``: GPT-2's and BERT's training shapes as
#: _hf_steps.py runs them, a Llama-2-7B prefill's, and FlashAttention-3's setting at 1k tokens
MASK_SHAPES = ((8, 12, 1024, 64), (16, 12, 512, 64), (4, 32, 2048, 128), (16, 32, 1024, 64))


def masked_attention_ops(torch: Any, rec: OpRows, quick: bool) -> None:
    """scaled_dot_product_attention forward and backward under torch's default backend as a
    model calls it: causal (``is_causal``), no mask, a boolean mask over every pair (causal,
    odd batch rows' last quarter of keys padded: what transformers materializes for a padded
    batch) and a bf16 bias over every pair that needs its gradient (T5's), each without and
    with dropout 0.1 (a training step's); the kernel that ran, from one profiled call."""
    import torch.nn.functional as F

    for shape in MASK_SHAPES if not quick else ((1, 2, 128, 64),):
        b, h, s, d = shape
        q, k, v = (torch.randn(*shape, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        keep = torch.ones(b, 1, s, s, device=DEV, dtype=torch.bool).tril()
        keep[1::2, :, :, s - s // 4:] = False
        keep[1::2, :, s - s // 4:, :] = True  # a padded query row attends somewhere
        # a learned additive bias over every pair that needs its gradient (T5's position bias)
        bias = torch.zeros(b, h, s, s, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        masks = {"causal": None, "none": None, "bool": keep, "bias": bias}
        for mask, dropout in ((m, p) for m in masks for p in (0.0, 0.1)):
            def attend(mask=mask, dropout=dropout, q=q, k=k, v=v, given=masks[mask]) -> Any:
                return F.scaled_dot_product_attention(
                    q, k, v, attn_mask=given, dropout_p=dropout,
                    is_causal=mask == "causal")

            def fwd(attend=attend) -> Any:
                with torch.no_grad():
                    return attend()
            names = list(kernel_times(torch, fwd)["kernels"])
            rec.add("sdpa", "bf16", shape, fwd, mask=mask, dropout=dropout,
                    kernel=names[0][:90] if names else "")
            o = attend()
            g = torch.randn_like(o)

            def back(o=o, g=g, wrt=(q, k, v) + ((bias,) if mask == "bias" else ())) -> Any:
                return torch.autograd.grad(o, wrt, g, retain_graph=True)
            names = list(kernel_times(torch, back)["kernels"])
            rec.add("sdpa-backward", "bf16", shape, back, mask=mask, dropout=dropout,
                    kernel=names[0][:90] if names else "")
            del o, g
        del q, k, v, keep, bias, masks
        empty_cache(torch)
        log(f"masks: {shape} done")


#: (heads, head dim, sequence lengths) of ``--parts seqs``: lengths off the multiples of 128 that
#: FlashAttention-3's published rates are at (ViT's 197 and 577 among them), about 16k tokens
#: a batch
SEQ_SWEEPS = ((12, 64, (128, 192, 197, 256, 257, 320, 384, 577, 640, 1000, 1024, 1025)),
              (32, 128, (197, 256, 300, 512, 577, 1000, 1024)))


def seq_attention_ops(torch: Any, rec: OpRows, quick: bool) -> None:
    """scaled_dot_product_attention forward and backward under torch's default backend at
    ``SEQ_SWEEPS``' lengths, causal and not: each call's CUDA kernels (names and summed device
    time, ``_resnet_kernels.profiled``) beside the eager timing."""
    import torch.nn.functional as F
    from _resnet_kernels import profiled

    sweeps = ((2, 64, (197,)),) if quick else SEQ_SWEEPS
    for heads, d, seqs in sweeps:
        for s in seqs:
            b = max(1, 16384 // s) if not quick else 1
            shape = (b, heads, s, d)
            q, k, v = (torch.randn(*shape, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            for causal in (False, True):
                def fwd(q=q, k=k, v=v, causal=causal) -> Any:
                    with torch.no_grad():
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                g = torch.randn_like(o)

                def back(o=o, g=g, q=q, k=k, v=v) -> Any:
                    return torch.autograd.grad(o, (q, k, v), g, retain_graph=True)
                for op, fn in (("sdpa", fwd), ("sdpa-backward", back)):
                    kernels = profiled(torch, fn, kernel_times)
                    rec.add(op, "bf16", shape, fn, causal=causal,
                            kernel_ms=f"{sum(t for _, t, _ in kernels) / 1e3:.6g}",
                            kernels=";".join(f"{n[:70]}={t:.2f}x{c:g}" for n, t, c in kernels))
                del o, g
            del q, k, v
            empty_cache(torch)
        log(f"seqs: head dim {d} done")


#: (rows, columns) of ``--parts colsums``: a Linear's output gradient summed over its rows (its
#: bias gradient: GPT-2's and Llama's widths, a vocabulary) and the same values summed over
#: their columns
COLSUM_SHAPES = tuple((m, n) for m in (2048, 8192, 32768)
                      for n in (768, 2304, 3072, 4096, 11008, 50257))


def colsum_ops(torch: Any, rec: OpRows, quick: bool) -> None:
    """``x.sum(0)`` (a bias gradient: torch's reduction over the outer dimension) and
    ``x.sum(-1)`` (over the inner one) at ``COLSUM_SHAPES``, bf16 and fp32: eager timing and
    each call's kernels."""
    from _resnet_kernels import profiled

    for dname, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        for m, n in COLSUM_SHAPES if not quick else ((64, 96),):
            x = torch.randn(m, n, device=DEV, dtype=dt)
            for op, fn in (("sum-rows", lambda x=x: x.sum(0)),
                           ("sum-columns", lambda x=x: x.sum(-1))):
                kernels = profiled(torch, fn, kernel_times)
                rec.add(op, dname, (m, n), fn,
                        kernel_ms=f"{sum(t for _, t, _ in kernels) / 1e3:.6g}",
                        kernels=";".join(f"{k[:70]}={t:.2f}x{c:g}" for k, t, c in kernels))
            del x
            empty_cache(torch)
        log(f"colsums {dname}: done")


def measure_colsums(torch: Any, out: Path, quick: bool) -> None:
    write_op_rows(torch, out / "colsums.csv", (colsum_ops,), quick)


#: (rows, columns) of ``--parts smallsums``: the bias gradients of a few tokens (below
#: ``COLSUM_SHAPES``' 2,048 rows)
SMALLSUM_SHAPES = tuple((m, n) for m in (16, 64, 256, 512, 1024)
                        for n in (768, 3072, 4096, 11008, 50257))
#: (batch, channels, side) of ``--parts smallsums``' convolution bias gradients (sums over
#: N, H and W): ResNet-50's maps at batches 64 and 8
CONVSUM_SHAPES = tuple((n, c, side) for n in (64, 8)
                       for c, side in ((64, 112), (256, 56), (128, 28), (512, 28), (1024, 14),
                                       (2048, 7)))
#: (rows, columns) of ``--parts smallsums``' layer norms and softmaxes: a few tokens' rows
SMALLNORM_SHAPES = tuple((m, n) for m in (1, 8, 32, 128, 256, 512) for n in (768, 4096))
#: (rows, columns) of ``--parts smallsums``' means along rows: an RMSNorm's over a decode step's
#: few tokens (Llama-2-7B's 4,096 features, 13B's 5,120, 70B's 8,192)
SMALLMEAN_SHAPES = tuple((m, n) for m in (1, 8, 32) for n in (4096, 5120, 8192))


def small_sum_ops(torch: Any, rec: OpRows, quick: bool) -> None:
    """``x.sum(0)`` and ``x.sum(-1)`` at ``SMALLSUM_SHAPES``; ``x.sum((0, 2, 3))`` (the bias
    gradient torch's convolution backward takes) over NCHW and channels_last maps at
    ``CONVSUM_SHAPES``; layer norm and softmax forward and backward (``norm_functions``) at
    ``SMALLNORM_SHAPES``: bf16 and fp32, eager timing and each call's kernels."""
    from _resnet_kernels import profiled

    def add(op: str, dname: str, shape: tuple[int, ...], fn: Callable[[], object]) -> None:
        kernels = profiled(torch, fn, kernel_times)
        rec.add(op, dname, shape, fn,
                kernel_ms=f"{sum(t for _, t, _ in kernels) / 1e3:.6g}",
                kernels=";".join(f"{k[:70]}={t:.2f}x{c:g}" for k, t, c in kernels))

    for dname, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        for m, n in SMALLSUM_SHAPES if not quick else ((16, 96),):
            x = torch.randn(m, n, device=DEV, dtype=dt)
            add("sum-rows", dname, (m, n), lambda x=x: x.sum(0))
            add("sum-columns", dname, (m, n), lambda x=x: x.sum(-1))
        for n, c, side in CONVSUM_SHAPES if not quick else ((2, 8, 6),):
            x = torch.randn(n, c, side, side, device=DEV, dtype=dt)
            add("sum-nchw", dname, (n, c, side, side), lambda x=x: x.sum((0, 2, 3)))
            x = x.contiguous(memory_format=torch.channels_last)
            add("sum-nhwc", dname, (n, c, side, side), lambda x=x: x.sum((0, 2, 3)))
            del x
            empty_cache(torch)
        for m, n in SMALLNORM_SHAPES if not quick else ((8, 64),):
            for op, fn in norm_functions(torch, m, n, dt).items():
                add(op, dname, (m, n), fn)
        for m, n in SMALLMEAN_SHAPES if not quick else ((1, 256),):
            x = torch.randn(m, n, device=DEV, dtype=dt)
            add("mean-columns", dname, (m, n), lambda x=x: x.mean(-1, keepdim=True))
        log(f"smallsums {dname}: done")


def reduce_templates(torch: Any) -> dict[str, list[str]]:
    """The template arguments each reduce kernel of a few sums ran with (its name's tail:
    ``ReduceOp<..., index type, output type, vt0, input_vec_size>``), by op, dtype and shape:
    which rows of loads a thread makes at once."""
    import re

    from torch.profiler import ProfilerActivity, profile

    found: dict[str, list[str]] = {}
    for dname, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        for op, shape, fn in (("sum-rows", (768, 768), lambda x: x.sum(0)),
                              ("sum-rows", (1024, 768), lambda x: x.sum(0)),
                              ("sum-rows", (2048, 4096), lambda x: x.sum(0)),
                              ("sum-columns", (16, 4096), lambda x: x.sum(-1)),
                              ("sum-columns", (16, 3072), lambda x: x.sum(-1)),
                              ("sum-columns", (16, 11008), lambda x: x.sum(-1)),
                              ("mean-columns", (1, 4096), lambda x: x.mean(-1, keepdim=True))):
            x = torch.randn(*shape, device=DEV, dtype=dt)
            fn(x)
            sync(torch)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn(x)
                sync(torch)
            names = {e.key for e in prof.key_averages() if "reduce_kernel" in e.key}
            found[f"{op} {dname} {shape[0]}x{shape[1]}"] = sorted(
                (re.findall(r"reduce_kernel<\d+, \d+", k) or [""])[0] + " ... "
                + k[k.rfind("ReduceOp<"):][-60:] for k in names)
    return found


#: (batch, in channels, out channels, side, kernel) of ``--parts convbias``: convolutions with a
#: bias, a U-Net's and ResNet's shapes
CONVBIAS_SHAPES = ((8, 64, 64, 112, 3), (8, 128, 256, 56, 3), (32, 256, 256, 28, 3),
                   (32, 512, 512, 14, 1))


def conv_bias_ops(torch: Any, rec: OpRows, quick: bool) -> None:
    """A Conv2d with a bias, its input's, weight's and bias's gradients as autograd asks for
    them (``torch.autograd.grad``), NCHW and channels_last, bf16: eager timing and the call's
    kernels (the bias gradient among them: torch's reduce kernel)."""
    from _resnet_kernels import profiled

    for n, cin, cout, side, k in CONVBIAS_SHAPES if not quick else ((2, 8, 8, 6, 3),):
        for layout in ("nchw", "channels_last"):
            conv = torch.nn.Conv2d(cin, cout, k, padding=k // 2).to(DEV, torch.bfloat16)
            x = torch.randn(n, cin, side, side, device=DEV, dtype=torch.bfloat16)
            if layout == "channels_last":
                conv = conv.to(memory_format=torch.channels_last)
                x = x.contiguous(memory_format=torch.channels_last)
            x.requires_grad_()
            y = conv(x)
            dy = torch.randn_like(y)
            wrt = (x, conv.weight, conv.bias)

            def backward(y=y, dy=dy, wrt=wrt) -> object:
                return torch.autograd.grad(y, wrt, dy, retain_graph=True)

            kernels = profiled(torch, backward, kernel_times)
            reduce_us = sum(t for name, t, _ in kernels if "reduce_kernel" in name)
            rec.add("conv-backward", "bf16", (n, cin, cout, side, k), backward, layout=layout,
                    kernel_ms=f"{sum(t for _, t, _ in kernels) / 1e3:.6g}",
                    reduce_ms=f"{reduce_us / 1e3:.6g}",
                    kernels=";".join(f"{k_[:70]}={t:.2f}x{c:g}" for k_, t, c in kernels))
            del conv, x, y, dy, wrt
            empty_cache(torch)
    log("convbias: done")


def measure_convbias(torch: Any, out: Path, quick: bool) -> None:
    write_op_rows(torch, out / "convbias.csv", (conv_bias_ops,), quick)


def measure_smallsums(torch: Any, out: Path, quick: bool) -> None:
    write_op_rows(torch, out / "smallsums.csv", (small_sum_ops,), quick)
    if DEV == "cuda":
        (out / "smallsums_templates.json").write_text(json.dumps(reduce_templates(torch),
                                                                 indent=1))


def measure_seqs(torch: Any, out: Path, quick: bool) -> None:
    write_op_rows(torch, out / "seqs.csv", (seq_attention_ops,), quick)


def write_op_rows(torch: Any, path: Path, parts: tuple[Callable[..., None], ...],
                  quick: bool) -> None:
    """``parts`` run into one ``OpRows``, written to ``path`` as CSV (every key a column)."""
    rec = OpRows(torch)
    for part in parts:
        part(torch, rec, quick)
    fields = sorted({key for r in rec.rows for key in r}, key=lambda s: (s != "op", s))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        w.writerows(rec.rows)


def measure_masks(torch: Any, out: Path, quick: bool) -> None:
    write_op_rows(torch, out / "masks.csv", (masked_attention_ops,), quick)


def measure_ops(torch: Any, out: Path, quick: bool) -> None:
    write_op_rows(torch, out / "ops.csv", (elementwise_ops, attention_ops,
                                           decode_attention_ops), quick)


#: (name, builder, mode, optimizer, batch, seq or image side)
STEPS = (("mlp-train", "mlp", "train", "sgd", 4096, None),
         ("gpt2-forward", "gpt2", "inference", "none", 8, 1024),
         ("gpt2-train", "gpt2", "train", "sgd", 8, 1024),
         ("bert-forward", "bert", "inference", "none", 16, 512),
         ("resnet50-forward", "resnet50", "inference", "none", 64, 224),
         ("resnet50-train", "resnet50", "train", "sgd", 64, 224))


def step_inputs(torch: Any, builder: str, batch: int, side: int | None, dt: Any,
                device: str | None = None) -> tuple:
    """A step's inputs on ``device`` (default ``DEV``; bench_gpu_live.py captures on "meta")."""
    device = device or DEV
    if builder == "mlp":
        return (torch.randn(batch, 1024, device=device, dtype=dt),)
    if builder == "resnet50":
        return (torch.randn(batch, 3, side, side, device=device, dtype=dt),)
    vocab = 50257 if builder == "gpt2" else 30522
    return (torch.randint(0, vocab, (batch, side), device=device),)


def kernel_times(torch: Any, step: Callable[[], None]) -> dict[str, Any]:
    """One profiled step: each CUDA kernel's summed device time and calls, by name."""
    from torch.profiler import ProfilerActivity, profile

    sync(torch)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEV == "cuda" else [])
    with profile(activities=activities) as prof:
        step()
        sync(torch)
    kernels: dict[str, list[float]] = {}
    for e in prof.key_averages():
        on_device = "CUDA" in str(getattr(e, "device_type", ""))
        if on_device or DEV != "cuda":
            t = (getattr(e, "self_device_time_total", None)
                 or getattr(e, "self_cuda_time_total", None) or 0.0) if on_device \
                else e.self_cpu_time_total
            kernels[e.key[:160]] = [t * 1e-6, e.count]
    return {"kernels": {k: {"s": v[0], "calls": v[1]} for k, v in
                        sorted(kernels.items(), key=lambda kv: -kv[1][0])},
            "kernel_s": sum(v[0] for v in kernels.values())}


def step_record(torch: Any, step: Callable[[], None]) -> dict[str, Any]:
    """A whole step timed (best, median, spread of five values of about 50 ms), the peak memory
    torch allocated, and one profiled step's kernels."""
    record: dict[str, Any] = dict(time_calls(torch, step, values=5, value_s=0.05, warmups=3))
    if DEV == "cuda":
        record["max_memory_bytes"] = torch.cuda.max_memory_allocated()
    return record | kernel_times(torch, step)


def torch_flops_step(torch: Any, record: dict[str, Any], dt: Any,
                     channels_last: bool) -> dict[str, Any]:
    """``record`` (a step of tools/torch_flops.py's: its builder, mode, optimizer, batch and
    side) with the step timed (``step_record``), its module and input in channels_last where
    asked, or the error it raised; the GPU's memory freed after."""
    import torch_flops

    try:
        torch.manual_seed(0)
        module = torch_flops.BUILDERS[record["builder"]]().to(DEV, dt)
        inputs = step_inputs(torch, record["builder"], record["batch"], record["side"], dt)
        if channels_last:
            module = module.to(memory_format=torch.channels_last)
            inputs = tuple(x.to(memory_format=torch.channels_last) for x in inputs)
        record.update(step_record(torch, step_function(module, inputs, record["mode"],
                                                       record["optimizer"])))
    except Exception as exc:  # noqa: BLE001 - recorded, the next step goes on
        record["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    module = inputs = None
    empty_cache(torch)
    if DEV == "cuda":
        torch.cuda.reset_peak_memory_stats()
    return record


def measure_steps(torch: Any, out: Path, quick: bool, channels_last: bool = False) -> None:
    results = []
    for dname, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        for name, builder, mode, optimizer, batch, side in STEPS:
            if quick and name not in ("mlp-train", "gpt2-forward"):
                continue
            if quick:
                batch = max(1, batch // 8)
            record: dict[str, Any] = {"step": name, "builder": builder, "dtype": dname,
                                      "mode": mode, "optimizer": optimizer, "batch": batch,
                                      "side": side}
            last = channels_last and builder == "resnet50"
            if last:
                record["memory_format"] = "channels_last"
            results.append(torch_flops_step(torch, record, dt, last))
            log(f"step {name} {dname}: {record.get('best_s', record.get('error'))}")
    (out / "steps.json").write_text(json.dumps(results, indent=1))


#: batches of ``--parts resnets``: ResNet-50's steps at batches its batch norms' and convolutions'
#: kernels were not fitted at (64), each in NCHW and channels_last, fp32 and bf16
RESNET_BATCHES = (32, 128)


def measure_resnets(torch: Any, out: Path, quick: bool) -> None:
    """``resnets.json``: ResNet-50's forward and training steps (``STEPS``' two) at each of
    ``RESNET_BATCHES``, NCHW and channels_last, fp32 and bf16: time, peak memory, kernels."""
    results = []
    for batch in (2,) if quick else RESNET_BATCHES:
        for layout in ("nchw", "channels_last"):
            for dname, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
                for name, builder, mode, optimizer, _, side in STEPS:
                    if builder != "resnet50":
                        continue
                    record: dict[str, Any] = {"step": name, "builder": builder, "dtype": dname,
                                              "mode": mode, "optimizer": optimizer,
                                              "batch": batch, "side": 64 if quick else side,
                                              "memory_format": layout}
                    results.append(torch_flops_step(torch, record, dt,
                                                    layout == "channels_last"))
                    log(f"resnet {name} {batch} {layout} {dname}: "
                        f"{record.get('best_s', record.get('error'))}")
                    (out / "resnets.json").write_text(json.dumps(results, indent=1))


def measure_hf(torch: Any, out: Path, quick: bool, only: set[str]) -> None:
    """``hf_steps.json``: each ``HF_STEPS`` step (_hf_steps.py; those named in ``only`` where
    it names any) timed, its peak memory (``max_memory_allocated``; ``model_bytes``, the
    model's own) and one profiled step's kernels."""
    import transformers

    results = []
    for spec in HF_STEPS:
        if only and spec.name not in only:
            continue
        if quick:  # a dry run: every step, one layer, 64 tokens or pixels a side
            layers = "num_layers" if spec.config == "T5Config" else "num_hidden_layers"
            side = {"image_size": 64} if spec.inputs == "image" else {}
            spec = spec._replace(overrides=spec.overrides | {layers: 1} | side, batch=1, seq=64)
        record: dict[str, Any] = {"step": spec.name, "dtype": spec.dtype,
                                  "transformers": transformers.__version__}
        step = None
        try:
            torch.manual_seed(0)
            gc.collect()  # the last step's module, held in reference cycles, freed first
            if DEV == "cuda":
                torch.cuda.reset_peak_memory_stats()
            step = hf_step(torch, spec, DEV)
            if DEV == "cuda":
                record["model_bytes"] = torch.cuda.memory_allocated()
            record.update(step_record(torch, step))
        except Exception as exc:  # noqa: BLE001 - recorded, the next step goes on
            record["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        results.append(record)
        log(f"hf {spec.name}: {record.get('best_s', record.get('error'))}")
        step = None  # the module goes with it
        empty_cache(torch)
        (out / "hf_steps.json").write_text(json.dumps(results, indent=1))


#: (KV tokens, batches) of ``--parts fits``: around the largest Llama-2-7B decode batch analyze
#: says fits an H100 80GB at 2048 tokens (65)
FIT_BATCHES = (2048, (64, 65, 66, 67))


#: (batch, channels in, channels out, side, kernel) of ``--parts convs``: ResNet-50's 3 x 3 and
#: 1 x 1 convolutions of its first and last stages, batch 64
CONV_SHAPES = ((64, 64, 64, 56, 3), (64, 256, 64, 56, 1), (64, 512, 512, 7, 3),
               (64, 2048, 512, 7, 1))


def measure_convs(torch: Any, out: Path, quick: bool) -> None:
    """``convs.csv``: one fp32 convolution (NCHW, no bias, stride 1, same padding) forward, and
    forward with the input's and weight's gradients, with ``cudnn.allow_tf32`` on (torch's
    default) and off: what TF32 buys an fp32 convolution (``GemmShape.tf32``)."""
    rows = []
    for b, c, k, side, r in CONV_SHAPES if not quick else ((2, 8, 8, 8, 3),):
        conv = torch.nn.Conv2d(c, k, r, padding=r // 2, bias=False).to(DEV)
        x = torch.randn(b, c, side, side, device=DEV, requires_grad=True)

        def fwd(conv=conv, x=x) -> Any:
            with torch.no_grad():
                return conv(x)

        def both(conv=conv, x=x) -> Any:
            y = conv(x)
            return torch.autograd.grad(y, (x, conv.weight), torch.ones_like(y))
        for tf32 in (True, False):
            with torch.backends.cudnn.flags(enabled=True, allow_tf32=tf32):
                for name, fn in (("forward", fwd), ("train", both)):
                    rows.append({"op": name, "shape": f"{b}x{c}x{k}x{side}x{r}",
                                 "allow_tf32": tf32} | timing_fields(torch, fn))
        del conv, x
        empty_cache(torch)
    fields = sorted({key for r in rows for key in r}, key=lambda s: (s != "op", s))
    with open(out / "convs.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        w.writerows(rows)


def measure_fits(torch: Any, out: Path, quick: bool) -> None:
    """``fits.json``: does a Llama-2-7B decode step (``_decode_step``: bf16 weights and a KV
    cache of ``FIT_BATCHES``' tokens) run at each batch, or run out of memory? With its peak
    allocation and what the device had free before it."""
    cfg = json.loads((ROOT / "examples" / "hf" / "llama-2-7b.json").read_text())
    if quick:
        cfg = cfg | {"num_hidden_layers": 1, "hidden_size": 256, "intermediate_size": 512,
                     "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000}
    kv, batches = FIT_BATCHES
    rows = []
    for batch in batches:
        row: dict[str, Any] = {"batch": batch, "kv": kv}
        step = None
        gc.collect()
        empty_cache(torch)
        if DEV == "cuda":
            torch.cuda.reset_peak_memory_stats()
            row["free_before_bytes"] = torch.cuda.mem_get_info()[0]
        try:
            step = decode_step(torch, cfg, batch, kv, DEV)
            step()
            sync(torch)
            row["fits"] = True
        except Exception as exc:  # noqa: BLE001 - out of memory is the answer sought
            row["fits"] = False
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        if DEV == "cuda":
            row["max_memory_bytes"] = torch.cuda.max_memory_allocated()
        step = None
        rows.append(row)
        log(f"fits {json.dumps(row)}")
    (out / "fits.json").write_text(json.dumps(rows, indent=1))


def measure_decode(torch: Any, out: Path, quick: bool) -> None:
    """decode.json: one Llama-2-7B decode step (``_decode_step``, examples/hf/llama-2-7b.json,
    bf16) per ``DECODE_STEPS`` batch and KV length: replayed from a CUDA graph (``graph_s``,
    the GPU's time), called eagerly back to back (``eager_s``, the host's per-kernel cost in
    it), and one profiled eager step (``kernels`` launched, ``kernel_s`` their summed time)."""
    global GRAPH
    cfg = json.loads((ROOT / "examples" / "hf" / "llama-2-7b.json").read_text())
    if quick or DEV != "cuda":
        cfg |= {"num_hidden_layers": 2, "hidden_size": 256, "intermediate_size": 512,
                "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000}
    shapes = DECODE_STEPS if DEV == "cuda" else ((1, 64), (2, 64))
    rows = []
    for batch, kv in shapes:
        row: dict[str, Any] = {"batch": batch, "kv": kv, "layers": cfg["num_hidden_layers"]}
        try:
            step = decode_step(torch, cfg, batch, kv, DEV)
            kinds = (("graph", True), ("eager", False)) if DEV == "cuda" else (("eager", False),)
            for label, graph in kinds:
                GRAPH = graph
                r = time_calls(torch, step, values=5, value_s=0.05)
                row |= {f"{label}_s": r["best_s"], f"{label}_median_s": r["median_s"],
                        f"{label}_spread": r["spread"]}
            GRAPH = False
            profiled = kernel_times(torch, step)
            row |= {"kernels": sum(k["calls"] for k in profiled["kernels"].values()),
                    "kernel_s": profiled["kernel_s"]}
        except Exception as exc:  # noqa: BLE001 - recorded per row
            row["error"] = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            GRAPH = False
            step = None
            empty_cache(torch)
        rows.append(row)
        log(f"decode {json.dumps(row)}")
    (out / "decode.json").write_text(json.dumps(rows, indent=1))


def clocks() -> dict[str, Any]:
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "mem_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                "max_sm_mhz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000,
                "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000,
                "temperature_c": pynvml.nvmlDeviceGetTemperature(h, 0),
                "driver": pynvml.nvmlSystemGetDriverVersion()}
    except Exception as exc:  # noqa: BLE001 - the facts are optional
        return {"error": str(exc)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--parts", default="gemm,ops,steps",
                        help=f"comma-separated, among {', '.join(PARTS)}")
    parser.add_argument("--device-entry", default="h100-sxm5-80gb",
                        help="the hwdb entry the GPU is (gemm.csv's device column)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: a dry run of this script on a machine without a GPU "
                             "(small sizes advised: --quick; figures meaningless)")
    parser.add_argument("--no-cudnn-tf32", action="store_true",
                        help="set torch.backends.cudnn.allow_tf32 False (torch's default is "
                             "True: fp32 convolutions on TF32 Tensor Cores)")
    parser.add_argument("--channels-last", action="store_true",
                        help="steps: ResNet-50's module and input in channels_last (NHWC)")
    parser.add_argument("--hf", default="",
                        help="--parts hf: only these steps (comma-separated _hf_steps names)")
    parser.add_argument("--graph", action="store_true",
                        help="time CUDA-graph replays (the kernels without the host's per-call "
                             "cost); GEMMs and forward ops only")
    args = parser.parse_args()
    parts = args.parts.split(",")
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        print(f"error: --parts: unknown {', '.join(unknown)} (choose from {', '.join(PARTS)})",
              file=sys.stderr)
        return 2
    import torch

    global DEV, GRAPH
    DEV, GRAPH = args.device, args.graph
    if GRAPH and (DEV != "cuda" or "steps" in parts):
        print("error: --graph times GEMMs, ops and passes on a GPU (not steps)", file=sys.stderr)
        return 2
    if DEV == "cuda" and not torch.cuda.is_available():
        print("error: torch sees no CUDA device", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    if args.no_cudnn_tf32:
        torch.backends.cudnn.allow_tf32 = False
    env: dict[str, Any] = {"torch": torch.__version__, "entry": args.device_entry,
                           "timing": "graph" if GRAPH else "eager",
                           "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
                           "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                           "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    fp8 = False
    if DEV == "cuda":
        props = torch.cuda.get_device_properties(0)
        env.update({"name": torch.cuda.get_device_name(0), "sms": props.multi_processor_count,
                    "l2_bytes": getattr(props, "L2_cache_size", None),
                    "memory_bytes": props.total_memory,
                    "free_bytes_at_start": torch.cuda.mem_get_info()[0],
                    "capability": list(torch.cuda.get_device_capability(0)),
                    "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
                    "clocks_before": clocks()})
        fp8 = (tuple(torch.cuda.get_device_capability(0)) >= (8, 9)
               and hasattr(torch, "_scaled_mm"))
    log(json.dumps(env))
    for part, run in (("gemm", lambda: measure_gemms(torch, args.out, args.device_entry,
                                                     args.quick, fp8)),
                      ("ops", lambda: measure_ops(torch, args.out, args.quick)),
                      ("steps", lambda: measure_steps(torch, args.out, args.quick,
                                                      args.channels_last)),
                      ("passes", lambda: measure_passes(torch, args.out, args.device_entry)),
                      ("quant", lambda: measure_quant(torch, args.out, args.device_entry,
                                                      time_calls, deepbench_shapes(), DEV,
                                                      args.quick, log)),
                      ("decode", lambda: measure_decode(torch, args.out, args.quick)),
                      ("waves", lambda: measure_waves(torch, args.out, args.device_entry)),
                      ("norms", lambda: measure_norms(torch, args.out)),
                      ("rows", lambda: measure_rows(torch, args.out)),
                      ("hf", lambda: measure_hf(torch, args.out, args.quick,
                                                set(filter(None, args.hf.split(","))))),
                      ("masks", lambda: measure_masks(torch, args.out, args.quick)),
                      ("fits", lambda: measure_fits(torch, args.out, args.quick)),
                      ("convs", lambda: measure_convs(torch, args.out, args.quick)),
                      ("bnorms", lambda: measure_resnet_kernels(torch, args.out, args.quick,
                                                                DEV, time_calls, kernel_times,
                                                                log)),
                      ("resnets", lambda: measure_resnets(torch, args.out, args.quick)),
                      ("seqs", lambda: measure_seqs(torch, args.out, args.quick)),
                      ("colsums", lambda: measure_colsums(torch, args.out, args.quick)),
                      ("smallsums", lambda: measure_smallsums(torch, args.out, args.quick)),
                      ("convbias", lambda: measure_convbias(torch, args.out, args.quick)),
                      ("video", lambda: measure_video(torch, args.out, args.quick, DEV,
                                                      time_calls, kernel_times, step_record,
                                                      step_function, log))):
        if part in parts:
            t0 = time.perf_counter()
            try:
                run()
            except Exception as exc:  # noqa: BLE001 - the other parts still run
                env[f"{part}_error"] = f"{type(exc).__name__}: {exc}"
                log(f"{part} failed: {exc}")
            env[f"{part}_s"] = round(time.perf_counter() - t0, 1)
    if DEV == "cuda":
        env["clocks_after"] = clocks()
    (args.out / "env.json").write_text(json.dumps(env, indent=1))
    log(json.dumps({k: v for k, v in env.items() if k.endswith("_s") or k.endswith("error")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
