"""Do whole PyTorch steps take the time roofline predicts? Run on demand (not a test):

    .venv/bin/python benchmarks/bench_torch_steps.py [--threads 2] [--repeats 5] [--rounds 4]
        [--hw NAME | --probe] [--steps mlp-train,gpt2-forward,...] [--roof-ops] [--markdown]

Needs torch (``pip install -e ".[torch]"``). Each step is a real fp32 PyTorch step on this CPU
with ``torch.set_num_threads(--threads)`` (default 2), built in plain torch.nn by
tools/torch_flops.py's builders (the same modules the FLOP cross-check uses):

- mlp-train: examples/mlp-1024-4096-1000.yaml's network (two linear layers, no biases) at batch
  512: forward, backward (the output's gradient all ones, no loss) and a plain SGD update
  (``torch.optim.SGD``, lr 1e-4, no momentum, no weight decay: w -= lr g);
- gpt2-forward, bert-forward: GPT-2 (124M, examples/hf/gpt2.json) and BERT-base
  (examples/hf/bert-base-uncased.json, with its masked-LM head) at batch 1, seq 128, forward
  under ``torch.no_grad()``, attention as two batched matmuls and a softmax, GELU as
  ``F.gelu`` (the exact erf form, one kernel; Hugging Face's GPT-2 writes the tanh form as
  about seven elementwise ops, which this step does not time);
- resnet50-forward: torchvision's v1.5 ResNet-50 built by hand, batch 2, 224 x 224, eval mode;
- resnet50-train: the same at batch 2 in train mode (batch statistics), forward, backward and
  the SGD update.

The prediction describes exactly the module that is timed: the module is captured with
``roofline.torch.capture`` (mode, optimizer and, for the transformers, attention "naive": the
matmuls the module runs) and analyzed on an entry calibrated through torch (issue 20 item 8:
torch's CPU GEMMs, MKL / oneDNN here, ran shapes 1.0-1.7x apart from numpy's BLAS): ``--hw
NAME`` (an entry you saved with ``roofline probe --library torch --save NAME``; one calibrated
through numpy's BLAS is refused in one line), by default the saved ``local`` entry when its
calibration is torch's, else a quick probe through torch run here and not saved (it says
why); ``--probe`` always probes. The probe runs at ``--threads`` (set before it), so the
calibration describes the threads the steps run with; a saved entry calibrated at another
thread count is used, and the header says so.

Timing: every step is built, predicted and run ``--warmups`` untimed times (default 2); then its
timed steps, at least ``--repeats`` (default 5), more for a short step (until about 3 s of timed
steps, at most 50), run in ``--rounds`` round-robin rounds over all the steps (default 4),
spread over about ``--span`` seconds (default 40), as the probe times its calibration: on a host
that slows for stretches of seconds to tens of seconds, a slow stretch costs one round of every
step rather than every sample of one. After each round the kernel the entry's fp32 peak was
measured with (torch's square GEMM at the calibration's peak size) is timed too (the best of 3
calls), and the output's ``host:`` line gives its rates through the rounds against the entry's
peak: a run on a slower stretch of a shared host says so; a second ``host:`` line times a 96^3
fp32 GEMM on one thread and on two before and after the steps (``_host.thread_check``: whether
the host ran the second vCPU late, which slows small GEMMs and the long peak kernel hardly).
Best (the fastest sample of all
rounds), median and spread (MAD / median, roofline.kernels.timing). Then one more step under
``torch.profiler``: the self CPU time of every aten op, grouped into GEMM-class ops
(``GEMM_OPS``: mm, addmm, bmm, the convolutions forward and backward, ...) and the rest, held
against the prediction's GEMMs (``predicted_gemm_time_s``) and its other ops
(``predicted_op_time_s``: on an entry whose calibration holds the probe's op costs,
``analysis.cpu_ops``; else their roof); the profiled step's wall time is printed beside the
timed best so that the profiler's own cost shows. The non-GEMM aten ops are also summed by the
class ``analysis.cpu_ops.CLASSES`` gives them (streaming, copy, transcendental, normalization,
pooling, attention; ``unmapped`` for a profiled op no row names, ``framework`` for the
profiler's non-aten entries: autograd nodes, the optimizer's step), against the prediction's ops
of that class; and the non-GEMM ops that take longest are listed with the prediction for the
same aten op.

A shared machine moves these figures: run it twice and report both, with the load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _host import host_line, peak_kernel, thread_check, thread_line
from _steps import step_function

from roofline.kernels.timing import BenchResult

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

#: aten ops (profiler names less ``aten::``) that are GEMMs or convolutions: what roofline
#: counts as GEMMs. Wrappers (matmul, linear, conv2d) have small self times of their own.
GEMM_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "addmv", "mv", "dot",
                      "matmul", "linear", "_addmm_activation", "einsum"})
TARGET = 1.15  # issue 20: each whole step within 1.15x
MIN_TIMED_S = 3.0  # a short step repeats until about this much timed time
MAX_REPEATS = 50
ROUNDS = 4  # round-robin rounds over every step (run_cases)
SPAN_S = 40.0  # the rounds spread over about this many seconds, as the probe's calibration
#: The prediction's op kinds that are not aten names, as the aten op that runs them here:
#: torch.optim.SGD (no momentum) updates each parameter with one add_; a Linear's bias is the
#: copy_ addmm makes of it into its output (the capture's ``bias`` op).
KIND_AS_ATEN = {"sgd-update": "add_", "bias": "copy_"}
#: A profiled CPU kernel and the op names the capture (on the meta device, above the CPU
#: kernels) records for the same work: relu runs as clamp_min; a copy (reshape of a transposed
#: tensor, contiguous, matmul's expand) as copy_ under the clone the capture sees.
PROFILED_AS = {"copy_": ("copy_", "clone", "copy", "_to_copy", "contiguous"),
               "clamp_min": ("clamp_min", "relu"),
               # an eval batch norm runs as native_batch_norm; the capture names it by its
               # eval-only form
               "native_batch_norm": ("native_batch_norm",
                                     "_native_batch_norm_legit_no_training")}
#: A profiled op that runs, in an inference step, what the capture names otherwise.
EVAL_AS = {"aten::native_batch_norm": "aten::_native_batch_norm_legit_no_training"}


def is_gemm_op(name: str) -> bool:
    """Whether a profiler op name (``aten::addmm``) is GEMM-class work: a matrix product or a
    convolution (forward, backward, its mkldnn / slow-path kernels)."""
    op = name.removeprefix("aten::")
    return op in GEMM_OPS or "conv" in op


@dataclass(frozen=True)
class Case:
    """One step to time: a module builder, its inputs, the mode and the optimizer."""

    name: str
    build: Callable[[], Any]
    inputs: Callable[[], tuple[Any, ...]]
    mode: str  # "train" | "inference"
    optimizer: str  # "none" | "sgd"
    shape: str  # the batch (and seq) in words
    attention: str = "naive"  # the transformers here run attention as matmuls


def cases() -> dict[str, Case]:
    import torch
    import torch_flops

    def ids(vocab: int, batch: int, seq: int) -> Callable[[], tuple[Any, ...]]:
        return lambda: (torch.randint(0, vocab, (batch, seq)),)

    return {c.name: c for c in (
        Case("mlp-train", torch_flops.mlp, lambda: (torch.randn(512, 1024),), "train", "sgd",
             "batch 512"),
        Case("gpt2-forward", torch_flops.gpt2, ids(50257, 1, 128), "inference", "none",
             "batch 1, seq 128"),
        Case("bert-forward", torch_flops.bert, ids(30522, 1, 128), "inference", "none",
             "batch 1, seq 128"),
        Case("resnet50-forward", torch_flops.resnet50, lambda: (torch.randn(2, 3, 224, 224),),
             "inference", "none", "batch 2, 224 x 224"),
        Case("resnet50-train", torch_flops.resnet50, lambda: (torch.randn(2, 3, 224, 224),),
             "train", "sgd", "batch 2, 224 x 224"),
    )}


@dataclass
class Profile:
    """One profiled step: self CPU seconds and calls per aten op, and the step's wall time."""

    wall_s: float
    self_s: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    @property
    def gemm_s(self) -> float:
        return sum(t for op, t in self.self_s.items() if is_gemm_op(op))

    @property
    def other_s(self) -> float:
        """Every other op's self time, the framework's own entries (autograd, optimizer)
        included; Python between ops is in neither."""
        return sum(t for op, t in self.self_s.items() if not is_gemm_op(op))


def profile_step(step: Callable[[], None]) -> Profile:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        step()
        wall = time.perf_counter() - t0
    events = prof.key_averages()
    return Profile(wall, {e.key: e.self_cpu_time_total / 1e6 for e in events},
                   {e.key: e.count for e in events})


@dataclass
class Row:
    """A step measured and predicted."""

    case: Case
    samples: tuple[float, ...]
    predicted_s: float
    predicted_gemm_s: float
    predicted_other_s: float
    predicted_by_op: dict[str, float]  # the prediction's non-GEMM time per aten op / kind
    flops: int
    profile: Profile | None
    predicted_by_class: dict[str, float] = field(default_factory=dict)  # cpu_ops classes

    @property
    def timing(self) -> BenchResult:
        """The samples as the probe's own measurement: best, median, spread (MAD / median)."""
        return BenchResult(self.samples, (), 1)

    @property
    def best_s(self) -> float:
        return self.timing.best_s

    @property
    def median_s(self) -> float:
        return self.timing.median_s

    @property
    def spread(self) -> float:
        return self.timing.spread

    @property
    def ratio(self) -> float:
        return self.best_s / self.predicted_s

    def by_class(self) -> list[tuple[str, float, float]]:
        """(class, profiled s, predicted s) of the non-GEMM work, by ``op_class``, largest
        profiled first; the prediction's classes the profile lacks too."""
        profiled: dict[str, float] = {}
        if self.profile is not None:
            for op, t in self.profile.self_s.items():
                if not is_gemm_op(op):
                    name = op_class(EVAL_AS.get(op, op) if self.case.mode == "inference"
                                    else op)
                    profiled[name] = profiled.get(name, 0.0) + t
        names = sorted(set(profiled) | set(self.predicted_by_class),
                       key=lambda c: -profiled.get(c, 0.0))
        return [(c, profiled.get(c, 0.0), self.predicted_by_class.get(c, 0.0)) for c in names]

    def misses(self, top: int = 4) -> list[tuple[str, float, float | None, int]]:
        """The ``top`` non-GEMM aten ops by profiled self time, those of at least 1% of the
        profiled step: (op, measured s, predicted s for the same aten op (``PROFILED_AS``),
        or None when the prediction has none of that name, calls in the profiled step)."""
        if self.profile is None:
            return []
        floor = 0.01 * self.profile.wall_s
        ops = sorted(((op, t) for op, t in self.profile.self_s.items()
                      if op.startswith("aten::") and not is_gemm_op(op) and t >= floor),
                     key=lambda x: -x[1])
        out = []
        for op, t in ops[:top]:
            name = op.removeprefix("aten::")
            known = [self.predicted_by_op[k] for k in PROFILED_AS.get(name, (name,))
                     if k in self.predicted_by_op]
            out.append((op, t, sum(known) if known else None, self.profile.calls.get(op, 0)))
        return out


def op_class(name: str) -> str:
    """The class ``analysis.cpu_ops`` prices a profiled op by (``aten::gelu`` ->
    transcendental); ``unmapped`` for an aten op no row names, ``framework`` for the profiler's
    own entries (autograd nodes, the optimizer's step: Python and bookkeeping)."""
    from roofline.analysis.cpu_ops import class_of

    if not name.startswith("aten::"):
        return "framework"
    found = class_of("aten." + name.removeprefix("aten::"))
    return found[0] if found is not None else "unmapped"


def predict(module: Any, inputs: tuple[Any, ...], case: Case, hw: Any) -> Any:
    """roofline's Report for ``module`` as ``case`` runs it, on ``hw``."""
    from roofline.torch import capture

    if case.mode == "inference":
        module.eval()
    else:
        module.train()
    return capture(module, *inputs, mode=case.mode, optimizer=case.optimizer,
                   attention=case.attention, name=case.name, hw=hw)


@dataclass
class Prepared:
    """A step built, predicted and warmed up, ready to time."""

    case: Case
    step: Callable[[], None]
    totals: dict[str, Any]
    by_op: dict[str, float]
    by_class: dict[str, float]
    count: int  # timed steps in all: at least ``repeats``, about ``min_timed_s`` of them


def prepare(case: Case, hw: Any, repeats: int = 5, warmups: int = 2,
            min_timed_s: float = MIN_TIMED_S, say: Callable[[str], None] = print) -> Prepared:
    """Build ``case``, predict it on ``hw``, run ``warmups`` untimed steps and choose how many
    to time (at least ``repeats``, more until ``min_timed_s`` of timed steps, at most
    MAX_REPEATS)."""
    import torch

    torch.manual_seed(0)
    module, inputs = case.build(), case.inputs()
    report = predict(module, inputs, case, hw)
    from roofline.analysis.cpu_ops import class_of

    by_op: dict[str, float] = {}
    by_class: dict[str, float] = {}
    for r in report.ops:
        aten = KIND_AS_ATEN.get(r.op.kind)
        key = aten or r.op.kind.removeprefix("aten.")
        by_op[key] = by_op.get(key, 0.0) + r.predicted_time_s
        # classed as the profile classes the aten op that runs it (a bias as a copy)
        found = class_of(f"aten.{aten}" if aten else r.op.kind)
        name = found[0] if found is not None else "unmapped"
        by_class[name] = by_class.get(name, 0.0) + r.predicted_time_s
    step = step_function(module, inputs, case.mode, case.optimizer)
    warm = []
    for _ in range(max(warmups, 1)):
        t0 = time.perf_counter()
        step()
        warm.append(time.perf_counter() - t0)
    count = min(max(repeats, round(min_timed_s / warm[-1])), MAX_REPEATS)
    say(f"  {case.name}: warm-up {', '.join(f'{w:.3f}' for w in warm)} s; timing {count} "
        f"steps")
    return Prepared(case, step, dict(report.totals), by_op, by_class, count)


def time_steps(step: Callable[[], None], count: int) -> list[float]:
    """``count`` timed steps, one sample each."""
    samples = []
    for _ in range(count):
        t0 = time.perf_counter()
        step()
        samples.append(time.perf_counter() - t0)
    return samples


def finish(p: Prepared, samples: list[float], profile: bool = True) -> Row:
    """The measured row of a prepared step: its samples, its prediction, a profiled step."""
    t = p.totals
    return Row(p.case, tuple(samples), t["predicted_time_s"], t["predicted_gemm_time_s"],
               t["predicted_op_time_s"], p.by_op, t["flops"],
               profile_step(p.step) if profile else None, p.by_class)


def run_case(case: Case, hw: Any, repeats: int = 5, warmups: int = 2, profile: bool = True,
             min_timed_s: float = MIN_TIMED_S, say: Callable[[str], None] = print) -> Row:
    """One step alone: ``prepare``, its timed steps back to back, one profiled step."""
    p = prepare(case, hw, repeats, warmups, min_timed_s, say)
    return finish(p, time_steps(p.step, p.count), profile)


@dataclass
class HostCheck:
    """The kernel the entry's fp32 peak was measured with (torch's square fp32 GEMM at the
    calibration's ``peak_n``), timed once a round (the best of ``calls``) beside the steps: how
    fast this host ran it while they were timed, against the rate the entry holds, so that a run
    on a slower or faster stretch of a shared host says so (the same machine, the same run)."""

    label: str
    run: Callable[[int], object]
    flops: float  # one call's
    calibrated: float  # FLOP/s: the entry's fp32 peak
    calls: int = 3
    clock: Callable[[], float] = time.perf_counter
    rates: list[float] = field(default_factory=list)

    def __call__(self) -> str:
        from roofline.kernels.timing import time_once

        best = min(time_once(self.run, 1, self.clock) for _ in range(self.calls))
        self.rates.append(self.flops / best)
        return f"; {self.label} {self.rates[-1] / 1e9:.0f} GFLOP/s"

    def line(self) -> str:
        """The rates of all rounds against the entry's, in one line (``_host.host_line``)."""
        return host_line(self.label, self.rates, self.calibrated)


def host_check(hw: Any) -> HostCheck | None:
    """A HostCheck for ``hw`` when its calibration timed an fp32 peak through torch, else
    None."""
    found = peak_kernel(hw) if torch_calibrated(hw) else None
    if found is None:
        return None
    label, kernel = found
    return HostCheck(label, kernel.run, kernel.work, hw.peak_flops_per_s("fp32"))


def run_cases(cases_: Sequence[Case], hw: Any, repeats: int = 5, warmups: int = 2,
              profile: bool = True, rounds: int = ROUNDS, span_s: float = SPAN_S,
              min_timed_s: float = MIN_TIMED_S, sleep: Callable[[float], None] = time.sleep,
              say: Callable[[str], None] = print,
              check: Callable[[], str] | None = None) -> list[Row]:
    """Every step, timed in ``rounds`` round-robin rounds spread over about ``span_s`` seconds
    (each round times each step ceil(count / rounds) times; a pause between rounds makes up
    the span), as the probe times its calibration: a slow stretch of the host then costs one
    round of every step, not every sample of one, and each step's best is its fastest sample
    of all rounds; ``check`` (a HostCheck) runs once a round. Then one profiled step each."""
    prepared = [prepare(c, hw, repeats, warmups, min_timed_s, say) for c in cases_]
    samples = round_robin([(p.step, p.count) for p in prepared], rounds, span_s, sleep, say,
                          check)
    return [finish(p, got, profile) for p, got in zip(prepared, samples)]


def round_robin(steps: Sequence[tuple[Callable[[], None], int]], rounds: int, span_s: float,
                sleep: Callable[[float], None] = time.sleep,
                say: Callable[[str], None] = print,
                check: Callable[[], str] | None = None) -> list[list[float]]:
    """Each (step, count) timed ceil(count / rounds) times in each of ``rounds`` rounds, every
    step once per round in order, then ``check`` (what it returns ends the round's line);
    between rounds a pause, so that the rounds end about ``span_s`` seconds after the first
    began (none when they take longer). The samples per step, in the order taken."""
    samples: list[list[float]] = [[] for _ in steps]
    rounds = max(1, rounds)
    start = time.perf_counter()
    for index in range(rounds):
        for (step, count), got in zip(steps, samples):
            got += time_steps(step, -(-count // rounds))
        extra = check() if check is not None else ""
        load = f"; load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
        say(f"  round {index + 1} of {rounds} at {time.perf_counter() - start:.0f} s{load}"
            f"{extra}")
        if index < rounds - 1:
            left = span_s - (time.perf_counter() - start)
            if left > 0:
                sleep(left / (rounds - 1 - index))
    return samples


def local_entry(name: str | None, probe: bool, say: Callable[[str], None]) -> Any:
    """The entry to predict with, calibrated through torch: ``name`` (an error when unknown or
    calibrated through another library), else the saved ``local`` entry when it is torch's,
    else (or with ``probe``) a quick probe through torch of this machine, not saved."""
    from roofline.errors import RooflineError, UnknownHardwareError
    from roofline.hardware.catalog import load_hardware
    from roofline.hardware.spec import HardwareSpec

    if name is not None:
        hw = load_hardware(name)
        if torch_calibrated(hw):
            return hw
        raise RooflineError(f"{name} is {calibrated_through(hw)}, and these steps run in torch: "
                            f"save one with `roofline probe --library torch --save NAME`, or "
                            f"pass --probe")
    if not probe:
        try:
            hw = load_hardware("local")
        except UnknownHardwareError:
            say("no saved 'local' entry: running a quick probe through torch (not saved)")
        else:
            if torch_calibrated(hw):
                return hw
            say(f"the saved 'local' entry is {calibrated_through(hw)}: running a quick probe "
                f"through torch instead (not saved)")
    from roofline.probe import run_probe

    result = run_probe(quick=True, progress=say, library="torch")
    return HardwareSpec.from_dict(result.to_hardware_dict("local-bench"), "quick probe")


def torch_calibrated(hw: Any) -> bool:
    """Whether ``hw``'s calibration was timed through torch."""
    library = hw.calibration.through if hw.calibration is not None else None
    return library is not None and library.name == "torch"


def calibrated_through(hw: Any) -> str:
    """``calibrated through numpy 2.4.6 (OpenBLAS ...)`` or ``not calibrated``."""
    from roofline.output.times import library_text

    return (f"calibrated through {library_text(hw)}" if hw.calibration is not None else
            "not calibrated")
def without_op_costs(hw: Any) -> Any:
    """``hw`` with its calibration's op costs left out (ops then at their roof)."""
    from dataclasses import replace

    if hw.calibration is None or hw.calibration.cpu_ops is None:
        return hw
    return replace(hw, calibration=replace(hw.calibration, cpu_ops=None))


def ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.1f}"


def ratio(measured: float, predicted: float) -> str:
    return f"{measured / predicted:.2f}" if predicted > 0 else "-"


HEADER = ("step", "shape", "GFLOP", "best ms", "median ms", "spread", "predicted ms",
          "measured / predicted", "GEMM ms (profiled / predicted)",
          "other ms (profiled / predicted)", "profiled step ms")


def table_rows(rows: Sequence[Row]) -> list[list[str]]:
    out = []
    for r in rows:
        p = r.profile
        gemm = (f"{ms(p.gemm_s)} / {ms(r.predicted_gemm_s)} = {ratio(p.gemm_s, r.predicted_gemm_s)}"
                if p else f"- / {ms(r.predicted_gemm_s)}")
        other = (f"{ms(p.other_s)} / {ms(r.predicted_other_s)} = "
                 f"{ratio(p.other_s, r.predicted_other_s)}" if p else
                 f"- / {ms(r.predicted_other_s)}")
        out.append([r.case.name, r.case.shape, f"{r.flops / 1e9:.1f}", ms(r.best_s),
                    ms(r.median_s), f"{r.spread:.0%}", ms(r.predicted_s), f"{r.ratio:.2f}",
                    gemm, other, ms(p.wall_s) if p else "-"])
    return out


def render(rows: Sequence[Row], markdown: bool) -> str:
    from roofline.output.table import aligned
    from roofline.output.table import markdown as md

    lines = (md if markdown else aligned)(HEADER, table_rows(rows), {0, 1})
    within = sum(max(r.ratio, 1 / r.ratio) <= TARGET for r in rows)
    lines.append("")
    lines.append(f"{within} of {len(rows)} steps within {TARGET}x of the prediction "
                 f"[target: all]")
    classes = [[r.case.name, name, ms(t), ms(pred), ratio(t, pred) if pred else "-"]
               for r in rows if r.profile is not None for name, t, pred in r.by_class()]
    if classes:
        lines.append("")
        lines += (md if markdown else aligned)(
            ("step", "op class", "profiled ms", "predicted ms", "ratio"), classes, {0, 1})
    misses = [(r.case.name, *miss) for r in rows for miss in r.misses()]
    if misses:
        lines.append("")
        head = ("step", "non-GEMM op", "calls", "profiled ms", "per call ms", "predicted ms",
                "ratio")
        body = [[name, op.removeprefix("aten::"), str(calls), ms(t),
                 f"{t / calls * 1e3:.2f}" if calls else "-", ms(pred),
                 ratio(t, pred) if pred else "-"] for name, op, t, pred, calls in misses]
        lines += (md if markdown else aligned)(head, body, {0, 1})
    return "\n".join(lines)


def machine(hw: Any, threads: int) -> str:
    import platform

    import torch

    from roofline.analysis.predict import basis_of

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    cpu = platform.processor() or platform.machine()
    try:
        from roofline.probe.identify import identify_cpu

        cpu = identify_cpu().brand
    except Exception:
        pass
    return (f"machine: {platform.node()}: {cpu}, {os.cpu_count()} logical CPUs; torch "
            f"{torch.__version__}, {threads} threads, fp32; load average "
            f"{', '.join(f'{x:.1f}' for x in load) if load else 'unknown'}\n"
            f"prediction: hardware {hw.name} ({hw.origin}), basis {basis_of(hw)}"
            f"{f', {calibrated_through(hw)}' if hw.calibration is not None else ''}"
            f"{threads_note(hw, threads)}; fp32 peak "
            f"{hw.peak_flops_per_s('fp32') / 1e9:.1f} GFLOP/s, DRAM {hw.bandwidth_gbs:.1f} GB/s"
            f"; {op_costs(hw)}")


def op_costs(hw: Any) -> str:
    """The entry's op costs in one line (``calibration.ops``), or that it has none."""
    from roofline.analysis.cpu_ops import cpu_ops_of

    ops = cpu_ops_of(hw)
    if ops is None:
        return "no op costs (ops at their roof)"
    rates = ", ".join(f"{k} {v:.3g}" for k, v in ops.rates_gbs.items())
    attention = ", ".join(f"s={s} {a:.0%}" for s, a in ops.attention)
    return (f"op costs through {ops.library} ({ops.threads} threads): "
            f"{ops.call_s * 1e6:.2f} us a call; {rates} GB/s"
            + (f"; attention {attention} of the peak" if attention else ""))


def threads_note(hw: Any, threads: int) -> str:
    """A note when ``hw`` was calibrated at another thread count than the steps run at."""
    library = hw.calibration.through if hw.calibration is not None else None
    if library is None or library.threads in (None, threads):
        return ""
    return f" (calibrated at {library.threads} threads, the steps run at {threads})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (2)")
    parser.add_argument("--repeats", type=int, default=5, help="timed steps, at least (5)")
    parser.add_argument("--warmups", type=int, default=2, help="untimed steps first (2)")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help=f"round-robin rounds over every step ({ROUNDS})")
    parser.add_argument("--span", type=float, default=SPAN_S,
                        help=f"seconds the rounds spread over, at least ({SPAN_S:g})")
    parser.add_argument("--hw", help="hardware entry calibrated through torch to predict "
                                     "with (default: the saved 'local' entry when it is, else "
                                     "a quick probe through torch)")
    parser.add_argument("--probe", action="store_true",
                        help="always run a quick probe through torch")
    parser.add_argument("--steps", help="comma-separated subset of the steps")
    parser.add_argument("--no-profile", action="store_true", help="skip the profiled step")
    parser.add_argument("--roof-ops", action="store_true",
                        help="leave out the entry's op costs: ops at their roof, as before "
                             "calibration version 4 (to compare)")
    parser.add_argument("--markdown", action="store_true", help="Markdown tables")
    args = parser.parse_args(argv)
    say = lambda m: print(m, file=sys.stderr)  # noqa: E731
    try:
        import torch
    except ImportError:
        print("Error: torch is not installed (pip install -e '.[torch]')", file=sys.stderr)
        return 2
    from roofline.errors import RooflineError

    known = cases()
    names = args.steps.split(",") if args.steps else list(known)
    unknown = [n for n in names if n not in known]
    if (unknown or args.repeats < 1 or args.threads < 1 or args.warmups < 0
            or args.rounds < 1 or args.span < 0):
        what = (f"unknown step {', '.join(unknown)} (choose from {', '.join(known)})"
                if unknown else "--repeats, --threads and --rounds must be >= 1, --warmups "
                                "and --span >= 0")
        print(f"Error: {what}", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)  # before a probe: it calibrates at these threads
    try:
        hw = local_entry(args.hw, args.probe, say)
    except RooflineError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    if args.roof_ops:
        hw = without_op_costs(hw)
    check = host_check(hw)
    before = thread_check()
    rows = run_cases([known[n] for n in names], hw, args.repeats, args.warmups,
                     not args.no_profile, args.rounds, args.span, say=say, check=check)
    threads = thread_line(before, thread_check(), "the steps")
    print(machine(hw, args.threads))
    if check is not None:
        print(check.line())
    print(threads)
    print(render(rows, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
