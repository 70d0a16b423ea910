"""Two routes to the same transformer: Hugging Face transformers builds GPT-2, BERT, Llama-2-7B,
Mixtral-8x7B, Qwen3-8B and Qwen3-30B-A3B from the repo's example configs (examples/hf/*.json;
random weights on the meta device, nothing downloaded) and roofline.torch.capture records what
they run; roofline's own config.json
adapters (model/hf.py) describe the same models as model.yaml layers. Both must give the same
GEMMs (shapes, passes, count), the same parameter count and the same fused-attention ops, up to
one stated, intentional difference:

- roofline's transformer layer computes Q, K and V in one GEMM (N = 3 hidden) and a gated FFN's
  gate and up projections in one (N = 2 ffn), as fused-projection kernels do; transformers'
  BERT and Llama run them as separate nn.Linear modules (GPT-2's Conv1D ``c_attn`` is already
  fused). The FLOPs and the shared input are the same; ``_fused`` joins the capture's separate
  GEMMs along the weight's output dimension: the forward's N, the data gradient's K, the
  weight gradient's output rows.

Needs torch and transformers (the `torch` and `hf` extras; .ci/run installs both). Under
CI=true a missing transformers fails these tests instead of skipping them.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest
from _extras import need

need("torch", extra="torch")
need("transformers", extra="hf")
import torch  # noqa: E402
import transformers  # noqa: E402
from packaging.version import Version  # noqa: E402

#: the hf extra's floor, read from pyproject.toml: transformers 5.17 (a lent GPU machine's)
#: captures Llama's rotary embedding as one more GEMM (inv_freq @ positions, 64 x 64 x 1)
HF_FLOOR = re.search(r'"transformers>=([0-9.]+)"', (Path(__file__).parent.parent /
                                                     "pyproject.toml").read_text()).group(1)
if Version(transformers.__version__) < Version(HF_FLOOR) and not os.environ.get("CI"):
    pytest.skip(f"transformers {transformers.__version__} is below the hf extra's "
                f"{HF_FLOOR} (pip install 'roofline[hf]')", allow_module_level=True)

from roofline.model.network import load_network  # noqa: E402
from roofline.torch import capture  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded: configs are local files
ROOT = Path(__file__).parent.parent
HF = ROOT / "examples" / "hf"
BATCH, SEQ = 2, 64
TOKENS = BATCH * SEQ  # 128: the M of every projection GEMM
# example config -> (transformers auto class, the module-name suffixes roofline fuses)
MODELS = {
    "gpt2": ("AutoModelForCausalLM", ()),
    "bert-base-uncased": ("AutoModelForMaskedLM",
                          (("attention.self.query", "attention.self.key",
                            "attention.self.value"),)),
    "llama-2-7b": ("AutoModelForCausalLM",
                   (("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
                    ("mlp.gate_proj", "mlp.up_proj"))),
    # transformers runs the experts as grouped GEMMs (torch._grouped_mm: the capture spreads
    # the routed rows evenly, as the config route's mixture of experts does), gate and up in
    # one already
    "mixtral-8x7b": ("AutoModelForCausalLM",
                     (("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),)),
    # Qwen3: Llama's projections with an explicit head_dim (32 x 128 query heads on 4096) and
    # the per-head q_norm and k_norm; Qwen3-MoE: 128 experts of 768 (grouped GEMMs, as Mixtral's)
    "qwen3-8b": ("AutoModelForCausalLM",
                 (("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
                  ("mlp.gate_proj", "mlp.up_proj"))),
    "qwen3-30b-a3b": ("AutoModelForCausalLM",
                      (("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),)),
}


def _build(name):
    config = json.loads((HF / f"{name}.json").read_text())
    kwargs = {k: v for k, v in config.items() if not k.startswith("_") and k != "architectures"}
    auto, _ = MODELS[name]
    with torch.device("meta"):  # random weights, no memory: shapes only
        return getattr(transformers, auto).from_config(transformers.AutoConfig.for_model(
            **kwargs))


def _fused(gemms, groups):
    """The capture's GEMMs with each group of separate projections joined into the one GEMM
    roofline's transformer layer runs (see the module docstring)."""
    out, pending = [], {}
    for g in gemms:
        match = [(grp, s) for grp in groups for s in grp if g.layer.endswith("." + s)]
        if not match:
            out.append(_key(g))
            continue
        (group, suffix), = match
        parent = g.layer[:-len(suffix) - 1]  # the block the projections belong to
        slot = pending.setdefault((parent, group, g.pass_), [])
        slot.append(g)
        if len(slot) == len(group):
            out.append(_join(slot))
    assert all(len(v) == len(k[1]) for k, v in pending.items())  # no group left half-joined
    return Counter(out)


def _join(gemms):
    first = gemms[0]
    assert len({(g.pass_, g.batch_count) for g in gemms}) == 1
    if first.pass_ == "forward":  # Y_i = X W_i^T side by side: N summed
        m, n, k = first.m, sum(g.n for g in gemms), first.k
    elif first.pass_ == "backward-data":  # dX = sum of dY_i W_i: one GEMM over K summed
        m, n, k = first.m, first.n, sum(g.k for g in gemms)
    else:  # dW_i = dY_i^T X (out_i x in) stacked: M summed
        m, n, k = sum(g.m for g in gemms), first.n, first.k
    return (first.pass_, *sorted((m, n)), k, first.batch_count)


def _key(g):
    # torch writes a linear layer's weight gradient as dY^T X (out x in), roofline's linear
    # layer as X^T dY (in x out): the same GEMM transposed, so M and N are compared unordered
    return (g.pass_, *sorted((g.m, g.n)), g.k, g.batch_count)


def _dtype(name):
    """fp32, but bf16 for the mixtures of experts: torch's grouped GEMM takes bf16 operands
    only."""
    return "bf16" if name in ("mixtral-8x7b", "qwen3-30b-a3b") else "fp32"


def _reference(name, mode):
    return load_network(HF / f"{name}.json").with_overrides(batch=BATCH, seq=SEQ, mode=mode,
                                                            dtype=_dtype(name))


@pytest.fixture(scope="module")
def built():
    return {name: _build(name) for name in MODELS}


# flash: scaled_dot_product_attention as one fused op on both routes; naive (slow group): as
# torch's math decomposes it, the scores and context batched GEMMs (full s x s even when causal)
# against the transformer layer's naive form
@pytest.mark.parametrize("attention", ["flash", pytest.param("naive", marks=pytest.mark.slow)])
@pytest.mark.parametrize("mode", ["inference", "train"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_transformers_gemms_equal_the_config_adapters(built, name, mode, attention):
    module = built[name].train(mode == "train")
    tokens = torch.zeros(BATCH, SEQ, dtype=torch.long)
    net = capture(module, tokens, mode=mode, dtype=_dtype(name), attention=attention)
    ref = _reference(name, mode).with_overrides(attention=attention)
    assert _fused(net.gemms(), MODELS[name][1]) == Counter(map(_key, ref.gemms()))
    assert net.parameters == ref.parameters == sum(p.numel() for p in module.parameters())
    flash = lambda n: sorted((o.pass_, o.flops, o.bytes) for o in n.ops()  # noqa: E731
                             if o.kind.startswith("flash-attention"))
    assert flash(net) == flash(ref)
    # each projection's bias (addmm's input, since 0.8.1) adds one value an output: as many
    # as the config route's bias ops, over the joined projections (GPT-2 10,616,832 values)
    added = lambda n: sum(o.flops for o in n.ops() if o.kind == "bias")  # noqa: E731
    assert added(net) == added(ref)
    assert net.uncosted == () and all(o.bytes > 0 for o in net.ops())


def test_the_counts_by_hand(built):
    """The figures both routes agree on, derived from the configs by hand."""
    # GPT-2: 12 blocks of 4 GEMMs (QKV, attention output, FFN up and down) + the LM head = 49;
    # parameters: wte 50257 x 768, wpe 1024 x 768, per block the four projections with their
    # biases and two layer norms (scale and shift), the final layer norm; the head is tied:
    # the published 124,439,808 (124M)
    gpt2 = _reference("gpt2", "inference")
    assert len(gpt2.gemms()) == 12 * 4 + 1 == 49
    block = (768 * 2304 + 2304) + (768 * 768 + 768) + (768 * 3072 + 3072) + (3072 * 768 + 768) \
        + 2 * 2 * 768  # the two layer norms' scale and shift
    assert gpt2.parameters == 50257 * 768 + 1024 * 768 + 12 * block + 2 * 768 == 124_439_808
    # Llama-2-7B: per block q, k, v, o (4 x 4096^2) and gate, up, down (3 x 4096 x 11008) and
    # two RMSNorm scales; embedding and untied head 2 x 32000 x 4096; the final norm: the
    # published 6,738,415,616
    llama = _reference("llama-2-7b", "inference")
    per_block = 4 * 4096 ** 2 + 3 * 4096 * 11008 + 2 * 4096
    assert llama.parameters == 32 * per_block + 2 * 32000 * 4096 + 4096 == 6_738_415_616
    # its capture runs 7 projections a block (q, k, v separate; gate, up separate) + the head:
    # 32 x 7 + 1 = 225 forward GEMMs, where roofline fuses them into 32 x 4 + 1 = 129
    net = capture(built["llama-2-7b"].eval(), torch.zeros(BATCH, SEQ, dtype=torch.long),
                  mode="inference", dtype="fp32")
    assert len(net.gemms()) == 32 * 7 + 1 == 225 and len(llama.gemms()) == 32 * 4 + 1 == 129
    assert Counter((g.m, g.n, g.k) for g in net.gemms()) == {
        (TOKENS, 4096, 4096): 4 * 32, (TOKENS, 11008, 4096): 2 * 32, (TOKENS, 4096, 11008): 32,
        (TOKENS, 32000, 4096): 1}


def test_keyword_inputs_are_given_as_example_kwargs(built):
    """A Hugging Face model called with keywords, as a training loop calls it: input_ids, an
    attention mask of ones (its values read back by transformers' padding check) and labels,
    which make it return its loss. The GEMMs are the positional capture's (GPT-2's 49 forward
    and their gradients), the batch the first keyword tensor's (2), and the loss captured."""
    from roofline.errors import CaptureError

    module = built["gpt2"].train()
    tokens = torch.zeros(BATCH, SEQ, dtype=torch.long)
    by_keyword = capture(module, mode="train", dtype="fp32", example_kwargs={
        "input_ids": tokens, "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long),
        "labels": tokens})
    positional = capture(module, tokens, mode="train", dtype="fp32")
    assert by_keyword.batch == BATCH and by_keyword.captured_loss
    assert not positional.captured_loss
    keys = lambda n: Counter(map(_key, n.gemms()))  # noqa: E731
    assert keys(by_keyword) == keys(positional)
    with pytest.raises(CaptureError, match="example_kwargs: expected a dict of keyword inputs, "
                                           "got list"):
        capture(module, tokens, example_kwargs=[tokens])
