"""Pin the headline figures of every bundled hwdb entry to the vendor's published value.

Each row names its source. Dense figures only (the schema's ``peak_tflops``); NVIDIA's starred
2:4-sparse figures are halved where the vendor prints only the sparse number. CPU peaks are derived
(sockets x cores x clock x FMA units x SIMD lanes x 2) and pinned to that arithmetic; see each
entry's ``notes`` and docs/hwdb-unconfirmed.md for figures not confirmed from a vendor document.
"""

from pathlib import Path

import pytest

from roofline import load_hardware

HWDB = Path(__file__).parent.parent / "hwdb"

REL = 1e-3

# (name, dtype, expected TFLOP/s or TOPS, source)
PEAKS = [
    # V100: NVIDIA Tesla V100 datasheet 1165301-r5 (SXM2 / PCIe columns)
    ("v100-sxm2-16gb", "fp16", 125.0, "V100 datasheet: Tensor Performance 125 TFLOPS (SXM2)"),
    ("v100-sxm2-16gb", "fp32", 15.7, "V100 datasheet: single-precision 15.7 TFLOPS (SXM2)"),
    ("v100-sxm2-16gb", "fp64", 7.8, "V100 datasheet: double-precision 7.8 TFLOPS (SXM2)"),
    ("v100-sxm2-32gb", "fp16", 125.0, "V100 datasheet: 125 TFLOPS (SXM2, 16/32 GB same compute)"),
    ("v100-sxm2-32gb", "fp32", 15.7, "V100 datasheet: 15.7 TFLOPS (SXM2)"),
    ("v100-pcie-16gb", "fp16", 112.0, "V100 datasheet: Tensor Performance 112 TFLOPS (PCIe)"),
    ("v100-pcie-16gb", "fp32", 14.0, "V100 datasheet: 14 TFLOPS (PCIe)"),
    ("v100-pcie-16gb", "fp64", 7.0, "V100 datasheet: 7 TFLOPS (PCIe)"),
    # T4: NVIDIA T4 datasheet 951643
    ("t4", "fp16", 65.0, "T4 datasheet: Mixed-Precision (FP16/FP32) 65 TFLOPS"),
    ("t4", "int8", 130.0, "T4 datasheet: INT8 130 TOPS"),
    ("t4", "fp32", 8.1, "T4 datasheet: Single-Precision 8.1 TFLOPS"),
    # A100: NVIDIA A100 datasheets 1758950-r4 (40GB) and 2188504 (80GB); dense column
    ("a100-sxm4-80gb", "fp16", 312.0, "A100 datasheet: FP16 Tensor Core 312 TFLOPS (dense)"),
    ("a100-sxm4-80gb", "bf16", 312.0, "A100 datasheet: BFLOAT16 Tensor Core 312 TFLOPS"),
    ("a100-sxm4-80gb", "tf32", 156.0, "A100 datasheet: TF32 Tensor Core 156 TFLOPS"),
    ("a100-sxm4-80gb", "int8", 624.0, "A100 datasheet: INT8 Tensor Core 624 TOPS"),
    ("a100-sxm4-80gb", "fp64", 19.5, "A100 datasheet: FP64 Tensor Core 19.5 TFLOPS"),
    ("a100-sxm4-80gb", "fp32", 19.5, "A100 datasheet: FP32 19.5 TFLOPS"),
    ("a100-sxm4-40gb", "fp16", 312.0, "A100 datasheet r4: FP16 Tensor Core 312 TFLOPS"),
    ("a100-sxm4-40gb", "tf32", 156.0, "A100 datasheet r4: TF32 156 TFLOPS"),
    ("a100-pcie-40gb", "fp16", 312.0, "A100 datasheet r4: PCIe same peaks as SXM"),
    ("a100-pcie-80gb", "fp16", 312.0, "A100 80GB datasheet: PCIe column 312 TFLOPS"),
    # A10: NVIDIA A10 datasheet (dense | sparse pairs)
    ("a10", "fp16", 125.0, "A10 datasheet: FP16 Tensor Core 125 | 250* TFLOPS"),
    ("a10", "bf16", 125.0, "A10 datasheet: BFLOAT16 Tensor Core 125 | 250* TFLOPS"),
    ("a10", "tf32", 62.5, "A10 datasheet: TF32 Tensor Core 62.5 | 125* TFLOPS"),
    ("a10", "int8", 250.0, "A10 datasheet: INT8 Tensor Core 250 | 500* TOPS"),
    ("a10", "fp32", 31.2, "A10 datasheet: FP32 31.2 TFLOPS"),
    # L4: NVIDIA L4 page/datasheet prints sparse only ('one-half lower without sparsity')
    ("l4", "fp16", 121.0, "L4 datasheet: FP16 Tensor Core 242* TFLOPS (sparse) / 2"),
    ("l4", "bf16", 121.0, "L4 datasheet: BFLOAT16 Tensor Core 242* / 2"),
    ("l4", "fp8", 242.5, "L4 datasheet: FP8 Tensor Core 485* / 2"),
    ("l4", "int8", 242.5, "L4 datasheet: INT8 Tensor Core 485* TOPS / 2"),
    ("l4", "tf32", 60.0, "L4 datasheet: TF32 Tensor Core 120* / 2"),
    ("l4", "fp32", 30.3, "L4 datasheet: FP32 30.3 TFLOPS"),
    # L40S: NVIDIA L40S page/datasheet (dense | sparse pairs)
    ("l40s", "fp16", 362.05, "L40S datasheet: FP16 Tensor Core 362.05 | 733*"),
    ("l40s", "bf16", 362.05, "L40S datasheet: BFLOAT16 Tensor Core 362.05 | 733*"),
    ("l40s", "fp8", 733.0, "L40S datasheet: FP8 Tensor Core 733 | 1,466*"),
    ("l40s", "tf32", 183.0, "L40S datasheet: TF32 Tensor Core 183 | 366*"),
    ("l40s", "fp32", 91.6, "L40S datasheet: FP32 91.6 TFLOPS"),
    # H100: NVIDIA H100 datasheet ('* With sparsity'; dense = 1/2)
    ("h100-sxm5-80gb", "fp16", 989.5, "H100 datasheet SXM: FP16 Tensor Core 1,979* / 2"),
    ("h100-sxm5-80gb", "bf16", 989.5, "H100 datasheet SXM: BFLOAT16 1,979* / 2"),
    ("h100-sxm5-80gb", "fp8", 1979.0, "H100 datasheet SXM: FP8 3,958* / 2"),
    ("h100-sxm5-80gb", "int8", 1979.0, "H100 datasheet SXM: INT8 3,958* TOPS / 2"),
    ("h100-sxm5-80gb", "tf32", 494.5, "H100 datasheet SXM: TF32 989* / 2"),
    ("h100-sxm5-80gb", "fp64", 67.0, "H100 datasheet SXM: FP64 Tensor Core 67 TFLOPS"),
    ("h100-sxm5-80gb", "fp32", 67.0, "H100 datasheet SXM: FP32 67 TFLOPS"),
    ("h100-pcie-80gb", "fp16", 756.5, "H100 datasheet PCIe: FP16 Tensor Core 1,513* / 2"),
    ("h100-pcie-80gb", "fp8", 1513.0, "H100 datasheet PCIe: FP8 3,026* / 2"),
    ("h100-pcie-80gb", "tf32", 378.0, "H100 datasheet PCIe: TF32 756* / 2"),
    ("h100-pcie-80gb", "fp64", 51.0, "H100 datasheet PCIe: FP64 Tensor Core 51 TFLOPS"),
    ("h100-pcie-80gb", "fp32", 51.0, "H100 datasheet PCIe: FP32 51 TFLOPS"),
    # H200: NVIDIA H200 page/datasheet, SXM column ('* With sparsity')
    ("h200-sxm-141gb", "fp16", 989.5, "H200 datasheet SXM: FP16 Tensor Core 1,979* / 2"),
    ("h200-sxm-141gb", "bf16", 989.5, "H200 datasheet SXM: BFLOAT16 1,979* / 2"),
    ("h200-sxm-141gb", "fp8", 1979.0, "H200 datasheet SXM: FP8 3,958* / 2"),
    ("h200-sxm-141gb", "fp64", 67.0, "H200 datasheet SXM: FP64 Tensor Core 67 TFLOPS"),
    # B200: NVIDIA Blackwell datasheet, HGX B200 column (Tensor Core figures printed with sparsity
    # only; dense = 1/2; FP64 dense)
    ("b200-sxm-180gb", "bf16", 2250.0, "Blackwell datasheet HGX B200: FP16/BF16 Tensor Core 4.5 PF* / 2"),
    ("b200-sxm-180gb", "fp16", 2250.0, "Blackwell datasheet HGX B200: FP16/BF16 Tensor Core 4.5 PF* / 2"),
    ("b200-sxm-180gb", "tf32", 1100.0, "Blackwell datasheet HGX B200: TF32 Tensor Core 2.2 PF* / 2"),
    ("b200-sxm-180gb", "fp8", 4500.0, "Blackwell datasheet HGX B200: FP8/FP6 Tensor Core 9 PF* / 2"),
    ("b200-sxm-180gb", "int8", 4500.0, "Blackwell datasheet HGX B200: INT8 Tensor Core 9 POPS* / 2"),
    ("b200-sxm-180gb", "fp32", 75.0, "Blackwell datasheet HGX B200: FP32 75 TFLOPS"),
    ("b200-sxm-180gb", "fp64", 37.0, "Blackwell datasheet HGX B200: FP64/FP64 Tensor Core 37 TFLOPS"),
    # CPUs: derived peaks, 2 sockets: sockets x cores x clock x FMA units x lanes x 2 (AMX:
    # sockets x cores x clock x ops/cycle/core). Each clock is the entry's cpu.peak_clock figure;
    # its source and tag are in cpu.clocks, the unconfirmed ones in docs/hwdb-unconfirmed.md.
    # 8180: AVX-512 all-core turbo 2.3 GHz (3P, ULHPC citing Intel spec update 336065):
    # 2 x 28 x 2.3 x 2 x 16 x 2 = 8243.2 GFLOP/s
    ("xeon-platinum-8180", "fp32", 8.2432, "derived: 2 x 28 x 2.3 GHz (AVX-512 all-core) x 2 x 16 x 2"),
    ("xeon-platinum-8180", "fp64", 4.1216, "derived: fp32 / 2"),
    # 8280: AVX-512 base <= 2.7 GHz (upper bound: ARK non-AVX base): 2 x 28 x 2.7 x 64 = 9676.8
    ("xeon-platinum-8280", "fp32", 9.6768, "derived: 2 x 28 x 2.7 GHz (upper bound) x 2 FMA x 16 x 2"),
    ("xeon-platinum-8280", "int8", 38.7072, "derived: VNNI 4 x fp32 = 4 x 9676.8"),
    # 8380H: AVX-512 base <= 2.9 GHz (upper bound): 2 x 28 x 2.9 x 64 = 10393.6
    ("xeon-platinum-8380h", "fp32", 10.3936, "derived: 2 x 28 x 2.9 GHz (upper bound) x 2 x 16 x 2"),
    ("xeon-platinum-8380h", "bf16", 20.7872, "derived: AVX512_BF16 2 x fp32"),
    # 8380: AVX-512 base <= 2.3 GHz (upper bound): 2 x 40 x 2.3 x 64 = 11776
    ("xeon-platinum-8380", "fp32", 11.776, "derived: 2 x 40 x 2.3 GHz (upper bound) x 2 x 16 x 2"),
    # 8480+: AVX-512 and AMX base <= 2.0 GHz (upper bounds): 2 x 56 x 2.0 x 64 = 14336;
    # AMX 2 x 56 x 2.0 x 1024 = 229376 (bf16), x 2048 = 458752 (int8)
    ("xeon-platinum-8480plus", "fp32", 14.336, "derived: 2 x 56 x 2.0 GHz (upper bound) x 2 x 16 x 2"),
    ("xeon-platinum-8480plus", "bf16", 229.376, "derived: AMX 1024 BF16 FLOP/clk/core x 2 x 56 x 2.0 GHz"),
    ("xeon-platinum-8480plus", "int8", 458.752, "derived: AMX 2048 INT8 op/clk/core x 2 x 56 x 2.0 GHz"),
    # 7763: base 2.45 GHz (lower bound: no all-core boost published): 2 x 64 x 2.45 x 2 x 8 x 2 = 10035.2
    ("epyc-7763", "fp32", 10.0352, "derived: 2 x 64 x 2.45 GHz (AMD base) x 2 x 8 x 2"),
    # 9654: all-core boost 3.55 GHz (R, AMD table): 2 x 96 x 3.55 x 2 x 8 x 2 = 21811.2
    ("epyc-9654", "fp32", 21.8112, "derived: 2 x 96 x 3.55 GHz (AMD all-core boost) x 2 x 8 x 2"),
    ("epyc-9654", "fp64", 10.9056, "derived: fp32 / 2"),
    ("epyc-9654", "bf16", 43.6224, "derived: AVX512_BF16 2 x fp32"),
    ("epyc-9654", "int8", 87.2448, "derived: VNNI 4 x fp32"),
    # P100 PCIe: NVIDIA Tesla P100 PCIe datasheet (fp16 here = FP32-accumulate, the FP32 rate)
    ("p100-pcie-16gb", "fp32", 9.3, "P100 PCIe datasheet: single-precision 9.3 TFLOPS"),
    ("p100-pcie-16gb", "fp64", 4.7, "P100 PCIe datasheet: double-precision 4.7 TFLOPS"),
    ("p100-pcie-16gb", "fp16", 9.3, "no FP16 x FP16 -> FP32 unit: the FP32 rate (entry notes)"),
    # Desk cards. GeForce (RTX 4090, 3090): FP16 / BF16 / TF32 Tensor-Core math with FP32
    # accumulate runs at HALF the FP16-accumulate rate, and fp16 here means FP32 accumulate.
    # RTX 4090: NVIDIA Ada GPU Architecture whitepaper v2.1, Appendix A, Table 2 ("x/y" = dense /
    # sparse)
    ("rtx-4090", "fp16", 165.2, "Ada whitepaper: Peak FP16 Tensor TFLOPS with FP32 Accumulate "
                                "165.2/330.4 (FP16 accumulate 330.3/660.6: not this dtype)"),
    ("rtx-4090", "bf16", 165.2, "Ada whitepaper: Peak BF16 Tensor TFLOPS with FP32 Accumulate "
                                "165.2/330.4; RTX Blackwell whitepaper Table 3 the same"),
    ("rtx-4090", "tf32", 82.6, "Ada whitepaper: Peak TF32 Tensor TFLOPS 82.6/165.2"),
    ("rtx-4090", "fp8", 330.3, "Ada whitepaper v2.02+: Peak FP8 Tensor TFLOPS with FP32 "
                               "Accumulate 330.3/660.6 (footnote 4: corrected from 660.6)"),
    ("rtx-4090", "int8", 660.6, "Ada whitepaper: Peak INT8 Tensor TOPS 660.6/1321.2"),
    ("rtx-4090", "fp32", 82.6, "Ada whitepaper: Peak FP32 TFLOPS (non-Tensor) 82.6"),
    # RTX 3090: GA102 whitepaper Appendix A ("Peak FP16 Tensor TFLOPS with FP32 Accumulate 71",
    # FP32 35.6); NVIDIA's RTX Blackwell whitepaper Table 3 prints the BF16 row as 71.2/142.4
    ("rtx-3090", "fp16", 71.2, "RTX Blackwell whitepaper Table 3: BF16 w/ FP32 acc 71.2/142.4 "
                               "(GA102 whitepaper: FP16 w/ FP32 acc 71)"),
    ("rtx-3090", "bf16", 71.2, "RTX Blackwell whitepaper Table 3: BF16 w/ FP32 acc 71.2/142.4"),
    ("rtx-3090", "fp32", 35.6, "GA102 whitepaper: Peak FP32 TFLOPS (non-Tensor) 35.6"),
    # RTX A6000: NVIDIA datasheet (single-precision 38.7; Tensor performance 309.7, 2:4 sparse)
    # and the GA102 whitepaper's Table 3 (BF16 with FP32 accumulate 154.8/309.6): full rate
    ("rtx-a6000", "fp16", 154.8, "A6000 datasheet: Tensor performance 309.7 (sparse) / 2"),
    ("rtx-a6000", "bf16", 154.8, "GA102 whitepaper Table 3: BF16 w/ FP32 acc 154.8/309.6"),
    ("rtx-a6000", "fp32", 38.7, "A6000 datasheet: single-precision performance 38.7 TFLOPS"),
    # RTX 6000 Ada: NVIDIA datasheet (single-precision 91.1; Tensor performance 1,457 = FP8
    # sparse) and the RTX PRO Blackwell whitepaper's Table 4 (BF16 w/ FP32 acc 364/728)
    ("rtx-6000-ada", "bf16", 364.0, "RTX PRO Blackwell whitepaper Table 4: 364/728"),
    ("rtx-6000-ada", "fp16", 364.0, "full rate as BF16 (pro board; 142 x 1024 x 2.505 GHz)"),
    ("rtx-6000-ada", "fp8", 728.5, "RTX 6000 Ada datasheet: Tensor Performance 1,457 / 2"),
    ("rtx-6000-ada", "fp32", 91.1, "RTX 6000 Ada datasheet: Single-Precision Performance 91.1"),
    # GTX 1080 Ti / TITAN Xp: derived, cores x 2 x boost clock (NVIDIA specification pages)
    ("gtx-1080-ti", "fp32", 11.34, "3584 cores x 2 x 1.582 GHz = 11.34 (GTX 1080 Ti specs)"),
    ("gtx-1080-ti", "fp64", 0.354, "fp32 / 32, compute capability 6.1 (CUDA guide)"),
    ("titan-xp", "fp32", 12.15, "3840 cores x 2 x 1.582 GHz = 12.15 (NVIDIA: 12 TFLOPS)"),
    ("titan-xp", "fp64", 0.380, "fp32 / 32, compute capability 6.1 (CUDA guide)"),
    ("titan-x-pascal", "fp32", 10.97, "3584 cores x 2 x 1.531 GHz = 10.97 (NVIDIA: 11 TFLOPS)"),
    ("titan-x-pascal", "fp64", 0.343, "fp32 / 32, compute capability 6.1 (CUDA guide)"),
    # Maxwell: cores x 2 x boost clock; fp64 = fp32 / 32 (compute capability 5.2)
    ("m40-24gb", "fp32", 6.84, "3072 cores x 2 x 1.114 GHz = 6.84 (M40 datasheet: 7 TFLOPS)"),
    ("m40-24gb", "fp64", 0.214, "6.84 / 32, compute capability 5.2 (CUDA guide)"),
    ("gtx-titan-x", "fp32", 6.60, "3072 cores x 2 x 1.075 GHz = 6.60 (GTX TITAN X specs)"),
    ("gtx-titan-x", "fp64", 0.206, "6.60 / 32, compute capability 5.2 (CUDA guide)"),
]

# (name, expected peak DRAM/HBM bandwidth in GB/s)  -- source in the comment
BANDWIDTHS = [
    ("v100-sxm2-16gb", 900.0),  # V100 datasheet: 900 GB/s
    ("v100-sxm2-32gb", 900.0),  # V100 datasheet: 900 GB/s
    ("v100-pcie-16gb", 900.0),  # V100 datasheet: 900 GB/s
    ("t4", 320.0),  # T4 product page: 320+ GB/s (datasheet PDF prints 300 GB/sec)
    ("a100-sxm4-40gb", 1555.0),  # A100 datasheet r4: 1,555 GB/s
    ("a100-sxm4-80gb", 2039.0),  # A100 80GB datasheet: 2,039 GB/s
    ("a100-pcie-40gb", 1555.0),  # A100 datasheet r4: 1,555 GB/s
    ("a100-pcie-80gb", 1935.0),  # A100 80GB datasheet: 1,935 GB/s
    ("a10", 600.0),  # A10 datasheet: 600 GB/s
    ("l4", 300.0),  # L4 datasheet: 300 GB/s
    ("l40s", 864.0),  # L40S datasheet: 864 GB/s
    ("h100-sxm5-80gb", 3350.0),  # H100 datasheet SXM: 3.35 TB/s
    ("h100-pcie-80gb", 2000.0),  # H100 datasheet PCIe: 2 TB/s
    ("h200-sxm-141gb", 4800.0),  # H200 datasheet: 4.8 TB/s
    ("b200-sxm-180gb", 7700.0),  # Blackwell datasheet, HGX B200: 7.7 TB/s
    ("p100-pcie-16gb", 732.0),  # P100 PCIe datasheet: 732 GB/s (16 GB)
    ("gtx-1080-ti", 484.0),  # derived: 11 Gbps x 352 bits / 8 (GTX 1080 Ti specifications)
    ("titan-xp", 547.7),  # TITAN Xp product page: 547.7 GB/s
    ("titan-x-pascal", 480.0),  # TITAN X (Pascal) specifications: 480 GB/s (10 Gbps x 384 / 8)
    ("m40-24gb", 288.0),  # M40 24GB datasheet: 288 GB/s
    ("gtx-titan-x", 336.5),  # GTX TITAN X specifications: 336.5 GB/s
    ("rtx-4090", 1008.0),  # Ada whitepaper Table 2: 384-bit x 21 Gbps / 8 = 1008 GB/sec
    ("rtx-3090", 936.0),  # GA102 whitepaper: 936 GB/sec (384-bit x 19.5 Gbps / 8)
    ("rtx-a6000", 768.0),  # A6000 datasheet: 768 GB/s (384-bit x 16 Gbps / 8)
    ("rtx-6000-ada", 960.0),  # RTX 6000 Ada datasheet: 960 GB/s (384-bit x 20 Gbps / 8)
    ("xeon-platinum-8180", 255.9),  # derived: 2 sockets x 6 ch x DDR4-2666 x 8 B (Intel ARK)
    ("xeon-platinum-8280", 281.6),  # derived: 2 x 6 x DDR4-2933 x 8 B (Intel ARK)
    ("xeon-platinum-8380h", 307.2),  # derived: 2 x 6 x DDR4-3200 x 8 B (Intel ARK)
    ("xeon-platinum-8380", 409.6),  # derived: 2 x 8 x DDR4-3200 x 8 B (Intel ARK)
    ("xeon-platinum-8480plus", 614.4),  # derived: 2 x 8 x DDR5-4800 x 8 B (Intel ARK)
    ("epyc-7763", 409.6),  # derived: 2 x 8 x DDR4-3200 x 8 B (AMD product page)
    ("epyc-9654", 921.6),  # derived: 2 x 12 x DDR5-4800 x 8 B (AMD product page)
]

# (name, dtype, expected ridge FLOP/B, absolute tolerance) -- published ratios (docs/design.md)
RIDGES = [
    ("v100-sxm2-16gb", "fp16", 138.9, 0.5),  # NVIDIA GPU Performance Background: 125 / 0.9 = 139
    ("a100-sxm4-80gb", "fp16", 153.0, 0.5),  # 312 / 2.039 (NVIDIA's DL performance guide, 80 GB)
    ("a100-sxm4-40gb", "fp16", 200.6, 0.5),  # 312 / 1.555 (A100 40GB datasheet figures)
    ("h100-sxm5-80gb", "fp16", 295.0, 0.5),  # 989.5 / 3.35
]

ALL_NAMES = sorted({row[0] for row in PEAKS} | {row[0] for row in BANDWIDTHS})

GPUS = [
    "v100-sxm2-16gb", "v100-sxm2-32gb", "v100-pcie-16gb", "t4", "a100-sxm4-40gb", "a100-sxm4-80gb",
    "a100-pcie-40gb", "a100-pcie-80gb", "a10", "l4", "l40s", "h100-sxm5-80gb", "h100-pcie-80gb",
    "h200-sxm-141gb", "p100-pcie-16gb", "gtx-1080-ti", "titan-xp", "titan-x-pascal", "m40-24gb",
    "gtx-titan-x", "b200-sxm-180gb", "rtx-4090", "rtx-3090", "rtx-a6000", "rtx-6000-ada",
]
CPUS = [
    "xeon-platinum-8180", "xeon-platinum-8280", "xeon-platinum-8380h", "xeon-platinum-8380",
    "xeon-platinum-8480plus", "epyc-7763", "epyc-9654",
]


@pytest.mark.parametrize("name,dtype,expected,source", PEAKS, ids=lambda v: str(v))
def test_peak_matches_vendor_figure(name, dtype, expected, source):
    spec = load_hardware(name)
    assert spec.peak_tflops[dtype] == pytest.approx(expected, rel=REL), source


@pytest.mark.parametrize("name,expected", BANDWIDTHS)
def test_bandwidth_matches_vendor_figure(name, expected):
    assert load_hardware(name).bandwidth_gbs == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize("name,dtype,expected,tol", RIDGES)
def test_published_ridge_points(name, dtype, expected, tol):
    assert load_hardware(name).ridge(dtype) == pytest.approx(expected, abs=tol)


def test_every_bundled_device_is_pinned():
    # read hwdb/ itself: an entry added there without a row here fails
    bundled = sorted(p.stem for p in HWDB.rglob("*.yaml"))
    assert bundled == sorted(GPUS + CPUS) == ALL_NAMES
    for name in bundled:
        assert any(row[0] == name for row in PEAKS), name
        assert any(row[0] == name for row in BANDWIDTHS), name


# gpu.sustained_clock_ghz: the SM clock a published measurement saw the board hold through a
# long GEMM-heavy load (None: the boost clock)
SUSTAINED_CLOCKS = [
    ("t4", 0.9, "MLCommons inference_results_v0.5 issue #20: a T4 at 1590 MHz application "
                "clocks 'dropping down to ~900 MHz' through an MLPerf BERT run"),
]


@pytest.mark.parametrize("name,expected,source", SUSTAINED_CLOCKS)
def test_sustained_clock_matches_its_source(name, expected, source):
    assert load_hardware(name).gpu.sustained_clock_ghz == pytest.approx(expected), source


def test_only_the_pinned_entries_give_a_sustained_clock():
    pinned = {row[0] for row in SUSTAINED_CLOCKS}
    for name in GPUS:
        given = load_hardware(name).gpu.sustained_clock_ghz is not None
        assert given == (name in pinned), name


# gpu.boost_clock_ghz on Hopper: the clock NVIDIA's dense 16-bit Tensor-Core peak assumes (not
# the 1.98 GHz maximum SM clock), by hand from the datasheet's figure (the starred sparse one
# halved) and the whitepaper's SMs x 4 Tensor Cores x 512 dense FP16 FMA per clock x 2 FLOPs;
# stas00/ml-engineering, compute/accelerator/README.md ("How to calculate theoretical TFLOPS"
# and "Clock speed", note 12): 1830 MHz is NVIDIA's official H100 / H200 compute clock, where
# 1980 MHz would give 1,070 TFLOP/s. The model runs a GEMM at this clock unless the entry gives
# a sustained one (no source found does for these: README, "Large Hopper GEMMs")
TENSOR_CORE_CLOCKS = [
    ("h100-sxm5-80gb", 1.83, 1979e12 / 2 / (132 * 4 * 512 * 2)),   # 1.8302 GHz
    ("h200-sxm-141gb", 1.83, 1979e12 / 2 / (132 * 4 * 512 * 2)),   # the H100 SXM5 compute
    ("h100-pcie-80gb", 1.62, 1513e12 / 2 / (114 * 4 * 512 * 2)),   # 1.6201 GHz
]


@pytest.mark.parametrize("name,expected,derived", TENSOR_CORE_CLOCKS)
def test_hopper_boost_clock_is_the_clock_of_the_tensor_core_figure(name, expected, derived):
    hw = load_hardware(name)
    assert hw.gpu.boost_clock_ghz == pytest.approx(expected)
    assert derived / 1e9 == pytest.approx(expected, abs=0.005)


# gpu.vector_clock_ghz: the clock the vendor's FP32 / FP64 figures assume where its 16-bit
# Tensor-Core figures assume another, by hand from the datasheet figure and the SMs x 128 FP32
# lanes x 2 FLOPs of the whitepaper
VECTOR_CLOCKS = [
    ("h100-sxm5-80gb", 1.98, 67e12 / (132 * 128 * 2)),   # 1.9827 GHz (Tensor Cores: 1.83)
    ("h200-sxm-141gb", 1.98, 67e12 / (132 * 128 * 2)),   # the H100 SXM5 compute
    ("h100-pcie-80gb", 1.75, 51e12 / (114 * 128 * 2)),   # 1.7475 GHz (Tensor Cores: 1.62)
    ("b200-sxm-180gb", 1.98, 75e12 / (148 * 128 * 2)),   # 1.9794 GHz (Tensor Cores: 1.86)
]


@pytest.mark.parametrize("name,expected,derived", VECTOR_CLOCKS)
def test_vector_clock_is_the_clock_of_the_fp32_figure(name, expected, derived):
    hw = load_hardware(name)
    assert hw.gpu.vector_clock_ghz == pytest.approx(expected)
    assert derived / 1e9 == pytest.approx(expected, abs=0.01)
    assert hw.vector_tflops["fp32"] * 1e12 == pytest.approx(
        hw.gpu.sms * 128 * 2 * derived, rel=1e-9)


def test_only_the_pinned_entries_give_a_vector_clock():
    pinned = {row[0] for row in VECTOR_CLOCKS}
    for name in GPUS:
        given = load_hardware(name).gpu.vector_clock_ghz is not None
        assert given == (name in pinned), name


# gpu.resident_threads: the most threads an SM holds, where it is not 2048 (CUDA's technical
# specifications per compute capability: 7.5 Turing 1024 = 32 warps; 8.6 GA10x and 8.9 Ada 1536
# = 48 warps); every other entry's architecture holds 2048 (64 warps) and says nothing
RESIDENT_THREADS = {"t4": 1024, "a10": 1536, "l4": 1536, "l40s": 1536, "rtx-4090": 1536,
                    "rtx-3090": 1536, "rtx-a6000": 1536, "rtx-6000-ada": 1536}


def test_only_turing_ga10x_and_ada_entries_hold_fewer_threads_an_sm():
    for name in GPUS:
        hw = load_hardware(name)
        assert hw.gpu.resident_threads == RESIDENT_THREADS.get(name), name
        if name in RESIDENT_THREADS:
            assert hw.architecture in ("Turing", "Ampere", "Ada Lovelace"), name
        else:
            assert hw.architecture in ("Maxwell", "Pascal", "Volta", "Ampere", "Hopper",
                                       "Blackwell"), name


@pytest.mark.parametrize("name", GPUS)
def test_gpu_kind(name):
    assert load_hardware(name).kind == "gpu"


@pytest.mark.parametrize("name", CPUS)
def test_cpu_kind(name):
    assert load_hardware(name).kind == "cpu"


@pytest.mark.parametrize(
    "name,absent",
    [
        ("v100-sxm2-16gb", ["bf16", "tf32", "int8", "fp8"]),  # Volta TCs are FP16-only
        ("t4", ["bf16", "tf32", "fp8"]),  # Turing: FP16/INT8/INT4 TCs
        ("a100-sxm4-80gb", ["fp8"]),  # no FP8 before Ada/Hopper
        ("rtx-3090", ["fp8"]),  # GA102: no FP8
        ("rtx-a6000", ["fp8"]),
    ],
)
def test_unsupported_dtypes_absent(name, absent):
    peaks = load_hardware(name).peak_tflops
    for dtype in absent:
        assert dtype not in peaks, f"{name} must not list {dtype}"


# The desk cards' peaks by hand: SMs x FLOP (or integer ops) per clock per SM x the boost clock
# the vendor's figures assume. Per-SM rates of one GA10x / Ada SM (4 Tensor Cores, 128 FP32
# lanes; GA102 and Ada whitepapers): FP32 128 lanes x 2 = 256; dense FP16 / BF16 Tensor math
# with FP32 accumulate 1,024 on a professional board (A6000 154.8 = 84 x 1,024 x 1.8; L40S
# 362.05 = 142 x 1,024 x 2.49) and 512 on a GeForce one (half its FP16-accumulate 1,024: RTX
# 4090 330.3 / 165.2); TF32 half the FP16 rate (512 pro, 256 GeForce); FP8 twice FP16 (Ada);
# INT8 2,048 on both (4090 660.6 = 128 x 2,048 x 2.52, full rate on GeForce too).
# (name, dtype, SMs, FLOP per clock per SM, GHz, the published figure it reproduces)
DESK_DERIVATIONS = [
    ("rtx-4090", "fp32", 128, 256, 2.52, 82.6),     # 82.58: Ada whitepaper 82.6
    ("rtx-4090", "fp16", 128, 512, 2.52, 165.2),    # 165.15: FP32 accumulate, half of 330.3
    ("rtx-4090", "bf16", 128, 512, 2.52, 165.2),
    ("rtx-4090", "tf32", 128, 256, 2.52, 82.6),     # 82.58
    ("rtx-4090", "fp8", 128, 1024, 2.52, 330.3),    # 330.30: FP32 accumulate, half of 660.6
    ("rtx-4090", "int8", 128, 2048, 2.52, 660.6),   # 660.60
    ("rtx-3090", "fp32", 82, 256, 1.695, 35.6),     # 35.58
    ("rtx-3090", "fp16", 82, 512, 1.695, 71.2),     # 71.16: FP32 accumulate, half of 142
    ("rtx-3090", "tf32", 82, 256, 1.695, 35.6),     # 35.58
    ("rtx-3090", "int8", 82, 2048, 1.695, 284.6),   # 284.6 (derived: no copy of the row read)
    ("rtx-a6000", "fp32", 84, 256, 1.8, 38.7),      # 38.71
    ("rtx-a6000", "fp16", 84, 1024, 1.8, 154.8),    # 154.83: full rate (pro board)
    ("rtx-a6000", "tf32", 84, 512, 1.8, 77.4),      # 77.41 (derived)
    ("rtx-a6000", "int8", 84, 2048, 1.8, 309.7),    # 309.66: datasheet's 309.7 is FP16 sparse
    ("rtx-6000-ada", "fp32", 142, 256, 2.505, 91.1),   # 91.06: datasheet 91.1
    ("rtx-6000-ada", "fp16", 142, 1024, 2.505, 364.0),  # 364.25: whitepaper 364 (full rate)
    ("rtx-6000-ada", "tf32", 142, 512, 2.505, 182.1),  # 182.12 (derived)
    ("rtx-6000-ada", "fp8", 142, 2048, 2.505, 728.5),  # 728.50: datasheet 1,457 sparse / 2
    ("rtx-6000-ada", "int8", 142, 2048, 2.505, 728.5),  # (derived)
]


@pytest.mark.parametrize("name,dtype,sms,per_clock,ghz,published", DESK_DERIVATIONS,
                         ids=lambda v: str(v))
def test_desk_card_peaks_are_sms_x_rate_per_sm_x_boost_clock(name, dtype, sms, per_clock, ghz,
                                                             published):
    hw = load_hardware(name)
    assert hw.gpu.sms == sms and hw.gpu.boost_clock_ghz == ghz
    by_hand = sms * per_clock * ghz / 1e3  # TFLOP/s
    assert by_hand == pytest.approx(published, rel=1e-3)
    assert hw.peak_tflops[dtype] == pytest.approx(by_hand, rel=1e-3)


# GeForce halves FP16 / BF16 with FP32 accumulate, the professional boards on the same die do
# not: per SM and clock, the 4090 does half what the RTX 6000 Ada does (both AD102, both Ada
# whitepaper / datasheet figures), the 3090 half what the A6000 does (both GA102), while INT8 is
# the same on both pairs
@pytest.mark.parametrize("geforce,pro", [("rtx-4090", "rtx-6000-ada"), ("rtx-3090", "rtx-a6000")])
def test_geforce_halves_fp32_accumulate_where_its_pro_twin_does_not(geforce, pro):
    def per_sm_clock(hw, dtype):
        return hw.peak_tflops[dtype] / (hw.gpu.sms * hw.gpu.boost_clock_ghz)

    g, p = load_hardware(geforce), load_hardware(pro)
    for dtype in ("fp16", "bf16", "tf32"):
        assert per_sm_clock(g, dtype) == pytest.approx(per_sm_clock(p, dtype) / 2, rel=2e-3)
    assert per_sm_clock(g, "int8") == pytest.approx(per_sm_clock(p, "int8"), rel=2e-3)


def test_geforce_boards_say_they_have_no_peer_to_peer_access_the_pro_ones_do():
    # deviceQuery's "Peer access ... : No" between 4090s and between 3090s, "Yes" between
    # A6000s and RTX 6000 Adas (the entries' sources); every other entry says nothing
    no_p2p = {"rtx-4090", "rtx-3090"}
    for name in GPUS:
        assert (load_hardware(name).gpu.pcie_p2p is False) == (name in no_p2p), name
