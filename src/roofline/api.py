"""One-call entry points for scripts and notebooks: names or paths in, a Report out."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .analysis.generation import check_request, checked_source, refuse_captured
from .analysis.generation import generate as run_generation
from .analysis.report import Report, analyze
from .hardware.catalog import hardware_spec
from .hardware.spec import HardwareSpec
from .model.capture_factory import capture_factory, names_factory, python_file_spec
from .model.network import Network, check_model, load_network

if TYPE_CHECKING:
    from .analysis.plan import Plan


def model_framework(model: Network | str | os.PathLike[str]) -> str | None:
    """The framework ``model`` runs in where that is known before it is read: ``torch`` for
    ``package.module:callable`` (captured), a Network's own ``framework``; else None."""
    check_model(model)  # before str(): None is no factory, 5 no file descriptor
    if isinstance(model, Network):
        return model.framework
    return "torch" if names_factory(model) else None


def load_model(model: Network | str | os.PathLike[str], batch: int | None = None,
               dtype: str | None = None, mode: str | None = None,
               attention: str | None = None, optimizer: str | None = None, *,
               progress: Callable[[str], None] | None = None) -> Network:
    """``model`` as a Network: itself, a model.yaml or config.json read, or
    ``package.module:callable`` captured (``batch`` given to a callable that takes one; the
    capture runs in ``mode``, ``dtype``, ``attention`` and ``optimizer``, train, the module's
    own dtype, flash and none unless given; ``progress``, when given, is told as the factory
    is imported and called and as the capture starts: a large model's takes tens of
    seconds). Other settings are the caller's overrides."""
    if isinstance(model, Network):
        return model
    if model_framework(model) == "torch":  # package.module:callable
        return capture_factory(os.fspath(model), batch, mode, dtype, attention, optimizer,
                               progress=progress)
    return load_network(model)


def peak_dtypes(network: Network, dtype: str | None = None,
                activations: str | None = None) -> dict[str, str]:
    """The dtypes whose peaks a step of ``network``, with these overrides, is placed by, each
    with the setting that chose it: its operands' (``dtype``) and its weight GEMMs'
    activations' (``activations``), which ``analysis.report.analyze`` asks the device for.
    What a ``--hw local`` probe must measure (``probe.local.check_probed``), so a model that
    names no dtype is refused here, as its analysis would refuse it, before a probe's seconds
    are spent (before 0.9.0 a config.json without one probed, then failed)."""
    from .model.network_checks import missing_field

    network = network.with_overrides(dtype=dtype, activations=activations)
    if network.dtype is None:
        raise missing_field(network, "dtype")
    needs = {network.operand_dtype: "dtype"}
    needs.setdefault(network.activation_dtype, "activations")
    return needs


def generation_settings(model: Network | str | os.PathLike[str], mode: str | None,
                        phase: str | None, prompt: int | None, generate: int | None
                        ) -> tuple[str | None, str | None]:
    """The mode and phase ``analyze_model`` runs ``model`` in: a generation (``prompt`` or
    ``generate`` given) is an inference that starts with its prefill (so a model file's phase,
    decode, does not refuse its logits), and refuses a phase or mode train in one line, before
    any capture; other steps as given."""
    if prompt is None and generate is None:
        return mode, phase
    source = checked_source(model, phase, mode)
    if model_framework(model) == "torch":  # before a capture's seconds, not after them
        refuse_captured(source)
    return "inference", "prefill"


def analyze_model(model: Network | str | os.PathLike[str],
                  hardware: HardwareSpec | str | os.PathLike[str],
                  batch: int | None = None, dtype: str | None = None,
                  mode: str | None = None, output_dtype: str | None = None,
                  grad_accumulation: str | None = None, seq: int | None = None,
                  phase: str | None = None, quantization: bool = False,
                  attention: str | None = None, optimizer: str | None = None,
                  recompute: str | None = None, weights: str | None = None,
                  activations: str | None = None, kv_cache: str | None = None,
                  group_size: int | None = None, logits: str | None = None,
                  prompt: int | None = None, generate: int | None = None, tp: int = 1,
                  gpus_per_node: int = 8, intra: str | None = None,
                  pp: int | Sequence[int] = 1,
                  inter: str | None = None, dp: int = 1) -> Report:
    """Analyze ``model`` (a Network, a model.yaml path, a Hugging Face config.json path, or
    ``package.module:callable`` returning a torch module and its example inputs, captured by
    ``roofline.torch``; a callable with a ``batch`` parameter is called with ``batch``) on
    ``hardware`` (a spec, name or path).

    ``batch``, ``dtype``, ``mode``, ``output_dtype``, ``grad_accumulation`` (a dtype, or
    ``"none"``), ``seq``, ``phase`` (inference: ``"prefill"`` or ``"decode"``) and ``attention``
    (``"flash"`` or ``"naive"``, every transformer block) and ``optimizer`` (``"none"``,
    ``"sgd"``, ``"adam"``: the update a training step counts) and ``recompute`` (``"none"``,
    ``"selective"``, ``"full"``: activation recomputation, the activations it keeps and the
    forward work it runs again, ``totals``' ``recompute_time_s``), ``weights``
    (how weights are stored: ``"int4"`` with ``group_size``, ``"int8"``, ``"fp8"``, ...),
    ``activations`` (weight GEMMs' activation and math dtype) and ``kv_cache`` (the KV cache's
    dtype) and ``logits`` (``"all"`` or ``"last"``: a prefill's output layer on every token or
    the last) override the model's own settings when given.

    ``prompt`` and ``generate`` (together) ask for a generation (``analysis.generation``):
    the Report of its last decode step, with ``report.generation`` (time to first token, time
    per output token, tokens/s, latency); they set the sequence lengths, so ``seq`` is not
    given with them.

    ``tp`` above 1 serves the step or the generation over that many GPUs of one node by
    tensor parallelism (``analysis.serving_tp``): the Report is one GPU's shard, with
    ``report.tensor_parallel`` (the all-reduces and the logits' gather each step, on ``intra``,
    a links.yaml name or GB/s, by default the entry's NVSwitch or PCIe) and the communication in
    its times; ``gpus_per_node`` bounds tp (tensor parallelism across nodes is not
    modelled). ``pp`` above 1 serves it over a pipeline of pp such groups, as vLLM's
    ``--pipeline-parallel-size`` (``analysis.serving_pp``), its blocks split as vLLM splits
    them, or a list, the blocks of each stage (vLLM's ``VLLM_PP_LAYER_PARTITION``, adding up
    to the model's): ``report.pipeline_parallel`` (the
    stages' layers, times and memory, the hand-offs between them, on ``inter`` between nodes,
    a links.yaml name or GB/s, by default InfiniBand NDR; the batches in flight and tokens/s),
    every GEMM and op one GPU's of its stage, the memory the most loaded stage's. ``dp`` above
    1 serves it over dp data-parallel ranks of tp GPUs each, as vLLM's
    ``--data-parallel-size`` with ``--enable-expert-parallel`` (``analysis.serving_dp``): the
    batch spread evenly over the ranks, the Report one GPU's running its rank's batch / dp
    sequences, a mixture of experts' experts split whole over the dp x tp GPUs with their
    dispatch and combine each MoE layer (``report.data_parallel``), a dense model's ranks
    replicas; tokens/s the dp ranks'. Inference only, one node, no ``pp``; a mixture of experts
    with ``tp`` 1 only.
    """
    mode, phase = generation_settings(model, mode, phase, prompt, generate)
    network = load_model(model, batch, dtype, mode, attention, optimizer)
    network = network.with_overrides(batch=batch, dtype=dtype, mode=mode,
                                      output_dtype=output_dtype,
                                      grad_accumulation=grad_accumulation, seq=seq,
                                      phase=phase, attention=attention,
                                      optimizer=optimizer, recompute=recompute,
                                      weights=weights, activations=activations,
                                      kv_cache=kv_cache, group_size=group_size,
                                      logits=logits)
    spec = hardware_spec(hardware)
    generating = prompt is not None or generate is not None
    if generating:
        check_request(network.source, prompt, generate, seq)
    from .analysis.serving_dp import requested as data_parallel
    from .analysis.serving_dp import serve_dp
    from .analysis.serving_tp import requested, serve

    if data_parallel(dp):
        return serve_dp(network, spec, dp, tp, gpus_per_node, intra, prompt, generate,
                        quantization, pp)
    if requested(tp, gpus_per_node, intra, pp, inter):
        return serve(network, spec, tp, gpus_per_node, intra, prompt, generate, quantization,
                     pp, inter)
    if not generating:
        return analyze(network, spec, quantization)
    assert prompt is not None and generate is not None  # check_request's
    return run_generation(network, spec, prompt, generate, quantization)


def plan(model: Network | str | os.PathLike[str], hardware: HardwareSpec | str,
         gpus: str | int | Iterable[int], *, tp: str | int | Iterable[int] | None = None,
         pp: str | int | Iterable[int] | None = None, zero: int | Iterable[int] | None = None,
         micro_batch: str | int | Iterable[int] | None = None,
         ep: str | int | Iterable[int] | None = None, sequence_parallel: bool = True,
         gpus_per_node: int = 8, intra: str | None = None, inter: str | None = None,
         quantization: bool = False, progress: Callable[[str], None] | None = None,
         vp: str | int | Iterable[int] | None = None, **overrides: Any) -> Plan:
    """``roofline plan`` as a call: every layout of ``model``'s training step over each GPU
    count in ``gpus`` (``analysis.plan``), a ``Plan`` (``best``, ``front``, ``ranked(n)``,
    ``to_dict()``: the JSON contract). ``gpus``, ``tp``, ``pp``, ``vp`` (model chunks a
    pipeline GPU holds, Megatron-LM's interleaved schedule; 1, 1F1B, unless given),
    ``micro_batch`` and ``ep`` take an int, a list or the CLI's text (``"8..512"``: 8, the
    powers of two between, 512); ``zero`` a stage or a list; ``intra`` and ``inter`` a link of
    ``links.yaml`` or GB/s as text. ``overrides`` are the model settings (``batch``, the
    global batch, ``seq``, ``dtype``, ``recompute``, ``optimizer``, ...); the optimizer is Adam
    unless given, as the CLI's (``PLAN_OPTIMIZER``: a config.json names none, and without one
    the states ZeRO divides were counted as nothing)."""
    from .analysis.plan import make_fabric, plan_layouts
    from .analysis.whatif_values import _values
    from .model.network import check_overrides

    check_overrides(overrides, "plan")
    refuse_capture(model, "plan")
    spec = hardware_spec(hardware)
    network = load_model(model).with_overrides(**overrides)
    if overrides.get("optimizer") is None and network.mode == "train":
        network = network.with_overrides(optimizer=PLAN_OPTIMIZER)
    lists = {name: None if given is None else _values(given, name)
             for name, given in (("tp", tp), ("pp", pp), ("micro_batch", micro_batch),
                                 ("ep", ep), ("vp", vp))}
    return plan_layouts(network, spec, _values(gpus, "gpus"), network.settled()[0],
                        make_fabric(spec, intra, inter, gpus_per_node),
                        zero=None if zero is None else zero_stages(zero),
                        sequence_parallel=sequence_parallel, quantization=quantization,
                        progress=progress, **lists)


#: the optimizer plan counts unless one is given: Adam in mixed precision, 16 B a parameter
PLAN_OPTIMIZER = "adam"


def zero_stages(given: str | int | Iterable[int]) -> tuple[int, ...]:
    """ZeRO stages a plan is given: ``--zero`` text (``0,1``), one stage or a list, each 0-3
    (``files.numbers.integer``: numpy's integers too, never a bool or a float); one line
    otherwise."""
    from .errors import InputError, described
    from .files.numbers import integer, parse_int, quoted

    def fail(got: str) -> InputError:
        return InputError("zero", "", f"expected ZeRO stages 0, 1, 2 or 3 (a comma list), got "
                                      f"{got}")

    if isinstance(given, str):
        try:
            return tuple(sorted({parse_int(piece, low=0, high=3)
                                 for piece in given.split(",")}))
        except ValueError:
            raise fail(quoted(given)) from None
    values = list(given) if hasattr(given, "__iter__") else [given]
    stages = {integer(value) for value in values}
    if not values or None in stages or not stages <= {0, 1, 2, 3}:
        raise fail(described(given))
    return tuple(sorted(stage for stage in stages if stage is not None))


def refuse_capture(model: Network | str | os.PathLike[str], command: str) -> None:
    """``command`` (plan) takes no captured module: a factory, a captured Network, or a Python
    file that holds a factory (``python_file_spec``) is refused in one line
    (``not_captured_error``), before any hardware is probed or model read."""
    if model_framework(model) == "torch" or (
            not isinstance(model, Network) and python_file_spec(os.fspath(model))):
        raise not_captured_error(model.source if isinstance(model, Network)
                                 else os.fspath(model), command)


def not_captured_error(model: str, command: str) -> Exception:
    """plan refuses ``package.module:callable``: it divides each layer's heads and FFN over the
    tensor-parallel ranks and runs it at each micro-batch, and a capture holds the ops the
    module ran at its one batch, not its layers (sweep captures a factory at each batch:
    ``analysis.whatif_captures``)."""
    from .errors import InputError

    return InputError(model, "", f"`roofline {command}` needs a model.yaml or config.json: it "
                                 f"divides each layer's heads and FFN over the tensor-parallel "
                                 f"ranks and runs it at each micro-batch, and a captured module "
                                 f"holds the ops it ran at its one batch, not its layers "
                                 f"(analyze, compare and sweep take package.module:callable)")
