"""Published speeds of fused (flash) attention kernels, copied from their authors' papers, each
row with its source: the data ``analysis.gpu_ops`` predicts a ``flash-attention`` op from.

FLOPs are counted as the authors' benchmark counts them (Dao-AILab/flash-attention,
benchmarks/benchmark_flash_attention.py: forward ``4 batch seqlen^2 nheads headdim``, halved
when causal; backward 2.5x the forward), which is how ``model/layers/transformer.py`` counts a
``flash-attention`` op (4 G q s d, halved when causal) and its backward (10 G q s d), so a
published TFLOP/s divides the op's FLOPs directly.

A rate is kept as the share of the dense FP16/BF16 peak of the GPU it was measured on
(``MEASURED_ON``: its hwdb entry's figure), so that another GPU of the same architecture is
predicted at the same share of its own peak (H100 PCIe from H100 SXM5's figures).

FlashAttention-3 (Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao, 2024, arXiv:2407.08608v2),
Figure 5 (forward, FP16/BF16, panels (a)-(f): head dim 64, 128, 256, each without and with the
causal mask) and Figure 6 (backward, panels (a)-(b): head dim 64 and 128, without the mask),
H100 80GB SXM5 with its clock locked at 1830 MHz (Appendix C.1: the clock of the 989 TFLOP/s
peak), FlashAttention-3's bars, sequence length 512..16k with batch x seqlen = 16k and hidden
2048 (heads = 2048 / head dim). The numbers are the labels printed above the bars, read from
the paper's own text (``FA3_FIGURES`` names the panel of each; until 0.9.0 they were read from
image transcriptions, one of which gave 639 for head dim 256 at 1k where the paper prints 627).
A causal backward is derived from the unmasked backward and the forward's masked and unmasked
pairs (``gpu_ops.causal_share``); head dim 256's backward, unpublished, is clamped to 128's.

FlashAttention-2 on Ampere (Dao 2023, arXiv:2307.08691, section 1): "reaching up to 73% of the
theoretical max throughput in the forward pass, and up to 63% of the theoretical max throughput
in the backward pass" (A100; the abstract's "50-73%"; the author's post, ``FA2_BLOG``: "up to
230 TFLOPs/s on A100 GPUs (FP16/BF16)", 230 / 312 = 73.7%). The per-sequence-length bars of
its figures could not be confirmed from a public transcription, so the upper end of each pass
is used (``FA2_AMPERE_FRACTION``; until 0.9.0 the forward's 73% for both), for every head
dimension and sequence length and every Ampere GPU (measured on an A100; an A10 is assumed
alike): optimistic at short sequences, and said so in the basis.

Only the standard library is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The GPU the FlashAttention-3 figures were measured on, and its dense FP16/BF16 peak
#: (hwdb/gpu/h100-sxm5-80gb.yaml, NVIDIA's H100 datasheet).
MEASURED_ON = "h100-sxm5-80gb"
MEASURED_ON_PEAK_TFLOPS = 989.5

FA3_SOURCE = "https://arxiv.org/abs/2407.08608"
FA2_SOURCE = "https://arxiv.org/abs/2307.08691"
FA2_BLOG = "https://hazyresearch.stanford.edu/blog/2023-07-17-flash2"
#: FlashAttention-2's best published share of the A100's peak, per pass (section 1: "up to 73%
#: ... in the forward pass, and up to 63% ... in the backward pass").
FA2_AMPERE_FRACTION = {"forward": 0.73, "backward": 0.63}

SEQS = (512, 1024, 2048, 4096, 8192, 16384)

_F = "arXiv:2407.08608v2, Figure "


@dataclass(frozen=True)
class Curve:
    """One published figure: FlashAttention-3's TFLOP/s at each of ``SEQS``."""

    pass_: str       # "forward" | "backward"
    head_dim: int
    causal: bool
    tflops: tuple[float, ...]
    source: str      # the panel of the paper's figure the numbers are printed in


FA3_FIGURES = (
    Curve("forward", 64, False, (333, 392, 460, 476, 496, 497),
          _F + "5(a)"),
    Curve("forward", 64, True, (197, 265, 371, 420, 460, 473),
          _F + "5(b)"),
    Curve("forward", 128, False, (467, 565, 625, 638, 646, 648),
          _F + "5(c)"),
    Curve("forward", 128, True, (292, 423, 521, 579, 602, 616),
          _F + "5(d)"),
    Curve("forward", 256, False, (482, 627, 707, 736, 746, 756),
          _F + "5(e)"),
    Curve("forward", 256, True, (286, 427, 537, 612, 628, 642),
          _F + "5(f)"),
    Curve("backward", 64, False, (272, 363, 422, 453, 472, 474),
          _F + "6(a)"),
    Curve("backward", 128, False, (316, 424, 501, 542, 559, 561),
          _F + "6(b)"),
)
