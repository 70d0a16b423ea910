"""A network described by model.yaml: ``Network``, the face of the ``network_*`` modules.

Here: the dataclass, its derived dtypes, parameters and steps; reading model.yaml or a
config.json (``load_network``, ``network_from_dict``); a library call's ``model`` argument and
model-setting keywords checked (``check_model``, ``OVERRIDES``, ``check_overrides``). Beside it:
``network_settings`` (each setting's choices, and ``with_overrides``), ``network_checks``
(``check``, ``check_tokens``), ``network_layers`` (model.yaml's layers read as a chain),
``network_groups`` (``layer_groups``) and ``network_parts`` (``parts``, ``expand``, ``tally``:
the step's GEMMs and ops).

model.yaml (the contract in docs/design.md)::

    name: mlp-1024-4096-1000    # optional; defaults to the file stem
    batch: 512                  # positive int
    seq: 2048                   # tokens per sample; required when a layer needs it
    dtype: fp16                 # A and B: fp64 | fp32 | tf32 | fp16 | bf16 | int8 | fp8
    output_dtype: fp16          # optional, C: default dtype (int8 -> int32, fp8 -> bf16)
    grad_accumulation: fp32     # optional: weight gradients accumulate into this buffer
                                # (C read and written); default none (C written once)
    mode: train                 # train (forward + backward) | inference (forward only)
    phase: prefill              # inference: prefill (seq tokens at once) | decode (one token
                                # per sequence against a KV cache of seq tokens)
    optimizer: adam             # train: none | sgd | adam (the update counted as an op)
    weights: int4               # optional, inference: how weights are stored: fp32 | fp16 | bf16 |
                                # fp8 | int8 | int4 (default: activations)
    group_size: 128             # int4 weights: values per fp16 scale (default 128)
    activations: fp16           # optional: the GEMMs' activation operand and math dtype
                                # (default: dtype; int8 with int8 weights is W8A8)
    kv_cache: fp8               # optional, inference: the KV cache's dtype: fp32 | fp16 | bf16 |
                                # fp8 | int8 (default: dtype)
    logits: all                 # prefill: all (scoring: every token's logits) | last (generation:
                                # the output layer runs on each sequence's last token only);
                                # default all, and last in a generation (--prompt, --generate)
    recompute: none             # train: none | selective | full activation recomputation:
                                # fewer activations kept, their forward work run again in
                                # the backward pass and timed (analysis.recompute)
    context: 4096               # optional: the longest sequence the model takes (a config's
                                # max_position_embeddings)
    input: {channels: 3, height: 224, width: 224}   # optional: the image a CNN starts from
    layers:
      - {type: linear, in: 1024, out: 4096, name: fc1}   # name optional (default fc<i>)
      - {type: linear, in: 4096, out: 1000}

or ``mlp: [1024, 4096, 1000]`` in place of ``layers``. Each layer type (roofline.model.layers) reads
its own fields and gives its own GEMMs and ops; ``network_layers`` reads them as a chain (a layer
with ``repeat: n`` stands for n copies, kept as one run) and ``network_parts`` orders and
numbers them (forward, then backward in reverse layer order: MM1.., OP1..). The step's host
input is the first layer's ``input_bytes``.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import InputError, described, one_line
from ..files.fields import Fields, int_fields, load_yaml_file, load_yaml_text
from .dtypes import (
    ACTIVATION_DTYPES,
    DEFAULT_GROUP_SIZE,
    DTYPES,
    GROUPED_DTYPES,
    KV_DTYPES,
    OUTPUT_DTYPES,
    WEIGHT_DTYPES,
    default_output_dtype,
    dtype_name,
    itemsize,
)
from .gemm import Gemm
from .layers import Captured, Layer, Step, idle_parameters
from .layers.captured import CapturedOp
from .network_checks import check_step, check_tokens
from .network_groups import layer_groups
from .network_layers import _layers
from .network_parts import Part, expand, parts, tally
from .network_settings import (
    INFERENCE_PHASES,
    LOGITS,
    MODES,
    OPTIMIZER_CHOICES,
    RECOMPUTE,
    _accumulation,
    overridden,
)
from .ops import Op
from .repeats import LayerRun, Layers, Numbered

_TOP_KEYS = frozenset({"name", "batch", "seq", "dtype", "output_dtype", "grad_accumulation",
                       "mode", "phase", "optimizer", "layers", "mlp", "input", "recompute",
                       "context", "weights", "activations", "kv_cache", "group_size", "logits"})


@dataclass(frozen=True)
class Network:
    """A model to analyze: its layers and the batch, precision and mode it runs with.

    ``output_dtype`` None means C gets the default for ``dtype``; ``grad_accumulation`` None
    means weight gradients are written once (no accumulation buffer). ``layers`` reads as every
    layer, copies of a repeat included, and is stored as runs (``model.repeats.Layers``): plain
    layers given here become runs of one, numbered by ``copies``. ``copies[i]`` is 0 for a
    layer that is not a repeat of the one before, else which copy it is (1 = the second).
    """

    name: str
    batch: int | None  # None until given (a config.json has none): check() says so
    dtype: str | None
    mode: str
    layers: Sequence[Layer]
    output_dtype: str | None = None
    grad_accumulation: str | None = None
    seq: int | None = None
    phase: str = "prefill"
    optimizer: str = "none"
    copies: Sequence[int] = field(default=(), compare=False, hash=False)
    source: str = "<model>"
    recompute: str = "none"
    context: int | None = None  # the longest sequence the model takes; None: not stated
    weights: str | None = None  # weight storage (None: the activations' dtype)
    activations: str | None = None  # GEMM activation operand and math (None: dtype)
    kv_cache: str | None = None  # KV cache dtype (None: dtype)
    group_size: int | None = None  # int4 weights: values per scale (None: 128)
    logits: str | None = None  # prefill: "all" tokens' logits or the "last" token's only;
    # None: all, except in a generation (analysis.generation), which keeps the last

    def __post_init__(self) -> None:
        int_fields(self, ("batch", "seq", "context", "group_size"),
                   lambda key, problem: InputError(self.source, key, problem))
        layers = self.layers
        if not isinstance(layers, Layers):
            layers = Layers.of(layers, self.copies)
            object.__setattr__(self, "layers", layers)
        object.__setattr__(self, "copies", _CopyNumbers(layers))

    @property
    def layer_runs(self) -> tuple[LayerRun[Layer], ...]:
        """The layers as runs of identical copies (``model.repeats``)."""
        assert isinstance(self.layers, Layers)
        return self.layers.runs

    @property
    def lm_heads(self) -> frozenset[str]:
        """The names of its untied LM heads (``model.lm_head``), which a weight format leaves at
        the model's dtype, weights and GEMM, as vLLM does (``model.quantized``); kept with its
        layers."""
        from .lm_head import lm_head_names

        return lm_head_names(self)

    @property
    def activation_dtype(self) -> str:
        """The dtype weight GEMMs compute in and read their activation operand as."""
        return self.activations or self.operand_dtype

    @property
    def weight_dtype(self) -> str:
        """How weights are stored: ``weights``, else the activations' dtype."""
        return self.weights or self.activation_dtype

    @property
    def kv_dtype(self) -> str:
        return self.kv_cache or self.operand_dtype

    @property
    def group(self) -> int:
        """Values per scale of group-quantized (int4) weights; 0 for other formats."""
        if self.weight_dtype not in GROUPED_DTYPES:
            return 0
        return self.group_size or DEFAULT_GROUP_SIZE

    @property
    def weight_c_dtype(self) -> str:
        """C of a weight GEMM: ``output_dtype``; else, under activations other than ``dtype``,
        the model's dtype (W8A8 kernels dequantize in their epilogue), else the default for
        the math dtype."""
        if self.output_dtype:
            return self.output_dtype
        if self.activation_dtype != self.operand_dtype:
            return self.operand_dtype
        return default_output_dtype(self.activation_dtype)

    @property
    def mixed_precision(self) -> bool:
        """Whether weights, activations or the KV cache differ from ``dtype``."""
        d = self.operand_dtype
        return (self.weight_dtype, self.activation_dtype, self.kv_dtype) != (d, d, d)
    uncosted: tuple[str, ...] = ()  # captured ops whose FLOPs are unknown (bytes counted)
    # (key, value) of a config.json's keys whose effect is not modelled (model.hf.UNMODELLED)
    unmodelled: tuple[tuple[str, str], ...] = ()
    #: (key, value as written) of a config.json's torch_dtype (or dtype) that names no dtype read
    #: here (``int8``, ``auto``): said when the step lacks a dtype (``check``); None otherwise
    unread_dtype: tuple[str, str] | None = None
    # a captured torch optimizer's step, as torch ran it (used in place of the update op while
    # ``optimizer`` is the kind it recorded)
    update: tuple[CapturedOp, ...] = ()
    # forward 16-bit convolutions a captured module ran on NCHW inputs (model.capture): on a
    # GPU, work the prediction leaves out (output.times.layout_warning)
    nchw_convs: int = 0
    #: the layers of a captured module whose depthwise 3-D convolutions ran in channels_last_3d
    #: (model.capture): on a GPU, cuDNN's kernels, which a lent H100 ran 4-36x slower than
    #: torch's own on NCDHW maps, unpriced (output.layout3d.channels_last_depthwise_warning)
    channels_last_depthwise_3d: tuple[str, ...] = ()
    #: a captured module's GEMMs by the dtype they ran in, (dtype, count); those in another
    #: than ``dtype`` are priced in their own (``GemmShape.dtype``)
    gemm_dtypes: tuple[tuple[str, int], ...] = ()
    #: a captured module trained on the scalar it returned: its loss is in the step, as torch
    #: computed it (a module returning logits was given an output gradient: no loss)
    captured_loss: bool = False
    #: a captured module's peak of the tensors its step held at once beyond its parameters
    #: (activations, temporaries, training's gradients): the elements of ``dtype`` and the
    #: bytes of any other (``model.capture_memory``); None for a network read from a file
    captured_live: tuple[int, int] | None = None
    #: a captured torch optimizer's states as its first step made them (the same split): torch
    #: keeps Adam's moments at the parameters' dtype, with no fp32 master copy
    captured_optimizer: tuple[int, int] | None = None
    #: the attention form a captured module ran in ("flash": scaled_dot_product_attention as
    #: one op; "naive": its matmuls and softmax); None for a network read from a file
    captured_attention: str | None = None

    @property
    def captured_batch(self) -> int | None:
        """The batch a captured module ran at (its steps exist at that batch only), or None
        for a network read from a file."""
        return next((run.layer.batch for run in self.layer_runs
                     if isinstance(run.layer, Captured)), None)

    @property
    def framework(self) -> str | None:
        """The framework this network runs in, where that is known: ``torch`` for a captured
        module (``model.capture``); None for a model.yaml or a config.json, which say nothing
        of what runs them."""
        return "torch" if self.captured_batch is not None else None

    @property
    def c_dtype(self) -> str:
        """The dtype C has in every GEMM but an accumulating weight gradient."""
        return self.output_dtype or default_output_dtype(self.operand_dtype)

    @property
    def operand_dtype(self) -> str:
        """``dtype``, or InputError naming it when it is still missing."""
        if self.dtype is None:
            self.check()  # raises: the message names the missing dtype and its option
        assert self.dtype is not None
        return self.dtype

    @property
    def parameters(self) -> int:
        """Every trainable parameter: weights, biases, embeddings, norms."""
        return sum(layer.parameters * count for count, layer in self.layer_groups())

    @property
    def active_parameters(self) -> int:
        """The parameters one token runs: all but a mixture of experts' unrouted experts (the
        figure a model card gives as "active"; ``parameters`` without experts)."""
        return self.parameters - sum(idle_parameters(layer) * count
                                     for count, layer in self.layer_groups())

    def layer_groups(self, but_last: bool = False) -> list[tuple[int, Layer]]:
        """The layers (``but_last``: all but the last run) grouped alike, as (copies, a layer of
        the group) in order of first appearance (``network_groups.layer_groups``)."""
        return layer_groups(self, but_last)

    @property
    def step_phase(self) -> str:
        return "train" if self.mode == "train" else self.phase

    @property
    def step_recompute(self) -> str:
        """The activation recomputation the step applies: ``recompute`` in training, else
        ``none`` (the JSON ``recompute`` of analyze, compare and sweep)."""
        return self.recompute if self.mode == "train" else "none"

    def with_overrides(self, batch: int | None = None, dtype: str | None = None,
                       mode: str | None = None, output_dtype: str | None = None,
                       grad_accumulation: str | None = None, seq: int | None = None,
                       phase: str | None = None, attention: str | None = None,
                       optimizer: str | None = None, recompute: str | None = None,
                       weights: str | None = None, activations: str | None = None,
                       kv_cache: str | None = None, group_size: int | None = None,
                       logits: str | None = None) -> Network:
        """A copy with the given settings replaced (the CLI's --batch, --dtype, --mode,
        --output-dtype, --grad-accumulation, --seq, --phase, --optimizer, --recompute,
        --weights, --activations, --kv-cache, --group-size, --logits;
        ``grad_accumulation="none"``
        turns accumulation off; ``attention``, --attention, sets every transformer block's
        attention form: a config.json has none of its own)."""
        dtype = dtype_name(dtype)  # type: ignore[assignment]  # torch.float16, "bfloat16", ...
        given = {"batch": batch, "dtype": dtype, "mode": mode, "output_dtype": output_dtype,
                 "grad_accumulation": grad_accumulation, "seq": seq, "phase": phase,
                 "optimizer": optimizer, "recompute": recompute, "weights": weights,
                 "activations": activations, "kv_cache": kv_cache, "group_size": group_size,
                 "logits": logits}
        return overridden(self, given, attention)

    def check_tokens(self) -> Network:
        """This network, or InputError when batch x seq passes ``files.numbers.MAX_INT``
        (``network_checks.check_tokens``)."""
        return check_tokens(self)

    def input_bytes(self) -> int | None:
        """The bytes one step reads as input (the first layer's input: a dense batch, sparse
        rows' values and indices, images, token ids), e.g. from host memory; None when the
        first layer does not say (no ``input_bytes`` and no ``in_width``: a captured module),
        never a silent 0."""
        batch, dtype = self.settled()
        step = Step(batch, self.seq, self.step_phase, itemsize(dtype))
        first = self.layers[0]
        if hasattr(first, "input_bytes"):
            return int(first.input_bytes(step))
        return None if first.in_width is None else step.tokens * first.in_width * step.e

    def step(self) -> Step:
        """The step the layers see: batch, seq, phase and element sizes."""
        batch, dtype = self.settled()
        return Step(batch, self.seq, self.step_phase, itemsize(dtype), itemsize(self.kv_dtype))

    def last_step(self) -> Step:
        """The step the last layer sees: ``step()``, except that with ``logits: last`` a
        prefill's output layer (the last layer, when it is not attention) runs on one token
        per sequence, as generation does (it keeps only the last token's logits)."""
        step = self.step()
        last = self.layer_runs[-1].layer
        if (self.logits == "last" and step.phase == "prefill" and step.seq is not None
                and not getattr(last, "needs_seq", False)):
            return replace(step, phase="decode")
        return step

    def gemms(self) -> tuple[Gemm, ...]:
        """Every GEMM of one step, numbered MM1..MMk as ``network_parts`` describes."""
        return tuple(self.expand()[0])

    def ops(self) -> tuple[Op, ...]:
        """Every non-GEMM op of one step, numbered OP1..OPk."""
        return tuple(self.expand()[1])

    def check(self) -> None:
        """Raise InputError naming the first setting the step still lacks (batch, dtype, seq),
        or one it cannot take (``network_checks.check_step``)."""
        check_step(self)

    def settled(self) -> tuple[int, str]:
        """``(batch, dtype)`` once ``check()`` passes (it raises InputError otherwise)."""
        self.check()
        assert self.batch is not None and self.dtype is not None  # check() raised otherwise
        return self.batch, self.dtype

    def expand(self) -> tuple[Numbered[Gemm], Numbered[Op]]:
        """The step's GEMMs and ops, numbered and named when read (``network_parts.expand``)."""
        return expand(self)

    def parts(self) -> list[Part]:
        """The step's runs in numbering order, each with its first copy's GEMMs and ops as
        templates (``network_parts.parts``)."""
        return parts(self)

    def tally(self) -> list[tuple[int, tuple[Gemm | Op, ...]]]:
        """The step's GEMMs and ops as (how many times, templates), once per distinct layer and
        pass, and those recomputation runs again, for totals (``network_parts.tally``)."""
        return tally(self)


def check_model(model: object) -> None:
    """The ``model`` argument of every library call is a Network, or a path (text or
    ``os.PathLike``: a file, or ``package.module:callable``): the one place it is checked, so
    that None or a dict is refused in one line, and an int is not read as a file descriptor."""
    if not isinstance(model, (Network, str, os.PathLike)):
        raise InputError("model", "", f"expected a Network or a model file's path, got "
                                      f"{described(model)}")
    if not isinstance(model, Network) and not os.fspath(model):
        raise InputError("model", "", "expected a model file's path, got an empty path ''")


#: The model settings a library call takes as keywords and passes to ``with_overrides``: its
#: parameters, read from it so that the list cannot fall behind.
OVERRIDES = tuple(inspect.signature(Network.with_overrides).parameters)[1:]  # self aside


def check_overrides(overrides: dict[str, Any], call: str) -> None:
    """A keyword ``call`` (compare, sweep) passes on as a model setting is one of
    ``OVERRIDES``; else one line naming it and them, not a TypeError from inside."""
    unknown = sorted(set(overrides) - set(OVERRIDES))
    if unknown:
        raise InputError(call, "", f"unknown keyword {', '.join(map(repr, unknown))} (the model "
                                   f"settings it takes: {', '.join(OVERRIDES)})")


def load_network(path: str | os.PathLike[str]) -> Network:
    """Read a model.yaml file, or a Hugging Face config.json (one with ``model_type``), into a
    Network; bad input raises InputError naming the file and the field."""
    check_model(path)
    _refuse_python_file(os.fspath(path))
    data = load_yaml_file(path)
    if (str(path).lower().endswith(".json") and isinstance(data, dict)
            and not {"model_type", "layers", "mlp"} & set(data)):
        raise InputError(str(path), "model_type", "missing: a Hugging Face config.json names "
                                                  "its model_type (a model.yaml in JSON gives "
                                                  "layers or mlp)")
    if isinstance(data, dict) and "model_type" in data:
        from .hf import model_from_config, renamed

        model = model_from_config(data, str(path))
        try:  # an error names the config's key (num_key_value_heads), not model.yaml's
            network = network_from_dict(model, str(path), default_name=_stem(path))
        except InputError as exc:
            raise renamed(exc, model) from None
        return replace(network, unmodelled=tuple(model.unmodelled),
                       unread_dtype=model.unread_dtype)
    return network_from_dict(data, str(path), default_name=_stem(path))


def _refuse_python_file(path: str) -> None:
    """A Python file's path given as MODEL, in one line saying how to name the callable that
    builds its module (``package.module:callable``, imported from the current folder): read
    as YAML it failed at its first line, and ``file.py:make`` was a file not found."""
    from .capture_factory import python_file_spec

    found = python_file_spec(path)
    if found is not None:
        spec, folder = found
        where = ("the current folder" if folder == os.curdir
                 else f"its folder: cd {one_line(folder)} first")
        raise InputError(path, "", "a Python file, not a model.yaml or config.json: to capture "
                                   "a PyTorch module, name the callable that returns it and its "
                                   f"inputs as package.module:callable, {spec} (imported from "
                                   f"{where})")


def _stem(path: str | os.PathLike[str]) -> str:
    """The file's stem, the name of a model that gives none; a control character in it
    written as ``one_line`` writes it (``\\x1b``), as the reader refuses them in the file."""
    return one_line(Path(path).stem)


def network_from_yaml(text: str, source: str = "<model>") -> Network:
    """Parse model.yaml text (for notebooks and tests)."""
    return network_from_dict(load_yaml_text(text, source), source, default_name=source)


def network_from_dict(data: Any, source: str, default_name: str = "model") -> Network:
    """Validate a parsed model.yaml mapping and build the Network."""
    top = Fields(data, source)
    top.reject_unknown(_TOP_KEYS)
    layers = _layers(top)
    return Network(
        name=top.string("name", default_name),
        batch=top.positive_int("batch", None),
        dtype=top.choice("dtype", DTYPES, None),
        mode=top.choice("mode", MODES, "train"),
        layers=layers,
        output_dtype=top.choice("output_dtype", OUTPUT_DTYPES, None),
        grad_accumulation=_accumulation(top),
        seq=top.positive_int("seq", None),
        phase=top.choice("phase", INFERENCE_PHASES, "prefill"),
        optimizer=top.choice("optimizer", OPTIMIZER_CHOICES, "none"),
        source=source,
        recompute=top.choice("recompute", RECOMPUTE, "none"),
        context=top.positive_int("context", None),
        weights=top.choice("weights", WEIGHT_DTYPES, None),
        activations=top.choice("activations", ACTIVATION_DTYPES, None),
        kv_cache=top.choice("kv_cache", KV_DTYPES, None),
        group_size=top.positive_int("group_size", None),
        logits=top.choice("logits", LOGITS, None),
    ).check_tokens()


class _CopyNumbers(Sequence[int]):
    """Every layer's copy number, read from the runs (``Layers.copies`` without the tuple)."""

    __slots__ = ("_layers",)

    def __init__(self, layers: Layers[Layer]) -> None:
        self._layers = layers

    def __len__(self) -> int:
        return len(self._layers)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        run, c = self._layers.locate(index)
        return self._layers.runs[run].first_copy + c

    def __iter__(self) -> Any:
        for run in self._layers.runs:
            yield from range(run.first_copy, run.first_copy + run.count)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (_CopyNumbers, tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))
