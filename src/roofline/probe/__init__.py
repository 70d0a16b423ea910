"""``roofline probe``: identify and measure the machine in use, and describe it as a hardware
entry that ``analyze`` can use.

The files, one concern each:

- ``identify``: who this machine is (CPU, BLAS, GPUs) and which hwdb entries it matches;
- ``ceilings``: its theoretical peaks, with every assumption written down;
- ``timing``: the one calibrated timing loop (warm-ups, repeats, best / median / spread);
- ``cpu_kernels``: numpy GEMM and STREAM-style bandwidth kernels;
- ``gpu_kernels``: torch / cupy kernels (GPU, and bf16 / fp16 GEMM on the CPU);
- ``runner``: the presets and ``run_probe``, which ties the above together into a ProbeResult;
- ``entry``: a ProbeResult as a hwdb entry (``origin: measured``) and its atomic save;
- ``local``: the ``local`` entry behind ``analyze --hw local``;
- ``render``: the probe's table and JSON.

Importing this package imports neither numpy nor py-cpuinfo, threadpoolctl, pynvml, torch or
cupy: each is imported inside the functions that use it.
"""

from __future__ import annotations

from .entry import save_entry
from .local import local_hardware, resolve_hardware
from .plan import METHOD_VERSION, PRESETS, SCHEMA_VERSION
from .result import ProbeResult
from .runner import run_probe

__all__ = ["METHOD_VERSION", "PRESETS", "SCHEMA_VERSION", "ProbeResult", "local_hardware",
           "resolve_hardware", "run_probe", "save_entry"]
