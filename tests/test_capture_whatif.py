"""A captured module in what-if comparisons: the verdict names the peaks its GEMMs run at.

Needs torch (the `torch` extra)."""

from __future__ import annotations

from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402

from roofline.torch import capture  # noqa: E402


def test_compares_verdict_names_the_tf32_peaks_its_convolutions_run_at():
    # a captured fp32 convolution runs in TF32 on an A100 and an H100 (cudnn.allow_tf32): its
    # forward 2 x (8 x 56 x 56) x 256 x (256 x 9) = 29.6 GFLOP over 25.69 + 2.36 + 25.69 MB
    # (X, W, Y in fp32), 551 FLOP/B, is compute-bound on both (TF32 ridges 156 / 2.039 = 76.5
    # and 494.5 / 3.35 = 147.6), so the TF32 peaks decide, 156 vs 494.5 TFLOP/s, where the
    # verdict named the fp32 ones, "fp32 19.5 vs 67 TFLOP/s"
    from roofline.analysis.whatif import compare
    from roofline.output.whatif import verdict_text

    network = capture(torch.nn.Conv2d(256, 256, 3, padding=1, bias=False),
                      torch.randn(8, 256, 56, 56).to(memory_format=torch.channels_last),
                      mode="inference")
    (gemm,) = network.gemms()
    assert gemm.flops == 2 * 8 * 56 * 56 * 256 * 256 * 9 == 29_595_009_024
    text = verdict_text(compare(network, ["h100-sxm5-80gb", "a100-sxm4-80gb"]))
    assert "so the compute peak decides (tf32 156 vs 494.5 TFLOP/s)" in text


def test_the_html_roofline_holds_the_tf32_points_and_draws_their_roof():
    # the same convolution, compute-bound in TF32 at the H100's 494.5 TFLOP/s: the page's chart
    # topped out at 200 (the fp32 peak's 67 x 1.5 = 100.5, to the next 1-2-5 step), so its point
    # lay off the chart and the memory-bound TF32 ones above its frame; now the top is
    # 494.5 x 1.5 = 741.75, to 1,000, and TF32's roof is drawn, dashed, labelled
    import re

    from roofline.analysis.report import analyze
    from roofline.hardware.catalog import load_hardware
    from roofline.output.html import report_page
    from roofline.output.html.svg import roofline_ranges

    network = capture(torch.nn.Conv2d(256, 256, 3, padding=1, bias=False),
                      torch.randn(8, 256, 56, 56), mode="inference")
    report = analyze(network, load_hardware("h100-sxm5-80gb"))
    (result,) = report.results
    assert (result.gemm.dtype, result.attainable_flops_per_s) == ("tf32", 494.5e12)
    assert roofline_ranges([(551.0, 494.5)], [(67.0, 3350.0)])[1][1] == 1000
    page = report_page([report])
    assert ">tf32 494.5</text>" in page
    assert re.search(r'<text[^>]*>1,000</text>', page)
