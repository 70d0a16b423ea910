"""The PyTorch front end: run an ``nn.Module`` on the meta device (shapes, no memory, no
arithmetic) and record every GEMM and op it runs, forward and, when training, backward, into a
``Network`` of ``Captured`` layers, one per module that ran something.

How: the parameters, buffers and inputs are replaced by meta tensors of the same shapes and
dtypes (``torch.func.functional_call``; the user's module is not touched), and two modes listen:
a dispatch mode sees each aten op below autograd, and a function mode above it tags each
autograd node with the module that made it, so that a backward op is charged to the module
whose forward created it (``torch.utils.module_tracker`` names the module in the forward).

- GEMMs: ``mm``, ``addmm`` (M, N, K from the operands), ``bmm``, ``baddbmm`` (batch_count;
  an operand broadcast along the batch, a stride of 0, is one matrix read once: ``_broadcast``),
  ``convolution`` and ``convolution_backward`` of 2-D convolutions, whose GEMMs are the ones a
  ``conv2d`` layer of model.yaml gives (NVIDIA's implicit-GEMM shapes, tensor bytes): the same
  layer code makes them; a 1-D convolution's (``Conv1d``, ``ConvTranspose1d``) as the 2-D one
  of height 1 it is (``_as_2d``); a transposed convolution's as the conv2d of the same filters
  whose data gradient it is (its forward that conv2d's data gradient, its data gradient that
  one's forward, its weight gradient that one's: ``_conv_transposed``); a 3-D one's (``Conv3d``,
  ``ConvTranspose3d``) by the same rules a dimension more (``capture_convs._conv3d``).
  In the backward, a GEMM whose output has the shape of one of its module's parameters is the
  weight gradient; any other is a data gradient.
- ``_int_mm`` and ``_scaled_mm`` (torch's int8 and scaled fp8 GEMMs, torchao's and fp8
  training's) are GEMMs in their own operand and output dtypes whatever the model's
  (``QUANTIZED_GEMMS``: ``GemmShape.dtype``, ``c_dtype``).
- ``_grouped_mm`` (transformers' mixture-of-experts GEMMs): a batched GEMM over the experts,
  the rows its offsets split spread evenly over min(G, T) of them (``_grouped``), as the
  config route's mixture of experts spreads them.
- ``addmm`` / ``baddbmm`` with beta not 0 (a Linear's bias) add a ``bias`` op after their
  GEMM, the layer code's op of that name: torch's CPU kernel copies the input into the output
  and multiplies with beta = 1 (``_added_input``).
- ``scaled_dot_product_attention`` with ``attention="flash"`` (the default) is one fused op, as
  FlashAttention runs it (FLOPs 4 B H Sq Sk D forward, 10/4 of that backward, halved when
  causal; bytes Q, K, V, O read or written once, and, training, the fp32 log-sum-exp per query
  row written forward and read backward; an ``attn_mask`` read forward and backward, a boolean
  one converted first, and a mask that needs a gradient, T5's position bias, given it:
  ``_fused_attention``; its output and gradients laid out in memory as torch's kernel lays
  them out, so that the model's copies of them are the ones a device makes: ``_laid_out``):
  the same op a transformer layer gives, wherever it
  is called from (from inside a torch function too, as ``nn.MultiheadAttention`` with
  ``need_weights=False`` calls it: ``_attention_seen``). With
  ``attention="naive"`` it runs as torch runs it on the meta device: two batched GEMMs and a
  softmax. ``nn.MultiheadAttention`` with ``need_weights=True`` (its default) calls none: torch
  computes the scores itself to return them (bmm, softmax, bmm), and they are recorded so.
- ``F.dropout`` (and ``torch.dropout``) in training runs as torch runs it on a CUDA tensor: one
  ``native_dropout`` kernel (x read; y and a 1-byte mask written) and its backward (dY and the
  mask read, dX written), not the three passes a meta (or CPU) tensor decomposes it into
  (``_fused_dropout``). An in-place dropout, which CUDA decomposes too, runs as given; so does
  one that torch's own functions call inside themselves, where the function mode is off.
- Every other op is an op of the step: its bytes are its tensors (inputs read once, outputs
  written once; a view moves nothing and is left out), each at its own element size: those of
  the model's dtype take the step's (an override changes them), any other keeps its own (an
  integer index, a mask, an upcast the model's code makes: Hugging Face's loss on
  ``logits.float()``, Llama's RMSNorm in fp32, whose op then names its ``dtype``: ``_scales``),
  its FLOPs from ``FLOPS_PER_ELEMENT``;
  an op with no known FLOP count keeps its bytes and is named in ``Network.uncosted``. An
  eval-mode ``native_batch_norm`` is recorded as ``_native_batch_norm_legit_no_training``
  (torch's eval-only form: a scale and shift, 2 FLOPs a value, no statistics), so that its
  cost on a CPU (``analysis.cpu_ops``) follows from its name. An argument torch passes for
  its shape only is not counted as read (``SHAPE_ONLY_ARGS``): a pooling backward's forward
  input, the nll loss backward's log-probabilities (it zero-fills the gradient, then writes one
  value per target), a fill's model tensor (``zeros_like``, ``new_zeros``). An op that reads a
  tensor by index reads one value of it per index, not all of it, and its FLOPs count per index
  (``GATHERS``): ``embedding``, ``index_select``, ``gather`` and ``index`` the source values
  they return; the loss after a log-softmax (``nll_loss_forward``, ``nll_loss2d_forward`` for
  a 4-D input) the log-probability at each target and, given one, the class weight there,
  so that ``F.cross_entropy`` over a vocabulary reads its N x V log-probabilities once, in the
  log-softmax, not again in the loss. An in-place op that writes a tensor by index moves the
  values it writes, not the tensor (``SCATTERS``: ``index_copy_``, ``index_put_``, ``scatter_``
  and their accumulating forms): a KV cache updated in place moves the new token's keys; their
  out-of-place forms copy the tensor whole first (``FUNCTIONAL_SCATTERS``), except a backward
  formula's into the zeros it just made (the backward of ``gather``, ``index``,
  ``index_select``, ``topk``, ``max(dim)``, ``sort``), which torch runs in place and the meta
  device out of place (``_in_place_on_zeros``): a per-token log-probability's backward writes
  one value a row, not the N x V gradient twice more. A loss
  torch computes in several passes inside one op (``mse_loss``, ``huber_loss``,
  ``smooth_l1_loss``, ``binary_cross_entropy`` and its ``_with_logits`` form, their backward)
  moves what those passes move: its temporaries written and read back (``LOSS_PASSES``).

- A torch optimizer, when one is given, steps on the meta parameters and the gradients the
  backward left them: the first step creates its state and is not recorded; the second is, each
  aten op summed over the parameters as one op of pass ``update`` (module ``optimizer``); ops
  on host tensors only (the step count torch keeps on the CPU) are left out; the states the
  first step made are the step's optimizer memory (``capture_memory.Live.kept``).
- A value the module reads back (``.item()``, ``bool()`` of a tensor) is answered from the
  example inputs' own values where it follows from them (``capture_values``): transformers'
  "does the attention mask pad any token?", so the path taken is the one those inputs take.
- The tensors the run holds at once beyond the parameters, at their peak, are the step's
  activations in memory (``capture_memory``: ``Network.captured_live``).

Here: the run under its two modes and the Network it makes (``capture_network``). Beside it,
each in its own module: what the run saw (``capture_recorder``), one aten op as its GEMMs and ops
(``capture_ops``) by the op tables (``capture_tables``), GEMMs (``capture_gemms``),
convolutions (``capture_convs``), the shapes of sums, norms and softmaxes (``capture_shapes``),
gathers and scatters (``capture_indexed``), losses of several passes (``capture_losses``), the
fused attention (``capture_attention``), how an op's tensors are counted (``capture_tensors``),
a torch optimizer's step (``capture_optimizer``), the values and memory followed
(``capture_values``, ``capture_memory``) and ``package.module:callable`` (``capture_factory``).

torch is imported inside the functions: it is an optional extra (``roofline[torch]``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import CaptureError, RooflineError
from .capture_attention import _attention_seen, _fused_attention
from .capture_factory import is_factory, load_factory
from .capture_memory import Live
from .capture_ops import _items
from .capture_optimizer import _optimizer, _record_update, _step
from .capture_recorder import _metadata, _Recorder
from .capture_tables import FLOPS_PER_ELEMENT
from .capture_tensors import _flatten, _numel
from .capture_values import LIMIT as VALUES_LIMIT
from .dtypes import DTYPES, TORCH_DTYPES, dtype_name
from .layers.captured import Captured, CapturedOp
from .network import Network
from .network_settings import MODES, OPTIMIZER_CHOICES

#: the names callers import from here, some of them defined in the capture_* modules
__all__ = ["ATTENTION", "MODES", "CaptureError", "FLOPS_PER_ELEMENT", "capture_network",
           "is_factory", "load_factory"]

ATTENTION = ("flash", "naive")


def capture_network(module: Any, example_inputs: Sequence[Any], mode: str = "inference",
                    dtype: str | None = None, attention: str = "flash",
                    optimizer: Any = "none", name: str | None = None,
                    example_kwargs: Mapping[str, Any] | None = None) -> Network:
    """``module`` run on ``example_inputs`` and the keyword inputs ``example_kwargs``
    (``module(*example_inputs, **example_kwargs)``: a Hugging Face model's ``input_ids=``,
    ``attention_mask=``; tensors keep their shapes, not their values), its work as a Network
    at the batch of the first input's leading dimension (the first positional tensor, else the
    first keyword one). ``optimizer``: a
    name (none, sgd, adam: the update op of ``model/ops.py``) or a torch optimizer, recorded
    (see ``_optimizer``). The module runs in ``mode`` (``module.train(mode == "train")``: an
    inference step without dropout and with the running statistics, whatever mode it was left
    in), and gets its own flags back."""
    _check_arguments(module, mode, attention, optimizer, example_kwargs)
    dtype = dtype_name(dtype)  # type: ignore[assignment]  # torch.float16, "bfloat16", ...
    cast = _torch_dtype(dtype) if dtype is not None else None
    label = name or type(module).__name__
    kwargs = dict(example_kwargs or {})
    every = (*example_inputs, *kwargs.values())
    batch = _batch_of(example_inputs, kwargs, label)
    train = mode == "train"
    params = _owned(module, remove_duplicate=True)  # each parameter counted once
    step = None if isinstance(optimizer, str) else _optimizer(optimizer, label)
    # the model's dtype: asked for, else its first floating parameter's, buffer's or input's,
    # else the dtype most of its GEMMs ran in (weights kept as plain tensors: the module then
    # runs again, each tensor counted against that dtype); a GEMM that ran in another is priced
    # in its own (``_own_gemm_dtypes``)
    run = (module, (tuple(example_inputs), kwargs), cast, train, attention == "flash", label,
           step)
    rec = _recorded(*run, dtype or _dtype_of({**dict(module.named_parameters()),
                                               **dict(module.named_buffers())}, every))
    if rec.dtype is None and rec.gemm_dtypes:
        rec = _recorded(*run, max(rec.gemm_dtypes, key=rec.gemm_dtypes.__getitem__))
    if _first_tensor(example_inputs, kwargs) in rec.unbatched:
        batch = 1  # an unbatched input, (C, D, H, W): its leading dimension is not the batch
    net_dtype = rec.dtype or "fp32"
    source = f"<torch {label}>"
    layers = []
    for owner in dict.fromkeys([*rec.forward, *params]):
        count = sum(_numel(s) for s in params.get(owner, []))
        forward, backward = (_named(book.get(owner, []), owner or label)
                             for book in (rec.forward, rec.backward))
        layers.append(Captured(owner or label, batch, forward, backward, count, source,
                               rec.owned_matrices.get(owner, 0)))
    if not layers:
        raise CaptureError(f"{label}: the module ran no op that computes or moves data (only "
                           f"views or an identity, and no parameter): nothing to analyze")
    update = tuple(CapturedOp("optimizer", "update", kind, sums[0], sums[1], sums[2],
                              dtype=own) for (kind, own), sums in rec.update.items())
    kind = optimizer if step is None else rec.kind
    return Network(label, batch, net_dtype, mode, tuple(layers), optimizer=kind,
                   source=source, uncosted=tuple(sorted(rec.uncosted)), update=update,
                   nchw_convs=rec.nchw_convs,
                   channels_last_depthwise_3d=tuple(rec.channels_last_depthwise),
                   gemm_dtypes=tuple(sorted(rec.gemm_dtypes.items())), captured_loss=rec.loss,
                   captured_live=rec.live.peak if rec.live is not None else None,
                   captured_optimizer=rec.optimizer_states, captured_attention=attention)


def _batch_of(example_inputs: Sequence[Any], kwargs: dict[str, Any], label: str) -> int:
    """The batch the inputs hold, the first tensor's leading dimension (the first positional
    one, else the first keyword one); one line for no such tensor, or for an input with a
    dimension of 0 (nothing to run: its GEMMs would have an empty dimension)."""
    import torch

    given = [*((f"example input {i}", x) for i, x in enumerate(example_inputs)),
             *((f"example input {key!r}", x) for key, x in kwargs.items())]
    tensors = [(what, x) for what, x in given if isinstance(x, torch.Tensor)]
    if not tensors or tensors[0][1].dim() == 0:
        raise CaptureError(f"{label}: the first example input must be a tensor whose leading "
                           f"dimension is the batch")
    for what, x in tensors:
        if 0 in x.shape:
            empty = list(x.shape).index(0)
            fix = ("give a batch of 1 or more" if empty == 0 else
                   f"its dimension {empty} is 0: give it 1 or more")
            raise CaptureError(f"{label}: {what} has shape {tuple(x.shape)}: a dimension of 0 "
                               f"holds no values ({fix})")
    return int(tensors[0][1].shape[0])


def _named(items: list[Any], name: str) -> tuple[Any, ...]:
    """A module's GEMMs and ops under its layer's name: the top-level module's, recorded under
    "" (no qualified name), under its class's, as its layer is named (tables read an empty
    layer column and advice "channels 3 (.in_channels)")."""
    return tuple(i if i.layer else i._replace(layer=name) for i in items)


def _first_tensor(example_inputs: Sequence[Any], kwargs: dict[str, Any]) -> tuple[int, ...]:
    """The shape of the first tensor among the inputs, whose leading dimension ``_batch_of``
    reads as the batch; a convolution that takes it unbatched (``_Recorder.unbatched``) runs it
    at a batch of 1, as torch does (``batchify``, aten/src/ATen/native/Convolution.cpp)."""
    import torch

    return next(tuple(x.shape) for x in (*example_inputs, *kwargs.values())
                if isinstance(x, torch.Tensor))


def _check_arguments(module: Any, mode: str, attention: str, optimizer: Any,
                     example_kwargs: Any) -> None:
    """A capture's arguments as it takes them, else one line (CaptureError)."""
    import torch

    if not isinstance(module, torch.nn.Module):
        raise CaptureError(f"expected a torch.nn.Module, got {type(module).__name__}")
    checks: list[tuple[str, Any, tuple[str, ...]]] = [("mode", mode, MODES),
                                                      ("attention", attention, ATTENTION)]
    if isinstance(optimizer, str):
        checks.append(("optimizer", optimizer, OPTIMIZER_CHOICES))
    for key, value, choices in checks:
        if value not in choices:
            raise CaptureError(f"{key}: expected one of {', '.join(choices)}, got {value!r}")
    if not isinstance(optimizer, str) and mode != "train":
        raise CaptureError("optimizer: a torch optimizer steps in mode train only, the mode "
                           f"is {mode}")
    if example_kwargs is not None and not isinstance(example_kwargs, Mapping):
        raise CaptureError(f"example_kwargs: expected a dict of keyword inputs, got "
                           f"{type(example_kwargs).__name__}")


def _recorded(module: Any, given: tuple[tuple[Any, ...], dict[str, Any]], cast: Any,
              train: bool, flash: bool, label: str, step: Callable[[list[Any]], Any] | None,
              model_dtype: str | None) -> _Recorder:
    """``module`` run once on meta copies of its state and inputs, ``given`` positional and by
    keyword (floating-point ones cast to ``cast`` when given), in mode train or not, each
    tensor counted against ``model_dtype`` (``_scales``)."""
    import torch

    example_inputs = (*given[0], *given[1].values())

    meta_params = {n: _meta(p, cast).requires_grad_(train and p.requires_grad)
                   for n, p in module.named_parameters()}
    meta_buffers = {n: _meta(b, cast) for n, b in module.named_buffers()}
    inputs = tuple(_meta(x, cast) if isinstance(x, torch.Tensor) else x for x in example_inputs)
    # a tied weight (GPT-2's LM head shares the token embedding's) also belongs to each module
    # that uses it: there, a backward GEMM that reads no weight is the weight gradient
    rec = _Recorder(type(module).__name__, train, flash, _owned(module, remove_duplicate=False),
                    dtype=model_dtype)
    rec.weights = {id(p): p for p in meta_params.values()}
    torch_names = {v: k for k, v in TORCH_DTYPES.items()}
    rec.live = Live(getattr(torch, torch_names.get(model_dtype or "", "float32")),
                    [*meta_params.values(), *meta_buffers.values()], inputs)
    positional = len(given[0])
    args, kwargs = inputs[:positional], dict(zip(given[1], inputs[positional:]))
    # values given (not on the meta device) for a read back to answer (capture_values.py): the
    # inputs' (token ids, an attention mask) and the integer buffers' (position ids)
    for meta, given in zip(inputs, example_inputs):
        if isinstance(given, torch.Tensor):
            rec.values.seed(meta, given)
    for n, b in module.named_buffers():
        if not b.is_floating_point():
            rec.values.seed(meta_buffers[n], b)
    # the step asked for, whatever mode the module was left in (a new module trains: its
    # dropout and batch statistics would run in an inference step); its own flags come back
    flags = {m: m.training for m in module.modules()}
    module.train(train)
    try:
        _run(module, meta_params | meta_buffers, (args, kwargs), rec, label, step)
    finally:
        for m, flag in flags.items():
            m.training = flag
    for qualified, p in meta_params.items():  # the matrices by the module that owns them
        if id(p) in rec.matrices - rec.tables:
            owner = qualified.rsplit(".", 1)[0] if "." in qualified else ""
            rec.owned_matrices[owner] = rec.owned_matrices.get(owner, 0) + p.numel()
    return rec


def _owned(module: Any, remove_duplicate: bool) -> dict[str, list[tuple[int, ...]]]:
    """Module name -> the shapes of its own parameters."""
    params: dict[str, list[tuple[int, ...]]] = {}
    for qualified, p in module.named_parameters(remove_duplicate=remove_duplicate):
        owner = qualified.rsplit(".", 1)[0] if "." in qualified else ""
        params.setdefault(owner, []).append(tuple(p.shape))
    return params


def _meta(x: Any, cast: Any) -> Any:
    """A meta copy of ``x`` (cast to ``cast`` where it is floating point) of its strides where
    it is channels last: ``empty_like`` gives a 1 x 1 x 1 filter in channels_last_3d NCDHW's
    strides (its size-1 axes make both layouts contiguous), and the convolution would then be
    taken as one cuDNN transposes around (``capture_convs._channels_last``)."""
    import torch

    dtype = cast if cast is not None and x.is_floating_point() else x.dtype
    if (x.dim() == 5 and x.is_contiguous(memory_format=torch.channels_last_3d)) or (
            x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last)):
        return torch.empty_strided(x.shape, x.stride(), device="meta", dtype=dtype)
    return torch.empty_like(x, device="meta", dtype=dtype)


def _torch_dtype(dtype: str) -> Any:
    import torch

    names = {v: k for k, v in TORCH_DTYPES.items()}
    if dtype not in names:
        runs = [d for d in DTYPES if d in names]  # fp64, fp32, fp16, bf16
        raise CaptureError(f"dtype: capture runs {', '.join(runs)}, got {dtype!r}")
    return getattr(torch, names[dtype])


def _dtype_of(params: dict[str, Any], inputs: tuple[Any, ...]) -> str | None:
    """The first floating-point tensor's dtype among ``params`` and ``inputs`` that a model
    computes in (``TORCH_DTYPES``); None if none is. A float8 tensor (weights stored scaled,
    as torchao keeps them) is passed over, not read as fp32: the next one, else the dtype
    most GEMMs ran in, sets the model's."""
    import torch

    for x in [*params.values(), *inputs]:
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            name = TORCH_DTYPES.get(str(x.dtype).removeprefix("torch."))
            if name is not None:
                return name
    return None


def _run(module: Any, state: dict[str, Any], inputs: tuple[tuple[Any, ...], dict[str, Any]],
         rec: _Recorder, label: str,
         optimizer: Callable[[list[Any]], Any] | None = None) -> None:
    import torch
    from torch.utils.module_tracker import ModuleTracker

    try:
        with ModuleTracker() as tracker, _modes(rec, tracker):
            out = torch.func.functional_call(module, state, inputs[0], inputs[1])
            if rec.train:
                outs = [o for o in _flatten(out) if isinstance(o, torch.Tensor)
                        and o.requires_grad]
                if not outs:
                    raise CaptureError(f"{label}: mode train, but no output needs a gradient "
                                       f"(no trainable parameter was used)")
                # a scalar among them is the loss it returned (a Hugging Face model given labels
                # returns it beside the logits): a training step backpropagates that alone, the
                # first where there are several (a metric logged beside the loss: a training
                # loop calls backward on the loss, not on what it only logs)
                losses = [o for o in outs if o.dim() == 0][:1]
                rec.module, rec.loss, outs = "", bool(losses), losses or outs
                torch.autograd.backward(outs, [torch.empty_like(o) for o in outs])
            if rec.live is not None:  # the optimizer's states: memory's optimizer part
                rec.live.on = False
            if optimizer is not None:
                _step(rec, optimizer, [p for p in state.values() if p.requires_grad], label)
    except RooflineError:
        raise
    except Exception as exc:  # the user's module failing on meta tensors: say where
        module = f"module {rec.module or label!r}"
        if rec.failed or not rec.last:  # an op failed, or the code before the first op
            where = module + (f", op {rec.last}" if rec.last else "")
        else:  # every op ran: the module's own code raised after the last one
            where = f"the module's code, after op {rec.last} in {module},"
        text = " ".join(str(exc).split())[:300]
        raise CaptureError(f"{label}: {where} failed on the meta device ({type(exc).__name__}: "
                           f"{text}); capture needs a module whose work follows from shapes, "
                           f"or from the values of example inputs given on the host (token "
                           f"ids, an attention mask; {VALUES_LIMIT:,} values at most each): "
                           f"no .item() of weights or activations, no branch on them") from None


@contextmanager
def _modes(rec: _Recorder, tracker: Any) -> Iterator[None]:
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    def current() -> str:
        names = [p for p in tracker.parents if p != "Global"]
        deepest = max(names, key=len, default=rec.root)
        return deepest.split(".", 1)[1] if "." in deepest else ""

    sdpa = torch._C._nn.scaled_dot_product_attention  # F's, the function the mode sees
    dropouts = (torch.nn.functional.dropout, torch.dropout)
    convolutions = (torch.conv1d, torch.conv2d, torch.conv3d, torch.conv_transpose1d,
                    torch.conv_transpose2d, torch.conv_transpose3d)  # F.conv3d's, ...

    class Functions(TorchFunctionMode):
        def __torch_function__(self, func: Callable[..., Any], types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if func is sdpa and rec.flash:
                return _fused_attention(rec, current(), *args, **kwargs)
            if func in convolutions and len(args) > 1 and args[0].dim() == args[1].dim() - 1:
                rec.unbatched.add(tuple(args[0].shape))  # torch unsqueezes a batch of 1
            naive = func is sdpa
            rec.in_attention += naive  # torch's math attention upcasts its GEMMs to fp32
            rec.handling += 1
            try:
                out = (_fused_dropout(func, *args, **kwargs) if func in dropouts
                       else func(*args, **kwargs))
            finally:
                rec.in_attention -= naive
                rec.handling -= 1
            if not tracker.is_bw:
                _tag([o.grad_fn for o in _flatten(out) if isinstance(o, torch.Tensor)],
                     current())
            return out

    class Dispatch(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            op = func.overloadpacket.__name__
            if not rec.quiet:  # named before it runs: an op that fails is the one named
                rec.module, rec.last = _owner(rec, current)[0], f"aten.{op}"
            answered, out = _ran(rec, func, args, kwargs)
            if not rec.quiet and not answered:
                _record(rec, op, args, out, current, kwargs, bool(func.is_view))
            return out

    functions = Functions()
    with _attention_seen(rec, functions), functions, Dispatch():
        yield


def _ran(rec: _Recorder, func: Any, args: Any, kwargs: dict[str, Any]) -> tuple[bool, Any]:
    """An aten op run on the meta device, its output's values followed where known
    (capture_values.py); or a value it reads back, answered from the known values: (True, the
    value), an op that moves nothing on the device."""
    if not rec.depth:  # an outermost op: what failed before is behind us
        rec.failed = False
    answered, value = rec.values.read(func, args, kwargs)
    if answered:
        return True, value
    rec.depth += 1
    try:
        out = func(*args, **kwargs)
    except BaseException:
        rec.failed = True  # the op's failure, even as it propagates through the module
        raise
    finally:
        rec.depth -= 1
    out = _laid_out(func, args, out)
    rec.values.follow(func, args, kwargs, out)
    if rec.live is not None:
        rec.live.made(out)
    return False, out


def _laid_out(func: Any, args: Any, out: Any) -> Any:
    """``out`` as torch lays it out on a device: a 2-D or 3-D convolution's output channels last
    where its input or its weight is (``cudnn_conv_suggest_memory_format``, and the CPU's
    oneDNN alike), which the meta device does not do (its ``convolution`` returns a contiguous
    output whatever its operands; its ``convolution_backward`` already lays the input's gradient
    out as the input). Without it, a module whose input alone was made channels last would read
    as NCHW from its second convolution on, charged cuDNN's transposes it does not run."""
    if func.overloadpacket.__name__ != "convolution":  # every op passes here: the name first
        return out
    import torch

    from .capture_convs import _channels_last

    if (not isinstance(out, torch.Tensor) or out.dim() not in (4, 5)
            or not (_channels_last(args[0]) or _channels_last(args[1]))):
        return out
    last = torch.channels_last if out.dim() == 4 else torch.channels_last_3d
    return out.contiguous(memory_format=last)


def _fused_dropout(func: Callable[..., Any], x: Any, p: float = 0.5, *rest: Any,
                   **kwargs: Any) -> Any:
    """``F.dropout`` (or ``torch.dropout``) as torch runs it on a CUDA tensor: in training with
    0 < p < 1, out of place, ``at::native_dropout``, one kernel that reads x and writes y and a
    boolean mask (1 B a value), whose backward (``native_dropout_backward``) reads dY and the
    mask and writes dX (aten/src/ATen/native/Dropout.cpp, ``dropout``:
    ``is_fused_kernel_acceptable``; cuda/Dropout.cu, ``dropout_cuda``,
    ``native_dropout_backward_cuda``). On any other tensor, the meta device's included, torch
    runs ``_dropout_impl``: ``empty_like(x).bernoulli_(1 - p)``, ``div_(1 - p)``, ``x * noise``
    and ``dY * noise`` backward, 9 values a value where the fused kernel moves 4 and the mask.
    Any other call (not training, p 0 or 1, in place: ``dropout_`` takes ``_dropout_impl`` on
    CUDA too) runs as given."""
    import torch

    training = bool(rest[0] if rest else kwargs.get("training", kwargs.get("train", True)))
    inplace = bool(rest[1] if len(rest) > 1 else kwargs.get("inplace", False))
    if (training and not inplace and 0 < p < 1 and isinstance(x, torch.Tensor)
            and x.is_floating_point() and x.numel()):
        return torch.native_dropout(x, p, True)[0]
    return func(x, p, *rest, **kwargs)


def _tag(nodes: list[Any], owner: str) -> None:
    """Charge to ``owner`` the autograd nodes a call made: those reachable from its outputs
    that no earlier call tagged (linear on a 3-D input makes a view, an addmm and a view)."""
    while nodes:
        node = nodes.pop()
        if node is None or "roofline_module" in _metadata(node):
            continue
        _metadata(node)["roofline_module"] = owner
        nodes += [child for child, _ in node.next_functions]


def _record(rec: _Recorder, op: str, args: Any, out: Any, current: Callable[[], str],
            kwargs: dict[str, Any], view: bool = False) -> None:
    """One aten op, charged in the backward to the module whose forward made the autograd node
    that runs it, in the forward to the innermost module running; ``view``: its schema says
    its output aliases its input (``OpOverload.is_view``), a view that moves nothing."""

    if rec.updating:
        _record_update(rec, op, args, out, view)
        return
    owner, backward = _owner(rec, current)
    for item in _items(op, args, out, backward, owner, rec, kwargs, view):
        rec.add(owner, backward, item)


def _owner(rec: _Recorder, current: Callable[[], str]) -> tuple[str, bool]:
    """The module an op running now belongs to, and whether it runs in the backward."""
    import torch

    if rec.updating:
        return "optimizer", False
    node = torch._C._current_autograd_node()
    if node is None:
        return current(), False
    return _metadata(node).get("roofline_module", ""), True
