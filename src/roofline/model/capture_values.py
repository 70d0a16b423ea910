"""The values a capture knows: its example inputs' own, and what small ops make of them.

A capture runs the module on meta tensors, which have shapes and no values. Some modules read a
value back to choose their path: Hugging Face's models ask whether an attention mask has any
padding (``(mask.sum() == mask.numel())`` read with ``bool()``), and with none they attend with
``is_causal`` (FlashAttention's kernel), else through a materialized mask (the memory-efficient
kernel). On meta tensors that read fails (``Tensor.item() cannot be called on meta tensors``),
so a model called as users call it, with the tokenizer's mask, could not be captured.

``Values`` keeps, beside a meta tensor, its values on the host wherever they follow from what
the capture was given: an example input or buffer given with values (a tensor not on the meta
device) of at most ``LIMIT`` elements, and every op's output of at most ``LIMIT`` elements
whose tensor arguments all have known values (the op run again on the host copies: a mask's
sum, a comparison, ``arange``). A read back (``SCALAR_READS``) of a tensor with known values
answers with them, so the module takes the branch it takes on those inputs; of any other, it
fails as before. Nothing is guessed: a value that does not follow is not known.

- Random ops (torch's ``nondeterministic_seeded`` tag) make unknown values; ``empty`` ones are
  known as zeros (whatever a module reads of them before it writes them is undefined anyway).
- An op that writes into a tensor with known values from one without forgets them, and those
  of every tensor that shares its memory (its views, its base).
- Host copies never enter the capture's count: the op runs inside the capture's dispatch mode,
  which is off while it handles an op.
"""

from __future__ import annotations

from typing import Any

from .capture_memory import storage_of

#: elements of the largest tensor whose values are followed (a mask of 8 x 8,192 tokens)
LIMIT = 1 << 20
#: aten ops that read a tensor's values back into Python (``.item()``, ``bool()``,
#: ``torch.equal``)
SCALAR_READS = frozenset({"_local_scalar_dense", "is_nonzero", "equal"})
#: ops whose values are undefined until written: known as zeros
EMPTIES = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})


class Values:
    """Host copies of the values of meta tensors, by tensor identity (weakly held)."""

    def __init__(self) -> None:
        from torch.utils.weak import WeakIdKeyDictionary

        self.known: Any = WeakIdKeyDictionary()

    def seed(self, meta: Any, given: Any) -> None:
        """``given``'s values for ``meta`` (its meta copy, perhaps cast), when it has values."""
        if given.device.type == "meta" or given.layout != meta.layout:
            return
        try:
            if given.numel() <= LIMIT:
                self.known[meta] = given.detach().to("cpu", meta.dtype, copy=True)
        except (RuntimeError, NotImplementedError):  # a tensor subclass: its values unknown
            return

    def read(self, func: Any, args: Any, kwargs: dict[str, Any]) -> tuple[bool, Any]:
        """A read back (``SCALAR_READS``) of tensors with known values: (True, its answer);
        else (False, None): the op runs on the meta device as it would."""
        if func.overloadpacket.__name__ not in SCALAR_READS:
            return False, None
        host = self._host(args, kwargs)
        if host is None:
            return False, None
        return True, func(*host[0], **host[1])

    def follow(self, func: Any, args: Any, kwargs: dict[str, Any], out: Any) -> None:
        """After ``func`` ran on the meta device: its outputs' values, where they follow."""
        import torch

        outs = [o for o in _leaves(out) if isinstance(o, torch.Tensor) and o.is_meta]
        host = None
        if (outs and all(o.numel() <= LIMIT for o in outs)
                and torch.Tag.nondeterministic_seeded not in func.tags):
            host = self._host(args, kwargs)
        if host is not None:
            try:
                done = [o for o in _leaves(func(*host[0], **host[1]))]
            except Exception:  # noqa: BLE001 - what fails on the host is just not known
                done = []
            if len(done) == len(_leaves(out)):
                empty = func.overloadpacket.__name__ in EMPTIES
                for o, h in zip(_leaves(out), done):
                    if isinstance(o, torch.Tensor) and o.is_meta and isinstance(h, torch.Tensor):
                        self.known[o] = h.zero_() if empty else h
                return
        for written in _written(func, args, kwargs):  # values overwritten by unknown ones
            self._forget(written)

    def _forget(self, tensor: Any) -> None:
        """``tensor``'s values and those of every known tensor sharing its memory (a view of it,
        the base it views): written with unknown values, none of them is known any more."""
        storage = storage_of(tensor)
        for key in list(self.known.keys()):
            if key is tensor or (storage is not None and storage_of(key) is storage):
                del self.known[key]

    def _host(self, args: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]] | None:
        """``args`` and ``kwargs`` with each meta tensor replaced by its host copy and a meta
        device by the host's, or None where a meta tensor's values are not known."""
        import torch

        missing = False

        def swap(x: Any) -> Any:
            nonlocal missing
            if isinstance(x, torch.Tensor) and x.is_meta:
                copy = self.known.get(x)
                missing = missing or copy is None
                return copy
            if isinstance(x, torch.device) and x.type == "meta":
                return torch.device("cpu")
            if isinstance(x, (list, tuple)):
                return type(x)(swap(i) for i in x)
            return x

        host_args = swap(tuple(args))
        host_kwargs = {k: swap(v) for k, v in kwargs.items()}
        if host_kwargs.get("device") == "meta":
            host_kwargs["device"] = torch.device("cpu")
        return None if missing else (host_args, host_kwargs)


def _leaves(out: Any) -> list[Any]:
    if isinstance(out, (list, tuple)):
        return [leaf for item in out for leaf in _leaves(item)]
    return [out]


def _written(func: Any, args: Any, kwargs: dict[str, Any]) -> list[Any]:
    """The tensor arguments ``func``'s schema says it writes (``add_``'s self, ``out=``)."""
    import torch

    written = []
    for i, argument in enumerate(func._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = kwargs.get(argument.name, args[i] if i < len(args) else None)
        written += [t for t in _leaves(value) if isinstance(t, torch.Tensor)]
    return written
