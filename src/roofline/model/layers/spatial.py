"""What spatial layers (conv2d, pooling, flatten) share: the feature map a layer takes and
gives, and the size arithmetic of a sliding window.

A feature map is ``Shape(channels, height, width)`` per sample (NCHW without the N: the batch
comes from the ``Step``). A spatial layer's ``in_width`` / ``out_width`` are its channels (the
width the network checks between layers); ``out_shape`` is the whole map, which the network
hands to the next layer's ``with_input`` (top-level ``input: {channels, height, width}`` starts
the chain).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from ...files.fields import positive_int

if TYPE_CHECKING:
    from ...files.fields import Fields


_T = TypeVar("_T")


def bound(value: _T | None, layer: str) -> _T:
    """A size a spatial layer learns from ``with_input``; reading it earlier is a bug in the
    caller (the network binds every spatial layer before it expands GEMMs or ops)."""
    if value is None:
        raise AssertionError(f"layer {layer!r} used before its input map is known")
    return value


class Shape(NamedTuple):
    """One sample's feature map: channels x height x width."""

    channels: int
    height: int
    width: int

    @property
    def elements(self) -> int:
        return self.channels * self.height * self.width


def pair(fields: Fields, key: str, default: Any, minimum: int = 1) -> tuple[int, int]:
    """``key`` as (height, width): one integer for both, or a list of two (``default`` None:
    required)."""
    value: Any = fields.get(key) if default is None else fields.get(key, default)
    values = value if isinstance(value, list) else [value, value]
    if len(values) != 2 or not all(isinstance(v, int) and not isinstance(v, bool)
                                   and v >= minimum for v in values):
        raise fields.fail(key, f"expected an integer >= {minimum} or a list of two, "
                               f"got {value!r}")
    for v in values:  # the bound of every integer a file gives (files.numbers.MAX_INT)
        positive_int(v, fields.fail, key, minimum)
    return values[0], values[1]


def window_out(size: int, kernel: int, stride: int, padding: int, dilation: int = 1) -> int:
    """Output length of a sliding window (PyTorch's and cuDNN's formula):
    ``floor((size + 2 padding - dilation (kernel - 1) - 1) / stride) + 1``; 0 or less when the
    (dilated) kernel is larger than the padded input."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def input_shape(fields: Fields, given: Shape | None, name: str,
                channels: int | None) -> Shape:
    """The map a spatial layer reads: its own ``height`` / ``width`` (and channels) where
    given, else the previous layer's (``given``); a one-line error when neither says."""
    height = fields.positive_int("height", None)
    width = fields.positive_int("width", None)
    if given is not None:
        for key, own, theirs in (("height", height, given.height),
                                 ("width", width, given.width)):
            if own is not None and own != theirs:
                raise fields.fail(key, f"{name!r} says {key} {own} but the previous layer "
                                       f"gives {theirs}")
        return Shape(channels or given.channels, given.height, given.width)
    if height is None or width is None or channels is None:
        raise fields.fail("height", f"{name!r} needs its input size: give height and width "
                                    f"(and in_channels), a top-level input: {{channels, "
                                    f"height, width}}, or a previous layer that gives them")
    return Shape(channels, height, width)


class OnMap:
    """What a layer that reads the previous layer's feature map (``shape``, bound by
    ``with_input``) shares: the map itself and its channels as the width in and out."""

    name: str
    shape: Shape | None

    @property
    def map(self) -> Shape:
        """The input map (known once the previous layer gives it)."""
        return bound(self.shape, self.name)

    @property
    def in_width(self) -> int | None:
        return self.shape.channels if self.shape else None

    @property
    def out_width(self) -> int | None:
        return self.in_width
