"""A config.json without torch_dtype names the option to give; --attention picks a config.json
model's attention form (analyze, compare and sweep pass it through)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from roofline.cli import cli
from roofline.errors import InputError
from roofline.model.network import load_network

GPT2 = Path(__file__).parent.parent / "examples" / "hf" / "gpt2.json"


def test_missing_dtype_names_the_option():
    net = load_network(GPT2).with_overrides(batch=1, seq=128)
    with pytest.raises(InputError, match=r"dtype: missing required field \(the config.json gives "
                                         r"no torch_dtype read here: bfloat16, float16, float32 "
                                         r"or float64; give dtype=...\)"):
        net.gemms()


def test_every_missing_setting_is_named_in_one_line(invoke, tmp_path):
    # gpt2.json gives no batch, no torch_dtype and no seq: a new user met them one run each
    out = invoke("compare", GPT2, "--hw", "a100", "--hw", "h100")
    assert out.exit_code == 2
    assert out.output.strip() == (f"Error: {GPT2}: batch, dtype, seq: missing required fields "
                                  f"(give them in the model or --batch, --dtype and --seq)")
    one = invoke("analyze", GPT2, "--hw", "a100", "--batch", "2", "--seq", "8")
    assert "dtype: missing required field (the config.json gives no torch_dtype read here" in (
        one.output)
    # one that names a dtype not read here ("auto", "int8", an fp8 storage type): the value it
    # gave is said, not as if the key were absent, with the dtypes read
    for value, key in (("auto", "torch_dtype"), ("int8", "torch_dtype"), ("int8", "dtype")):
        auto = tmp_path / "gpt2-other.json"
        auto.write_text(json.dumps({**json.loads(Path(GPT2).read_text()), key: value}))
        other = invoke("analyze", str(auto), "--hw", "a100", "--batch", "2", "--seq", "8")
        assert other.exit_code == 2
        assert other.output.strip() == (
            f"Error: {auto}: dtype: missing required field (the config.json gives {key} "
            f"'{value}', which is not read here: only bfloat16, float16, float32 or float64 "
            f"are; give --dtype)")
    # a dtype read under the other key wins: no complaint
    both = {**json.loads(Path(GPT2).read_text()), "torch_dtype": "int8", "dtype": "float16"}
    auto.write_text(json.dumps(both))
    assert load_network(auto).dtype == "fp16"


def test_attention_override_gives_naive_attention_gemms():
    # gpt2: 12 heads of 64, 12 blocks; naive attention at batch 1, seq 128 adds per block a
    # scores GEMM (12 batched 128 x 128 x 64) and a context GEMM (12 batched 128 x 64 x 128):
    # 2 x 2 x 128 x 128 x 64 x 12 = 50,331,648 FLOPs per block
    base = load_network(GPT2).with_overrides(batch=1, seq=128, dtype="fp16", mode="inference")
    naive = base.with_overrides(attention="naive")
    assert not [g for g in base.gemms() if g.layer.endswith((".scores", ".context"))]
    attention = [g for g in naive.gemms() if g.layer.endswith((".scores", ".context"))]
    assert len(attention) == 24
    assert sum(g.flops for g in attention) == 12 * 50_331_648
    with pytest.raises(InputError, match="attention"):
        base.with_overrides(attention="sparse")


@pytest.mark.parametrize("command", [["analyze", "--hw", "v100", "--batch", "1"],
                                     ["compare", "--hw", "v100", "--hw", "a100", "--batch", "1"],
                                     ["sweep", "--hw", "v100", "--batch", "1,2"]])
def test_cli_passes_attention_through(command):
    args = [command[0], str(GPT2), *command[1:], "--seq", "128", "--dtype", "fp16", "--mode",
            "inference", "--format", "json"]
    runs = {form: CliRunner().invoke(cli, args + ["--attention", form])
            for form in ("flash", "naive")}
    for run in runs.values():
        assert run.exit_code == 0, run.output
    assert json.loads(runs["flash"].output) != json.loads(runs["naive"].output)
    if command[0] == "analyze":
        assert "blk.1.scores" in runs["naive"].output
        assert "blk.1.scores" not in runs["flash"].output
