"""What-if questions: one GEMM shape, one model on several devices, one model over batches.

- ``gemm_report(m, n, k, hardware)``: a bare shape analyzed as the forward GEMM of a linear
  layer (in = K, out = N) at batch M, so batch advice is about M: the report says so.
- ``compare(model, [A, B, ...])``: per-GEMM and whole-step time on each device, the speedup
  over the first and why (a GEMM memory-bound on both gains the bandwidth ratio, one
  compute-bound on both the peak ratio, one that changes side says so), and one plain sentence.
  A device without the model's dtype runs the nearest one it has (``nearest_dtype``). Each
  device's step is timed whether or not its memory holds it; whether it does is analyze's
  ``Memory.fits`` (``Comparison.fits``), which every format says beside the times.
- ``sweep(model, hardware, batches, seqs=...)``: time, samples/s and bound per GEMM per batch,
  per sequence length, or on a batch x seq grid; the batch at which each GEMM turns
  compute-bound (closed form, ``analysis.batch.min_compute_bound_batch``) and the sequence
  length at which it does (``seq_transitions``: the smallest seq, searched).
- ``sweep`` of ``package.module:callable``, a PyTorch module's factory with a ``batch``
  parameter: the module captured at each batch (``whatif_captures``), the transitions read from
  what the captures show (``captured_scaling``).
- With ``prompt=`` and ``generate=``, compare's devices and sweep's points are each a whole
  generation (``analysis.generation.generate``, as analyze's ``--prompt``/``--generate``): a
  Report of its last decode step (the prefill's when one token is generated) carrying its
  ``Generation`` (time to first token, time per output token, tokens/s, latency) and the
  memory at the generation's peak, with the largest batch the whole generation fits.
- With ``tp=`` (and ``gpus_per_node=``, ``intra=``), compare's devices and sweep's points are
  each served over tp GPUs of one node by tensor parallelism, as analyze's ``--tp``
  (``analysis.serving_tp.serve``): a Report of one GPU's shard, its step's (or generation's)
  times holding the group's exposed communication on that device's intra-node link (its
  default, ``plan.make_fabric``, or ``intra`` for every device), ``Report.tensor_parallel``
  attached; tokens/s are the group's.
- With ``pp=`` (and ``inter=``), each is served over a pipeline of pp such groups, as
  analyze's ``--pp`` (the same ``serve``, ``analysis.serving_pp``): ``Report.pipeline_parallel``
  attached, the memory the most loaded stage's with the KV cache of its pp batches in flight,
  the step time one batch's through every stage and hand-off; tokens/s the tp x pp GPUs' with
  the pp batches in flight (a sweep's step throughput ``Sweep.rate``).

This module asks the three questions and checks what they are given; the answers and their
parts live beside it: ``whatif_gemm`` (a bare shape as a one-layer network), ``whatif_dtype``
(the dtype a device runs a model in), ``whatif_comparison`` (``Comparison``, ``GemmChange``),
``whatif_values`` (the batches and seqs a sweep is given), ``whatif_sweep`` (``Sweep``),
``whatif_captures`` (a sweep of a captured module) and ``whatif_limits`` (the caps on
compare's and sweep's work).

Numbers stay raw here; ``output.whatif`` renders them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InputError, described, option
from ..hardware.catalog import hardware_spec
from ..hardware.spec import HardwareSpec
from ..model.capture_factory import names_factory
from ..model.network import Network, check_overrides, load_network
from .generation import analyses, check_lengths, check_request, checked_source
from .generation import generate as run_generation
from .report import Report, analyze
from .serving_pp import checked_pp
from .serving_tp import DEFAULT_GPUS_PER_NODE, checked, requested, serve
from .whatif_comparison import Comparison
from .whatif_dtype import nearest_dtype, substitute_dtype
from .whatif_gemm import gemm_network
from .whatif_limits import _check_grid, _check_items
from .whatif_sweep import Sweep
from .whatif_values import _values


def _network(model: Network | str | os.PathLike[str], call: str, **overrides: Any) -> Network:
    check_overrides(overrides, call)
    network = model if isinstance(model, Network) else load_network(model)
    return network.with_overrides(**overrides)


def _generation_overrides(model: Network | str | os.PathLike[str], overrides: dict[str, Any],
                          prompt: int | None, generate: int | None, seq: Any
                          ) -> dict[str, Any]:
    """The model settings of a generation asked of compare or sweep, refused as analyze
    refuses them (``analysis.generation.check_settings``, ``check_request``): an inference
    that starts with its prefill (a model file's own phase decode does not refuse its
    logits)."""
    source = checked_source(model, overrides.get("phase"), overrides.get("mode"))
    check_request(source, prompt, generate, seq if seq is not None else overrides.get("seq"))
    return overrides | {"mode": "inference", "phase": "prefill"}


@dataclass(frozen=True)
class _Run:
    """How compare runs each device and sweep each point: a step, or a whole generation
    (``prompt`` and ``generate``), on one GPU or served over ``serving`` = (tp, gpus_per_node,
    intra, pp, inter): tp GPUs by tensor parallelism, over a pipeline of pp such groups."""

    quantization: bool
    prompt: int | None = None
    generate: int | None = None
    serving: tuple[int, int, str | None, int, str | None] | None = None

    def __call__(self, network: Network, spec: HardwareSpec) -> Report:
        if self.serving is not None:
            tp, gpus_per_node, intra, pp, inter = self.serving
            return serve(network, spec, tp, gpus_per_node, intra, self.prompt, self.generate,
                         self.quantization, pp, inter)
        if self.prompt is not None and self.generate is not None:
            return run_generation(network, spec, self.prompt, self.generate, self.quantization)
        return analyze(network, spec, self.quantization)

    def check_links(self, specs: Iterable[HardwareSpec]) -> None:
        """Served over several GPUs, each device's links (``plan.make_fabric``): one a device
        lacks (a CPU's intra-node link) refused in one line before any device is analyzed."""
        if self.serving is None:
            return
        from .plan import make_fabric

        _, gpus_per_node, intra, _, inter = self.serving
        for spec in specs:
            make_fabric(spec, intra, inter, gpus_per_node)


def _serving(network: Network, tp: Any, gpus_per_node: Any, intra: str | None, pp: Any = 1,
             inter: str | None = None) -> tuple[int, int, str | None, Any, str | None] | None:
    """The tensor-parallel group (and the pipeline of pp of them) compare or sweep serves each
    device or point over, checked once before the first as ``serve`` checks it
    (``serving_pp.checked_pp`` first, then ``serving_tp.checked``); None where one GPU runs
    it (``serving_tp.requested``). ``pp`` stays the blocks of each stage where they are
    given (``--pp A,B,...``), else it is the count."""
    if not requested(tp, gpus_per_node, intra, pp, inter):
        return None
    stages = checked_pp(network, pp, inter)
    pp = tuple(pp) if isinstance(pp, (list, tuple)) and stages > 1 else stages
    return (*checked(network, tp, gpus_per_node), intra, pp, inter)


# ---------------------------------------------------------------------------------------- gemm

def gemm_report(m: int | str, n: int | str, k: int | str, hardware: HardwareSpec | str,
                dtype: str = "fp16", output_dtype: str | None = None,
                quantization: bool = False, layout: str = "linear") -> Report:
    """One GEMM's full verdict: the analyze Report of ``gemm_network(m, n, k)``."""
    return analyze(gemm_network(m, n, k, dtype, output_dtype, layout), hardware_spec(hardware),
                   quantization)


# ------------------------------------------------------------------------------------- compare

def compare(model: Network | str | os.PathLike[str], hardware: list[HardwareSpec | str],
            quantization: bool = False, prompt: int | None = None,
            generate: int | None = None, tp: int = 1,
            gpus_per_node: int = DEFAULT_GPUS_PER_NODE, intra: str | None = None,
            pp: int | Sequence[int] = 1, inter: str | None = None,
            **overrides: Any) -> Comparison:
    """Analyze ``model`` on each device; the first is the baseline. A device without the
    model's dtype runs ``nearest_dtype`` (the Comparison notes it). Needs two devices or more,
    a list: one name given alone is refused, not read as a list of its letters. ``prompt``
    and ``generate`` (together, as ``analyze_model`` takes them) run a whole generation on
    each device. ``tp`` above 1 serves it over tp GPUs of one node of each device, as
    ``analyze_model``'s ``tp`` does, on each device's own intra-node link unless ``intra``
    names one for all; ``pp`` above 1 over a pipeline of pp such groups, as ``analyze_model``'s
    ``pp`` does, the hand-offs between nodes on ``inter`` (module docstring)."""
    generating = prompt is not None or generate is not None
    if generating:
        overrides = _generation_overrides(model, overrides, prompt, generate, None)
    hardware = _devices(hardware)
    network = _network(model, "compare", **overrides)
    if generating:  # its lengths, and its prefill's settings, checked once, not per device
        assert prompt is not None and generate is not None  # _generation_overrides'
        prompt, generate = check_lengths(network, prompt, generate)
        network.with_overrides(seq=prompt).check()
    else:
        network.check()  # a missing batch, dtype or seq is named once, not per device
    run = _Run(quantization, prompt, generate,
               _serving(network, tp, gpus_per_node, intra, pp, inter))
    specs = [hardware_spec(entry) for entry in hardware]
    run.check_links(specs)  # a device without an intra-node link, before any analysis
    wanted = network.operand_dtype
    reports = []
    for spec in specs:
        dtype = nearest_dtype(wanted, spec.dtypes)
        if dtype is None:
            spec.peak_flops_per_s(wanted)  # raises: the entry has no peak at all
            raise AssertionError("unreachable: an entry without peaks fails validation")
        reports.append(run(network if dtype == wanted else substitute_dtype(network, dtype),
                           spec))
    names = [r.hardware.name for r in reports]
    if len(set(names)) < len(names):
        raise InputError("hardware", "", f"a device is given twice: {', '.join(names)}")
    return Comparison(tuple(reports), wanted)


def _devices(hardware: Any) -> list[HardwareSpec | str]:
    """compare's devices: a list of two or more; one name given alone is refused, not read as
    a list of its letters, and a comma inside one name says to give each its own --hw."""
    if isinstance(hardware, (str, os.PathLike, HardwareSpec)):
        if isinstance(hardware, str) and "," in hardware:
            hardware = [hardware]  # the comma's own hint, below
        else:
            raise InputError("hardware", "", f"compare takes two devices or more, a list (the "
                                             f"first is the baseline), got one: "
                                             f"{described(hardware)}")
    if len(hardware) < 2:
        one = hardware[0] if hardware else None
        if isinstance(one, str) and "," in one:
            raise InputError("hardware", "", f"{one!r} is one name: give each device its own "
                             f"--hw ({' '.join('--hw ' + n.strip() for n in one.split(','))})")
        raise InputError("hardware", "", "give two devices or more (the first is the "
                                         "baseline)")
    return list(hardware)


# --------------------------------------------------------------------------------------- sweep

def sweep(model: Network | str | os.PathLike[str], hardware: HardwareSpec | str,
          batches: str | int | Iterable[int] | None = None, quantization: bool = False,
          seqs: str | int | Iterable[int] | None = None, prompt: int | None = None,
          generate: int | None = None,
          progress: Callable[[str], None] | None = None, tp: int = 1,
          gpus_per_node: int = DEFAULT_GPUS_PER_NODE, intra: str | None = None,
          pp: int | Sequence[int] = 1, inter: str | None = None,
          **overrides: Any) -> Sweep:
    """Analyze ``model`` on ``hardware`` at each batch, each sequence length, or each pair
    (lists, one int, or ``parse_batches`` text); the one not given stays the model's own.
    ``prompt`` and ``generate`` (together, as ``analyze_model`` takes them, without ``seqs``)
    make each point a whole generation at its batch (``analysis.generation``). ``tp`` above 1
    serves each point over tp GPUs of one node, as ``analyze_model``'s ``tp`` does, ``pp``
    above 1 over a pipeline of pp such groups, as its ``pp`` does (module docstring).

    ``model`` may be ``package.module:callable``, a factory with a ``batch`` parameter
    returning a torch module and its example inputs: it is called and its module captured at
    each batch (``whatif_captures``; batches only, no seqs, generation, tp or pp), ``progress``,
    when given, told as each capture starts."""
    generating = prompt is not None or generate is not None
    if names_factory(model):
        from .whatif_captures import captured_sweep

        if requested(tp, gpus_per_node, intra, pp, inter):  # before any capture's seconds
            which = option("pp") if pp != 1 else option("tp")
            raise InputError(os.fspath(model), "", f"{which} splits a model's transformer "
                                                   f"blocks over GPUs, and a captured module "
                                                   f"holds the ops it ran, not its layers "
                                                   f"(sweep a model.yaml or config.json)")

        return captured_sweep(os.fspath(model), hardware_spec(hardware), batches,
                              quantization, seqs, generating, progress, overrides)
    if generating:
        overrides = _generation_overrides(model, overrides, prompt, generate, seqs)
    elif batches is None and seqs is None:
        raise InputError("sweep", "", f"give the batches or the sequence lengths to sweep "
                                      f"({option('batches')} or {option('seqs')})")
    network, spec = _network(model, "sweep", **overrides), hardware_spec(hardware)
    # a seq on a model without a transformer is analyze's: an MLP applied per token (batch x
    # seq rows, a prefill), refused with analyze's words on an image model (Network.check)
    seq_values = _values(seqs, "seqs") if seqs is not None else ()
    if batches is not None:
        batch_values = _values(batches, "batches")
    else:
        # the model's own batch (checked when read), not settled(): with seqs swept the model
        # may give no seq of its own, and each point's check comes with its analysis
        batch_values = (network.batch,) if network.batch is not None else ()
        if not batch_values:
            raise InputError(network.source, "batch", f"missing required field (give batch "
                                                      f"in the model or {option('batch')})")
    points = len(batch_values) * max(1, len(seq_values))
    _check_grid(points, batch_values, seq_values)
    serving = _serving(network, tp, gpus_per_node, intra, pp, inter)
    if prompt is not None and generate is not None:
        return _generations(network, spec, batch_values, prompt, generate,
                            _Run(quantization, serving=serving))
    run = _Run(quantization, serving=serving)
    grid = [(b, s) for s in (seq_values or (None,)) for b in batch_values]
    # every point set up before any is analyzed: one whose batch x seq passes 2**40 stops here
    nets = [network.with_overrides(batch=b, seq=s) for b, s in grid]
    first = run(nets[0], spec)
    _check_items(first, points, 1, batch_values)
    reports = (first,) + tuple(run(net, spec) for net in nets[1:])
    seq_list = seq_values or ((network.seq,) if network.seq is not None else ())
    return Sweep(reports, batch_values, seq_list)


def _generations(network: Network, spec: HardwareSpec, batch_values: tuple[int, ...],
                 prompt: int, generate: int, step: _Run) -> Sweep:
    """A whole generation at each batch (``analysis.generation.generate``, or served over
    ``step.serving``): its lengths checked and every point set up before the first is
    analyzed."""
    prompt, generate = check_lengths(network, prompt, generate)
    run = replace(step, prompt=prompt, generate=generate)
    nets = [network.with_overrides(batch=b) for b in batch_values]
    first = run(nets[0], spec)
    _check_items(first.generation.prefill if first.generation else first, len(nets),
                 analyses(network, prompt, generate), batch_values)
    reports = (first,) + tuple(run(net, spec) for net in nets[1:])
    return Sweep(reports, batch_values, ())
