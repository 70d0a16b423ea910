"""The precision a report assumed, in words (``precision_text``): the operands, C and the
weight-gradient buffer; with separate weights, activations or KV cache each of them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model.network import Network


def precision_text(network: Network) -> str:
    """The precision a report assumed, in words: operands, output, weight-gradient buffer;
    with separate weights, activations or KV cache, each of them."""
    if network.mixed_precision:
        return _mixed_precision_text(network)
    text = f"A, B {network.dtype} -> C {network.c_dtype}"
    if network.mode != "train":
        return text
    if network.grad_accumulation:
        return text + (f"; weight gradients accumulate into {network.grad_accumulation} "
                       f"(C read and written)")
    return text + "; weight gradients written once (no accumulation buffer)"


def _mixed_precision_text(network: Network) -> str:
    """``weights int4-g128 (fp16 scales) x activations fp16 -> C fp16; KV cache fp8; rest
    fp16``: the weight GEMMs compute in the activations' dtype (a narrower weight is
    dequantized to it), everything else in the model's dtype. An int8 or fp8 weight's
    per-channel scales are not counted, and it says so."""
    stored = network.weight_dtype
    if network.group:
        stored += f"-g{network.group} (fp16 scales)"
    else:  # per-channel scales: N values a K x N weight, under 0.1% of its bytes from K 1024
        stored += " (scales not counted)"
    if network.weights and network.mode != "train" and network.lm_heads:
        stored += f", the LM head {network.activation_dtype} (as vLLM keeps it)"
    text = (f"weights {stored} x activations {network.activation_dtype} -> C "
            f"{network.weight_c_dtype}")
    if network.mode != "train" and any(hasattr(run.layer, "kv_cache_bytes")
                                       for run in network.layer_runs):  # attention keeps one
        text += f"; KV cache {network.kv_dtype}"
    return text + f"; rest {network.dtype}"
