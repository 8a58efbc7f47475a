//! `what-if --device NAME` / `--lnc N`: the device rows of traces the emulator recorded,
//! re-costed for another device profile.
//!
//! A kernel row of an emulator trace recorded with `--detail instructions` carries the
//! time each engine was busy on it (`<engine> busy (ns)`). Each engine's part is scaled
//! by the ratio of the engine's throughput on one logical core in the two profiles
//! (clock × lanes × the LNC's physical cores; `neuron_backend::DeviceProfile`), and the
//! time the busiest engine leaves uncovered — the kernel waiting on its DMA transfers
//! and their fixed latencies — by the ratio of the data-movement rate (the core's DMA
//! engines together, at most its share of HBM bandwidth). Collectives keep their time
//! (their links are not in a profile's per-core figures), and so do rows without busy
//! args; the latter are counted.
//!
//! On any other trace (CUDA, ROCm, or an emulator trace for a device that is not an
//! emulator profile), `--device NAME|FILE` names a device of the roofline's table (or a
//! device file) and every device row is re-timed from the per-op model
//! ([`analysis::critical_path::cross_device`]): [`cross_device`].

use std::collections::HashMap;

use analysis::critical_path::cross_device::{retime_rows, Retiming, KERNEL_LATENCY};
use anyhow::{bail, Context as _};
use neuron_backend::DeviceProfile;
use perf_model::DeviceSpec;

/// The factor of each re-costed device row, by (rank, event index), and the rows that
/// could not be re-costed (no `<engine> busy (ns)` args).
#[derive(Debug, Default)]
pub struct Recost {
    /// (rank, event index) → new duration / recorded duration.
    pub factors: HashMap<(i64, u64), f64>,
    /// Kernel rows without busy args (kept as recorded).
    pub without_busy: u64,
    /// The profiles, recorded → target, per rank (for the report's label).
    pub profiles: Vec<(i64, String, String)>,
}

/// Whether `--device device` re-times `set` from the per-op model rather than re-costing
/// it with the emulator's profiles: on traces the emulator did not record, and on the
/// emulator's for a device that is not one of its profiles (a name of the roofline's
/// table or a device file; another name is the profiles' error).
pub fn is_cross_device(set: &analysis::TraceSet, device: &str) -> bool {
    let emulator = !set.ranks.is_empty()
        && set
            .ranks
            .iter()
            .all(|t| t.devices.iter().any(|d| d.profile.is_some()));
    !emulator || (DeviceProfile::builtin(device).is_none() && DeviceSpec::named(device).is_ok())
}

/// `what-if --device NAME|FILE` on traces of other devices: every device row's factor
/// for `device` (a built-in name or a device file, as `analyze --device-spec`).
pub fn cross_device(
    set: &analysis::TraceSet,
    device: &str,
    lnc: Option<u32>,
) -> anyhow::Result<(Retiming, DeviceSpec)> {
    if lnc.is_some() {
        bail!("--lnc re-costs emulator traces for one of its profiles; for other traces name a device with --device (e.g. trn2-lnc1)");
    }
    let target = DeviceSpec::named(device)
        .map_err(|e| anyhow::anyhow!("--device: {}", e.trim_start_matches("--device-spec ")))?;
    let retiming = retime_rows(&set.ranks, &target)?;
    let measured = |name: &str| KERNEL_LATENCY.iter().any(|(n, _)| *n == name);
    let mut missing: Vec<&str> = retiming
        .ranks
        .iter()
        .filter(|r| r.latency_ratio.is_none())
        .flat_map(|r| [r.source.as_str(), target.name.as_str()])
        .filter(|name| !measured(name))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if !missing.is_empty() {
        eprintln!(
            "neuronprof: no measured kernel latency for {} (docs/WHAT-IF.md, \"Predicting \
             another device\"): the time each kernel takes beyond its roofline keeps its length",
            missing.join(" or ")
        );
    }
    Ok((retiming, target))
}

/// The what-if's label of a cross-device re-timing (`device: H100 SXM -> MI300X`).
pub fn cross_device_label(retiming: &Retiming, target: &DeviceSpec) -> String {
    let mut sources: Vec<&str> = retiming.ranks.iter().map(|r| r.source.as_str()).collect();
    sources.dedup();
    format!("device: {} -> {}", sources.join(", "), target.name)
}

/// Throughput of each engine (and of data movement) of one logical core, in units
/// that only need to compare between profiles.
fn rate(profile: &DeviceProfile, engine: &str, sixteen_bit: bool) -> Option<f64> {
    let lnc = f64::from(profile.lnc.max(1));
    let per_core = match engine {
        "TensorE" => profile.tensor_clock_ghz * f64::from(profile.tensor_array_dim).powi(2),
        "VectorE" => {
            let lanes = if sixteen_bit {
                profile.vector_elems_per_cycle_16bit
            } else {
                profile.vector_elems_per_cycle_other
            };
            profile.vector_clock_ghz * f64::from(lanes)
        }
        "ScalarE" => {
            let lanes = if sixteen_bit {
                profile.scalar_lanes_16bit
            } else {
                profile.scalar_lanes_other
            };
            profile.scalar_clock_ghz * f64::from(lanes)
        }
        "GpSimdE" => {
            profile.gpsimd_clock_ghz
                * f64::from(profile.gpsimd_processors)
                * f64::from(profile.gpsimd_simd_bits)
        }
        "dma" => {
            let engines = f64::from(profile.dma_engines) * profile.dma_engine_bytes_per_ns;
            return Some((engines * lnc).min(profile.hbm_bytes_per_ns_per_core()));
        }
        _ => return None,
    };
    Some(per_core * lnc)
}

/// Whether a kernel works on 16-bit data (its name's dtype suffix, `add_bf16`).
fn sixteen_bit(name: &str) -> bool {
    ["_bf16", "_f16", "_fp16"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
}

/// A row's new duration over its recorded one: each engine's busy time scaled by
/// `old rate / new rate`, the rest of the row (beyond the busiest engine) by the
/// data-movement ratio.
fn row_factor(
    dur_ns: i64,
    busy: &[(&str, i64)],
    from: &DeviceProfile,
    to: &DeviceProfile,
    sixteen: bool,
) -> f64 {
    if dur_ns <= 0 {
        return 1.0;
    }
    let ratio = |engine: &str| match (rate(from, engine, sixteen), rate(to, engine, sixteen)) {
        (Some(old), Some(new)) if new > 0.0 => old / new,
        _ => 1.0,
    };
    let dur = dur_ns as f64;
    let mut saved = 0.0;
    let mut busiest = 0.0_f64;
    for &(engine, ns) in busy {
        let ns = (ns as f64).clamp(0.0, dur);
        saved += ns * (1.0 - ratio(engine));
        busiest = busiest.max(ns);
    }
    saved += (dur - busiest) * (1.0 - ratio("dma"));
    ((dur - saved) / dur).max(0.0)
}

/// The factors for re-costing every rank of `set` for `device` (a built-in profile;
/// `None`: the recorded one) at `lnc` physical cores per logical core (`None`: the
/// target profile's).
pub fn recost(
    set: &analysis::TraceSet,
    device: Option<&str>,
    lnc: Option<u32>,
) -> anyhow::Result<Recost> {
    let mut out = Recost::default();
    for trace in &set.ranks {
        let where_ = || format!("rank {} ({})", trace.rank, trace.path.display());
        let Some(info) = trace.devices.iter().find(|d| d.profile.is_some()) else {
            bail!(
                "--device/--lnc re-cost traces the emulator recorded: {} has no \
                 deviceProperties profile",
                where_()
            );
        };
        let recorded = info.profile.as_deref().unwrap_or_default();
        let mut from = DeviceProfile::builtin(recorded).with_context(|| {
            format!(
                "--device/--lnc: {} was recorded on the profile {recorded:?}, not one of the \
                 built-in profiles ({}); its figures are not known here",
                where_(),
                DeviceProfile::BUILTIN.join(", ")
            )
        })?;
        if let Some(l) = info
            .lnc
            .and_then(|l| u32::try_from(l).ok())
            .filter(|&l| l > 0)
        {
            from.lnc = l;
        }
        let target = device.unwrap_or(recorded);
        let mut to = DeviceProfile::builtin(target).with_context(|| {
            format!(
                "--device {target:?}: not a built-in profile ({})",
                DeviceProfile::BUILTIN.join(", ")
            )
        })?;
        if let Some(l) = lnc {
            if l == 0 || to.physical_cores_per_chip % l != 0 {
                bail!(
                    "--lnc {l}: must divide the {} physical cores of a {} chip",
                    to.physical_cores_per_chip,
                    to.name
                );
            }
            to.lnc = l;
        }
        out.profiles.push((
            trace.rank,
            format!("{} (LNC={})", from.name, from.lnc),
            format!("{} (LNC={})", to.name, to.lnc),
        ));
        for row in trace.rows.iter().filter(|r| r.stream != -1) {
            if row.is_collective() || trace.category(row) != "kernel" {
                continue;
            }
            let Some(busy) = row.engine_busy.as_deref() else {
                out.without_busy += 1;
                continue;
            };
            // The args sum the engine over the logical core's physical cores, which
            // run side by side: the row's wall time on the engine is its share of one.
            let cores = i64::from(from.lnc.max(1));
            let busy: Vec<(&str, i64)> = busy
                .iter()
                .map(|&(engine, ns)| (trace.names.get(engine), ns / cores))
                .collect();
            let name = trace.name(row);
            let factor = row_factor(row.dur_ns, &busy, &from, &to, sixteen_bit(name));
            out.factors.insert((trace.rank, row.event_index), factor);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_part_of_a_row_scales_with_its_engine() {
        let trn2 = DeviceProfile::trn2();
        let trn3 = DeviceProfile::trn3();
        // VectorE 0.96 -> 1.2 GHz: 800 ns busy of a 1000 ns row becomes 640 ns; the
        // other 200 ns move data: on trn2 at the core's HBM share (2.9 TB/s over 4
        // banks: 725 B/ns, under its 2 x 16 DMA engines' 736 B/ns), on trn3 at the DMA
        // engines' 2 x 16 x 33 = 1056 B/ns (under 1225 B/ns of HBM): 137.3 ns.
        let f = row_factor(1000, &[("VectorE", 800)], &trn2, &trn3, false);
        let expected = (640.0 + 200.0 * 725.0 / 1056.0) / 1000.0;
        assert!((f - expected).abs() < 1e-9, "{f} vs {expected}");
        // TensorE is as fast on both: a row all TensorE keeps its time.
        assert_eq!(
            row_factor(500, &[("TensorE", 500)], &trn2, &trn3, false),
            1.0
        );
        // The same profile changes nothing.
        assert_eq!(
            row_factor(700, &[("ScalarE", 300)], &trn3, &trn3, true),
            1.0
        );
        // Half the physical cores per logical core: every engine at half throughput.
        let mut lnc1 = trn2.clone();
        lnc1.lnc = 1;
        let f = row_factor(1000, &[("VectorE", 1000)], &trn2, &lnc1, false);
        assert!((f - 2.0).abs() < 1e-9, "{f}");
    }

    #[test]
    fn bf16_kernels_use_the_16_bit_lanes() {
        assert!(sixteen_bit("add_bf16"));
        assert!(!sixteen_bit("add_f32"));
        // ScalarE has 256 BF16 lanes on trn3, 128 on trn2; FP32 has 128 on both.
        let (trn2, trn3) = (DeviceProfile::trn2(), DeviceProfile::trn3());
        assert_eq!(
            row_factor(100, &[("ScalarE", 100)], &trn2, &trn3, true),
            0.5
        );
        assert_eq!(
            row_factor(100, &[("ScalarE", 100)], &trn2, &trn3, false),
            1.0
        );
    }
}
