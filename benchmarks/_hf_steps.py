"""Hugging Face models as users train and serve them, one step each, for gpu_measure.py to time
on a GPU and bench_gpu_hf.py to capture on the meta device: the same module, inputs and step on
both sides. Only torch and transformers are imported, and only when a step is built, so
gpu_measure.py runs where roofline is not installed.

Each model is built by transformers from the repository's config (examples/hf/*.json) or from a
transformers config class's defaults (``ViTConfig``: ViT-Base/16; ``T5Config``: T5-small), random
weights, nothing downloaded, some with fewer layers (``HFStep.overrides``) so that a training step
fits one GPU, in its ``dtype`` with ``attn_implementation="sdpa"`` (what transformers picks on a
GPU). A training step is what a user's loop runs: the gradients set to None, the model called
with its labels (a causal or masked LM: the token ids, transformers shifting them itself; T5: the
ids again as the target; ViT: one class an image) and its ``.loss`` (transformers' own, its
logits upcast to fp32), ``loss.backward()`` and, with ``adamw``, torch.optim.AdamW's step (its
default implementation: foreach on a GPU). Inference is a prefill: the logits of every position
under no_grad, no KV cache kept. ``padded``: an attention mask whose odd rows end in a quarter of
padding, so the attention runs with a mask (no longer plain causal).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
HF = ROOT / "examples" / "hf"


class HFStep(NamedTuple):
    """One step: ``config`` an examples/hf file's stem or a transformers config class;
    ``inputs`` lm (token ids and a mask), seq2seq (the same, the ids as T5's target) or image
    (batch x 3 x seq x seq pixels, a class label each)."""

    name: str
    config: str
    auto: str
    overrides: dict[str, Any]
    mode: str
    batch: int
    seq: int
    padded: bool = False
    optimizer: str = "none"
    inputs: str = "lm"
    dtype: str = "bf16"


CAUSAL = "AutoModelForCausalLM"
TWO_LAYERS = {"num_hidden_layers": 2}
HF_STEPS: tuple[HFStep, ...] = (
    HFStep("gpt2-train", "gpt2", CAUSAL, {}, "train", 8, 1024),
    HFStep("gpt2-train-padded", "gpt2", CAUSAL, {}, "train", 8, 1024, padded=True),
    HFStep("gpt2-train-adamw", "gpt2", CAUSAL, {}, "train", 8, 1024, optimizer="adamw"),
    HFStep("gpt2-prefill", "gpt2", CAUSAL, {}, "inference", 8, 1024),
    HFStep("bert-train", "bert-base-uncased", "AutoModelForMaskedLM", {}, "train", 16, 512),
    HFStep("llama2-2l-train", "llama-2-7b", CAUSAL, TWO_LAYERS, "train", 4, 2048),
    HFStep("llama2-2l-prefill", "llama-2-7b", CAUSAL, TWO_LAYERS, "inference", 4, 2048),
    HFStep("mixtral-1l-train", "mixtral-8x7b", CAUSAL, {"num_hidden_layers": 1}, "train", 2,
           1024),
    # measured from the second run of 2026-11-27 on: GQA with a 152k vocabulary, fp32, an
    # encoder-decoder, an image model
    HFStep("qwen2-2l-train", "qwen2-7b", CAUSAL, TWO_LAYERS, "train", 4, 1024),
    HFStep("gpt2-train-fp32", "gpt2", CAUSAL, {}, "train", 8, 1024, dtype="fp32"),
    HFStep("t5-small-train", "T5Config", "AutoModelForSeq2SeqLM",
           {"decoder_start_token_id": 0}, "train", 16, 512, inputs="seq2seq"),
    HFStep("vit-base-train", "ViTConfig", "AutoModelForImageClassification", {}, "train", 64,
           224, inputs="image"),
)


def torch_dtype(torch: Any, step: HFStep) -> Any:
    return {"bf16": torch.bfloat16, "fp32": torch.float32}[step.dtype]


def hf_model(torch: Any, step: HFStep, device: str, dtype: Any) -> Any:
    """``step``'s model built by transformers on ``device`` in ``dtype``, random weights."""
    import transformers

    if step.config.endswith("Config"):
        cfg = getattr(transformers, step.config)(**step.overrides)
    else:
        raw = json.loads((HF / f"{step.config}.json").read_text())
        kwargs = {k: v for k, v in raw.items() if not k.startswith("_") and k != "architectures"}
        cfg = transformers.AutoConfig.for_model(**(kwargs | step.overrides))
    with torch.device(device):
        model = getattr(transformers, step.auto).from_config(cfg, attn_implementation="sdpa",
                                                             dtype=dtype)
    return model.to(dtype)


def wrapped(torch: Any, model: Any, step: HFStep) -> Any:
    """``model`` as a torch module whose forward takes only tensors, as
    ``roofline.torch.capture`` passes them (``hf_inputs``): the loss, or the logits."""
    train = step.mode == "train"

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, x: Any, y: Any) -> Any:
            if step.inputs == "image":  # pixels, a class label each
                out = self.model(pixel_values=x, labels=y if train else None)
            elif step.inputs == "seq2seq":  # the ids as their own target (T5's decoder input)
                out = self.model(input_ids=x, attention_mask=y, labels=x)
            elif train:
                out = self.model(input_ids=x, attention_mask=y, labels=x)
            else:
                out = self.model(input_ids=x, attention_mask=y, use_cache=False)
            return out.loss if train else out.logits

    return Step()


def hf_inputs(torch: Any, model: Any, step: HFStep, device: str, dtype: Any) -> tuple[Any, Any]:
    """The step's two inputs: token ids and the attention mask (ones; with ``padded``, odd
    rows' last quarter 0), or pixels and labels."""
    gen = torch.Generator().manual_seed(0)
    b, s = step.batch, step.seq
    if step.inputs == "image":
        pixels = torch.randn(b, 3, s, s, generator=gen).to(device, dtype)
        return pixels, torch.randint(0, model.config.num_labels, (b,), generator=gen).to(device)
    ids = torch.randint(0, model.config.vocab_size, (b, s), generator=gen).to(device)
    mask = torch.ones(b, s, dtype=torch.long)
    if step.padded:
        mask[1::2, s - s // 4:] = 0
    return ids, mask.to(device)


def hf_step(torch: Any, step: HFStep, device: str) -> Callable[[], None]:
    """One step of ``step`` on ``device`` (fp32 on a CPU, a dry run), its module within."""
    dtype = torch_dtype(torch, step) if device == "cuda" else torch.float32
    model = hf_model(torch, step, device, dtype)
    module = wrapped(torch, model, step)
    x, y = hf_inputs(torch, model, step, device, dtype)
    if step.mode == "inference":
        module.eval()

        def infer() -> None:
            with torch.no_grad():
                module(x, y)
        return infer
    module.train()
    opt = torch.optim.AdamW(module.parameters(), lr=1e-5) if step.optimizer == "adamw" else None

    def train() -> None:
        module.zero_grad(set_to_none=True)
        module(x, y).backward()
        if opt is not None:
            opt.step()
    return train
