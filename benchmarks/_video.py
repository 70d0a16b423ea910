"""A video network's 3-D convolutions on a GPU, for gpu_measure.py's ``video`` part (only torch
is imported, and only by the caller): does a captured ``Conv3d`` / ``ConvTranspose3d`` take the
time roofline predicts, and which kernels does cuDNN run for it in NCDHW and channels_last_3d?

- ``video_steps.json``: R3D-18 (``r3d18``: Tran et al., "A Closer Look at Spatiotemporal
  Convolutions for Action Recognition", CVPR 2018, its 18-layer 3-D ResNet as torchvision's
  ``r3d_18`` lays it out: a 3 x 7 x 7 stem of stride 1, 2, 2, four stages of two basic blocks of
  3 x 3 x 3 convolutions, 64-512 channels, Kinetics' 400 classes) on 16-frame 112 x 112 clips
  (the paper's input), batch ``BATCH``: a forward under no_grad and a training step (SGD), fp32
  (torch's default ``cudnn.allow_tf32``) and bf16, NCDHW and channels_last_3d; each the whole
  step timed (best, median, spread), its peak memory and one profiled step's kernels.
- ``convs3d.csv``: each distinct ``Conv3d`` of that network at batch ``BATCH``, and
  ``TRANSPOSED`` (3-D U-Net's 2 x 2 x 2 up-convolutions of stride 2: Cicek et al., MICCAI 2016),
  fp32 and bf16, NCDHW and channels_last_3d, ``forward`` and ``backward`` (the input's and
  weight's gradients; the weight's alone for the 3-channel stem), its kernels' profiled time and
  cuDNN's layout transposes among them, the eager call timed back to back, and the count in
  R3D-18 (``set`` r3d18, unet); then convolutions whose channels miss the Tensor Cores' 16 bytes
  and their neighbours (``ALIGN``, ``set`` align): a stem of 3, 4 or 8 input channels (R3D-18's
  3 x 7 x 7 on clips, ResNet-50's 7 x 7 on 224 x 224 images) and an output layer of 3 channels
  (an RGB decoder's last convolution), 2-D and 3-D; a stem's backward is its weight's gradient
  alone, as in a network.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _resnet_kernels import _row, _write

BATCH = 8
FRAMES, SIDE = 16, 112
CLASSES = 400
#: (batch, in channels, out channels, frames, side, kernel, stride) of 3-D U-Net's
#: up-convolutions (kernel 2, stride 2) at two of its depths
TRANSPOSED = ((2, 256, 256, 16, 16, 2, 2), (2, 128, 128, 32, 32, 2, 2))
DTYPES = (("fp32", "float32"), ("bf16", "bfloat16"))
#: (batch, in channels, out channels, frames (None: 2-D), side, kernel, stride, padding) of the
#: ``align`` set (module docstring)
ALIGN = tuple((8, c, 64, 16, 112, (3, 7, 7), (1, 2, 2), (1, 3, 3)) for c in (3, 4, 8)) + (
    (8, 64, 3, 16, 112, (3, 3, 3), (1, 1, 1), (1, 1, 1)),) + tuple(
    (64, c, 64, None, 224, (7, 7), (2, 2), (3, 3)) for c in (3, 4, 8)) + (
    (64, 64, 3, None, 224, (3, 3), (1, 1), (1, 1)),)


def r3d18() -> Any:
    """R3D-18 (module docstring), written here from the paper's table and torchvision's
    layout; its weights random."""
    from torch import nn

    def block(c: int, k: int, stride: int) -> nn.Module:
        class Basic(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.conv1 = nn.Conv3d(c, k, 3, stride=stride, padding=1, bias=False)
                self.bn1 = nn.BatchNorm3d(k)
                self.conv2 = nn.Conv3d(k, k, 3, padding=1, bias=False)
                self.bn2 = nn.BatchNorm3d(k)
                self.relu = nn.ReLU(inplace=True)
                self.down = (nn.Sequential(nn.Conv3d(c, k, 1, stride=stride, bias=False),
                                           nn.BatchNorm3d(k)) if stride != 1 or c != k
                             else None)

            def forward(self, x: Any) -> Any:
                y = self.relu(self.bn1(self.conv1(x)))
                y = self.bn2(self.conv2(y))
                return self.relu(y + (self.down(x) if self.down is not None else x))
        return Basic()

    class R3D18(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv3d(3, 64, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False),
                nn.BatchNorm3d(64), nn.ReLU(inplace=True))
            stages = []
            for c, k, stride in ((64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)):
                stages += [block(c, k, stride), block(k, k, 1)]
            self.stages = nn.Sequential(*stages)
            self.pool = nn.AdaptiveAvgPool3d(1)
            self.fc = nn.Linear(512, CLASSES)

        def forward(self, x: Any) -> Any:
            return self.fc(self.pool(self.stages(self.stem(x))).flatten(1))
    return R3D18()


def clip(torch: Any, batch: int, dt: Any, device: str, frames: int = FRAMES,
         side: int = SIDE) -> Any:
    return torch.randn(batch, 3, frames, side, side, device=device, dtype=dt)


def conv_shapes(torch: Any, batch: int, frames: int = FRAMES,
                side: int = SIDE) -> dict[tuple[Any, ...], int]:
    """R3D-18's distinct convolutions (n, c, k, frames, side, kernel, stride, padding; kernel,
    stride and padding as 3-tuples), each with its count, from forward hooks on "meta"."""
    found: dict[tuple[Any, ...], int] = {}

    def hook(mod: Any, args: tuple[Any, ...], _out: Any) -> None:
        if isinstance(mod, torch.nn.Conv3d):
            n, c, d, h, _w = args[0].shape
            key = (n, c, mod.out_channels, d, h, tuple(mod.kernel_size), tuple(mod.stride),
                   tuple(mod.padding))
            found[key] = found.get(key, 0) + 1
    with torch.device("meta"):
        module = r3d18()
        for m in module.modules():
            m.register_forward_hook(hook)
        module(clip(torch, batch, torch.float32, "meta", frames, side))
    return found


def conv_functions(torch: Any, module: Any, x: Any, dt: Any, channels_last: bool,
                   dev: str) -> dict[str, Callable[[], object]]:
    """A convolution's forward and backward (module docstring), on a copy of ``module`` (a
    module's ``to`` moves its own weights: one left channels last would turn the next layout's
    NCDHW call channels last)."""
    module = copy.deepcopy(module).to(dev, dt)
    x = x.to(dev, dt)
    if channels_last:
        fmt = torch.channels_last_3d if x.dim() == 5 else torch.channels_last
        module = module.to(memory_format=fmt)
        x = x.contiguous(memory_format=fmt)
    stem = x.shape[1] <= 8  # a network's input: no gradient of its own
    xg = x.detach().requires_grad_(not stem)
    y = module(xg)
    dy = torch.randn_like(y)
    wrt = (module.weight,) if stem else (xg, module.weight)

    def forward() -> object:
        with torch.no_grad():
            return module(x)
    return {"forward": forward,
            "backward": lambda: torch.autograd.grad(y, wrt, dy, retain_graph=True)}


def measure_video(torch: Any, out: Path, quick: bool, dev: str,
                  time_calls: Callable[..., dict[str, float]],
                  kernel_times: Callable[..., dict[str, Any]],
                  step_record: Callable[..., dict[str, Any]],
                  step_function: Callable[..., Callable[[], None]],
                  log: Callable[[str], None]) -> None:
    """``video_steps.json``, then ``convs3d.csv`` (module docstring); ``quick``: a dry run at
    batch 1, 4 frames of 32 x 32, two convolutions."""
    size = (1, 4, 32) if quick else (BATCH, FRAMES, SIDE)
    steps: list[dict[str, Any]] = []
    for dname, dt in DTYPES:
        for cl in (False, True):
            for mode, optimizer in (("inference", "none"), ("train", "sgd")):
                record = {"step": f"r3d18-{mode}", "dtype": dname,
                          "layout": "ndhwc" if cl else "ncdhw", "mode": mode,
                          "optimizer": optimizer, "batch": size[0], "frames": size[1],
                          "side": size[2]}
                steps.append(record | _step(torch, getattr(torch, dt), cl, dev, record,
                                            step_record, step_function))
                log(f"video step {record['step']} {dname} {record['layout']}: "
                    f"{steps[-1].get('best_s', steps[-1].get('error'))}")
            (out / "video_steps.json").write_text(json.dumps(steps, indent=1))
    convs = conv_shapes(torch, *size)
    if quick:
        convs = dict(list(convs.items())[:2])
    layers = [(torch.nn.Conv3d(c, k, kernel, stride=stride, padding=pad, bias=False),
               (n, c, d, s, s), {"op": "conv3d", "n": n, "c": c, "k": k, "frames": d,
                                 "side": s, "kernel": _dims(kernel), "stride": _dims(stride),
                                 "pad": _dims(pad), "count": count, "set": "r3d18"})
              for (n, c, k, d, s, kernel, stride, pad), count in convs.items()]
    layers += [(torch.nn.ConvTranspose3d(c, k, r, stride=stride, bias=False), (n, c, d, s, s),
                {"op": "conv_transpose3d", "n": n, "c": c, "k": k, "frames": d, "side": s,
                 "kernel": _dims((r,) * 3), "stride": _dims((stride,) * 3), "pad": "0x0x0",
                 "count": 1, "set": "unet"})
               for n, c, k, d, s, r, stride in
               (TRANSPOSED if not quick else ((1, 8, 8, 4, 4, 2, 2),))]
    layers += [((torch.nn.Conv3d if d else torch.nn.Conv2d)(c, k, kernel, stride=stride,
                                                            padding=pad, bias=False),
                (n, c, d, s, s) if d else (n, c, s, s),
                {"op": "conv3d" if d else "conv2d", "n": n, "c": c, "k": k, "frames": d or "",
                 "side": s, "kernel": _dims(kernel), "stride": _dims(stride), "pad": _dims(pad),
                 "count": 1, "set": "align"})
               for n, c, k, d, s, kernel, stride, pad in
               (ALIGN if not quick else ((1, 3, 8, 4, 16, (3, 3, 3), (1, 1, 1), (1, 1, 1)),
                                         (1, 3, 8, None, 16, (3, 3), (1, 1), (1, 1))))]
    rows: list[dict[str, Any]] = []
    for dname, dt in DTYPES:
        for cl in (False, True):
            layout = "ndhwc" if cl else "ncdhw"
            for conv, shape, fields in layers:
                fns = conv_functions(torch, conv, torch.randn(*shape), getattr(torch, dt), cl,
                                     dev)
                rows += [_row(torch, fn, time_calls, kernel_times)
                         | {"mode": mode, "dtype": dname, "layout": layout} | fields
                         for mode, fn in fns.items()]
            _write(out / "convs3d.csv", rows)
            log(f"convs3d {dname} {layout}: done")
            if dev == "cuda":
                torch.cuda.empty_cache()


def _dims(values: tuple[int, ...]) -> str:
    return "x".join(map(str, values))


def _step(torch: Any, dt: Any, channels_last: bool, dev: str, record: dict[str, Any],
          step_record: Callable[..., dict[str, Any]],
          step_function: Callable[..., Callable[[], None]]) -> dict[str, Any]:
    """One R3D-18 step of ``record``'s mode, timed, or the error it raised."""
    try:
        torch.manual_seed(0)
        module = r3d18().to(dev, dt)
        x = clip(torch, record["batch"], dt, dev, record["frames"], record["side"])
        if channels_last:
            module = module.to(memory_format=torch.channels_last_3d)
            x = x.contiguous(memory_format=torch.channels_last_3d)
        if dev == "cuda":
            torch.cuda.reset_peak_memory_stats()
        return step_record(torch, step_function(module, (x,), record["mode"],
                                                record["optimizer"]))
    except Exception as exc:  # noqa: BLE001 - recorded, the next step goes on
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
    finally:
        module = x = None
        if dev == "cuda":
            torch.cuda.empty_cache()
