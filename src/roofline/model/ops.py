"""Non-GEMM work between the GEMMs: elementwise ops, norms, softmax, embedding lookups, the
optimizer update, and fused attention kernels. Each is a row with FLOPs and bytes, placed on the
same roofline as the GEMMs (almost all are memory-bound), so that a step's time is not silently
only its GEMMs.

Counts are per element of the tensor the op works on, with e the activation element size
(the model's dtype). Bytes are the compulsory traffic: each input read once, each output written
once. FLOPs per element are small, documented estimates (exp, tanh and divide count as one
FLOP each, as vendors' peak figures do); the ops are memory-bound, so their time is their bytes
over the bandwidth and the FLOP estimate hardly matters. Anchors (NVIDIA, *GPU Performance
Background*, "Understanding Performance"): ReLU 0.25 FLOP/B in fp16 (1 FLOP over 2 + 2 bytes);
layer normalization "< 10 FLOP/B".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

#: kind -> (FLOPs, elements read, elements written) per element, forward and backward.
ELEMENTWISE: dict[str, tuple[int, int, int]] = {
    "relu": (1, 1, 1),            # max(x, 0)
    "gelu": (8, 1, 1),            # tanh approximation: x^3, 2 mul-adds, tanh, add, 2 mul
    "silu": (4, 1, 1),            # x * sigmoid(x): exp, add, divide, multiply
    "bias": (1, 1, 1),            # y = x + b (the bias vector itself is negligible)
    "residual": (1, 2, 1),        # y = x + f(x)
    "gate": (1, 2, 1),            # SwiGLU: y = silu(a) * b
    "layernorm": (8, 1, 1),       # mean, variance, normalize, scale, shift
    "rmsnorm": (4, 1, 1),         # mean of squares, rsqrt, normalize, scale
    "batchnorm": (8, 1, 1),       # as layernorm, the statistics per channel over N.H.W
    "softmax": (5, 1, 1),         # max, subtract, exp, sum, divide (scale and mask folded in)
    "dropout": (2, 1, 1),         # plus a one-byte mask written (see DROPOUT_MASK_BYTES)
    "rotary": (3, 1, 1),          # RoPE on q and k: x cos + rotate_half(x) sin (the cos and
                                  # sin tables, one row a position, are negligible)
    "relu-backward": (1, 2, 1),   # dx = dy * (x > 0): reads dy and x
    "gelu-backward": (12, 2, 1),
    "silu-backward": (8, 2, 1),
    "bias-backward": (1, 1, 0),   # db = sum of dy over rows (the bias gradient is negligible)
    "residual-backward": (1, 2, 1),  # the two branches' gradients summed
    "gate-backward": (2, 3, 2),   # da = dy * b, db = dy * a
    "layernorm-backward": (12, 2, 1),
    "rmsnorm-backward": (8, 2, 1),
    "batchnorm-backward": (12, 2, 1),
    "softmax-backward": (4, 2, 1),  # ds = p * (dp - sum(dp * p))
    "dropout-backward": (1, 1, 1),  # plus the mask read
    "rotary-backward": (3, 1, 1),   # the inverse rotation of dq and dk
}
DROPOUT_MASK_BYTES = 1
INDEX_BYTES = 8  # int64 token ids
#: Optimizer updates on fp32 master weights and states (mixed-precision training keeps them):
#: kind -> (FLOPs, bytes) per parameter. SGD: w -= lr g (read w, g; write w). Adam(W): m, v
#: moments, bias correction and the update (read w, g, m, v; write w, m, v).
OPTIMIZERS: dict[str, tuple[int, int]] = {"sgd": (2, 12), "adam": (13, 28)}


class AttentionShape(NamedTuple):
    """What a fused attention op's published speed depends on: the head dimension, the query
    and key lengths (``q`` 1 against ``s`` keys in decode) and the causal mask; and what slows a
    kernel past it: ``masked``, a mask it reads for every score (a padded batch's), ``dropout``,
    dropout applied to the scores (a training step's, ``dropout_p`` > 0), ``mask_grad``, a mask
    that needs its gradient (T5's learned position bias), which torch computes with its
    memory-efficient kernel only."""

    head_dim: int
    q: int
    s: int
    causal: bool
    masked: bool = False
    dropout: bool = False
    mask_grad: bool = False


class NormShape(NamedTuple):
    """What a batch norm's kernels on a GPU take their time by, for one captured over a map of
    three or more dimensions: its ``channels`` (a statistic each; torch's and cuDNN's NCHW
    reductions run a channel to a thread block), the ``values`` each channel holds (N.H.W) and
    whether the map is ``channels_last`` (NHWC, which torch and cuDNN run with other kernels),
    and whether its weights are fp32 under a 16-bit map (``mixed``: autocast's, which sends an
    fp16 one to cuDNN)."""

    channels: int
    values: int
    channels_last: bool = False
    mixed: bool = False


class SumShape(NamedTuple):
    """What a sum over a matrix's rows takes its time by on a GPU, for one captured over the
    leading dimensions of a contiguous tensor (a Linear's bias gradient: dY summed over its
    tokens): its ``rows`` (the values summed into each output) and ``columns`` (the outputs,
    adjacent in memory; torch's reduce kernel runs them a thread each, ``analysis.gpu_reduce``);
    and a captured layer norm backward's, the rows and columns its weight gradients sum over
    (torch's gradient kernel runs 32 columns a block, ``analysis.gpu_layer_norm``), and a
    captured layer norm forward's, its rows and the values it normalizes in each (a block a
    row)."""

    rows: int
    columns: int
    along_rows: bool = False  # summed along each row instead (a mean over trailing dimensions)
    # each row's values in several runs apart (a convolution's bias gradient over NCHW's N, H and
    # W): torch's reduce computes every value's offset and loads it alone
    indexed: bool = False


#: What a ``bias`` op can follow (``OpShape.follows``): a Linear's dense GEMM, a convolution,
#: a sparse product. Where it runs is the device's business (``analysis.gpu_ops``: a Linear's
#: bias in its GEMM's epilogue; ``analysis.cpu_ops``: a convolution's in oneDNN's).
FOLLOWS = ("linear", "conv", "sparse")


class OpShape(NamedTuple):
    """An op as a layer describes it, before the network numbers it (``attention``: the shape
    of a fused attention op, None for every other op; ``follows``: for a bias add and its
    gradient, the product whose output it adds to, one of ``FOLLOWS``; "" for every other op;
    ``strided``: a copy whose source is laid out unlike its output, a permuted copy, as
    ``model.capture`` sees it from the tensors' strides; False for every other op; ``row``: the
    values in each row a captured softmax normalizes, its last dimension, as ``model.capture``
    records it; 0 for every other op; ``dtype``: the dtype a captured op ran in where it is not
    the step's, an upcast the model's code makes (``logits.float()``), its values in that dtype
    counted at its size whatever the step's; "" for every other op; ``norm``: a captured batch
    norm's map, None for every other op; ``summed``: a sum over a matrix's rows, its rows and
    columns, or a captured layer norm backward's weight gradients', None for every other
    op)."""

    layer: str
    pass_: str
    kind: str
    flops: int
    bytes: int
    attention: AttentionShape | None = None
    follows: str = ""
    strided: bool = False
    row: int = 0
    dtype: str = ""
    norm: NormShape | None = None
    summed: SumShape | None = None


def elementwise(layer: str, pass_: str, kind: str, elements: int, e: int) -> OpShape:
    """An elementwise op of ``kind`` over ``elements`` values of ``e`` bytes each."""
    flops, reads, writes = ELEMENTWISE[kind]
    extra = DROPOUT_MASK_BYTES * elements if kind.startswith("dropout") else 0
    return OpShape(layer, pass_, kind, flops * elements, (reads + writes) * e * elements + extra)


def bias_activation(layer: str, pass_: str, elements: int, e: int, bias: bool,
                    activation: str, follows: str, columns: int = 0) -> list[OpShape]:
    """A layer's epilogue over its ``elements`` outputs: forward, the bias add then the
    activation; backward, the activation's gradient then the bias's (``activation`` "none":
    no activation op); ``follows``: the layer's product (``FOLLOWS``); ``columns``: the bias's
    values where the outputs are rows of them (a Linear's; a convolution's, its map taken
    channels-last: its gradient a sum over rows, ``SumShape``), 0 where no sum is priced."""
    ops = []
    if bias:
        op = elementwise(layer, pass_, "bias" if pass_ == "forward" else "bias-backward",
                         elements, e)._replace(follows=follows)
        if pass_ != "forward" and columns:
            op = op._replace(summed=SumShape(elements // columns, columns))
        ops.append(op)
    if activation != "none":
        kind = activation if pass_ == "forward" else f"{activation}-backward"
        ops.append(elementwise(layer, pass_, kind, elements, e))
    return ops if pass_ == "forward" else ops[::-1]


def optimizer_update(kind: str, parameters: int) -> OpShape:
    """One optimizer step over ``parameters`` fp32 weights."""
    flops, nbytes = OPTIMIZERS[kind]
    return OpShape("optimizer", "update", f"{kind}-update", flops * parameters,
                   nbytes * parameters)


@dataclass(frozen=True, slots=True)
class Op:
    """One non-GEMM row of a step: its name (OP1...), layer, pass, kind, FLOPs and bytes."""

    name: str
    layer: str
    pass_: str
    kind: str
    flops: int
    bytes: int
    attention: AttentionShape | None = None  # a fused attention op's shape (OpShape's)
    follows: str = ""  # a bias add's product (OpShape's)
    strided: bool = False  # a permuted copy (OpShape's)
    row: int = 0  # a captured softmax's values a row (OpShape's)
    dtype: str = ""  # a captured op's own dtype, "" for the step's (OpShape's)
    norm: NormShape | None = None  # a captured batch norm's map (OpShape's)
    summed: SumShape | None = None  # a captured sum over a matrix's rows (OpShape's)
    copy: int = 0  # 0, or which copy of a repeated layer (1 = the second) it belongs to

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    def renamed(self, name: str, layer: str, copy: int) -> Op:
        """This op under another name, layer and copy number (as ``Gemm.renamed``)."""
        return Op(name, layer, self.pass_, self.kind, self.flops, self.bytes, self.attention,
                  self.follows, self.strided, self.row, self.dtype, self.norm, self.summed,
                  copy)
