"""model.yaml's layers read as a chain (``_layers``, for ``network.network_from_dict``): each
entry made by its type (``roofline.model.layers``), a feature map bound to the layer that reads
it, names checked unique, widths and maps checked to follow each other.

A layer with ``repeat: n`` stands for n identical copies (``name.1`` .. ``name.n``), kept as one run
(``model.repeats``): expanded once, its copies numbered and named when read; the copies must
chain (the layer gives what it takes), and a model expands to at most ``MAX_LAYERS`` layers.
Layer names, the copies' and the defaults' counted, are unique (``_LayerNames``).

Layers are chained: each layer's ``in_width`` must equal the previous ``out_width`` (features,
or channels for a feature map). A layer that reads a feature map (it has ``with_input``) gets
the previous layer's ``out_shape`` (or the top-level ``input``) and returns itself bound to it;
a layer marked ``branch`` (a side branch such as a projection shortcut) reads its own input and
leaves the chain where it was; a branch layer right after another one (the shortcut's batch
norm) reads that branch's map.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..errors import InputError
from ..files.fields import Fields, positive_int
from .layers import Add, Conv2d, Layer, Linear, Transformer, layer_from_fields
from .layers.spatial import Shape
from .repeats import MAX_LAYERS, LayerRun, Layers


def _layers(top: Fields) -> Layers[Layer]:
    """The layers, a repeat kept as one run of its copies (at most ``MAX_LAYERS`` in all)."""
    if top.has("layers") == top.has("mlp"):
        raise InputError(top.source, "layers", "give exactly one of 'layers' or 'mlp'")
    if top.has("mlp"):
        mlp = _mlp_layers(top)
        if len(mlp) > MAX_LAYERS:
            raise top.fail("mlp", f"{len(mlp):,} layers: a model may have at most "
                                  f"{MAX_LAYERS:,} layers")
        return Layers.of(mlp)
    entries = top.items("layers")
    if not entries:
        raise top.fail("layers", "expected at least one layer")
    runs: list[LayerRun[Layer]] = []
    names = _LayerNames()
    total = 0
    previous, shape = None, _input_shape(top)
    branch_shape = None  # the map the side branch just before gives (a branch's batch norm)
    fork: Shape | None = None  # the map a side branch read from outside the chain (an add's)
    for i, entry in enumerate(entries):
        fields = Fields(entry, top.source, top.where("layers") + f"[{i}]")
        layer = layer_from_fields(fields, i)
        repeat = fields.positive_int("repeat", 1)
        branch = getattr(layer, "branch", False)
        if hasattr(layer, "with_input"):
            layer = layer.with_input(branch_shape if branch and branch_shape else shape, fields)
        layer, fork = _track_fork(layer, fork, branch and not branch_shape)
        branch_shape = getattr(layer, "out_shape", None) if branch else None
        if not branch:
            _check_widths(fields, previous, layer, i)
            if previous is None:
                _check_input(fields, layer, shape)
        out_shape = getattr(layer, "out_shape", None)
        total += repeat
        _check_repeat(fields, layer, repeat, shape, total)
        names.add(fields, layer.name, repeat, i, isinstance(layer, Transformer))
        runs.append(LayerRun(layer, repeat, 0, named=repeat > 1))
        if not branch:
            previous, shape = runs[-1].copy(repeat - 1), out_shape
    return Layers(runs)


def _copy_of(name: str) -> tuple[str, int]:
    """``base.k`` as (base, k), the name a repeat's copy k takes (``repeats.copy_name``); k 0
    where the last part is not a copy's number (no leading zero)."""
    base, _, suffix = name.rpartition(".")
    copy = suffix.isascii() and suffix.isdigit() and suffix[0] != "0"
    return base, int(suffix) if copy else 0


class _LayerNames:
    """The names a model.yaml's layers take, each once: every output names a GEMM's or op's
    layer by it (``width 10 (a.out, a.in)`` read two layers as one). A repeated layer's copies
    take ``name.1`` .. ``name.n`` (``repeats.copy_name``), so a plain ``a.2`` meets the second
    copy of a repeated ``a``, and two repeated layers of one name meet at ``name.1``. Checked
    without expanding a repeat: a plain name ``base.k`` is kept by its base and k.

    A transformer block names its parts' GEMMs and ops ``name.part`` (``blk.3.attn``,
    ``blk.3.qkv``), so no layer's name may lie inside a block's or one of its copies' (a plain
    ``blk.3.attn`` beside a repeated ``blk``: plan gave block 3's attention to that layer, the
    longest name it starts with), whichever comes first. Checked by the name's dotted
    prefixes, each kept as a ``base.k`` is (``inside``, ``inside_numbered``)."""

    def __init__(self) -> None:
        self.plain: dict[str, int] = {}  # name -> its layer's index
        self.repeated: dict[str, tuple[int, int]] = {}  # base -> (index, copies)
        self.numbered: dict[str, list[tuple[int, int]]] = {}  # base of 'base.k' -> [(k, index)]
        self.blocks: dict[str, tuple[int, int]] = {}  # a block's name -> (index, copies)
        self.inside: dict[str, tuple[str, int]] = {}  # a proper prefix -> (a name, its index)
        # base of a proper prefix 'base.k' -> [(k, a name under it, its index)]
        self.inside_numbered: dict[str, list[tuple[int, str, int]]] = {}

    def add(self, fields: Fields, name: str, repeat: int, index: int,
            block: bool = False) -> None:
        self._check_parts(fields, name, repeat, index, block)
        if repeat == 1:
            base, copy = _copy_of(name)
            if name in self.plain:
                self._fail(fields, name, f"is also the name of layers[{self.plain[name]}]")
            if copy and base in self.repeated and copy <= self.repeated[base][1]:
                first, copies = self.repeated[base]
                self._fail(fields, name, f"is also the name of copy {copy} of layers[{first}] "
                                         f"({base!r}, repeat {copies})")
            self.plain[name] = index
            if copy:
                self.numbered.setdefault(base, []).append((copy, index))
            return
        if name in self.repeated:
            self._fail(fields, name, f"is also the name of layers[{self.repeated[name][0]}], "
                                     f"repeated too: both name their copies {name}.1, "
                                     f"{name}.2, ...")
        clash = next(((k, i) for k, i in self.numbered.get(name, []) if k <= repeat), None)
        if clash is not None:
            self._fail(fields, name, f"names its copies {name}.1 .. {name}.{repeat}, and "
                                     f"{name}.{clash[0]} is the name of layers[{clash[1]}]")
        self.repeated[name] = (index, repeat)

    def _check_parts(self, fields: Fields, name: str, repeat: int, index: int,
                     block: bool) -> None:
        """No name inside a transformer block's parts (class docstring): this name under an
        earlier block's or copy's, or, for a block, an earlier name under it or its copies'."""
        prefixes = [name[:i] for i, c in enumerate(name) if c == "."]
        for prefix in prefixes:
            base, copy = _copy_of(prefix)
            if prefix in self.blocks and self.blocks[prefix][1] == 1:
                self._fail(fields, name, f"lies inside the transformer block layers["
                                         f"{self.blocks[prefix][0]}] ({prefix!r}), whose parts "
                                         f"are named {prefix}.qkv, {prefix}.attn, ...")
            if copy and base in self.blocks and 1 < self.blocks[base][1] and (
                    copy <= self.blocks[base][1]):
                first, copies = self.blocks[base]
                self._fail(fields, name, f"lies inside copy {copy} of the transformer block "
                                         f"layers[{first}] ({base!r}, repeat {copies}), whose "
                                         f"parts are named {prefix}.qkv, {prefix}.attn, ...")
        if block:
            if repeat == 1 and name in self.inside:
                under, at = self.inside[name]
                self._fail(fields, name, f"names a transformer block's parts {name}.qkv, "
                                         f"{name}.attn, ..., and layers[{at}] ({under!r}) lies "
                                         f"inside it")
            clash = next(((k, under, at) for k, under, at in self.inside_numbered.get(name, [])
                          if k <= repeat), None) if repeat > 1 else None
            if clash is not None:
                self._fail(fields, name, f"names the parts of its copies {name}.1 .. "
                                         f"{name}.{repeat} {name}.k.qkv, {name}.k.attn, ..., "
                                         f"and layers[{clash[2]}] ({clash[1]!r}) lies inside "
                                         f"copy {clash[0]}")
            self.blocks[name] = (index, repeat)
        for prefix in prefixes:
            self.inside.setdefault(prefix, (name, index))
            base, copy = _copy_of(prefix)
            if copy:
                self.inside_numbered.setdefault(base, []).append((copy, name, index))

    @staticmethod
    def _fail(fields: Fields, name: str, clash: str) -> NoReturn:
        given = fields.has("name")
        problem = (f"{'' if given else 'its default name '}{name!r} {clash}: layer names must "
                   f"be unique (every output names a GEMM's layer by it)")
        raise fields.fail("name", problem) if given else InputError(fields.source, fields.path,
                                                                      problem)


def _check_repeat(fields: Fields, layer: Any, repeat: int, shape: Shape | None,
                  total: int) -> None:
    """A repeated layer's copies must chain (its output fits its own input: widths, and a
    feature map's size), and the model may expand to at most ``MAX_LAYERS`` layers (``total``
    so far, every copy counted)."""
    if total > MAX_LAYERS:
        raise fields.fail("repeat" if repeat > 1 else "type",
                          f"the model expands to {total:,} layers or more (every copy of a "
                          f"repeat counted): a model may have at most {MAX_LAYERS:,}")
    if repeat == 1:
        return
    if layer.in_width is not None and layer.out_width is not None and (
            layer.in_width != layer.out_width):
        raise fields.fail("repeat", f"{layer.name!r} takes {layer.in_width} but gives "
                                    f"{layer.out_width}: its copies cannot follow each other "
                                    f"(only a layer whose output width is its input width can "
                                    f"repeat)")
    out_shape = getattr(layer, "out_shape", None)
    if out_shape is not None and out_shape != shape:
        raise fields.fail("repeat", f"{layer.name!r} changes its input {tuple(shape or ())}"
                                    f" to {tuple(out_shape)}: only a layer that keeps its"
                                    f" input's size can repeat")


def _track_fork(layer: Layer, fork: Shape | None, opens: bool) -> tuple[Layer, Shape | None]:
    """A side branch that reads from outside the chain (``opens``: a projection shortcut's
    convolution) marks where the paths fork; the add that joins them takes that map, where its
    gradients are summed."""
    if opens and isinstance(layer, Conv2d):
        return layer, layer.in_shape
    if isinstance(layer, Add):
        return layer.with_fork(fork), None
    return layer, fork


def _input_shape(top: Fields) -> Shape | None:
    """Top-level ``input: {channels, height, width}``: the image a CNN starts from."""
    given = top.sub("input", None)
    if given is None:
        return None
    given.reject_unknown(frozenset({"channels", "height", "width"}))
    return Shape(given.positive_int("channels"), given.positive_int("height"),
                 given.positive_int("width"))


def _check_input(fields: Fields, layer: Any, shape: Shape | None) -> None:
    """The first layer that reads a feature map takes the channels of the top-level
    ``input`` (the image the model starts from)."""
    if shape is None or not hasattr(layer, "with_input") or layer.in_width is None:
        return
    if layer.in_width != shape.channels:
        key = "in_channels" if fields.has("in_channels") else ""
        raise InputError(fields.source, f"{fields.path}.{key}" if key else fields.path,
                         f"layer {layer.name!r} takes {layer.in_width} channels but the "
                         f"input gives {shape.channels} (input.channels)")


def _check_widths(fields: Fields, previous: Any, layer: Any, index: int) -> None:
    """A layer's input width must be the previous layer's output width (features; channels for
    a feature map; an embedding takes token ids), and a layer that reads features cannot follow
    a map larger than 1 x 1 without a ``flatten``."""
    if previous is None or layer.in_width is None or previous.out_width is None:
        return
    if layer.in_width != previous.out_width:
        spatial = hasattr(layer, "with_input")
        what = ("channels", "channels") if spatial else ("inputs", "outputs")
        key = "in" if fields.has("in") else ""
        raise InputError(fields.source, f"{fields.path}.{key}" if key else fields.path,
                         f"layer {layer.name!r} takes {layer.in_width} {what[0]} but the "
                         f"previous layer {previous.name!r} (layers[{index - 1}]) gives "
                         f"{previous.out_width} {what[1]}")
    shape = getattr(previous, "out_shape", None)
    if shape is not None and not hasattr(layer, "with_input") and shape.height * shape.width > 1:
        raise InputError(fields.source, fields.path,
                         f"{layer.name!r} reads features but the previous layer "
                         f"{previous.name!r} gives a {shape.channels}x{shape.height}x"
                         f"{shape.width} map: put a flatten between them")


def _mlp_layers(top: Fields) -> tuple[Linear, ...]:
    widths = top.items("mlp")
    if len(widths) < 2:
        raise top.fail("mlp", "expected at least two widths (inputs, outputs)")
    for i, width in enumerate(widths):
        positive_int(width, lambda key, problem: InputError(top.source, f"mlp[{key}]", problem), i)
    return tuple(Linear(f"fc{i + 1}", a, b) for i, (a, b) in enumerate(zip(widths, widths[1:])))
