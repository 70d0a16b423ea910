"""The desk GPUs (RTX 4090, RTX 3090, RTX 6000 Ada, RTX A6000) through the commands people ask
"is an H100 worth it" with: found by the name nvidia-smi prints, Llama-2-7B's 4-bit weights
against a 4090's memory, and its decode step's memory-bound GEMMs against an H100's, by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.api import analyze_model
from roofline.hardware.catalog import list_hardware
from roofline.probe import identify

LLAMA = Path(__file__).resolve().parents[1] / "examples" / "hf" / "llama-2-7b.json"


@pytest.mark.parametrize("nvml, name", [
    # the product names of NVIDIA's driver tables (open-gpu-kernel-modules README, 560.31.02),
    # which nvidia-smi and nvmlDeviceGetName print
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA GeForce RTX 3090", "rtx-3090"),
    ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
    ("NVIDIA RTX A6000", "rtx-a6000"),
])
def test_the_name_nvidia_smi_prints_finds_the_entry(nvml, name):
    assert identify.match_gpu(nvml, list_hardware()).name == name
    # not another board of the family (the 3090 Ti, the RTX 6000 of Turing)
    assert identify.match_gpu(nvml + " Ti", list_hardware()) is None


def test_llama_2_7b_at_int4_fits_a_4090_by_hand():
    # 32 blocks x (4 x 4096 x 4096 + 3 x 4096 x 11008) = 32 x 202,375,168 = 6,476,005,376
    # block weights at int4 with an fp16 scale every 128: 0.5 + 2 / 128 = 0.515625 B each =
    # 3,339,190,272 B; the embedding and the untied LM head stay fp16 (as vLLM keeps the head):
    # 2 x 32000 x 4096 x 2 B = 524,288,000 B; 65 RMSNorm weights of 4096 at 2 B = 532,480 B.
    # Total 3,864,010,752 B. The KV cache of 640 tokens: 2 x 32 x 4096 x 640 x 2 B =
    # 335,544,320 B. Against CUDA's 25,386,352,640 B on a 4090 (its entry's deviceQuery reading)
    report = analyze_model(LLAMA, "rtx-4090", batch=1, seq=640, mode="inference",
                           phase="decode", weights="int4")
    memory = report.to_dict()["memory"]
    assert memory["weights"] == 3_864_010_752
    assert memory["kv_cache"] == 335_544_320
    assert memory["capacity_bytes"] == 25_386_352_640
    assert memory["fits"] is True


def test_a_decode_step_is_bandwidth_so_an_h100_is_3_32x_a_4090():
    # at batch 1 every GEMM of a decode step is memory-bound on both (intensity ~4 FLOP/B,
    # ridges 164 and 295): its roof time is its bytes over the bandwidth, so the ratio of the
    # step's GEMM times is 3350 / 1008 GB/s = 3.3234 (datasheets)
    times = {}
    for hw in ("rtx-4090", "h100-sxm5-80gb"):
        report = analyze_model(LLAMA, hw, batch=1, seq=640, mode="inference",
                               phase="decode", weights="int4")
        assert all(g.bound == "memory" for g in report.results)
        times[hw] = report.totals["gemm_time_s"]
    assert times["rtx-4090"] / times["h100-sxm5-80gb"] == pytest.approx(3350 / 1008, rel=1e-9)


def test_a_geforce_prefill_takes_twice_its_pro_twins_compute():
    # a 512-token prefill's GEMMs are compute-bound; per SM and clock a 3090 does half of an
    # A6000's FP16 with FP32 accumulate (512 against 1,024 FLOP): their compute-bound GEMM
    # times go as the peaks, 154.8 / 71.2 = 2.174
    geforce, pro = (analyze_model(LLAMA, hw, batch=1, seq=512, mode="inference",
                                  phase="prefill").results for hw in ("rtx-3090", "rtx-a6000"))
    both = [(g, p) for g, p in zip(geforce, pro) if g.bound == p.bound == "compute"]
    assert len(both) >= 4  # the blocks' four projections at least
    for g, p in both:
        assert g.time_s / p.time_s == pytest.approx(154.8 / 71.2, rel=1e-9)
