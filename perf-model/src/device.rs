//! Device rooflines: peak FLOP/s per compute spec (matrix or vector units, per element
//! type) and memory bandwidth, for the devices of [`DeviceSpec::builtin`], with every
//! figure's public source in `docs/HARDWARE.md` ("Rooflines of other devices").
//!
//! Figures are dense (no structured sparsity), at the vendor's boost clock, per device
//! as PyTorch sees it (one GPU; one logical NeuronCore, whose LNC multiplies the
//! physical core's figures). Where a vendor publishes no vector peak for a 16-bit type,
//! [`DeviceSpec::peak_flops_per_sec`] uses the FP32 vector peak and says so.

use serde::{Deserialize, Serialize};

use crate::cost::{ComputeSpec, Unit};
use crate::dtype::DType;

/// One device's roofline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceSpec {
    /// Its name (`MI300X`, `H100 SXM`, `trn2 (LNC=2)`).
    pub name: String,
    /// Memory (HBM) bandwidth, bytes per second.
    pub memory_bytes_per_sec: f64,
    /// Peak FLOP/s per compute spec label (`matrix_bf16`, `vector_fp32`, …).
    pub peak_flops_per_sec: Vec<(String, f64)>,
}

/// A peak the roofline used, and for which compute spec.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Peak {
    /// The spec whose figure was used (`vector_fp32` for a `vector_bf16` op on a device
    /// that publishes no 16-bit vector peak).
    pub spec: String,
    /// FLOP/s.
    pub flops_per_sec: f64,
}

const T: f64 = 1e12;

/// The built-in names [`DeviceSpec::builtin`] knows.
pub const BUILTIN: &[&str] = &[
    "h100-sxm",
    "h100-pcie",
    "h200",
    "b200",
    "a100-sxm-80gb",
    "a100-sxm-40gb",
    "a100-pcie-80gb",
    "a100-pcie-40gb",
    "mi300x",
    "mi325x",
    "mi355x",
    "trn2",
    "trn2-lnc1",
    "trn3",
    "trn3-lnc1",
];

fn spec(name: &str, memory_tb_per_s: f64, peaks: &[(&str, f64)]) -> DeviceSpec {
    DeviceSpec {
        name: name.to_owned(),
        memory_bytes_per_sec: memory_tb_per_s * T,
        peak_flops_per_sec: peaks
            .iter()
            .map(|(s, tf)| ((*s).to_owned(), tf * T))
            .collect(),
    }
}

/// A logical NeuronCore: the physical core's TensorE and VectorE figures and its share
/// of the chip's HBM bandwidth, times `lnc`.
fn neuron(
    name: &str,
    lnc: f64,
    hbm_chip_tb: f64,
    bf16: f64,
    fp8_speedup: f64,
    vector_fp32: f64,
) -> DeviceSpec {
    // Emulator profile (neuron-backend/src/profile.rs): FP32 on TensorE is 4× slower
    // than BF16; VectorE handles 16-bit elements at twice the rate of 32-bit ones.
    spec(
        name,
        hbm_chip_tb / 8.0 * lnc,
        &[
            ("matrix_bf16", bf16 * lnc),
            ("matrix_fp16", bf16 * lnc),
            ("matrix_fp8", bf16 * fp8_speedup * lnc),
            ("matrix_fp32", bf16 / 4.0 * lnc),
            ("vector_fp32", vector_fp32 * lnc),
            ("vector_bf16", 2.0 * vector_fp32 * lnc),
            ("vector_fp16", 2.0 * vector_fp32 * lnc),
        ],
    )
}

impl DeviceSpec {
    /// A built-in device by name ([`BUILTIN`]; case and `_`/space insensitive).
    pub fn builtin(name: &str) -> Option<DeviceSpec> {
        let key = name.trim().to_ascii_lowercase().replace(['_', ' '], "-");
        // Figures: docs/HARDWARE.md, "Rooflines of other devices", one source per row.
        let hopper = |name: &str, mem: f64| {
            spec(
                name,
                mem,
                &[
                    ("matrix_fp64", 66.9),
                    ("vector_fp64", 33.5),
                    // torch runs FP32 matmuls on the FP32 units unless TF32 is allowed.
                    ("matrix_fp32", 66.9),
                    ("vector_fp32", 66.9),
                    ("matrix_tf32", 494.7),
                    ("matrix_bf16", 989.4),
                    ("matrix_fp16", 989.4),
                    ("matrix_fp8", 1978.9),
                    ("matrix_int8", 1978.9),
                    ("vector_bf16", 133.8),
                    ("vector_fp16", 133.8),
                ],
            )
        };
        let a100 = |name: &str, mem: f64| {
            spec(
                name,
                mem,
                &[
                    ("matrix_fp64", 19.5),
                    ("vector_fp64", 9.7),
                    ("matrix_fp32", 19.5),
                    ("vector_fp32", 19.5),
                    ("matrix_tf32", 156.0),
                    ("matrix_bf16", 312.0),
                    ("matrix_fp16", 312.0),
                    ("matrix_int8", 624.0),
                    ("vector_fp16", 78.0),
                    ("vector_bf16", 39.0),
                ],
            )
        };
        let cdna3 = |name: &str, mem: f64| {
            spec(
                name,
                mem,
                &[
                    ("matrix_fp64", 163.4),
                    ("vector_fp64", 81.7),
                    ("matrix_fp32", 163.4),
                    ("vector_fp32", 163.4),
                    ("matrix_tf32", 653.7),
                    ("matrix_bf16", 1307.4),
                    ("matrix_fp16", 1307.4),
                    ("matrix_fp8", 2614.9),
                    ("matrix_int8", 2614.9),
                ],
            )
        };
        Some(match key.as_str() {
            "h100-sxm" | "h100" => hopper("H100 SXM", 3.35),
            "h200" => hopper("H200", 4.8),
            "h100-pcie" => spec(
                "H100 PCIe",
                2.0,
                &[
                    ("matrix_fp64", 51.0),
                    ("vector_fp64", 26.0),
                    ("matrix_fp32", 51.0),
                    ("vector_fp32", 51.0),
                    ("matrix_tf32", 378.0),
                    ("matrix_bf16", 756.0),
                    ("matrix_fp16", 756.0),
                    ("matrix_fp8", 1513.0),
                    ("matrix_int8", 1513.0),
                ],
            ),
            "b200" => spec(
                "B200",
                8.0,
                &[
                    ("matrix_fp64", 37.0),
                    ("vector_fp64", 37.0),
                    ("matrix_tf32", 1100.0),
                    ("matrix_bf16", 2250.0),
                    ("matrix_fp16", 2250.0),
                    ("matrix_fp8", 4500.0),
                    ("matrix_int8", 4500.0),
                ],
            ),
            "a100-sxm-80gb" | "a100" => a100("A100 SXM 80GB", 2.039),
            "a100-sxm-40gb" => a100("A100 SXM 40GB", 1.555),
            "a100-pcie-80gb" => a100("A100 PCIe 80GB", 1.935),
            "a100-pcie-40gb" => a100("A100 PCIe 40GB", 1.555),
            "mi300x" => cdna3("MI300X", 5.3),
            "mi325x" => cdna3("MI325X", 6.0),
            "mi355x" => spec(
                "MI355X",
                8.0,
                &[
                    ("matrix_fp64", 78.6),
                    ("vector_fp64", 78.6),
                    ("matrix_fp32", 157.3),
                    ("vector_fp32", 157.3),
                    ("matrix_bf16", 2500.0),
                    ("matrix_fp16", 2500.0),
                    ("matrix_fp8", 5000.0),
                    ("matrix_int8", 5000.0),
                ],
            ),
            "trn2" | "trn2-lnc2" => neuron("trn2 (LNC=2)", 2.0, 2.9, 79.0, 2.0, 1.0),
            "trn2-lnc1" => neuron("trn2 (LNC=1)", 1.0, 2.9, 79.0, 2.0, 1.0),
            "trn3" | "trn3-lnc2" => neuron("trn3 (LNC=2)", 2.0, 4.9, 79.0, 4.0, 1.2),
            "trn3-lnc1" => neuron("trn3 (LNC=1)", 1.0, 4.9, 79.0, 4.0, 1.2),
            _ => return None,
        })
    }

    /// The device a trace's `deviceProperties` entry describes: by `name` (`NVIDIA H100
    /// 80GB HBM3`, `AMD Instinct MI300X VF`), SM count and memory where the name leaves
    /// variants open (H100 SXM or PCIe, A100 40 or 80 GB); a neuron device by its
    /// `profile` and `lnc`. `None` when the device is not in the table.
    pub fn detect(
        name: Option<&str>,
        num_sms: Option<i64>,
        memory_bytes: Option<i64>,
        neuron_profile: Option<&str>,
        lnc: Option<i64>,
    ) -> Option<DeviceSpec> {
        if let Some(profile) = neuron_profile {
            let chip = if profile.starts_with("trn3") {
                "trn3"
            } else if profile.starts_with("trn2") {
                "trn2"
            } else {
                return None;
            };
            let lnc = lnc.unwrap_or(if profile.ends_with("lnc1") { 1 } else { 2 });
            return DeviceSpec::builtin(&format!("{chip}-lnc{lnc}"));
        }
        let name = name?.to_ascii_uppercase();
        let gib = memory_bytes.map(|b| b as f64 / (1u64 << 30) as f64);
        let key = if name.contains("MI355X") {
            "mi355x"
        } else if name.contains("MI325X") {
            "mi325x"
        } else if name.contains("MI300X") {
            "mi300x"
        } else if name.contains("B200") {
            "b200"
        } else if name.contains("H200") {
            "h200"
        } else if name.contains("H100") {
            if name.contains("PCIE") || num_sms == Some(114) {
                "h100-pcie"
            } else {
                "h100-sxm"
            }
        } else if name.contains("A100") {
            let big = gib.is_some_and(|g| g > 48.0) || name.contains("80GB");
            match (name.contains("PCIE"), big) {
                (true, true) => "a100-pcie-80gb",
                (true, false) => "a100-pcie-40gb",
                (false, true) => "a100-sxm-80gb",
                (false, false) => "a100-sxm-40gb",
            }
        } else {
            return None;
        };
        DeviceSpec::builtin(key)
    }

    /// The device a user names (`--device-spec NAME|FILE` of `analyze`, `export`, `diff`
    /// and `neuron-top --replay`): a built-in name ([`BUILTIN`]), else a device
    /// file ([`DeviceSpec::from_json`]). `Err` says which it was taken for and why it
    /// failed.
    pub fn named(spec: &str) -> Result<DeviceSpec, String> {
        if let Some(device) = DeviceSpec::builtin(spec) {
            return Ok(device);
        }
        let path = std::path::Path::new(spec);
        if path.is_file() {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("reading device file {}: {e}", path.display()))?;
            return DeviceSpec::from_json(&text).map_err(|e| format!("{}: {e}", path.display()));
        }
        Err(format!(
            "--device-spec {spec}: neither a built-in device ({}) nor a file",
            BUILTIN.join(", ")
        ))
    }

    /// Reads a device file: JSON `{"name": "…", "memory_tb_per_s": 3.35,
    /// "peak_tflops": {"matrix_bf16": 989.4, "vector_fp32": 66.9, …}}`.
    pub fn from_json(text: &str) -> Result<DeviceSpec, String> {
        #[derive(Deserialize)]
        struct File {
            name: String,
            memory_tb_per_s: f64,
            peak_tflops: std::collections::BTreeMap<String, f64>,
        }
        let file: File = serde_json::from_str(text).map_err(|e| format!("device file: {e}"))?;
        if !file.memory_tb_per_s.is_finite() || file.memory_tb_per_s <= 0.0 {
            return Err("device file: memory_tb_per_s must be positive".to_owned());
        }
        if let Some((k, v)) = file
            .peak_tflops
            .iter()
            .find(|(_, v)| !v.is_finite() || **v <= 0.0)
        {
            return Err(format!(
                "device file: peak_tflops.{k} = {v} must be positive"
            ));
        }
        Ok(DeviceSpec {
            name: file.name,
            memory_bytes_per_sec: file.memory_tb_per_s * T,
            peak_flops_per_sec: file
                .peak_tflops
                .into_iter()
                .map(|(k, v)| (k, v * T))
                .collect(),
        })
    }

    /// Replaces or adds the matrix peaks a neuron trace states (`deviceProperties`
    /// `peakTflops`: `bf16`, `fp8`, `fp32`, TFLOP/s of the logical core).
    pub fn with_matrix_peaks_tflops(mut self, peaks: &[(String, f64)]) -> DeviceSpec {
        for (dtype, tflops) in peaks {
            let key = format!("matrix_{dtype}");
            match self.peak_flops_per_sec.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = tflops * T,
                None => self.peak_flops_per_sec.push((key, tflops * T)),
            }
        }
        self
    }

    /// The peak for `compute`: its own figure; for a vector op of a type without one,
    /// the FP32 vector peak; for a matrix op of a type without one, `None` (the
    /// roofline is then the memory bound alone, and the row says so).
    pub fn peak_flops_per_sec(&self, compute: ComputeSpec) -> Option<Peak> {
        let find = |label: &str| {
            self.peak_flops_per_sec
                .iter()
                .find(|(k, _)| k == label)
                .map(|(k, v)| Peak {
                    spec: k.clone(),
                    flops_per_sec: *v,
                })
        };
        find(&compute.label()).or_else(|| match compute.unit {
            Unit::Vector => find(
                &ComputeSpec {
                    unit: Unit::Vector,
                    dtype: DType::F32,
                }
                .label(),
            ),
            Unit::Matrix => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_name_resolves() {
        for name in BUILTIN {
            assert!(DeviceSpec::builtin(name).is_some(), "{name}");
        }
    }

    #[test]
    fn trace_device_names_find_their_rows() {
        let mi300 = DeviceSpec::detect(Some("AMD Instinct MI300X VF"), Some(304), None, None, None)
            .unwrap();
        assert_eq!(mi300.name, "MI300X");
        let h100 =
            DeviceSpec::detect(Some("NVIDIA H100 80GB HBM3"), Some(132), None, None, None).unwrap();
        assert_eq!(h100.name, "H100 SXM");
        let trn = DeviceSpec::detect(None, None, None, Some("trn2"), Some(1)).unwrap();
        assert_eq!(trn.name, "trn2 (LNC=1)");
        assert_eq!(trn.memory_bytes_per_sec, 362.5e9);
    }

    #[test]
    fn a_device_file_with_a_non_positive_peak_is_refused() {
        let err = DeviceSpec::from_json(
            r#"{"name": "x", "memory_tb_per_s": 1, "peak_tflops": {"matrix_bf16": 0}}"#,
        )
        .unwrap_err();
        assert!(err.contains("matrix_bf16"), "{err}");
    }
}
