"""GEMM recognition: an aten GEMM op (``GEMM_OPS``) as a ``GemmShape`` (``_gemm``), its role
from its operands (a weight gradient's product has a parameter's shape: ``_weight_shaped``), its
B a weight, a table an embedding gathers from or neither (``_weight_kind``), its operands'
layout in memory (``_rows``) and an operand broadcast along its batch read once
(``_broadcast``), a mixture of experts' grouped GEMM as a batched one (``_grouped``), its own
dtypes where it ran in another than the model's or is quantized (``_own_gemm_dtypes``,
``_quantized``, ``QUANTIZED_GEMMS``, ``GEMM_DTYPES``), in TF32 where torch allows it
(``_tf32``), and an input it adds, a Linear's bias, as the ``bias`` op (``ADDED_INPUT_GEMMS``,
``_added_input``, ``_bias_op``, which a convolution's bias takes too)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import CaptureError
from ..files.numbers import MAX_INT
from .capture_recorder import _Recorder
from .capture_tensors import _dtype_name
from .dtypes import TORCH_DTYPES
from .gemm import UNQUANTIZED, GemmShape
from .layers.captured import CapturedOp, Item
from .ops import ELEMENTWISE, SumShape

#: The GEMM ops: ``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``_grouped_mm`` (a mixture of
#: experts' GEMMs as transformers runs them: ``_grouped``), the quantized GEMMs
#: (``QUANTIZED_GEMMS``) and a matrix times a vector, ``mv`` and ``addmv`` (``torch.matmul`` of
#: a matrix and a 1-D tensor: a GEMM of N = 1, the vector B's one column, along K).
GEMM_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "_grouped_mm", "_int_mm", "_scaled_mm",
                      "mv", "addmv"})
#: GEMM ops that add an input to their product (beta x input + A.B): a Linear's bias.
ADDED_INPUT_GEMMS = frozenset({"addmm", "baddbmm", "addmv"})
#: the GEMM operand dtypes a capture's dtype may come from (torch._int_mm's int8 among them)
GEMM_DTYPES = TORCH_DTYPES | {"int8": "int8"}
#: The GEMMs that run in their own dtypes whatever the model's, by op: torch's int8 GEMM
#: (``_int_mm``: int8 operands, an int32 output) and its scaled fp8 GEMM (``_scaled_mm``: fp8
#: operands, the output in its ``out_dtype``), as torchao and fp8 training run them.
QUANTIZED_GEMMS = frozenset({"_int_mm", "_scaled_mm"})


def _gemm(op: str, args: Sequence[Any], tensors: list[Any], outs: list[Any],
          kwargs: dict[str, Any], backward: bool, owner: str, rec: _Recorder) -> list[Item]:
    """A GEMM op (``GEMM_OPS``) as a ``GemmShape``, its role from its operands: in the
    backward, a GEMM that reads a weight computes a data gradient; one that reads none (the
    output gradient and a saved activation) computes a weight gradient when its product has
    the shape of one of its module's parameters, else a data gradient (attention's dQ, dK, dV
    from the scores: no weight of the module has their shape)."""
    if op == "_grouped_mm":
        a, b = args[0], args[1]
        offs = args[2] if len(args) > 2 else kwargs.get("offs")
        found = _grouped(a, b, offs)
        if found is None:
            return []
        g, m, n, k, counts, groups = found
    else:
        a, b = (args[0], args[1]) if op in QUANTIZED_GEMMS else (tensors[-2], tensors[-1])
        g = a.shape[0] if a.dim() == 3 else 1
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1] if b.dim() > 1 else 1
        counts, groups = _broadcast(a, b), g
    seen = GEMM_DTYPES.get(str(a.dtype).removeprefix("torch."))
    quantized = _quantized(op, a, outs)
    if seen is not None and not rec.in_attention and not quantized:  # the dtypes the module's
        rec.gemm_dtypes[seen] = rec.gemm_dtypes.get(seen, 0) + 1  # (unquantized) GEMMs ran in
    own = quantized or _own_gemm_dtypes(seen, outs, rec)
    reads_weight = id(a) in rec.weights or id(b) in rec.weights
    role = ("forward" if not backward else
            "backward-data" if reads_weight or not _weight_shaped(
                rec.params.get(owner, []), int(groups), int(m), int(n)) else
            "backward-weight")
    # B a weight (a Linear's forward and data gradient: x W^T, dY W): read from DRAM at
    # every use in a step that keeps more than the cache (analysis.residency); a table an
    # embedding gathers from (an output layer tied to it) is "tied": stored at the model's
    # dtype whatever the weight format, as memory counts it (``_weight_kind``)
    kept = _weight_kind(b, rec) if role != "backward-weight" else ""
    where = f"module {owner!r}" if owner else f"the top-level module ({rec.root})"
    if 0 in (int(m), int(n), int(k)):  # an empty slice inside the module: no GEMM to cost
        raise CaptureError(f"{where}: op aten.{op} multiplies an empty matrix (M {int(m)}, "
                           f"N {int(n)}, K {int(k)}): a dimension of 0 holds no values")
    if max(int(m), int(n), int(k), int(g)) > MAX_INT:  # the config route's bound (2**40)
        raise CaptureError(f"{where}: op aten.{op} multiplies M {int(m)}, N {int(n)}, K "
                           f"{int(k)} over {int(g)}: a dimension past 2**40 = {MAX_INT} is "
                           f"out of range, as in a model file; capture smaller inputs")
    gemm = GemmShape(owner, role, int(m), int(n), int(k), ("M", "N", "K"), (0, 0, 0),
                     int(g), tensors=counts, b_operand=kept, rows=_rows(a, b),
                     dtype=own[0] if own else "", c_dtype=own[1] if own else "")
    if op not in ADDED_INPUT_GEMMS or kwargs.get("beta", 1) == 0:
        return [gemm]
    pass_ = "backward" if backward else "forward"
    return [gemm, *_added_input(tensors[0], outs[0], pass_, owner)]


def _weight_shaped(shapes: list[tuple[int, ...]], g: int, m: int, n: int) -> bool:
    """Whether a backward GEMM's product (``g`` products of ``m`` x ``n``) has the shape of one
    of its module's parameters ``shapes``, as a weight gradient does (torch's linear backward:
    dW = dY^T X, the weight's (out, in); HF's Conv1D its (in, out)), in either orientation."""
    own = {(m, n), (n, m)} if g == 1 else {(g, m, n), (g, n, m)}
    return any(shape in own for shape in shapes)


def _root(t: Any) -> Any:
    """The tensor ``t`` is a view of (a parameter, for a weight's transpose), or ``t``."""
    return t._base if t._base is not None else t


def _weight_kind(b: Any, rec: _Recorder) -> str:
    """What a GEMM's B is (``GemmShape.b_operand``): "weight" for a parameter (or a view of
    one), recorded among the step's matrices (``Captured.matrix_parameters``: what a weight
    format stores); "tied" for a table an embedding of the step gathers from (GPT-2's LM head
    reads the token embedding's); "unquantized" for an untied LM head's weight, a matrix whose
    rows (nn.Linear's out_features) are the vocabulary, the rows of the largest table the step
    gathered from before it (the token embedding's, not a position or token-type table: BERT's
    2-row token types against a 2-label classifier), the rule of ``model.lm_head``: a weight
    format leaves it at the model's dtype (``model.quantized``), not among the matrices; "" for
    anything else."""
    if id(b) not in rec.weights:
        return ""
    parameter = _root(b)
    root = id(parameter)
    if root in rec.tables:
        return "tied"
    vocabulary = max((rec.weights[t].shape[0] for t in rec.tables if t in rec.weights),
                     default=None)
    if parameter.dim() == 2 and parameter.shape[0] == vocabulary:
        return UNQUANTIZED
    rec.matrices.add(root)
    return "weight"


def _tf32(items: list[Item], a: Any, allowed: bool) -> list[Item]:
    """``items`` with their GEMMs marked as torch runs them on a GPU that has TF32 (Ampere and
    later), where ``a``, the GEMM's input, is fp32 and torch's flag for the kind allows it:
    ``torch.backends.cudnn.allow_tf32`` for a convolution (True unless the user turned it off),
    ``torch.backends.cuda.matmul.allow_tf32`` for a matmul (False unless
    ``torch.set_float32_matmul_precision("high")`` or the flag turned it on), as read when the
    capture runs."""
    import torch

    if not allowed or getattr(a, "dtype", None) != torch.float32:
        return items
    return [i._replace(tf32=True) if isinstance(i, GemmShape) else i for i in items]


def _own_gemm_dtypes(seen: str | None, outs: list[Any],
                     rec: _Recorder) -> tuple[str, str] | None:
    """The operand and output dtypes of a GEMM that ran in another dtype than the model's
    (``seen``: its A's; a bf16 projection in an fp32 model, an fp32 head in a bf16 one): priced
    as it ran, and kept so under a dtype override, as an op in its own dtype is; None for one in
    the model's dtype, where that was not known before the run, and inside torch's own math
    attention (``attention="naive"``), which upcasts 16-bit inputs to fp32 (on the meta device,
    and on CUDA unless ``allowFP16BF16ReductionMathSDP``): naive stands for an unfused attention
    in the model's dtype, a model's own matmul, softmax and matmul (Hugging Face's eager
    attention), and is priced so."""
    if seen is None or rec.dtype is None or seen == rec.dtype or rec.in_attention or not outs:
        return None
    out = _dtype_name(outs[0].dtype)
    return (seen, out) if out else None


def _quantized(op: str, a: Any, outs: list[Any]) -> tuple[str, str] | None:
    """A quantized GEMM's (``QUANTIZED_GEMMS``) operand and output dtypes, as roofline names
    them; None for any other GEMM, or one whose dtypes roofline has no name for."""
    if op not in QUANTIZED_GEMMS or not outs:
        return None
    operands, out = _dtype_name(a.dtype), _dtype_name(outs[0].dtype)
    return (operands, out) if operands and out else None


def _grouped(a: Any, b: Any, offs: Any
             ) -> tuple[int, int, int, int, tuple[int, int, int] | None, int] | None:
    """A grouped GEMM (``torch._grouped_mm``, the experts of a mixture as transformers runs
    them) as the batched GEMM it is under even routing: (products g, m, n, k, the elements of
    A, B and C, the groups its output holds). With ``offs`` (G groups) the T rows the offsets
    split, whose split a capture cannot see (it depends on values), spread as a mixture of
    experts layer spreads its routed rows (``layers.transformer``, ``_expert_rows``): over
    min(G, T) groups, ceil(T / that) each. 2-D x 3-D: each row times its group's matrix (the
    forward and the data gradient: A T x K, B G x K x N); 2-D x 2-D: a product per group over
    its rows, a G x M x N output (the experts' weight gradient, K the rows); 3-D x 2-D: a
    matrix per group times its columns. Without ``offs``, a batched GEMM (3-D x 3-D). None:
    no rows."""
    if offs is None:
        return (int(a.shape[0]), int(a.shape[-2]), int(b.shape[-1]), int(a.shape[-1]), None,
                int(a.shape[0]))
    groups = int(offs.numel())
    if a.dim() == 2 and b.dim() == 3:
        t, k = (int(d) for d in a.shape)
        n = int(b.shape[-1])
        active = min(groups, t)
        return (active, -(-t // active), n, k, (t * k, active * k * n, t * n),
                groups) if t else None
    if a.dim() == 2 and b.dim() == 2:
        m, t = (int(d) for d in a.shape)
        n = int(b.shape[-1])
        active = min(groups, t)
        return (active, m, n, -(-t // active), (m * t, t * n, groups * m * n),
                groups) if t else None
    m, k = int(a.shape[-2]), int(a.shape[-1])  # 3-D x 2-D
    t = int(b.shape[-1])
    active = min(groups, t)
    return (active, m, -(-t // active), k, (active * m * k, k * t, m * t), groups) if t else None


def _broadcast(a: Any, b: Any) -> tuple[int, int, int] | None:
    """The elements of A, B and C (``GemmShape.tensors``) of a batched GEMM whose A (g, m, k) or
    B (g, k, n) is broadcast along the batch, a batch stride of 0: one matrix in memory that
    every one of the g products reads, so counted once, not g times; None when neither is (the
    matrices themselves). torch.matmul makes one where it cannot fold a 3-D input into a 2-D
    GEMM without a copy (a transposed view, such as nn.MultiheadAttention's batch_first input,
    with a weight that needs no gradient): it expands the weight along the batch and runs bmm,
    which cuBLAS runs as a strided batched GEMM with a stride of 0 on it. Recorded as that bmm
    (g products of m x n x k: its tiles and waves are the ones it runs), not as the one 2-D GEMM
    a copy would have allowed. As with grouped-query attention's shared K and V, which
    ``tensors`` states too, ``analysis.alignment`` then checks no row's bytes of it."""
    if a.dim() != 3 or a.shape[0] == 1 or (a.stride(0) and b.stride(0)):
        return None
    g, m, k, n = (int(d) for d in (a.shape[0], a.shape[1], a.shape[2], b.shape[-1]))
    return (m * k if not a.stride(0) else g * m * k, k * n if not b.stride(0) else g * k * n,
            g * m * n)


def _rows(a: Any, b: Any) -> tuple[int, int, int]:
    """The dimension (0 M, 1 N, 2 K) each of A (.., m, k), B (.., k, n) and C runs along in
    memory, from the operands' strides (``GemmShape.rows``): A along K when its last stride is 1,
    else along M (a transposed view: a weight gradient's dY^T); B along K when its rows are
    apart and its columns adjacent (a weight read as W^T), else along N; C as torch allocates
    it, along N. A vector B (``mv``) runs along K."""
    a_row = 2 if a.stride(-1) == 1 else 0
    b_row = 2 if b.dim() == 1 or (b.stride(-2) == 1 and b.stride(-1) != 1) else 1
    return a_row, b_row, 1


def _added_input(added: Any, out: Any, pass_: str, owner: str) -> list[Item]:
    """The ``bias`` op of an ``addmm`` / ``baddbmm`` (out = beta input + A.B with beta not 0:
    a Linear's bias) as torch runs it on a CPU: the input, broadcast, copied into the output,
    then the GEMM with beta = 1, which reads the output back. So the input read once, the
    output written and read again, one add a value: what a model.yaml layer's ``bias`` op moves
    (``model.ops.bias_activation``), recorded whatever the device, as that op is (a GPU adds it
    in the GEMM's epilogue instead, and ``analysis.gpu_ops`` prices it so: 0 s)."""
    if not (added.is_floating_point() and out.is_floating_point()):
        return []
    return [_bias_op(owner, pass_, "bias", out.numel(), added.numel(), "linear")]


def _bias_op(owner: str, pass_: str, kind: str, elements: int, bias_values: int,
             follows: str, summed: SumShape | None = None) -> CapturedOp:
    """A layer's ``bias`` or ``bias-backward`` op over ``elements`` output values, with the
    FLOPs and passes ``model.ops.ELEMENTWISE`` gives it, plus the ``bias_values`` of the bias
    itself (read forward, written backward), after a product of ``follows``; ``summed``: the
    sum a bias gradient is (``_conv_bias_sums``)."""
    flops, reads, writes = ELEMENTWISE[kind]
    return CapturedOp(owner, pass_, kind, flops * elements, (reads + writes) * elements
                      + bias_values, 0, follows=follows, summed=summed)
