"""A convolution a GPU measurement timed one layer at a time (a row of ``gpu_measure.py
--parts video``'s convs3d.csv or ``gpu_convs_align.py``'s CSV), rebuilt on the "meta" device and
predicted as ``roofline.torch.capture`` counts it: the benchmarks that hold such rows against
the model (bench_gpu_video.py, bench_gpu_convs_align.py) share it. Only torch and roofline are
imported, and only when a row is predicted."""

from __future__ import annotations

from typing import Any

#: a network's input has this many channels or fewer: its stem, whose input needs no gradient,
#: as the measurements took it (``_video.conv_functions``)
STEM_CHANNELS = 8


def _dims(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("x"))


def layer(row: dict[str, str]) -> tuple[Any, tuple[int, ...]]:
    """The row's convolution on "meta" (Conv1d, Conv2d, Conv3d, ConvTranspose3d; its groups
    where the row has them) and its input's shape; past the stem (``STEM_CHANNELS``) behind a
    trainable scale, so that a training capture counts its input's gradient as the measurement
    took it."""
    import torch

    n, c, k, s = int(row["n"]), int(row["c"]), int(row["k"]), int(row["side"])
    groups = int(row.get("groups") or 1)
    if row["op"] == "conv1d":
        conv, shape = torch.nn.Conv1d(c, k, int(row["kernel"]), stride=int(row["stride"]),
                                      bias=False), (n, c, s)
    elif row["op"] == "conv_transpose3d":
        conv = torch.nn.ConvTranspose3d(c, k, _dims(row["kernel"]), stride=_dims(row["stride"]),
                                        bias=False)
        shape = (n, c, int(row["frames"]), s, s)
    else:
        three = row["op"] == "conv3d"
        conv = (torch.nn.Conv3d if three else torch.nn.Conv2d)(
            c, k, _dims(row["kernel"]), stride=_dims(row["stride"]), padding=_dims(row["pad"]),
            groups=groups, bias=False)
        shape = (n, c, int(row["frames"]), s, s) if three else (n, c, s, s)
    if c <= STEM_CHANNELS:
        return conv, shape

    class Scaled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(1))
            self.conv = conv

        def forward(self, x: Any) -> Any:
            return self.conv(x * self.scale)
    return Scaled(), shape


def predicted(row: dict[str, str], hw: Any) -> tuple[float, int, float]:
    """The row's predicted GEMM seconds on ``hw``, its GEMMs' FLOPs and the seconds of cuDNN's
    layout transposes among those (``analysis.gpu_layout.transpose_s``), for its pass
    (``mode``: forward, a capture in inference; backward, a training capture less that)."""
    import torch

    from roofline.analysis.gpu_layout import transpose_s
    from roofline.analysis.report import analyze
    from roofline.model.repeats import float_total
    from roofline.torch import capture

    dt = torch.float32 if row["dtype"] == "fp32" else torch.bfloat16
    with torch.device("meta"):
        module, shape = layer(row)
        module, x = module.to(dt), torch.empty(*shape, dtype=dt)
    if row["layout"] == "ndhwc":
        fmt = torch.channels_last_3d if x.dim() == 5 else torch.channels_last
        module, x = module.to(memory_format=fmt), x.contiguous(memory_format=fmt)
    got = {}
    for mode in ("inference", "train"):
        report = analyze(capture(module, x, mode=mode, name="conv"), hw)
        got[mode] = (report.totals["predicted_gemm_time_s"],
                     sum(r.gemm.flops for r in report.results),
                     float_total(report.results, lambda r: transpose_s(r.gemm, hw)))
    if row["mode"] == "forward":
        return got["inference"]
    train, inference = got["train"], got["inference"]
    return train[0] - inference[0], train[1] - inference[1], train[2] - inference[2]


#: the entry the rows are predicted on: the lent H100's datasheet entry
ENTRY = "h100-sxm5-80gb"


def started(doc: str) -> tuple[bool, Any] | None:
    """What the benchmarks that read such rows start from: their ``--markdown`` flag (their
    description the first line of ``doc``) and the ``ENTRY`` spec; None, with the one-line
    error they exit 2 on, where torch does not import."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--markdown", action="store_true")
    markdown = parser.parse_args().markdown
    try:
        import torch  # noqa: F401
    except ImportError:
        print("error: needs torch (pip install -e \".[torch]\")", file=sys.stderr)
        return None
    from roofline.hardware.catalog import load_hardware

    return markdown, load_hardware(ENTRY)
