"""What the ops between the GEMMs cost on this CPU: the probe times ``kernels.cpu_ops`` (through
torch when it is installed, else numpy) and writes the calibration's ``ops`` block
(``hardware.spec.CpuOpsCalibration``), which ``analysis.cpu_ops`` predicts ops with.

Each figure is taken after the per-call cost: a kernel's rate is its work over (its best time
less ``call_s``), the time never taken below half the best (a kernel timed near the call cost on
a busy machine would otherwise claim any rate). Fused attention is saved as a share of the
measured fp32 GEMM peak (the entry's), per sequence length, without and with the causal mask.
Attention is timed only when the GEMMs went through the same library (``probe --library torch``):
a share of another library's peak says nothing of either. A class the library cannot run is
listed under ``missing`` with the reason, and among the probe's ``not_measured``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..units import count
from .plan import MiB
from .result import Note

if TYPE_CHECKING:
    from ..kernels.cpu_ops import OpSizes
    from .runner import Session


#: An add in cache slower than this share of the DRAM read stream did not stream: its calls
#: stalled (on the development VM a parallel torch op took 8 ms a call for seconds at a time,
#: with the machine otherwise idle, under OpenMP's default wait policy: 0.58 ms with
#: OMP_WAIT_POLICY=ACTIVE, 0.9 ms on one thread).
STALLED_SHARE = 0.5


def ops_library() -> str:
    """The library the op costs are timed through: torch when it imports, else numpy."""
    from ..kernels.cpu_ops import torch_available

    return "torch" if torch_available() else "numpy"


def sizes_for(s: Session, llc_bytes: int | None) -> OpSizes:
    from ..kernels.cpu_ops import OpSizes

    p = s.plan
    dram = p.ops_dram_elements or int(p.ops_dram_llc_factor * (llc_bytes or 32 * MiB) / 12)
    return OpSizes(p.ops_elements, dram, p.ops_nchw, p.ops_heads, p.ops_head_dim, p.ops_seqs)


def after_call(best_s: float, call_s: float) -> float:
    """A kernel's time less the per-call cost, never below half its time."""
    return max(best_s - call_s, best_s / 2)


def calibrate_ops(s: Session, llc_bytes: int | None) -> None:
    """Time the op kernels and put the ``ops`` block into the calibration."""
    from ..kernels.cpu_ops import MISSING_WITHOUT_TORCH, attention_kernel, rate_kernels, threads

    library = ops_library()
    sizes = sizes_for(s, llc_bytes)
    p = s.plan
    s.say(f"op costs through {library} (elementwise, transcendental, norms, pooling, "
          f"attention) ...")
    makers = rate_kernels(library, sizes)
    timed: dict[str, dict[str, Any]] = {}
    for key, make in makers.items():
        timed[key] = s.time(make(), 1.0, p.ops_min_time_s, p.ops_repeats)
    call_s = timed.pop("call")["best_s"]
    rates = {key: _sig(stats["work"] / after_call(stats["best_s"], call_s) / 1e9)
             for key, stats in timed.items()}
    missing = {key: why for key, why in MISSING_WITHOUT_TORCH.items()
               if library != "torch"}
    block: dict[str, Any] = {"library": library, "dtype": "fp32", "threads": threads(library),
                             "call_s": _sig(call_s), "rates_gbs": rates}
    peak = s.measured["gemm_gflops"].get("fp32")
    if library == "torch" and not peak:
        missing["attention"] = "no fp32 GEMM peak was measured to hold its rate against"
    elif library == "torch" and s.library != "torch":
        # a share of another library's peak: torch's attention ran at 1.57 of numpy's
        # OpenBLAS fp32 peak on a 2-vCPU VM, past what a share can be (MAX_ATTENTION_SHARE)
        missing["attention"] = (f"the fp32 GEMM peak was timed through {s.library}, attention "
                                f"through torch: `probe --library torch` times both")
    elif library == "torch":
        for key, causal in (("attention", False), ("attention_causal", True)):
            shares = {}
            for seq in sizes.seqs:
                stats = s.time(attention_kernel(seq, causal, sizes), 1.0, p.ops_min_time_s,
                               p.ops_repeats)
                timed[f"{key}_{seq}"] = stats
                shares[seq] = _sig(stats["work"] / after_call(stats["best_s"], call_s)
                                   / (peak * 1e9))
            block[key] = shares
        block["attention_head_dim"] = sizes.head_dim
    if missing:
        block["missing"] = missing
        for key, why in missing.items():
            s.skip(f"calibration.ops.{key}", Note("op_kernel_missing", {"reason": why}))
    dram = s.measured["bandwidth_gbs"].get("dram")
    if dram and rates["stream_cache"] < STALLED_SHARE * dram:
        s.warnings.append(Note("op_costs_stalled", {"rate": rates["stream_cache"], "dram": dram,
                                                    "library": library}))
    s.details["op_costs"] = {key: {k: stats[k] for k in ("best_s", "median_s", "spread", "work",
                                                         "unit")}
                             for key, stats in timed.items()}
    s.measured["calibration"]["ops"] = block
    s.say(f"  op costs ({library}, {count(block['threads'], 'thread')}): "
          f"{call_s * 1e6:.2f} us per call; "
          + ", ".join(f"{k} {v:g}" for k, v in rates.items()) + " GB/s"
          + (f"; attention {block['attention']} of the fp32 peak" if "attention" in block
             else ""))


def _sig(value: float, digits: int = 4) -> float:
    return float(f"{value:.{digits}g}")
