"""Device memory by part against the capacity: every figure computed by hand here."""

from __future__ import annotations

import json

import pytest

from roofline import analyze_model
from roofline.analysis.memory import WORKSPACE_BYTES, memory_parts
from roofline.model.layers import Step, Transformer
from roofline.model.network import load_network

LLAMA = "examples/hf/llama-2-7b.json"
MLP = "examples/mlp-1024-4096-1000.yaml"
# Llama-2-7B: 32 blocks, hidden 4096, 32 heads (= kv heads) of 128, ffn 11008 gated, vocab 32000
LLAMA_PARAMETERS = 6_738_415_616
KV_PER_TOKEN = 32 * 2 * 32 * 128 * 2  # blocks x (K, V) x kv_heads x head_dim x 2 B = 524,288


@pytest.fixture(autouse=True)
def _root(monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).parent.parent)


def _memory(hw="a100-sxm4-80gb", **options):
    return analyze_model(LLAMA, hw, mode="inference", **options).memory


def test_an_encoder_keeps_no_kv_cache_and_is_not_decoded():
    """BERT's blocks are bidirectional: a new token changes every earlier token's K and V, so
    nothing is cached (bert-base was charged 2 x 12 x 768 x 2 B = 36,864 B a token: 37.7 MB
    at seq 1024, 4.8 GB at batch 256 x seq 512), and a decode step means nothing."""
    from roofline.errors import InputError

    bert = "examples/hf/bert-base-uncased.json"
    memory = analyze_model(bert, "a100-sxm4-80gb", mode="inference", batch=256, seq=512,
                           dtype="fp16").memory
    assert memory.kv_cache == 0
    with pytest.raises(InputError, match="every block here is bidirectional"):
        analyze_model(bert, "a100-sxm4-80gb", mode="inference", batch=1, seq=512,
                      dtype="fp16", phase="decode")
    # GPT-2's causal blocks keep theirs: 12 blocks x (K, V) x 768 x 2 B a token
    gpt2 = analyze_model("examples/hf/gpt2.json", "a100-sxm4-80gb", mode="inference", batch=1,
                         seq=1024, dtype="fp16").memory
    assert gpt2.kv_cache == 12 * 2 * 768 * 2 * 1024


def test_llama_2_7b_fp16_weights_are_13_48_gb():
    memory = _memory(batch=1, seq=1, phase="decode")
    assert memory.weights == LLAMA_PARAMETERS * 2 == 13_476_831_232  # 13.48 GB


def test_kv_cache_is_half_a_mib_per_token():
    assert KV_PER_TOKEN == 0.5 * 2**20
    assert _memory(batch=1, seq=1, phase="decode").kv_cache == 524_288
    assert _memory(batch=64, seq=2048, phase="decode").kv_cache == 64 * 2048 * 524_288


def test_decode_activations_are_the_largest_live_set():
    # decode, batch 1: one token. Block: residual 4096 + the larger branch: attention
    # 2 x 4096 + 2 x 4096 = 16384, FFN 2 x 11008 + 11008 = 33024 -> 37120 values x 2 B;
    # lm_head: 4096 + 32000 = 36096 x 2 B is smaller
    assert _memory(batch=1, seq=1024, phase="decode").activations == 37_120 * 2
    # prefill, batch 1, seq 1024: 1024 tokens x 37120 x 2 B = 76,021,760
    assert _memory(batch=1, seq=1024, phase="prefill").activations == 76_021_760


def test_largest_decode_batch_at_1024_plus_1024_tokens_on_a100_80gb():
    memory = _memory(batch=1, seq=2048, phase="decode")
    fixed = 13_476_831_232 + 10**9  # weights + the stated workspace
    per_sequence = 2048 * 524_288 + 74_240  # KV cache of 2048 tokens + decode activations
    # against the 85,100,068,864 B CUDA reports on an A100-SXM4-80GB (hwdb, deviceQuery):
    # (85,100,068,864 - 14,476,831,232) / 1,073,816,064 = 65.77 -> 65 (the datasheet's
    # 80e9 said 61.02 -> 61)
    assert memory.max_batch == (85_100_068_864 - fixed) // per_sequence == 65
    assert WORKSPACE_BYTES == 10**9
    at_65 = _memory(batch=65, seq=2048, phase="decode")
    at_66 = _memory(batch=66, seq=2048, phase="decode")
    assert at_65.fits and not at_66.fits
    assert at_66.total_bytes == fixed + 66 * per_sequence


def test_a100_80gb_batch_65_fits_what_cuda_reports_where_the_datasheet_said_it_did_not(invoke):
    """The edge the datasheet's decimal GB got wrong. Llama-2-7B decoding 2048 tokens, fp16,
    batch 65 on an A100-SXM4-80GB: 13,476,831,232 weights + 65 x 2048 x 524,288 KV
    (69,793,218,560) + 65 x 74,240 activations (4,825,600) + 10^9 workspace =
    84,274,875,392 B. That is over 80 x 10^9 (the datasheet's "80GB" read as decimal: "does
    not fit") but under the 85,100,068,864 B CUDA reports on the device (deviceQuery, hwdb's
    memory.reported_bytes): it fits. Batch 66 needs 1,073,816,064 more, 85,348,691,456 B:
    over either, so it does not."""
    args = [LLAMA, "--hw", "a100-sxm4-80gb", "--seq", "2048", "--mode", "inference",
            "--phase", "decode", "--format", "json"]
    at_65 = json.loads(invoke("analyze", *args, "--batch", "65").stdout)["memory"]
    assert at_65["total_bytes"] == 13_476_831_232 + 69_793_218_560 + 4_825_600 + 10**9
    assert at_65["total_bytes"] == 84_274_875_392 > 80 * 10**9
    assert (at_65["capacity_bytes"], at_65["capacity_basis"]) == (85_100_068_864, "cuda")
    assert at_65["fits"] is True
    at_66 = json.loads(invoke("analyze", *args, "--batch", "66").stdout)["memory"]
    assert at_66["total_bytes"] == 85_348_691_456 > 85_100_068_864
    assert at_66["fits"] is False


def test_h100_batch_66_seq_2048_decode_does_not_fit(invoke):
    args = [LLAMA, "--hw", "h100", "--batch", "66", "--seq", "2048", "--mode", "inference",
            "--phase", "decode"]
    data = json.loads(invoke("analyze", *args, "--format", "json").stdout)
    memory = data["memory"]
    # 13,476,831,232 + 66 x 2048 x 524,288 + 66 x 74,240 + 10^9
    total = 13_476_831_232 + 70_866_960_384 + 4_899_840 + 10**9
    assert total == 85_348_691_456
    # the capacity: 85,017,493,504 B, what CUDA reported on a lent H100 SXM5 80GB (its
    # datasheet's 80 GB are binary, less the driver's reserve: hwdb memory.reported_bytes)
    assert memory == {"weights": 13_476_831_232, "kv_cache": 70_866_960_384,
                      "activations": 4_899_840, "gradients": 0, "optimizer": 0,
                      "workspace": 10**9, "total_bytes": total,
                      "capacity_bytes": 85_017_493_504, "capacity_basis": "cuda",
                      "fits": False,
                      # (85,017,493,504 - 14,476,831,232) // (1,073,741,824 + 74,240) = 65
                      "max_batch": 65,
                      # at batch 66: (85,017,493,504 - 14,476,831,232 - 4,899,840)
                      # // (66 x 524,288) = 70,535,762,432 // 34,603,008 = 2038
                      "max_seq": 2038, "not_counted": []}
    table = invoke("analyze", *args).stdout
    assert "memory: does not fit: needs 85.3 GB of the 85 GB CUDA reports" in table
    assert "fits up to batch 65 at seq 2048, or up to seq 2038 at batch 66" in " ".join(
        table.split())
    # the batch advice no longer offers a batch that cannot exist, and says why
    assert ("MM1: batch >= 327 makes it compute-bound, but does not fit in memory (at most "
            "batch 65 fits at this sequence length)") in " ".join(table.split())
    assert data["gemms"][0]["min_compute_bound_batch"] == 327  # the number itself is kept


def test_nothing_fits_on_a_16_gb_card():
    # T4: weights 13.48 GB + workspace allowance 1 GB + KV 4096 x 0.5 MiB = 2.15 GB > 16 GB
    memory = _memory(hw="t4", batch=1, seq=4096, phase="decode")
    assert not memory.fits and memory.max_batch == 0


def test_a_cpu_entry_states_no_capacity(invoke):
    report = analyze_model(MLP, "xeon-platinum-8180", dtype="fp32")
    assert report.memory.capacity_bytes is None and report.memory.fits is None
    assert report.memory.max_batch is None
    data = report.to_dict()["memory"]
    assert data["fits"] is None and data["capacity_bytes"] is None
    out = invoke("analyze", MLP, "--hw", "8180", "--dtype", "fp32").stdout
    assert "states no capacity, so whether it fits is not checked" in " ".join(out.split())


def test_context_bounds_the_longest_sequence():
    # batch 1 decode: 4096 tokens need 2.1 GB of KV cache, far below 80 GB: the context binds
    memory = _memory(batch=1, seq=1024, phase="decode")
    assert memory.max_seq == 4096 and memory.seq_limit == "context"


# -- training ----------------------------------------------------------------------------------

def _block(**fields):
    base = {"name": "b", "hidden": 1024, "heads": 16, "kv_heads": 16, "head_dim": 64,
            "ffn": 4096, "attention": "naive", "dropout": 0.1}
    return Transformer(**(base | fields))


@pytest.mark.parametrize("s, b", [(128, 2), (512, 1)])
def test_per_layer_activations_match_korthikanti(s, b):
    """Korthikanti et al. 2022, sec. 4.1: per layer, fp16, with dropout: no recomputation
    s b h (34 + 5 a s / h) bytes; selective recomputation 34 s b h; full 2 s b h."""
    h, a = 1024, 16
    block = _block()
    step = Step(b, s, "train", 2)
    assert block.saved_bytes(step, "none") == s * b * h * 34 + 5 * a * s * s * b
    assert block.saved_bytes(step, "selective") == 34 * s * b * h
    assert block.saved_bytes(step, "full") == 2 * s * b * h


def test_flash_attention_keeps_no_score_matrix():
    # flash: 34 s b h, plus the fp32 log-sum-exp per query row and head: 4 a s b
    s, b, h, a = 256, 2, 1024, 16
    step = Step(b, s, "train", 2)
    assert _block(attention="flash").saved_bytes(step, "none") == 34 * s * b * h + 4 * a * s * b
    # no dropout: the two 1-byte masks (2 s b h) go: 32 s b h + 4 a s b
    assert (_block(attention="flash", dropout=0.0).saved_bytes(step, "none")
            == 32 * s * b * h + 4 * a * s * b)


MLP_PARAMETERS = 1024 * 4096 + 4096 * 1000  # 8,290,304


def test_mixed_precision_adam_is_16_bytes_per_parameter():
    report = analyze_model(MLP, "a100", optimizer="adam")  # fp16, batch 512, train
    m = report.memory
    p = MLP_PARAMETERS
    assert (m.weights, m.gradients, m.optimizer) == (2 * p, 2 * p, 12 * p)  # ZeRO's 2 + 2 + 12
    # activations: fc1's input 512 x 1024, fc2's input 512 x 4096, the logits 512 x 1000, 2 B
    assert m.activations == 2 * 512 * (1024 + 4096 + 1000)
    fp32 = analyze_model(MLP, "a100", optimizer="adam", dtype="fp32").memory
    assert (fp32.weights, fp32.gradients, fp32.optimizer) == (4 * p, 4 * p, 8 * p)  # no master
    accumulate = analyze_model(MLP, "a100", optimizer="sgd", grad_accumulation="fp32").memory
    assert (accumulate.gradients, accumulate.optimizer) == (4 * p, 4 * p)  # fp32 master only


def test_full_recomputation_keeps_block_inputs_and_one_block_at_work():
    net = load_network(LLAMA).with_overrides(batch=1, seq=512, mode="train")
    e, t, h = 2, 512, 4096
    none = memory_parts(net)["activations"]
    full = memory_parts(net.with_overrides(recompute="full"))["activations"]
    block_none = Transformer("b", 4096, 32, 32, 128, 11008, gated=True, causal=True,
                             norm="rmsnorm").saved_bytes(Step(1, 512, "train", 2), "none")
    # 32 blocks drop from block_none to t h e each; one block's worth comes back while it runs
    assert none - full == 32 * (block_none - t * h * e) - (block_none - t * h * e)


def test_recomputation_is_timed_not_left_out():
    """Until 0.9.0 recomputation changed the memory count only and ``not_counted`` named it;
    its forward work is now in the step's time (tests/test_recompute_time.py checks how
    much)."""
    report = analyze_model(LLAMA, "a100", batch=1, seq=512, mode="train", recompute="full")
    assert "recomputation" not in report.not_counted()
    assert report.totals["recompute_time_s"] > 0


def test_sweep_marks_batches_that_do_not_fit(invoke, tmp_path):
    args = ["sweep", LLAMA, "--hw", "h100", "--batch", "32,66", "--seq", "2048", "--mode",
            "inference", "--phase", "decode"]
    data = json.loads(invoke(*args, "--format", "json").stdout)
    assert data["max_batch"] == 65 and data["capacity_bytes"] == 85_017_493_504
    # batch 32: 14,476,831,232 + 32 x (2048 x 524,288 + 74,240) = 48,838,945,280 fits;
    # batch 66: 85,348,691,456 does not, and is kept, marked
    assert [(p["batch"], p["memory_bytes"], p["fits"]) for p in data["points"]] == [
        (32, 48_838_945_280, True), (66, 85_348_691_456, False)]
    table = invoke(*args).stdout
    assert "memory: batch <= 65 fits in memory at seq 2048 (the 85 GB CUDA reports)" in table
    assert "85.3 GB: does not fit" in table
    assert "batch >= 322: MM129 (does not fit in memory: at most batch 65)" in table
    plot = tmp_path / "sweep.svg"
    invoke(*args, "--plot", plot)
    assert 'id="sweep-no-fit' in plot.read_text()


def test_the_memory_line_says_when_the_window_caps_the_kv_cache(invoke):
    # Mistral-7B's sliding window, 4096: at seq 32768 the cache keeps 4096 tokens a sequence,
    # 2 x 32 layers x 8 kv heads x 128 x 4096 x 2 B = 536,870,912 B; below the window nothing
    # is said
    from pathlib import Path

    model = Path(__file__).parent.parent / "examples" / "hf" / "mistral-7b.json"
    args = ("--hw", "h100", "--mode", "inference", "--phase", "decode", "--batch", "1")
    out = " ".join(invoke("analyze", model, *args, "--seq", "32768").stdout.split())
    assert "KV cache 537 MB: the sliding window's last 4096 of 32768 tokens" in out
    out = " ".join(invoke("analyze", model, *args, "--seq", "2048").stdout.split())
    assert "KV cache 268 MB," in out and "sliding window's" not in out


def test_a_cpu_step_has_no_cuda_workspace():
    """The 1 GB allowance is the CUDA context, cuBLAS and attention workspaces: a CPU entry
    has none (a sweep on a Xeon showed 1.07 GB for the MLP, 1 GB of it that allowance).
    By hand, training at batch 64 in fp32: 1024 x 4096 + 4096 x 1000 = 8,290,304 weights,
    4 B each, and as many gradients."""
    cpu = analyze_model(MLP, "xeon-platinum-8380", batch=64, dtype="fp32").memory
    assert cpu.workspace == 0
    assert cpu.weights == cpu.parts["gradients"] == 8_290_304 * 4
    assert cpu.total_bytes == sum(cpu.parts.values())
    gpu = analyze_model(MLP, "a100-sxm4-80gb", batch=64, dtype="fp32").memory
    assert gpu.workspace == WORKSPACE_BYTES == 10**9
    assert gpu.total_bytes - cpu.total_bytes == 10**9


def test_an_aligned_batch_that_does_not_fit_is_not_offered(invoke):
    """Llama-2-7B decoding at seq 702 on an A100 80GB (fp16). Memory: (85,100,068,864 B as
    CUDA reports it - 13,476,831,232 weights - 10^9 workspace) // (702 x 524,288 KV + 74,240
    activations a sequence) = 70,623,237,632 // 368,198,656 = 191.85 -> 191 sequences fit
    (at seq 700, 192.39: 192 would fit). Ridge 312 / 2.039 = 153.015 FLOP/B; a
    decode GEMM B x N x K turns compute-bound where B N K / (B K + N K + B N) >= R, i.e.
    B >= R N K / (N K - R (N + K)): qkv (12288 x 4096) 161.04 -> 162, proj (4096 x 4096)
    165.37 -> 166, ffn_up (22016 x 4096) 160.11 -> 161, ffn_down (4096 x 11008) 161.28 -> 162,
    lm_head (32000 x 4096) 159.75 -> 160: each fits, but 192, the next multiple of 64 (the
    A100's 128-byte tier in fp16), does not. The advice offered 192 beside each."""
    args = [LLAMA, "--hw", "a100", "--seq", "702", "--mode", "inference", "--phase", "decode",
            "--gemms-only"]
    text = " ".join(invoke("analyze", *args, "--batch", "150").stdout.split())
    assert "fits up to batch 191 at seq 702" in text
    for names, batch in (("MM1, MM4", 162), ("MM2", 166), ("MM3", 161), ("MM129", 160)):
        assert f"{names}: batch >= {batch} makes it compute-bound " in text + " "
    assert "192" not in text.partition("warnings and advice:")[2]
    # at batch 176 (fits; compute-bound) the 128-byte tier's advice pads to 192 and says so
    text = " ".join(invoke("analyze", *args, "--batch", "176").stdout.split())
    assert ("advice: batch 176: MM1, MM2, MM3, MM4, MM129: pad to 192 (128-byte tier: multiples "
            "of 64 run best here), but batch 192 does not fit in memory (at most batch 191)"
            ) in text
    # and JSON's per-GEMM advice says it too: "(next: 192)" stood alone there
    data = json.loads(invoke("analyze", *args, "--batch", "176", "--format", "json").stdout)
    assert data["memory"]["max_batch"] == 191
    for gemm in data["gemms"]:
        assert gemm["advice"][0] == ("M=176 (batch): multiples of 64 run best on this device "
                                     "(next: 192, but batch 192 does not fit in memory (at "
                                     "most batch 191))")
