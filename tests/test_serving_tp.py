"""Serving over several GPUs by tensor parallelism (``analyze --tp N``,
``analysis.serving_tp``): every figure worked by hand from Llama-2-7B's config (hidden 4096,
32 heads and kv_heads, FFN 11008, vocabulary 32000, 32 blocks; Touvron et al. 2023, Table 1
and the published config.json) and the link figures of links.yaml (NVSwitch H100: 450 GB/s a
direction, NCCL's 3.4 us a step)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.analysis.collectives import ring_time_s
from roofline.analysis.parallel_shard import padded_vocab
from roofline.analysis.serving_tp import allreduce, gather
from roofline.api import analyze_model
from roofline.hardware.links import resolve_link

LLAMA = Path(__file__).resolve().parents[1] / "examples" / "hf" / "llama-2-7b.json"
H100 = "h100-sxm5-80gb"


def _decode(tp, batch=1, seq=1024, **extra):
    return analyze_model(LLAMA, H100, batch=batch, mode="inference", phase="decode", seq=seq,
                         tp=tp, **extra)


def test_the_shard_at_tp_2_divides_n_of_column_and_k_of_row_parallel_gemms():
    # Megatron's split: qkv (N = 3 x 4096) and the fused gate+up (N = 2 x 11008) column-
    # parallel, N / 2; proj (K = 4096) and down (K = 11008) row-parallel, K / 2; the logits
    # N = 32000 padded to a multiple of 128 x 2 (32000 already is) / 2 = 16000
    shapes = [(g.gemm.m, g.gemm.n, g.gemm.k) for g in _decode(2).results]
    assert shapes[:4] == [(1, 6144, 4096), (1, 4096, 2048), (1, 11008, 4096), (1, 4096, 5504)]
    assert shapes[-1] == (1, 16000, 4096)


def test_weights_and_kv_cache_per_gpu_at_tp_2():
    # parameters per GPU: 32 blocks of (4 h^2 + 3 h ffn) / 2 = 101,187,584 plus their two
    # norms whole (8192), the embedding and the logits 32000 x 4096 / 2 each, the final norm
    # 4096: 3,369,340,928 (the whole model's 6,738,415,616, the published 6.74 B); fp16: x 2 B
    one, two = _decode(1), _decode(2)
    assert two.network.parameters == 32 * (101_187_584 + 8192) + 2 * 65_536_000 + 4096
    assert two.memory.parts["weights"] == 2 * 3_369_340_928
    # KV cache: 2 (K and V) x 32 layers x 4096 x 1024 keys x 2 B = 536,870,912 whole; 32
    # kv_heads divide by 2, so each GPU keeps half
    assert one.memory.parts["kv_cache"] == 536_870_912
    assert two.memory.parts["kv_cache"] == 268_435_456


def test_a_decode_steps_transfers_count_and_bytes():
    # 2 all-reduces a block x 32 + the embedding's = 65, of batch x 4096 x 2 B; the logits
    # gathered to one rank: batch x 32000 x 2 B
    step = _decode(2, batch=4).tensor_parallel.step
    reduces, gathers = step.transfers
    assert (reduces.what, reduces.count, reduces.nbytes) == ("all-reduce", 65, 4 * 4096 * 2)
    assert (gathers.what, gathers.count, gathers.nbytes) == ("gather", 1, 4 * 32000 * 2)
    assert step.count == 66


def test_the_ring_all_reduce_formula_for_a_decode_step_on_nvswitch():
    # 2 (p - 1) a + 2 (p - 1) / p x S / B at p 8, S = 8192 B (one token of 4096 fp16):
    # 14 x 3.4 us + 1.75 x 8192 / 450e9 = 47.6 us + 31.86 ns
    assert ring_time_s("all-reduce", 8192, 8, 450.0, 3.4) == pytest.approx(47.6e-6 + 3.18578e-8)


def test_small_all_reduces_are_vllms_one_shot_and_large_ones_two_shot_or_ring():
    nvswitch = resolve_link("nvswitch-h100", "intra")
    # one-shot under 256 KiB at 8 GPUs: 2 syncs x 3.4 us + 7 x 8192 / 450e9
    algorithm, roof, predicted = allreduce(8192, 8, nvswitch)
    assert algorithm == "one-shot"
    assert predicted == pytest.approx(6.8e-6 + 7 * 8192 / 450e9)
    assert roof == pytest.approx(1.75 * 8192 / 450e9)  # the bytes alone, bandwidth-optimal
    # 1 MiB at 8 GPUs: two-shot, 2 x 3.4 us + 1.75 x 1048576 / 450e9 = 10.88 us
    assert allreduce(1 << 20, 8, nvswitch)[0] == "two-shot"
    assert allreduce(1 << 20, 8, nvswitch)[2] == pytest.approx(10.87779e-6)
    # 8 MiB is past vLLM's buffer: NCCL's ring, 14 x 3.4 us + 1.75 x 8388608 / 450e9
    assert allreduce(8 << 20, 8, nvswitch)[0] == "ring"
    assert allreduce(8 << 20, 8, nvswitch)[2] == pytest.approx(47.6e-6 + 32.6224e-6)
    # 4 PCIe GPUs: vLLM turns its kernel off, NCCL's ring: 6 x 5.7 us + 1.5 x 8192 / 31.5e9
    pcie = resolve_link("pcie4-x16", "intra")
    assert allreduce(8192, 4, pcie) == ("ring", pytest.approx(1.5 * 8192 / 31.5e9),
                                        pytest.approx(34.2e-6 + 0.390095e-6))
    # 2 PCIe GPUs: vLLM's one-shot (peer memory over PCIe): 2 x 5.7 us + 8192 / 31.5e9
    assert allreduce(8192, 2, pcie)[0] == "one-shot"
    assert allreduce(8192, 2, pcie)[2] == pytest.approx(11.4e-6 + 8192 / 31.5e9)
    # a link without peer memory given as --intra (InfiniBand): no custom kernel, the ring:
    # 2 x 14 us + 8192 / 50e9 (one step each way at p 2)
    ib = resolve_link("ib-ndr", "intra")
    assert allreduce(8192, 2, ib) == ("ring", pytest.approx(8192 / 50e9),
                                      pytest.approx(28e-6 + 8192 / 50e9))
    # the logits' gather: (p - 1) / p x S / B + a
    assert gather(65536, 8, nvswitch)[1] == pytest.approx(3.4e-6 + 0.875 * 65536 / 450e9)


def test_llama_7b_decode_at_tp_8_pays_454_us_a_token_in_its_step_time():
    # 65 one-shot all-reduces of 8192 B (2 x 3.4 us + 7 x 8192 / 450e9 = 6.927431 us each) +
    # the gather of 32000 x 2 B = 64,000 B (vLLM pads the vocabulary to 64, not Megatron's
    # 128 x tp: 0.875 x 64000 / 450e9 + 3.4 us = 3.524444 us): 453.81 us a token; the ring
    # would be 65 x 47.63 = 3.1 ms. Roof: 65 x 2 x 0.875 x 8192 / 450e9 + 0.875 x 64000 /
    # 450e9 = 2.1952 us
    report, alone = _decode(8), _decode(1)
    t = report.totals
    assert t["predicted_tp_comm_time_s"] == pytest.approx(65 * 6.927431e-6 + 3.524444e-6)
    assert t["tp_comm_time_s"] == pytest.approx(2.1952e-6)
    assert t["predicted_time_s"] == pytest.approx(
        t["predicted_gemm_time_s"] + t["predicted_op_time_s"] + t["predicted_tp_comm_time_s"])
    assert t["time_s"] == pytest.approx(t["gemm_time_s"] + t["op_time_s"] + t["tp_comm_time_s"])
    assert "tp_comm_time_s" not in alone.totals


def test_a_generation_counts_the_prefill_and_every_decode_steps_communication():
    one = analyze_model(LLAMA, H100, batch=2, prompt=16, generate=5, tp=2)
    tp, g = one.tensor_parallel, one.generation
    assert tp.prefill.transfers[0].nbytes == 2 * 16 * 4096 * 2  # batch x prompt x h x 2 B
    assert tp.prefill.transfers[1].nbytes == 2 * 32000 * 2  # last-token logits only
    assert tp.decode_steps == 4
    assert tp.predicted_generation_s == pytest.approx(tp.prefill.predicted_s
                                                      + 4 * tp.decode.predicted_s)
    shard = analyze_model(LLAMA, H100, batch=2, prompt=16, generate=5).generation
    assert g.ttft_s > tp.prefill.roof_s and g.tokens_per_s == 2 * 5 / g.latency_s
    assert shard.latency_s != g.latency_s


def test_the_vocabulary_is_padded_as_vllm_pads_it_not_as_megatron_trains():
    """vLLM's VocabParallelEmbedding and ParallelLMHead pad the vocabulary to a multiple of 64
    (DEFAULT_VOCAB_PADDING_SIZE) and give each GPU 1/tp of it: Llama's 32000 is 4000 rows a
    GPU at tp 8 (Megatron-LM's training rule, 128 x tp, would make it 32768 and 4096) and the
    gathered logits 32000 x 2 B whatever tp; GPT-2's 50257 pads to 50304 (786 x 64), 12576 a
    GPU at tp 4. plan (training) keeps Megatron's rule."""
    for tp in (2, 4, 8):
        report = analyze_model(LLAMA, H100, mode="inference", phase="decode", seq=2048,
                               batch=3, tp=tp)
        assert report.results[-1].gemm.n == 32000 // tp  # lm_head
        gathered = report.tensor_parallel.step.transfers[-1]
        assert (gathered.what, gathered.nbytes) == ("gather", 3 * 32000 * 2)
    assert padded_vocab(50257, 4, serving=True) == 50304
    assert padded_vocab(32000, 8) == 32768  # Megatron-LM's, plan's


def test_cli_header_and_json(invoke):
    result = invoke("analyze", LLAMA, "--hw", H100, "--batch", "1", "--prompt", "64",
                    "--generate", "4", "--tp", "8", "--gemms-only")
    assert result.exit_code == 0, result.output
    assert ("tensor-parallel over 8 GPUs (each GPU's shard below); all-reduces on NVSwitch "
            "(DGX H100 / HGX H100, 8 GPUs) (450 GB/s, 3.4 us a step), exposed"
            in " ".join(result.output.split()))
    assert "tokens/s on the 8 GPUs" in " ".join(result.output.split())
    data = json.loads(invoke("analyze", LLAMA, "--hw", H100, "--batch", "1", "--prompt", "64",
                             "--generate", "4", "--tp", "8", "--format", "json").output)
    group = data["tensor_parallel"]
    assert group["tp"] == 8 and group["link"]["name"] == "nvswitch-h100"
    assert group["decode"]["transfers"][0]["algorithm"] == "one-shot"
    assert data["totals"]["predicted_tp_comm_time_s"] == group["step"]["predicted_time_s"]


def test_a_bare_bandwidth_link_is_named_once(invoke):
    """``--intra 100`` is a link of 100 GB/s and no latency (``resolve_link``): the header says
    the figure once and that no latency is counted, not ``100 GB/s (100 GB/s, ...)``."""
    result = invoke("analyze", LLAMA, "--hw", H100, "--batch", "1", "--prompt", "8",
                    "--generate", "8", "--tp", "2", "--intra", "100")
    assert result.exit_code == 0, result.output
    assert ("all-reduces on 100 GB/s (no latency stated), exposed"
            in " ".join(result.output.split()))


@pytest.mark.parametrize("args, expected", [
    (("--mode", "train", "--seq", "128", "--tp", "2"),
     "Error: {m}: --tp serves an inference step or a generation; a training step's split over "
     "GPUs is `roofline plan`'s"),
    (("--prompt", "8", "--generate", "8", "--tp", "3"),
     "Error: {m}: tensor parallelism 3 does not divide heads (32) of block 'blk.1': each GPU "
     "must get whole heads (--tp)"),
    (("--prompt", "8", "--generate", "8", "--tp", "16"),
     "Error: {m}: tensor parallelism 16 spans more than one node of 8 GPUs (--gpus-per-node): "
     "serving across nodes is not modelled by tensor parallelism (by pipeline stages it is: "
     "--pp N)"),
    (("--prompt", "8", "--generate", "8", "--intra", "nvswitch-h100"),
     "Error: --intra: goes with --tp N (the node a tensor-parallel group serves on)"),
])
def test_refusals_are_one_line(invoke, args, expected):
    result = invoke("analyze", LLAMA, "--hw", H100, "--batch", "1", *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines == [expected.format(m=LLAMA)]


def test_every_format_says_the_rows_are_one_gpus_shard(invoke):
    """The HTML page carries the header's tensor-parallel line and the communication line as
    the text does, and its title and the chart's say one GPU of tp N; the CSV a tp column."""
    from roofline.output.html.page import report_page
    from roofline.output.report import report_csv
    from roofline.plot.roofline import _title

    served = analyze_model(LLAMA, H100, batch=2, prompt=16, generate=4, tp=8)
    page = " ".join(report_page([served]).split())
    assert "tensor-parallel over 8 GPUs (each GPU&#x27;s shard below)" in page
    assert "tensor-parallel communication, in the generation&#x27;s times below" in page
    assert "llama-2-7b on h100-sxm5-80gb (one GPU of tp 8)" in page
    assert "output tokens a second on the 8 GPUs, predicted" in page
    assert _title([served]).startswith("llama-2-7b on h100-sxm5-80gb (one GPU of tp 8), ")
    header, row = report_csv(served).splitlines()[:2]
    assert header.startswith("hardware,batch,mode,seq,phase,tp,name,")
    assert row.startswith("h100-sxm5-80gb,2,inference,19,decode,8,MM1,")
    alone = analyze_model(LLAMA, H100, batch=2, prompt=16, generate=4)
    assert report_csv(alone).startswith("hardware,batch,mode,seq,phase,name,")
    assert "one GPU of tp" not in _title([alone])


@pytest.mark.parametrize("option", ["--tp", "--gpus-per-node", "--intra"])
def test_gemm_names_analyze_for_tp(invoke, option):
    """gemm, a bare shape, takes no --tp (compare and sweep do since 0.9.0:
    tests/test_serving_tp_whatif.py)."""
    result = invoke("gemm", "64", "64", "64", "--hw", H100, option, "2")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: No such option '{option}': `roofline gemm` analyzes one GPU; a step or a "
        f"generation served over several is `roofline analyze MODEL --hw GPU --tp N`'s (see "
        f"`roofline gemm --help`)"]


def test_a_served_prefill_gathers_each_sequences_last_logits_unless_told_all(invoke):
    """A server samples each sequence's next token from its last token's logits (vLLM's
    LogitsProcessor prunes to the sampled positions), so a bare prefill step served over tp
    GPUs keeps and gathers those: batch 4 x 32000 x 2 B = 256,000 B, not every token's
    (4 x 1024 x 32000 x 2 = 262,144,000), which --logits all still asks for."""
    args = ("analyze", str(LLAMA), "--hw", "h100", "--mode", "inference", "--phase",
            "prefill", "--batch", "4", "--seq", "1024", "--tp", "8", "--format", "json")
    for extra, logits, gathered in (((), "last", 256_000),
                                    (("--logits", "all"), "all", 262_144_000)):
        doc = json.loads(invoke(*args, *extra).stdout)
        assert doc["logits"] == logits
        sent = {t["collective"]: t["bytes"] for t in doc["tensor_parallel"]["step"]["transfers"]}
        assert sent["gather"] == gathered
