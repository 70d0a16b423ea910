"""A Network's step as its GEMMs and ops: each run's templates made once per distinct layer and
pass (``parts``, ``_Templates``), numbered and named when read (``expand``) or grouped for the
step's totals (``tally``); the data-gradient rule (``_make_passes``); each GEMM's dtypes
(``_gemm``); the optimizer's update (``_update``).

Numbering: forward GEMMs first in layer order (MM1..MMn), then the backward pass in reverse
layer order, each layer's data-gradient GEMMs before its weight-gradient GEMMs; ops are numbered
OP1.. in the same order, the optimizer update last. A layer computes its data gradient only
when an earlier layer has trainable weights (the first weighted layer of an MLP has none; every
layer after an embedding has one). Training an n-layer MLP therefore takes 3n - 1 GEMMs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import InputError
from .dtypes import default_output_dtype
from .gemm import Gemm, GemmShape
from .layers import Layer, Step, recomputed
from .network_groups import _fields_key
from .ops import Op, optimizer_update
from .quantized import in_format, kept_in_training
from .repeats import ItemRun, LayerRun, Layers, Numbered, rebuild

if TYPE_CHECKING:
    from .network import Network


def expand(network: Network) -> tuple[Numbered[Gemm], Numbered[Op]]:
    """The step's GEMMs and ops, in the order the module docstring describes: each run's
    templates (``parts``), numbered and named for each copy and layer when read, so that
    a deep model's 300,000 GEMMs are never built unless something reads them one by one."""
    gemm_runs: list[ItemRun[Gemm]] = []
    op_runs: list[ItemRun[Op]] = []
    gemm_count = op_count = 0
    split: dict[int, tuple[tuple[Gemm, ...], tuple[Op, ...]]] = {}  # per template tuple
    for part in parts(network):
        run = part.run
        found = split.get(id(part.items))
        if found is None:
            found = split[id(part.items)] = (
                tuple(item for item in part.items if isinstance(item, Gemm)),
                tuple(item for item in part.items if not isinstance(item, Gemm)))
        gemms, ops = found
        if gemms:
            gemm_runs.append(ItemRun(gemms, run.count, run, gemm_count, part.first))
        if ops:
            op_runs.append(ItemRun(ops, run.count, run, op_count, part.first))
        gemm_count += len(gemms) * run.count
        op_count += len(ops) * run.count
    return Numbered(gemm_runs, "MM", rebuild), Numbered(op_runs, "OP", rebuild)


def parts(network: Network) -> list[Part]:
    """The step's runs in numbering order (the forward pass, then the backward pass in
    reverse, then the optimizer's update), each with its first copy's GEMMs and ops as
    templates: not numbered, and named for ``Part.first``, the first layer of the step with
    the same fields and the same pass (``Part.own`` is the run's own name). A layer and its
    GEMMs are built once per distinct set of fields, not once per layer: a 100,000-layer
    MLP of seven widths has seven. The step's totals read these without numbering
    anything (``analysis.step``); ``expand`` numbers and names them."""
    step, last_step = network.step(), network.last_step()
    templates = _Templates(network)
    parts: list[Part] = []
    for run, same, last, data_grad in _passes(network):
        layer = run.copy(0)  # a run's items are its first copy's (renamed when read)
        first, shared = templates.of(layer, same, last_step if last else step, data_grad)
        parts.append(Part(run, first, layer.name, shared))
    update = _update(network, step)
    if update:
        parts.append(Part(LayerRun(_UPDATE), "", "", update))
    return parts


def tally(network: Network) -> list[tuple[int, tuple[Gemm | Op, ...]]]:
    """The step's GEMMs and ops as (how many times, templates), once per distinct layer
    and pass: what the step's totals need, in time that grows with the distinct layers,
    not the layers (the grouping does not depend on the batch and is made once for the
    layers of every batch, ``Layers.cached``), and after each forward pass the templates of
    it that recomputation runs again in the backward pass (``layers.recomputed``). Not in
    numbering order."""
    step, last_step = network.step(), network.last_step()
    templates = _Templates(network)
    out: list[tuple[int, tuple[Gemm | Op, ...]]] = []
    for count, layer, same, last, data_grad in _groups(network):
        at = last_step if last else step
        items = templates.of(layer, same, at, data_grad)[1]
        out.append((count, items))
        flags = recomputed(layer, at, network.recompute) if data_grad is None else ()
        if flags:
            out.append((count, tuple(item for item, again in zip(items, flags) if again)))
    update = _update(network, step)
    return out + [(1, update)] if update else out


def _passes(network: Network) -> list[tuple[LayerRun[Layer], Any, bool, bool | None]]:
    """Every run's pass in numbering order (module docstring): (the run, its layer's
    ``_fields_key``, whether it sees ``last_step``, and ``data_grad``: None in the forward
    pass, else whether its backward pass computes a data gradient). The same at every
    batch: made once for these layers (``Layers.cached``)."""
    assert isinstance(network.layers, Layers)
    return network.layers.cached(("passes", *_layout(network)), lambda: _make_passes(network))


def _make_passes(network: Network) -> list[tuple[LayerRun[Layer], Any, bool, bool | None]]:
    assert isinstance(network.layers, Layers)
    runs = _split_runs(network, network.layer_runs)
    keys = [network.layers.key_of(run.layer, _fields_key) for run in runs]
    out: list[tuple[LayerRun[Layer], Any, bool, bool | None]] = [
        (run, key, i == len(runs) - 1, None) for i, (run, key) in enumerate(zip(runs, keys))]
    if network.mode == "train":
        weighted = False  # does any layer before this run's first copy have weights?
        data_grads = []
        for run in runs:
            data_grads.append(weighted)
            weighted = weighted or run.layer.has_weights
        for run, data_grad, key in zip(reversed(runs), reversed(data_grads), reversed(keys)):
            if run.count > 1:
                run = replace(run, reverse=True)  # last copy first
            out.append((run, key, False, data_grad))
    return out


def _groups(network: Network) -> list[tuple[int, Layer, Any, bool, bool | None]]:
    """``_passes`` grouped by (fields, last, data_grad): (copies, a layer of the group,
    its key, last, data_grad); a layer whose fields make no key is a group of its own."""
    assert isinstance(network.layers, Layers)

    def make() -> list[tuple[int, Layer, Any, bool, bool | None]]:
        groups: dict[Any, list[Any]] = {}
        for i, (run, key, last, data_grad) in enumerate(_passes(network)):
            group = (key, last, data_grad) if key is not None else i
            found = groups.setdefault(group, [0, run.copy(0), key, last, data_grad])
            found[0] += run.count
        return [tuple(group) for group in groups.values()]

    return network.layers.cached(("groups", *_layout(network)), make)


def _layout(network: Network) -> tuple[str, bool]:
    """What ``_passes`` depends on beside the layers: the mode (a backward pass or not) and
    whether the last layer sees a step of its own (``_split_runs``)."""
    return network.mode, network.last_step() != network.step()


def _update(network: Network, step: Step) -> tuple[Op, ...]:
    """The optimizer's step as templates (``parts``): a recorded one (a capture's) op by op,
    else the fused update; none outside training or without an optimizer."""
    if network.mode != "train" or not (network.update or network.optimizer != "none"):
        return ()
    shapes = ([op.at(step.e) for op in network.update] if network.update
              else [optimizer_update(network.optimizer, network.parameters)])
    return tuple(Op("OP0", *shape) for shape in shapes)


def _split_runs(network: Network, runs: tuple[LayerRun[Layer], ...]) -> list[LayerRun[Layer]]:
    """The runs, copies named, with the first copy of a weighted run apart when nothing
    before it has weights (it computes no data gradient; its copies do) and the last copy
    apart when the last layer sees its own step (``logits: last``)."""
    out: list[LayerRun[Layer]] = []
    weighted = False
    for run in runs:
        if run.count > 1 and network.mode == "train" and not weighted and run.layer.has_weights:
            out += [LayerRun(run.copy(0), 1, run.first_copy),
                    replace(run, count=run.count - 1, first_copy=run.first_copy + 1)]
        else:
            out.append(run)
        weighted = weighted or run.layer.has_weights
    last = out[-1]
    if last.count > 1 and network.last_step() != network.step():
        c = last.count - 1
        out[-1:] = [replace(last, count=c),
                    LayerRun(last.copy(c), 1, last.first_copy + c)]
    return [run if run.count > 1 or not run.named else LayerRun(run.copy(0), 1,
                                                                run.first_copy)
            for run in out]


def _gemm(network: Network, index: int, s: GemmShape, copy: int) -> Gemm:
    """GEMM ``index``: weight GEMMs (B a weight in the weight format, and weight gradients)
    compute in the activations' dtype, B stored as the weights are (a group-quantized B needs a
    group size dividing K); naive attention in decode reads B from the KV cache; C is
    ``output_dtype``, else the math dtype's default, except under separate activations, where a
    weight GEMM writes the model's dtype (the dequantizing epilogue of W8A8 kernels). A weight
    the format leaves alone in inference (``model.quantized.in_format``: an LM head, a router
    vLLM builds unquantized, MLA's absorbed W_UK and W_UV) is read at the model's dtype, its
    GEMM computed and written there, whatever ``--weights`` and ``--activations`` say; in
    training under other activations an LM head's and a router's GEMMs, every pass, stay at
    the model's dtype (``model.quantized.kept_in_training``). A
    captured quantized GEMM (``GemmShape.dtype``) keeps its own operand and output dtypes; a
    GEMM torch runs in TF32 (``GemmShape.tf32``) stays so while its math is fp32."""
    stored = in_format(network, s)
    weighted = stored or (s.pass_ == "backward-weight" and not kept_in_training(network, s))
    math = network.activation_dtype if weighted else network.operand_dtype
    accumulate = s.pass_ == "backward-weight" and network.grad_accumulation is not None
    c_dtype = network.grad_accumulation if network.grad_accumulation and accumulate else (
        network.weight_c_dtype if weighted else network.c_dtype)
    b_dtype, group = "", 0
    if stored and not s.dtype:
        b_dtype, group = network.weight_dtype, network.group
        if group and s.k % group:
            raise InputError(network.source, "group_size", f"group size {group} does not "
                             f"divide {s.roles[2]} ({s.k}) of layer {s.layer!r}")
    elif s.b_operand == "kv":
        b_dtype = network.kv_dtype
    if s.dtype:  # a captured quantized GEMM: its operands and output in its own dtypes
        math, b_dtype, group, accumulate = s.dtype, "", 0, False
        c_dtype = s.c_dtype or default_output_dtype(s.dtype)
    return Gemm(f"MM{index}", s.layer, s.pass_, s.m, s.n, s.k, math, s.roles,
                s.batch_dims, c_dtype, accumulate, s.batch_count, copy, s.align, s.tensors,
                b_dtype, group, s.b_operand, s.rows, s.tf32 and math == "fp32",
                s.transposed)


class _Templates:
    """The GEMMs and ops of ``Network.parts``, made once per distinct layer (its fields but
    its name, ``_fields_key``) and pass, and each GEMM once per distinct shape: named for the
    first layer that made them, not numbered."""

    def __init__(self, network: Network) -> None:
        self.network = network
        self.made: dict[Any, tuple[str, tuple[Gemm | Op, ...]]] = {}
        self.gemms: dict[tuple[Any, ...], Gemm] = {}  # a GemmShape but its layer -> its Gemm

    def of(self, layer: Layer, same: tuple[Any, ...] | None, step: Step,
           data_grad: bool | None) -> tuple[str, tuple[Gemm | Op, ...]]:
        """(the layer they are named for, the templates) of ``layer``'s forward pass
        (``data_grad`` None) or backward pass at ``step``; ``same`` is its ``_fields_key``."""
        key = (same, id(step), data_grad)  # (the caller's steps outlive this object)
        found = self.made.get(key) if same is not None else None
        if found is not None:
            return found
        shapes = list(layer.forward(step) if data_grad is None
                      else layer.backward(step, data_grad=data_grad))
        out: list[Gemm | Op] = []
        for shape in shapes:
            if isinstance(shape, GemmShape):
                gemm = self.gemms.get(shape[1:])
                if gemm is None:
                    gemm = self.gemms[shape[1:]] = _gemm(self.network, 0, shape, 0)
                out.append(gemm if gemm.layer == shape.layer else
                           gemm.renamed(gemm.name, shape.layer, 0))
            else:
                out.append(Op("OP0", *shape))
        found = (layer.name, tuple(out))
        if same is not None and all(shape.layer.startswith(layer.name) for shape in shapes):
            self.made[key] = found  # (a layer whose items it names otherwise is not shared)
        return found


class Part(NamedTuple):
    """One run of ``Network.parts``: the run, the layer its templates are named for
    (``first``), the run's own first copy's name (``own``) and the templates, GEMMs and ops in
    order."""

    run: LayerRun[Any]
    first: str
    own: str
    items: tuple[Gemm | Op, ...]


class _Update(NamedTuple):
    """What the optimizer's update stands in place of a layer (``parts``): no name, so its ops
    keep their own layer, ``optimizer``."""

    name: str = ""


_UPDATE = _Update()
