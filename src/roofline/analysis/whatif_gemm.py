"""A bare GEMM shape as a one-layer network (``gemm_network``): the forward GEMM of a linear
layer with in = K and out = N at batch M, its weight stored as ``GEMM_LAYOUTS`` says;
``whatif.gemm_report`` analyzes it."""

from __future__ import annotations

from typing import Any

from ..errors import InputError, RooflineError, option
from ..files.fields import positive_int
from ..files.numbers import parse_int, quoted
from ..model.dtypes import check_dtype, output_problem
from ..model.layers import Linear
from ..model.network import Network

GEMM_LAYER = "gemm"


def parse_dimension(value: Any, name: str) -> int:
    """A GEMM dimension: a positive integer of at most 2**40 (an integer, numpy's too:
    ``files.fields.positive_int``; or text read by ``files.numbers.parse_int``), else
    InputError."""
    if not isinstance(value, str):  # a float or a bool named as itself, not as text
        return positive_int(value, lambda _, problem: InputError("gemm", name, problem), name)
    try:
        return parse_int(value)
    except ValueError as exc:
        raise InputError("gemm", name, str(exc)) from None


#: How the what-if's operands are stored (row-major, as PyTorch keeps them): ``linear``,
#: F.linear(x, W) with W out x in (N x K): A and B both run along K; ``matmul``, A @ B with B
#: K x N: B runs along N (``Gemm.operand_rows``; it matters on Hopper in TF32)
GEMM_LAYOUTS = ("linear", "matmul")


def gemm_network(m: int | str, n: int | str, k: int | str, dtype: str = "fp16",
                 output_dtype: str | None = None, layout: str = "linear") -> Network:
    """The shape as a one-layer network: a linear layer with in = K, out = N, run forward at
    batch M (inference), so its single GEMM MM1 is (M, N, K) with M the batch dimension; its
    weight stored as ``layout`` says (``GEMM_LAYOUTS``)."""
    dims = [parse_dimension(v, name) for v, name in ((m, "M"), (n, "N"), (k, "K"))]
    check_dtype(dtype)
    problem = output_dtype and output_problem(dtype, output_dtype)
    if problem:  # said as the option it came from, not a model's field
        raise RooflineError(f"{option('output_dtype')}: {problem}")
    if layout not in GEMM_LAYOUTS:
        raise RooflineError(f"{option('layout')}: expected one of {', '.join(GEMM_LAYOUTS)}, "
                            f"got {quoted(layout)}")
    network = Network(f"gemm-{dims[0]}x{dims[1]}x{dims[2]}", dims[0], dtype, "inference",
                      (Linear(GEMM_LAYER, dims[2], dims[1],
                              weight_in_out=layout == "matmul"),))
    return network.with_overrides(output_dtype=output_dtype)
