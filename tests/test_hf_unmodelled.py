"""A config.json key that changes what the model computes or keeps, and that no adapter models,
is said in every output that reads the config (model.hf.UNMODELLED), never dropped silently:
Qwen2's sliding_window (some layers only), Llama's attention_bias / mlp_bias. Mistral's window
(every layer) is modelled: the block's window."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import pytest

from roofline.model.hf import model_from_config

EXAMPLES = Path(__file__).parent.parent / "examples" / "hf"
WINDOW = ("sliding_window = 4096 in the config is not modelled: attention and the KV cache are "
          "counted over every earlier token, not the last 4096 only (more than the model does "
          "beyond 4096 tokens)")


def _config(name: str, **changes):
    data = json.loads((EXAMPLES / name).read_text())
    data.update(changes)
    return data


@pytest.mark.parametrize(("name", "changes", "expected"), [
    ("mistral-7b.json", {}, []),  # modelled: the block's window
    ("mistral-7b.json", {"sliding_window": None}, []),  # Mistral v0.2 on: no window
    ("qwen2-7b.json", {"sliding_window": 131072, "use_sliding_window": False}, []),
    ("qwen2-7b.json", {"sliding_window": 4096, "use_sliding_window": True},
     [("sliding_window", "4096")]),
    ("llama-2-7b.json", {}, []),
    ("llama-2-7b.json", {"attention_bias": True, "mlp_bias": False},
     [("attention_bias", "true")]),
    ("llama-2-7b.json", {"attention_bias": True, "mlp_bias": True},
     [("attention_bias", "true"), ("mlp_bias", "true")]),
    # weights stored quantized, as TheBloke's GPTQ and AWQ repositories and bitsandbytes give it
    ("llama-2-7b.json", {"quantization_config": {"quant_method": "gptq", "bits": 4,
                                                 "group_size": 128, "desc_act": False}},
     [("quantization_config", "gptq, 4-bit weights, groups of 128")]),
    ("llama-2-7b.json", {"quantization_config": {"quant_method": "awq", "w_bit": 4,
                                                 "q_group_size": 128}},
     [("quantization_config", "awq, 4-bit weights, groups of 128")]),
    ("llama-2-7b.json", {"quantization_config": {"quant_method": "bitsandbytes",
                                                 "load_in_8bit": True}},
     [("quantization_config", "bitsandbytes, 8-bit weights")]),
    ("llama-2-7b.json", {"quantization_config": {}}, []),
    # DeepSeek-V3's published MoE and MLA keys on a config written as mixtral (its
    # moe_intermediate_size 2048 differs from the intermediate_size the experts are built at)
    ("mixtral-8x7b.json", {"n_shared_experts": 1, "moe_intermediate_size": 2048,
                           "first_k_dense_replace": 3, "q_lora_rank": 1536,
                           "kv_lora_rank": 512},
     [("n_shared_experts", "1"), ("moe_intermediate_size", "2048"),
      ("first_k_dense_replace", "3"), ("q_lora_rank", "1536"), ("kv_lora_rank", "512")]),
    # an expert width equal to the one built, and keys set to none or 0, change nothing
    ("mixtral-8x7b.json", {"moe_intermediate_size": 14336, "n_shared_experts": 0,
                           "q_lora_rank": None, "shared_expert_intermediate_size": 5632},
     [("shared_expert_intermediate_size", "5632")]),
])
def test_the_keys_a_config_sets_and_no_adapter_models(name, changes, expected):
    assert model_from_config(_config(name, **changes), name).unmodelled == expected


def test_every_command_says_so(invoke, tmp_path):
    # analyze: its warnings (text and JSON); compare, sweep and plan: a warning line and JSON,
    # and compare's and sweep's HTML pages
    qwen = tmp_path / "qwen2-window.json"
    qwen.write_text(json.dumps(_config("qwen2-7b.json", sliding_window=4096,
                                       use_sliding_window=True)))
    model = str(qwen)
    args = ("--batch", "1", "--seq", "8192", "--mode", "inference")
    result = invoke("analyze", model, "--hw", "h100", *args, "--format", "json")
    assert json.loads(result.stdout)["warnings"] == [WINDOW]
    assert "warning: sliding_window = 4096 in the config is not modelled" in invoke(
        "analyze", model, "--hw", "h100", *args).stdout
    for command, extra in (("compare", ("--hw", "a100", "--hw", "h100", *args)),
                           ("sweep", ("--hw", "h100", "--batch", "1", "--seq", "1024,8192",
                                      "--mode", "inference")),
                           ("plan", ("--hw", "h100", "--gpus", "8", "--batch", "8", "--seq",
                                     "1024", "--top", "1"))):
        text = invoke(command, model, *extra).stdout
        assert f"warning: {WINDOW}" in text, command
        data = json.loads(invoke(command, model, *extra, "--format", "json").stdout)
        assert data["warnings"] == [WINDOW], command
        if command != "plan":  # the HTML pages too (they dropped it before 0.9.0)
            page = " ".join(invoke(command, model, *extra, "--format", "html").stdout.split())
            assert escape(WINDOW) in page, command
    # configs without such a key, Mistral's window being modelled: none but, for Llama-2
    # (max_position_embeddings 4096), the seq past its context
    for name, expected in (("llama-2-7b.json", [PAST_4096]), ("mistral-7b.json", [])):
        data = json.loads(invoke("analyze", str(EXAMPLES / name), "--hw", "h100", *args,
                                 "--format", "json").stdout)
        assert data["warnings"] == expected, name


PAST_4096 = ("seq 8192 is past the model's context (4096 tokens): the step is analyzed as "
             "asked")


def test_a_seq_past_the_context_is_said_by_every_command_once(invoke):
    # Llama-2-7B's config: max_position_embeddings 4096; sweep names every swept seq past it
    model = str(EXAMPLES / "llama-2-7b.json")
    args = ("--batch", "1", "--seq", "8192", "--mode", "inference")
    assert f"warning: {PAST_4096}" in invoke("analyze", model, "--hw", "h100", *args).stdout
    text = invoke("compare", model, "--hw", "a100", "--hw", "h100", *args).stdout
    assert text.count(PAST_4096) == 1
    text = invoke("sweep", model, "--hw", "h100", "--batch", "1", "--seq", "2048,8192",
                  "--mode", "inference").stdout
    assert text.count("past the model's context") == 1 and f"note: {PAST_4096}" in text
    # and in its JSON, as analyze's and compare's carry theirs (found on the CPU tour: the
    # sweep JSON said nothing, its seq-8192 point reading fits: true)
    for command, extra in (("sweep", ("--seq", "2048,8192")), ("analyze", ("--seq", "8192")),
                           ("compare", ("--hw", "a100", "--seq", "8192"))):
        data = json.loads(invoke(command, model, "--hw", "h100", "--batch", "1", *extra,
                                 "--mode", "inference", "--format", "json").stdout)
        assert data["warnings"] == [PAST_4096], command
    data = json.loads(invoke("analyze", model, "--hw", "h100", "--batch", "1", "--seq", "4096",
                             "--mode", "inference", "--format", "json").stdout)
    assert data["warnings"] == []  # at the context itself: none


def test_a_quantized_config_says_its_weights_are_counted_unquantized(invoke, tmp_path):
    # a GPTQ config counted as fp16 weights, unsaid, read as twice to four times its weight
    # bytes; now the warning names the option that counts them as stored
    gptq = tmp_path / "llama-gptq.json"
    gptq.write_text(json.dumps(_config("llama-2-7b.json", quantization_config={
        "quant_method": "gptq", "bits": 4, "group_size": 128})))
    data = json.loads(invoke("analyze", str(gptq), "--hw", "h100", "--batch", "1", "--seq", "512",
                             "--mode", "inference", "--format", "json").stdout)
    assert data["warnings"] == [
        "quantization_config = gptq, 4-bit weights, groups of 128 in the config is not "
        "modelled: the weights are counted unquantized, in the model's dtype (in inference, "
        "--weights int4 with --group-size, int8 or fp8 counts them as stored)"]


def test_a_quantized_config_with_weights_given_says_the_option_counts_them(invoke, tmp_path):
    # with --weights given the config's quantization is not read, the weights are counted as
    # the option stores them: the warning said "counted unquantized" beside a memory line that
    # counted them at 4 bits (DeepSeek-V3's fp8 config under --weights fp8 said the same)
    gptq = tmp_path / "llama-gptq.json"
    gptq.write_text(json.dumps(_config("llama-2-7b.json", quantization_config={
        "quant_method": "gptq", "bits": 4, "group_size": 128})))
    data = json.loads(invoke("analyze", str(gptq), "--hw", "h100", "--batch", "1", "--seq", "512",
                             "--mode", "inference", "--weights", "int4", "--format",
                             "json").stdout)
    assert data["warnings"] == [
        "quantization_config = gptq, 4-bit weights, groups of 128 in the config is not read: "
        "the weights are counted as --weights int4 stores them"]
