"""Hugging Face models as users train and serve them, one step each, for gpu_measure.py to time
on a GPU and bench_gpu_hf.py to capture on the meta device: the same module, inputs and step on
both sides. Only torch and transformers are imported, and only when a step is built, so
gpu_measure.py runs where roofline is not installed.

Each model is built by transformers from the repository's config (examples/hf/*.json, random
weights, nothing downloaded), some with fewer layers (``HF_STEPS``' overrides) so that a training
step with its optimizer state fits one GPU, in bf16 with ``attn_implementation="sdpa"`` (what
transformers picks on a GPU). A training step is what a user's loop runs: the gradients set to
None, ``model(input_ids, attention_mask, labels=input_ids).loss`` (transformers' own shifted
loss, its logits upcast to fp32), ``loss.backward()`` and, with ``adamw``, torch.optim.AdamW's
step (its default implementation: foreach on a GPU). Inference is a prefill: the logits of every
position under no_grad, no KV cache kept. ``padded``: an attention mask whose odd rows end in a
quarter of padding, so the attention runs with a mask (no longer plain causal).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HF = ROOT / "examples" / "hf"

#: name, config (examples/hf), auto class, config overrides, mode, batch, seq, padded, optimizer
HF_STEPS: tuple[tuple[str, str, str, dict[str, Any], str, int, int, bool, str], ...] = (
    ("gpt2-train", "gpt2", "AutoModelForCausalLM", {}, "train", 8, 1024, False, "none"),
    ("gpt2-train-padded", "gpt2", "AutoModelForCausalLM", {}, "train", 8, 1024, True, "none"),
    ("gpt2-train-adamw", "gpt2", "AutoModelForCausalLM", {}, "train", 8, 1024, False, "adamw"),
    ("gpt2-prefill", "gpt2", "AutoModelForCausalLM", {}, "inference", 8, 1024, False, "none"),
    ("bert-train", "bert-base-uncased", "AutoModelForMaskedLM", {}, "train", 16, 512, False,
     "none"),
    ("llama2-2l-train", "llama-2-7b", "AutoModelForCausalLM", {"num_hidden_layers": 2},
     "train", 4, 2048, False, "none"),
    ("llama2-2l-prefill", "llama-2-7b", "AutoModelForCausalLM", {"num_hidden_layers": 2},
     "inference", 4, 2048, False, "none"),
    ("mixtral-1l-train", "mixtral-8x7b", "AutoModelForCausalLM", {"num_hidden_layers": 1},
     "train", 2, 1024, False, "none"),
)


def hf_model(torch: Any, config: str, auto: str, overrides: dict[str, Any], device: str,
             dtype: Any) -> Any:
    """``config``'s model built by transformers on ``device`` in ``dtype``, random weights."""
    import transformers

    raw = json.loads((HF / f"{config}.json").read_text())
    kwargs = {k: v for k, v in raw.items() if not k.startswith("_") and k != "architectures"}
    kwargs.update(overrides)
    cfg = transformers.AutoConfig.for_model(**kwargs)
    with torch.device(device):
        model = getattr(transformers, auto).from_config(cfg, attn_implementation="sdpa",
                                                        torch_dtype=dtype)
    return model.to(dtype)


def wrapped(torch: Any, model: Any, mode: str) -> Any:
    """``model`` as a torch module whose forward takes only tensors, as
    ``roofline.torch.capture`` passes them (the ids and the mask): the loss, or the logits."""

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids: Any, mask: Any) -> Any:
            if mode == "train":
                return self.model(input_ids=ids, attention_mask=mask, labels=ids).loss
            return self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits

    return Step()


def hf_inputs(torch: Any, vocab: int, batch: int, seq: int, padded: bool,
              device: str) -> tuple[Any, Any]:
    """Token ids and the attention mask (ones; with ``padded``, odd rows' last quarter 0)."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (batch, seq), generator=gen).to(device)
    mask = torch.ones(batch, seq, dtype=torch.long)
    if padded:
        mask[1::2, seq - seq // 4:] = 0
    return ids, mask.to(device)


def hf_step(torch: Any, spec: tuple[Any, ...], device: str,
            dtype: Any) -> tuple[Callable[[], None], Any]:
    """One step of ``spec`` (an ``HF_STEPS`` row) on ``device`` in ``dtype``, and its module."""
    name, config, auto, overrides, mode, batch, seq, padded, optimizer = spec
    model = hf_model(torch, config, auto, overrides, device, dtype)
    module = wrapped(torch, model, mode)
    ids, mask = hf_inputs(torch, model.config.vocab_size, batch, seq, padded, device)
    if mode == "inference":
        module.eval()

        def infer() -> None:
            with torch.no_grad():
                module(ids, mask)
        return infer, module
    module.train()
    opt = torch.optim.AdamW(module.parameters(), lr=1e-5) if optimizer == "adamw" else None

    def train() -> None:
        module.zero_grad(set_to_none=True)
        module(ids, mask).backward()
        if opt is not None:
            opt.step()
    return train, module
