"""The sentences of a probe's notes: what it assumed, what it could not measure and why, and
what it warns of. The probe records each as a ``Note`` (a code and the values its sentence
needs, ``probe.result``); this is the one place the words are. ``probe --format json`` and the
saved entry's notes carry the sentences, so a change here changes those outputs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import seconds

if TYPE_CHECKING:
    from ..probe.result import Note

TEXT: dict[str, str] = {
    # warnings
    "unstable": ("{label} may be unstable: spread (MAD/median) {spread:.0%}, best {best}, median "
                 "{median}, worst {worst} per call over {values} values; close other programs "
                 "and rerun `roofline probe` (the full probe repeats more)"),
    "unstable_worst": ("{label} may be unstable: its worst value took {worst_ratio:.3g}x its "
                       "best (best {best}, median {median}, worst {worst} per call over "
                       "{values} values; spread (MAD/median) {spread:.0%}); close other "
                       "programs and rerun `roofline probe` (the full probe repeats more)"),
    "no_plateau": ("{key}: the largest size ran >10% below the best one (n={best_n}); the "
                   "machine was probably busy"),
    "read_stream_small": ("DRAM read stream over {read_mib:.0f} MiB, less than {factor}x the "
                          "{llc_mib:.0f} MiB last-level cache: the cache may hold part of it and "
                          "inflate the figure"),
    "working_set_small": ("DRAM working set {working_mib:.0f} MiB is not well beyond the "
                          "{llc_mib:.0f} MiB last-level cache ({preset} preset)"),
    "fails_check": ("{reason}: `roofline probe --save` keeps this result only with --force "
                    "(the probe's own checks)"),
    "calibration_at_ceiling": ("calibration {dtype}: {kernels} ran within the {overhead_us:.2f} us "
                               "per-call overhead (timed apart on a busy machine?): their math "
                               "is taken at the theoretical ceiling"),
    "gemm_share_gap": ("fp32 GEMMs through {library} reached {fp32:.0%} of their computed peak "
                       "against fp64's {fp64:.0%} on the same units: the fp32 run was "
                       "disturbed (a busy machine, or OpenMP threads waking a halted vCPU: try "
                       "OMP_WAIT_POLICY=ACTIVE, and run the workload the same way); times "
                       "predicted from it come out too long"),
    "op_costs_stalled": ("op costs: an add in cache ran {rate:.3g} GB/s through {library}, "
                         "under half the {dram:.1f} GB/s DRAM read stream, so its calls stalled "
                         "(a busy machine, or OpenMP threads waking a halted vCPU: try "
                         "OMP_WAIT_POLICY=ACTIVE, or fewer threads); the ops' predictions "
                         "carry the stalls"),
    "calibration_contradiction": ("calibration: {kernels} still contradicted a neighbouring "
                                  "size after {rounds} rounds (slower than a smaller size, or "
                                  "a square faster than the peak): a real step of the BLAS, "
                                  "or a machine busy throughout"),
    "shared_machine": ("other programs kept {cpus:.2f} CPUs busy on average through {what}: "
                       "its figures are those of a shared machine, where a multi-threaded BLAS "
                       "call waits for its threads; rerun `roofline probe` when the machine is "
                       "idle"),
    "time_budget": ("{label}: {values} of {asked} values timed, within the {budget_s:g} s "
                    "budget of one kernel; its figure is less steady than the others"),
    "size_over_budget": ("{key}: n={n} not run: one call would take about {estimate} "
                         "(the smaller size's time x the n^3 work), over the {budget_s:g} s "
                         "budget of one kernel"),
    "blas_pinned": ("{name}={value} is set: {what}, so GEMM rates can stay well below the "
                    "theoretical peak of this CPU's widest SIMD (the measured figures are what "
                    "analyze uses)"),
    # reasons a figure was not measured
    "llc_size_unknown": "last-level cache size unknown",
    "llc_like_l2": "the last-level cache is not much larger than L2",
    "llc_like_dram": ("cache-resident rate {rate:.1f} GB/s is within 20% of DRAM (shared or "
                      "virtualised cache?): not reported"),
    "backend_missing": "{reason}",
    "op_kernel_missing": ("{reason}: ops of this class are predicted as streaming passes "
                          "(analysis.cpu_ops)"),
    "no_native_unit": ("this CPU has no native {dtype} arithmetic (none of {flags} among its "
                       "flags): torch would convert every element through fp32, and its rate "
                       "would describe the conversion, not the CPU's units; not timed"),
    # assumptions
    "cores": "{cores} physical cores usable by this process ({source}), {sockets} socket(s)",
    "no_clock": "no clock known: no theoretical CPU peak",
    "entry_clocks": "SIMD width, FMA units and clocks from hwdb entry {entry}: vector {label}",
    "amx_clock": "AMX clock {label}",
    "scalar_clock_unused": ("the scalar clock measured under all-core load was {ghz:.2f} GHz "
                            "(not used: the entry's ISA clocks are)"),
    "simd_from_isa": "{bits}-bit SIMD from the ISA flags",
    "two_fma_units": ("2 FMA units per core (true for recent server cores; some Xeon "
                      "Silver/Gold 5xxx have 1)"),
    "clock": "clock {ghz:.2f} GHz = {basis}",
    "amd_avx512_on_256": "AMD family < 26 (Zen 4 and older) executes AVX-512 on 256-bit units",
    "no_avx": "no AVX flags seen: 128-bit SIMD assumed",
    "dram_from_entry": ("DRAM bandwidth {bandwidth:g} GB/s from hwdb entry {entry}: its "
                        "{total:g} GB/s over the {modeled} socket(s) it models, for the "
                        "{sockets} socket(s) this process runs on"),
    "dram_unknown": ("theoretical DRAM bandwidth unknown: channels and memory speed are not "
                     "visible without root (dmidecode)"),
    "dtype_amx": "{dtype}: AMX, {ops} ops/cycle/core",
    "dtype_vector": "{dtype}: {flag}, {factor}x the fp32 rate",
    "clock_raised": ("measured {dtype} {rate:,.1f} GFLOP/s exceeds the computed {computed:,.1f}: "
                     "the {unit} clock is raised from {old:.2f} to the {new:.2f} GHz it implies "
                     "(the cores ran faster than assumed, or have more or wider units)"),
    "raised_by_rounds": ("{figure} {rate:.4g} {unit} is its kernel's best over the "
                         "calibration's rounds (details.calibration_rounds), above the "
                         "{own:.4g} of its own measurement ({own_at}): the figure a saved "
                         "entry, and so analyze, uses, a best over the same span as the "
                         "calibration's"),
    "gpu_peaks_from_entry": "peaks: dense datasheet figures of hwdb entry {entry}",
    "gpu_bandwidth_from_nvml": "device bandwidth = 2 x NVML max memory clock x bus width",
}


def note_text(note: Note) -> str:
    """The sentence of ``note``; a duration (a value named ``..._s``) also as ``seconds`` writes
    it, under its name less ``_s`` (``best_s`` 4.84e-05: ``{best}`` reads 48.4 us)."""
    durations = {key[:-2]: seconds(value) for key, value in note.values.items()
                 if key.endswith("_s") and isinstance(value, (int, float))}
    return TEXT[note.code].format(**note.values, **durations)
