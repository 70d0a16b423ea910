"""Timed kernels shared by the probe and ``analyze --measure``: the one calibrated timing loop
(``timing``), numpy kernels (``cpu``) and torch / cupy kernels (``gpu``). numpy and the GPU
libraries are imported inside the functions that need them."""
