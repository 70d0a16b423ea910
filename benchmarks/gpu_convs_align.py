"""Time convolutions whose input channels are few, or whose groups are, one layer at a time,
kernel by kernel, on this machine's GPU (run on demand on a CUDA machine, nothing of roofline
imported; ``bench_gpu_convs_align.py`` holds them against the prediction):

    python benchmarks/gpu_convs_align.py OUT_DIR

Writes ``h100_live_convs_align.csv`` and ``h100_live_convs_align_env.json`` into OUT_DIR (as
benchmarks/data/ holds them: a lent H100 SXM5, 2026-11-28, torch 2.11.0+cu130, cuDNN 9.19,
about 35 s). The layers, fp32 (torch's default TF32 convolutions) and bf16, NCDHW (NCHW) and
channels_last_3d (channels_last), forward under no_grad and backward (the input's and weight's
gradients; the weight's alone for 8 input channels or fewer, a network's input), as
``_video.conv_functions`` runs them:

- ``align``: ``_video.ALIGN``, stems of 3, 4 and 8 input channels (R3D-18's 3 x 7 x 7 on clips,
  ResNet-50's 7 x 7 on images) and an RGB output layer of 3 channels, 2-D and 3-D;
- ``dw``, ``grouped``, ``grouped4``: a depthwise 3 x 3 x 3 Conv3d (96 channels, as X3D's and
  CSN's), one of 8 groups of 24 channels and one of 32 groups of 4 (ResNeXt's first stage);
- ``r21d_s``, ``r21d_t``: a (2+1)D block's 1 x 3 x 3 and 3 x 1 x 1 convolutions (R(2+1)D);
- ``audio``: a Conv1d of 1 input channel over raw audio (64 x 160,000 samples, 80 taps of
  stride 4: a waveform front end), NCL only.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import gpu_measure as G
import torch
from _resnet_kernels import _row, _write
from _video import ALIGN, conv_functions

#: (set, batch, in channels, out channels, frames, side, kernel, padding, groups)
EXTRA = (("dw", 8, 96, 96, 16, 56, (3, 3, 3), (1, 1, 1), 96),
         ("grouped", 8, 192, 192, 16, 28, (3, 3, 3), (1, 1, 1), 8),
         ("grouped4", 8, 128, 128, 16, 28, (3, 3, 3), (1, 1, 1), 32),
         ("r21d_s", 8, 64, 144, 16, 56, (1, 3, 3), (0, 1, 1), 1),
         ("r21d_t", 8, 144, 64, 16, 56, (3, 1, 1), (1, 0, 0), 1))


def _dims(values: tuple[int, ...]) -> str:
    return "x".join(map(str, values))


def layers() -> list[tuple[torch.nn.Module, tuple[int, ...], dict[str, object]]]:
    found = []
    for n, c, k, d, s, kernel, stride, pad in ALIGN:
        conv = (torch.nn.Conv3d if d else torch.nn.Conv2d)(c, k, kernel, stride=stride,
                                                            padding=pad, bias=False)
        found.append((conv, (n, c, d, s, s) if d else (n, c, s, s),
                      {"set": "align", "op": "conv3d" if d else "conv2d", "n": n, "c": c, "k": k,
                       "frames": d or "", "side": s, "kernel": _dims(kernel),
                       "stride": _dims(stride), "pad": _dims(pad), "groups": 1}))
    for name, n, c, k, d, s, kernel, pad, groups in EXTRA:
        found.append((torch.nn.Conv3d(c, k, kernel, padding=pad, groups=groups, bias=False),
                      (n, c, d, s, s),
                      {"set": name, "op": "conv3d", "n": n, "c": c, "k": k, "frames": d,
                       "side": s, "kernel": _dims(kernel), "stride": "1x1x1", "pad": _dims(pad),
                       "groups": groups}))
    return found


def _audio(dt: torch.dtype) -> dict[str, object]:
    """The audio front end's forward and its weight's gradient (module docstring)."""
    conv = torch.nn.Conv1d(1, 64, 80, stride=4, bias=False).to("cuda", dt)
    x = torch.randn(64, 1, 160000, device="cuda", dtype=dt)
    y = conv(x)
    dy = torch.randn_like(y)

    def forward() -> object:
        with torch.no_grad():
            return conv(x)
    return {"forward": forward,
            "backward": lambda: torch.autograd.grad(y, (conv.weight,), dy, retain_graph=True)}


def main() -> None:
    out = Path(sys.argv[1])
    rows: list[dict[str, object]] = []
    start = time.time()
    for dname, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        for cl in (False, True):
            for conv, shape, fields in layers():
                fns = conv_functions(torch, conv, torch.randn(*shape), dt, cl, "cuda")
                for mode, fn in fns.items():
                    row = _row(torch, fn, G.time_calls, G.kernel_times)
                    rows.append(row | {"mode": mode, "dtype": dname,
                                       "layout": "ndhwc" if cl else "ncdhw"} | fields)
                torch.cuda.empty_cache()
            _write(out / "h100_live_convs_align.csv", rows)
    for dname, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        for mode, fn in _audio(dt).items():
            row = _row(torch, fn, G.time_calls, G.kernel_times)
            rows.append(row | {"mode": mode, "dtype": dname, "layout": "ncl", "set": "audio",
                               "op": "conv1d", "n": 64, "c": 1, "k": 64, "frames": "",
                               "side": 160000, "kernel": "80", "stride": "4", "pad": "0",
                               "groups": 1})
    _write(out / "h100_live_convs_align.csv", rows)
    (out / "h100_live_convs_align_env.json").write_text(json.dumps(
        {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
         "gpu": torch.cuda.get_device_name(), "s": time.time() - start}))


if __name__ == "__main__":
    main()
