//! Classification of device activity: which rows are device work, and of which type.
//!
//! Two rule sets, chosen by [`Mode`]:
//! - [`Mode::HtaCompat`] uses HTA's *name* rules (`hta/common/types.py`,
//!   `hta/utils/utils.py::get_kernel_type` in HTA's source): communication if the name starts with `nccl`,
//!   `hip` or `hccl` or contains `ncclKernel`; memory if it starts with `Memcpy`, `Memset`,
//!   `hipMemcpy`, `hipMemset` or `dma`; computation unless it matches a list of
//!   runtime-like names; otherwise "other".
//! - [`Mode::Default`] uses categories and args first, so it works for any device whose
//!   kernels are not named like CUDA's (a `neuron` device through PrivateUse1, MTIA):
//!   `gpu_memcpy`/`gpu_memset` are memory, a kernel with collective args
//!   (`Collective name`) is communication, MTIA's `dma*` command-processor events are
//!   memory; the name rules decide only for kernels without such args.

use serde::Serialize;

/// Which rule set an analysis follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Exact nanoseconds, classification by category and args.
    #[default]
    Default,
    /// HTA 0.6's definitions: rounding to integer µs, name-based kernel types.
    HtaCompat,
}

/// The type of a device row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum KernelType {
    /// Collectives and point-to-point transfers.
    Communication,
    /// Copies, memsets, DMA.
    Memory,
    /// Compute kernels.
    Computation,
    /// Device rows that are none of the above (synchronisation, runtime-like names).
    Other,
}

impl KernelType {
    /// HTA's spelling (`COMPUTATION`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            KernelType::Communication => "COMMUNICATION",
            KernelType::Memory => "MEMORY",
            KernelType::Computation => "COMPUTATION",
            KernelType::Other => "OTHER",
        }
    }
}

/// Which HTA release's definitions [`Mode::HtaCompat`] follows where releases differ.
///
/// HTA 0.5.0 is the newest release on PyPI (what `pip install HolisticTraceAnalysis`
/// gives); 0.6 (tagged on GitHub, not on PyPI) printed `tests/data/traces/hta-reference/`.
/// Between them only the kernel-name rules changed for the analyses we reproduce
/// (0.6's `CommunicateKernelGroupingPattern`, `MemoryKernelGroupingPattern` and
/// `ComputeKernelGroupingPattern` replaced 0.5's three regular expressions, see
/// [`hta_kernel_type_for`]) and 0.6 added `cuLaunchKernelEx` to the launch names; the
/// same traces give the same numbers otherwise (checked by
/// `tests/analyses_match_hta_run_here.rs`, which runs HTA 0.5 on the shared traces).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum HtaVersion {
    /// HTA 0.5.0 (PyPI).
    #[serde(rename = "0.5")]
    V0_5,
    /// HTA 0.6 (GitHub tags v0.6.0, v0.6.1).
    #[default]
    #[serde(rename = "0.6")]
    V0_6,
}

impl std::str::FromStr for HtaVersion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim_start_matches('v') {
            "0.5" | "0.5.0" => Ok(HtaVersion::V0_5),
            "0.6" | "0.6.0" | "0.6.1" => Ok(HtaVersion::V0_6),
            other => Err(format!(
                "unknown HTA version {other:?}: expected 0.5 (PyPI) or 0.6"
            )),
        }
    }
}

/// HTA's `get_kernel_type(name)` under `version`'s rules.
pub fn hta_kernel_type_for(version: HtaVersion, name: &str) -> KernelType {
    match version {
        HtaVersion::V0_6 => hta_kernel_type(name),
        HtaVersion::V0_5 => hta05_kernel_type(name),
    }
}

/// HTA 0.5's rules (`hta/utils/utils.py` of 0.5.0), with `re.match` semantics (anchored
/// at the start; `.` does not cross a newline):
/// communication `^nccl.*Kernel`; memory `(^Memcpy)|(^Memset)|(^dma)`; computation
/// unless `(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)` matches, i.e. unless
/// communication, the first line contains `Memcpy` or `Sync`, or the name starts with
/// `Memset`; otherwise "other".
fn hta05_kernel_type(name: &str) -> KernelType {
    let line = first_line(name);
    let nccl_kernel = line
        .strip_prefix("nccl")
        .is_some_and(|rest| rest.contains("Kernel"));
    if nccl_kernel {
        KernelType::Communication
    } else if name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma") {
        KernelType::Memory
    } else if !(line.contains("Memcpy") || name.starts_with("Memset") || line.contains("Sync")) {
        KernelType::Computation
    } else {
        KernelType::Other
    }
}

/// HTA's `get_kernel_type(name)` (0.6's rules).
pub fn hta_kernel_type(name: &str) -> KernelType {
    if is_hta_communication(name) {
        KernelType::Communication
    } else if is_hta_memory(name) {
        KernelType::Memory
    } else if is_hta_computation(name) {
        KernelType::Computation
    } else {
        KernelType::Other
    }
}

/// `CommunicateKernelGroupingPattern`: `(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)`.
fn is_hta_communication(name: &str) -> bool {
    let line = first_line(name);
    name.starts_with("nccl")
        || name.starts_with("hip")
        || name.starts_with("hccl")
        || line.contains("ncclKernel")
}

/// `MemoryKernelGroupingPattern`: `(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)`.
fn is_hta_memory(name: &str) -> bool {
    let rest = name.strip_prefix("hip").unwrap_or(name);
    rest.starts_with("Memcpy")
        || rest.starts_with("Memset")
        || name.starts_with("Memcpy")
        || name.starts_with("Memset")
        || name.starts_with("dma")
}

/// `ComputeKernelGroupingPattern` (an inverse match): not `^nccl`, not containing
/// `Memcpy`, `Memset`, `dma` or `Sync`, not `^Stream Wait Event`, not `^cuda.*LaunchKernel`,
/// and none of the listed runtime prefixes.
fn is_hta_computation(name: &str) -> bool {
    // `re.match` with `.*` does not cross a newline: containment is tested on line one.
    let line = first_line(name);
    let runtime_like = name.starts_with("nccl")
        || line.contains("Memcpy")
        || line.contains("Memset")
        || line.contains("dma")
        || line.contains("Sync")
        || name.starts_with("Stream Wait Event")
        || (name.starts_with("cuda") && line[4..].contains("LaunchKernel"))
        || [
            "runFunction",
            "hip",
            "job_exe",
            "packet",
            "pe_exe",
            "cpum_exe_subgraph",
            "hccl",
            "collective_subgraph_execution",
        ]
        .iter()
        .any(|p| name.starts_with(p));
    !runtime_like
}

fn first_line(name: &str) -> &str {
    name.split('\n').next().unwrap_or("")
}

/// The default mode's kernel type: category and args first, names second.
pub fn kernel_type(category: &str, name: &str, is_collective: bool) -> KernelType {
    kernel_type_given(category, name, is_collective, hta_kernel_type(name))
}

/// [`kernel_type`] with the name rules' answer for `name` already known (`by_name`,
/// what [`hta_kernel_type`] gives), for callers that cache it per name.
pub fn kernel_type_given(
    category: &str,
    name: &str,
    is_collective: bool,
    by_name: KernelType,
) -> KernelType {
    match category {
        "gpu_memcpy" | "gpu_memset" | "Memcpy" | "Memset" => KernelType::Memory,
        "mtia_ccp_events" if name.starts_with("dma") => KernelType::Memory,
        _ if is_collective => KernelType::Communication,
        _ => by_name,
    }
}

/// Whether a category is device work in the default mode: kernels, copies, memsets and
/// MTIA command-processor events (legacy spellings included). Device-side annotations
/// (`gpu_user_annotation`) are ranges over other rows, not work, and are excluded.
pub fn is_device_work_category(category: &str) -> bool {
    matches!(
        category,
        "kernel" | "Kernel" | "gpu_memcpy" | "Memcpy" | "gpu_memset" | "Memset" | "mtia_ccp_events"
    )
}

/// Whether a (normalised) category is a host-side runtime or driver call of a device
/// (`cudaLaunchKernel`, `nrt_execute`, …). PyTorch's `key_averages` lists these as CPU
/// events, nested in the operator that made them.
pub fn is_runtime_call_category(category: &str) -> bool {
    matches!(
        category,
        "cuda_runtime"
            | "cuda_driver"
            | "privateuse1_runtime"
            | "privateuse1_driver"
            | "mtia_runtime"
            | "xpu_runtime"
            | "xpu_driver"
    )
}

/// HTA's memory name (`get_memory_kernel_type`): the first 11 characters of a `Memcpy`
/// name (`Memcpy DtoH`), `Memset`, or `Memcpy Unknown`.
pub fn memory_kind(name: &str) -> String {
    if name.starts_with("Memset") {
        return "Memset".to_owned();
    }
    if !name.starts_with("Memcpy") {
        return "Memcpy Unknown".to_owned();
    }
    name.chars().take(11).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hta_name_rules() {
        let t = hta_kernel_type;
        assert_eq!(
            t("ncclKernel_AllReduce_RING_LL_Sum_float(...)"),
            KernelType::Communication
        );
        assert_eq!(t("void foo<ncclKernel>"), KernelType::Communication);
        assert_eq!(
            t("hipMemcpyAsync"),
            KernelType::Communication,
            "hip wins first"
        );
        assert_eq!(t("Memcpy DtoD (Device -> Device)"), KernelType::Memory);
        assert_eq!(t("dma_request"), KernelType::Memory);
        assert_eq!(
            t("void at::native::reduce_kernel<4>"),
            KernelType::Computation
        );
        assert_eq!(t("cudaLaunchKernel"), KernelType::Other);
        assert_eq!(t("Event Sync"), KernelType::Other);
        assert_eq!(t("pe_exe"), KernelType::Other);
        assert_eq!(t("fc-dtype_Float"), KernelType::Computation);
    }

    #[test]
    fn hta05_name_rules() {
        let t = |name| hta_kernel_type_for(HtaVersion::V0_5, name);
        assert_eq!(t("ncclKernel_AllReduce(...)"), KernelType::Communication);
        assert_eq!(t("ncclDevKernel_AllGather"), KernelType::Communication);
        assert_eq!(
            t("void foo<ncclKernel>"),
            KernelType::Computation,
            "0.5 anchors nccl"
        );
        assert_eq!(t("hipMemcpyAsync"), KernelType::Other, "contains Memcpy");
        assert_eq!(t("Memset (Device)"), KernelType::Memory);
        assert_eq!(t("dma_request"), KernelType::Memory);
        assert_eq!(t("Stream Wait Event"), KernelType::Computation);
        assert_eq!(t("Stream Sync"), KernelType::Other);
        assert_eq!(t("pe_exe"), KernelType::Computation);
        assert_eq!(
            t("ncclFoo\nKernel"),
            KernelType::Computation,
            "no match across lines"
        );
        assert_eq!("0.5".parse::<HtaVersion>(), Ok(HtaVersion::V0_5));
        assert_eq!("v0.6.1".parse::<HtaVersion>(), Ok(HtaVersion::V0_6));
        assert!("0.4".parse::<HtaVersion>().is_err());
    }

    #[test]
    fn default_rules_use_category_and_args() {
        assert_eq!(
            kernel_type("kernel", "all_reduce_f32", true),
            KernelType::Communication
        );
        assert_eq!(kernel_type("gpu_memcpy", "copy", false), KernelType::Memory);
        assert_eq!(
            kernel_type("kernel", "matmul", false),
            KernelType::Computation
        );
        assert!(is_device_work_category("kernel"));
        assert!(!is_device_work_category("gpu_user_annotation"));
        assert_eq!(memory_kind("Memcpy HtoD (Pinned -> Device)"), "Memcpy HtoD");
        assert_eq!(memory_kind("Memset (Device)"), "Memset");
    }
}
