"""One decode step of a Llama-shaped model in plain PyTorch, for gpu_measure.py's ``decode``
part (only torch is imported, and only by the caller): random bf16 weights from a Hugging Face
config.json (examples/hf/llama-2-7b.json), a KV cache of ``kv`` tokens per sequence, one new
token for each of ``batch`` sequences, written as Hugging Face's Llama runs it eagerly: RMSNorm
in fp32 (pow, mean, rsqrt, two multiplies and the casts), q, k and v as one GEMM, the rotary
embedding (rotate-half), the new key and value copied into the cache, scaled_dot_product_attention
over the whole cache, the output projection, gate and up as one GEMM, SiLU times up, the down
projection, the residual adds, a final norm and the LM head over the new tokens.

Timed three ways by the caller: replayed from a CUDA graph (the GPU's time: what an engine
that launches without Python, TensorRT-LLM or vLLM with CUDA graphs, pays), called eagerly
(what ``model.generate`` without compilation pays: the host's per-kernel cost too), and one
profiled eager step (its kernels, counted and summed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def decode_step(torch: Any, cfg: dict[str, Any], batch: int, kv: int,
                dev: str) -> Callable[[], object]:
    """A function running one decode step (no sync) on ``dev``; its tensors stay alive in it."""
    import torch.nn.functional as F

    bf16 = torch.bfloat16
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    kvh = cfg.get("num_key_value_heads", heads)
    d, ffn, layers = h // heads, cfg["intermediate_size"], cfg["num_hidden_layers"]
    eps = cfg.get("rms_norm_eps", 1e-5)

    def w(*shape: int) -> Any:  # scaled in place: no second copy while the cache is made
        return torch.randn(*shape, device=dev, dtype=bf16).mul_(0.02)

    blocks = [{"n1": torch.ones(h, device=dev, dtype=bf16), "qkv": w(h + 2 * kvh * d, h),
               "o": w(h, h), "n2": torch.ones(h, device=dev, dtype=bf16),
               "gu": w(2 * ffn, h), "down": w(h, ffn),
               "k": w(batch, kvh, kv, d), "v": w(batch, kvh, kv, d)} for _ in range(layers)]
    emb, norm, head = w(cfg["vocab_size"], h), torch.ones(h, device=dev, dtype=bf16), \
        w(cfg["vocab_size"], h)
    ids = torch.randint(0, cfg["vocab_size"], (batch, 1), device=dev)
    pos = kv - 1  # the new token's slot: the cache holds kv tokens with it
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d))
    angle = torch.cat([pos * inv, pos * inv])
    cos, sin = angle.cos().to(bf16), angle.sin().to(bf16)

    def rms(x: Any, weight: Any) -> Any:
        x32 = x.to(torch.float32)
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
        return weight * x32.to(bf16)

    def rotate(x: Any) -> Any:
        half = x.shape[-1] // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin

    def step() -> object:
        x = F.embedding(ids, emb)  # (batch, 1, h)
        for b in blocks:
            r = x
            qkv = F.linear(rms(x, b["n1"]), b["qkv"])
            q, k, v = qkv.split((h, kvh * d, kvh * d), dim=-1)
            q = rotate(q.view(batch, 1, heads, d).transpose(1, 2))
            k = rotate(k.view(batch, 1, kvh, d).transpose(1, 2))
            b["k"][:, :, pos:pos + 1].copy_(k)
            b["v"][:, :, pos:pos + 1].copy_(v.view(batch, 1, kvh, d).transpose(1, 2))
            a = F.scaled_dot_product_attention(q, b["k"], b["v"], enable_gqa=kvh != heads)
            x = r + F.linear(a.transpose(1, 2).reshape(batch, 1, h), b["o"])
            r = x
            g, u = F.linear(rms(x, b["n2"]), b["gu"]).chunk(2, dim=-1)
            x = r + F.linear(F.silu(g) * u, b["down"])
        return F.linear(rms(x, norm), head)

    return step
