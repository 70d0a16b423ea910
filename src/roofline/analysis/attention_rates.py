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

FlashAttention-3 (Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao, 2024, arXiv:2407.08608),
Figure 5 (forward, FP16/BF16) and Figure 6 (backward), H100 80GB SXM5, FlashAttention-3's bars,
sequence length 512..16k with batch x seqlen = 16k and hidden 2048 (heads = 2048 / head dim).
The numbers are the labels above the bars, read from the figures' transcriptions (``FA3_FIGURES``
lists the page of each); the transcriptions do not name the mask, so the causal figure is the
one of each pair whose FlashAttention-2 and standard-attention bars are lower at 512, as masking
makes them. One disagreement between two transcriptions of the same figure: forward head dim
128 non-causal at seq 512 reads 467 in one and 497 in the other (cuDNN's and FlashAttention-3's
bars swapped); 467 is kept. The backward figures are for head dim 64 and 128 only, without the
mask; a causal backward is derived from them and the forward's masked and unmasked pairs
(``gpu_ops.causal_share``).

FlashAttention-2 on Ampere (Dao 2023, arXiv:2307.08691, abstract): "reaching 50-73% of the
theoretical maximum FLOPs/s on A100"; the author's post (``FA2_BLOG``) gives the same top
figure as "up to 230 TFLOPs/s on A100 GPUs (FP16/BF16)", 230 / 312 = 73.7%, from benchmarks on
an A100 80GB SXM4 at seq 512..16k, head dim 64 and 128, with and without the causal mask. The
per-sequence-length bars of those figures could not be confirmed from a public transcription,
so only the upper end, 73%, is used, for every head dimension and sequence length, for both
passes and for every Ampere GPU (measured on an A100; an A10 is assumed alike): an optimistic
figure at short sequences and for the backward pass, and said so in the basis.

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
#: FlashAttention-2's best published share of the A100's peak (abstract: "50-73%").
FA2_AMPERE_FRACTION = 0.73

SEQS = (512, 1024, 2048, 4096, 8192, 16384)

_T = "https://subtext.edge.nugit.net/image/"


@dataclass(frozen=True)
class Curve:
    """One published figure: FlashAttention-3's TFLOP/s at each of ``SEQS``."""

    pass_: str       # "forward" | "backward"
    head_dim: int
    causal: bool
    tflops: tuple[float, ...]
    source: str      # the transcription of the figure the numbers were read from


FA3_FIGURES = (
    Curve("forward", 64, False, (333, 392, 460, 476, 496, 497),
          _T + "55f47a106c25f22983b2741a7e8bcdbaec8521b6a583d130c6f92b94e0f65924"),
    Curve("forward", 64, True, (197, 265, 371, 420, 460, 473),
          _T + "9b7cf01f91715dc46b5b50a018fdf4cd6872c4448f44d9c74a60aa61e56ec6f2"),
    Curve("forward", 128, False, (467, 565, 625, 638, 646, 648),
          _T + "e27582d2db385c9bac87ebc92343d2452b7c01d5d934e596c90172b346d00d42"),
    Curve("forward", 128, True, (292, 423, 521, 579, 602, 616),
          _T + "4ec6690918d4df7a49f27715412cc425602eb075dfe3f7821cddc4a74f058ca1"),
    Curve("forward", 256, False, (482, 639, 707, 736, 746, 756),
          _T + "72bb66933a753e02d65e914b775816bc5688dfe6ec9ab8eb2667b96fb0e574d4"),
    Curve("forward", 256, True, (286, 427, 537, 612, 628, 642),
          _T + "662fef77d03ef90933e0bf349be79e2e8ba39c73aa1f09020aee8016df309aba"),
    Curve("backward", 64, False, (272, 363, 422, 453, 472, 474),
          _T + "40bf2854920efa7e9b113b886344450b9e19d9f09b5d82d70dca870f6bacc5e0"),
    Curve("backward", 128, False, (316, 424, 501, 542, 559, 561),
          _T + "f60142e2221e7ea9f80b7017987fabedaaa04df4adeb1a9e7b0a3defac28a701"),
)
