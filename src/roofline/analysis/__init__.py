"""A Network against a HardwareSpec: the roofline per GEMM and op (``report``), shape advice
(``alignment``, ``quantization``, ``batch``), predicted times (``predict``), measured times
(``measure``), beyond one device (``scaling``) and what-if questions (``whatif``). Results are
data; sentences are made in ``roofline.output``."""
