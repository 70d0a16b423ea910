"""The precision a report assumed, in words (``precision_text``): the operands, C and the
weight-gradient buffer; with separate weights, activations or KV cache each of them, and what a
weight format leaves at the model's dtype (``model.quantized``), one clause each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model.quantized import unquantized

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
    """``weights int4-g128 (fp16 scales) x activations fp16 -> C fp16; embedding and LM head
    fp16 (vLLM quantizes neither); KV cache fp8; rest fp16``: the weight GEMMs compute in the
    activations' dtype (a narrower weight is dequantized to it), everything else in the
    model's dtype, and in inference what the format leaves there, said (``kept_text``). An
    int8 or fp8 weight's per-channel scales are not counted, and it says so."""
    stored = network.weight_dtype
    if network.group:
        stored += f"-g{network.group} (fp16 scales)"
    else:  # per-channel scales: N values a K x N weight, under 0.1% of its bytes from K 1024
        stored += " (scales not counted)"
    text = (f"weights {stored} x activations {network.activation_dtype} -> C "
            f"{network.weight_c_dtype}")
    text += kept_text(network)
    if network.mode != "train" and any(hasattr(run.layer, "kv_cache_bytes")
                                       for run in network.layer_runs):  # attention keeps one
        text += f"; KV cache {network.kv_dtype}"
    return text + f"; rest {network.dtype}"


def kept_text(network: Network) -> str:
    """``; embedding, LM head and routers bf16 (vLLM quantizes none of them); MLA's k_up and
    v_up bf16, on 16-bit copies of kv_b (in the weights)``: in an inference step whose
    weights or activations are not the model's dtype, what stays at the model's dtype, weights
    and GEMMs (``model.quantized``), one clause each; a router the format stores
    (``quantized_router``) said too. "" where nothing differs."""
    d = network.dtype
    if network.mode == "train" or d in (None, "") or (
            network.weight_dtype == d and network.activation_dtype == d):
        return ""
    kept = unquantized(network)
    names = (["embedding"] if kept.embedding else []) + (
        ["tied LM head"] if kept.lm_head == "tied" else
        ["LM head"] if kept.lm_head else []) + (["routers"] if kept.routers else [])
    text = ""
    if names:
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        why = {1: "vLLM does not quantize it", 2: "vLLM quantizes neither"}.get(
            len(names), "vLLM quantizes none of them")
        text += f"; {listed} {d} ({why})"
    if kept.quantized_routers:
        text += (f"; {'other ' if kept.routers else ''}routers {network.weight_dtype} "
                 f"(quantized_router: vLLM's Qwen3-MoE hands its gate the format; a "
                 f"checkpoint that leaves its gates unconverted, as Qwen's own FP8 ones list "
                 f"every mlp.gate, keeps them {d}: a checkpoint's list is not read here)")
    if kept.absorbed:
        text += f"; MLA's k_up and v_up {d}, on 16-bit copies of kv_b (in the weights)"
    return text
