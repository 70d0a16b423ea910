"""DeepSeek-V3 two ways (as tests/test_capture_hf.py does for the other example configs):
transformers' DeepseekV3ForCausalLM built from examples/hf/deepseek-v3.json on the meta device
(random weights, nothing downloaded) and captured by roofline.torch, against the deepseek_v3
config adapter's blocks. Cut to 5 layers, the 3 dense ones and 2 sparse ones, to keep the
capture short: every kind of block and its GEMMs appear.

The stated differences, joined before comparing (``test_capture_hf._fused``): roofline runs
q_a_proj and kv_a_proj_with_mqa as one GEMM (``qkv_a``, vLLM's fused_qkv_a_proj), a gated FFN's
gate and up projections as one (the dense MLP's and the shared expert's). The router is the same
GEMM (transformers runs it in fp32; the key compares shapes and passes). Attention is
transformers' scaled_dot_product_attention with query/key head dim 192 and value head dim 128,
the expanded form roofline counts outside decode (its absorbed decode form is vLLM's, not
transformers').

Needs torch and transformers (the `torch` and `hf` extras)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from _extras import need

need("torch", extra="torch")
need("transformers", extra="hf")
import torch  # noqa: E402
import transformers  # noqa: E402
from test_capture_hf import HF, _fused, _key  # noqa: E402  (skips below the hf floor)

from roofline.model.network import load_network  # noqa: E402
from roofline.torch import capture  # noqa: E402

GROUPS = (("self_attn.q_a_proj", "self_attn.kv_a_proj_with_mqa"),
          ("mlp.gate_proj", "mlp.up_proj"),
          ("shared_experts.gate_proj", "shared_experts.up_proj"))


@pytest.fixture(scope="module")
def five_layers(tmp_path_factory):
    """The published config cut to 5 layers (and without its fp8 quantization_config, which
    transformers would load as fp8 weights): the config file and transformers' model."""
    config = json.loads((HF / "deepseek-v3.json").read_text())
    config["num_hidden_layers"] = 5
    del config["quantization_config"]
    path = tmp_path_factory.mktemp("ds") / "deepseek-v3-5.json"
    path.write_text(json.dumps(config))
    kwargs = {k: v for k, v in config.items()
              if not k.startswith("_") and k not in ("architectures", "auto_map")}
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(**kwargs))
    return path, model


@pytest.mark.parametrize("mode", ["inference", "train"])
def test_transformers_deepseek_equals_the_config_adapter(five_layers, mode):
    path, model = five_layers
    module = model.train(mode == "train")
    # bf16: torch's grouped GEMM, which runs the experts, takes no other
    net = capture(module, torch.zeros(2, 64, dtype=torch.long), mode=mode, dtype="bf16")
    ref = load_network(path).with_overrides(batch=2, seq=64, mode=mode, dtype="bf16")
    assert _fused(net.gemms(), GROUPS) == Counter(map(_key, ref.gemms()))
    # 3 dense + 2 sparse blocks, embedding, norm, head: 26,618,387,456 weights
    # (2 x 926,679,040 + 7,168 + 3 x 583,483,392 + 2 x 11,507,286,016)
    assert net.parameters == ref.parameters == sum(p.numel() for p in module.parameters())
    assert ref.parameters == 2 * 926_679_040 + 7_168 + 3 * 583_483_392 + 2 * 11_507_286_016
    flash = lambda n: sorted((o.pass_, o.flops, o.bytes) for o in n.ops()  # noqa: E731
                             if o.kind.startswith("flash-attention"))
    assert flash(net) == flash(ref)
