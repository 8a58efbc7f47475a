//! Event categories (`cat`), including the legacy spellings of 2021 traces.

use std::borrow::Cow;
use std::fmt;

macro_rules! categories {
    ($( $(#[$doc:meta])* $variant:ident => $text:literal, )*) => {
        /// The `cat` of an event: every category libkineto writes (its
        /// `ActivityType` names, as `output_json.cpp` writes them), the legacy spellings of
        /// traces written before mid-2021, and [`Category::Other`] for anything else.
        ///
        /// The variant keeps the original spelling, so writing a category back reproduces
        /// the input; [`Category::normalized`] maps legacy spellings to their modern meaning.
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Category<'a> {
            $( $(#[$doc])* $variant, )*
            /// A category this crate does not know, with its spelling.
            Other(Cow<'a, str>),
        }

        impl<'a> Category<'a> {
            /// Classifies a `cat` string.
            pub fn parse(text: Cow<'a, str>) -> Self {
                match &*text {
                    $( $text => Category::$variant, )*
                    _ => Category::Other(text),
                }
            }

            /// The spelling as it appears in the trace.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Category::$variant => $text, )*
                    Category::Other(text) => text,
                }
            }
        }
    };
}

categories! {
    /// `cpu_op`: an ATen operator on the host.
    CpuOp => "cpu_op",
    /// `user_annotation`: `record_function` ranges, `ProfilerStep#N`.
    UserAnnotation => "user_annotation",
    /// `gpu_user_annotation`: user ranges projected onto a device stream.
    GpuUserAnnotation => "gpu_user_annotation",
    /// `gpu_memcpy`: a device copy.
    GpuMemcpy => "gpu_memcpy",
    /// `gpu_memset`: a device memset.
    GpuMemset => "gpu_memset",
    /// `kernel`: device compute (CUDA, ROCm, and PrivateUse1 devices such as `neuron`).
    Kernel => "kernel",
    /// `external_correlation`.
    ExternalCorrelation => "external_correlation",
    /// `cuda_runtime`: host-side runtime API calls (launches, syncs).
    CudaRuntime => "cuda_runtime",
    /// `cuda_driver`: host-side driver API calls.
    CudaDriver => "cuda_driver",
    /// `cpu_instant_event`: instants such as `[memory]` and `[OutOfMemory]`.
    CpuInstantEvent => "cpu_instant_event",
    /// `python_function`: Python stack frames (`with_stack`).
    PythonFunction => "python_function",
    /// `overhead`: profiler overhead.
    Overhead => "overhead",
    /// `mtia_runtime`.
    MtiaRuntime => "mtia_runtime",
    /// `mtia_ccp_events`.
    MtiaCcpEvents => "mtia_ccp_events",
    /// `mtia_insight`.
    MtiaInsight => "mtia_insight",
    /// `cuda_sync`: stream/event synchronisation.
    CudaSync => "cuda_sync",
    /// `cuda_event`.
    CudaEvent => "cuda_event",
    /// `mtia_counters`.
    MtiaCounters => "mtia_counters",
    /// `glow_runtime`.
    GlowRuntime => "glow_runtime",
    /// `cuda_profiler_range`.
    CudaProfilerRange => "cuda_profiler_range",
    /// `hpu_op`.
    HpuOp => "hpu_op",
    /// `xpu_runtime`.
    XpuRuntime => "xpu_runtime",
    /// `xpu_driver`.
    XpuDriver => "xpu_driver",
    /// `collective_comm`.
    CollectiveComm => "collective_comm",
    /// `privateuse1_runtime`: host runtime calls of a PrivateUse1 device (`neuron`).
    PrivateUse1Runtime => "privateuse1_runtime",
    /// `privateuse1_driver`: host driver calls of a PrivateUse1 device (`neuron`).
    PrivateUse1Driver => "privateuse1_driver",
    /// `xpu_scope_profiler`.
    XpuScopeProfiler => "xpu_scope_profiler",
    /// `xpu_sync`.
    XpuSync => "xpu_sync",
    /// `hardware_counters`.
    HardwareCounters => "hardware_counters",
    /// `Trace`: the profiler's own span (`PyTorch Profiler (0)`).
    Trace => "Trace",
    /// `ac2g`: flow from a launch to its device activity (flow id = correlation).
    Ac2g => "ac2g",
    /// `fwdbwd`: flow from a forward op to its backward op.
    Fwdbwd => "fwdbwd",
    /// Legacy (before mid-2021) spelling of `cpu_op`.
    LegacyOperator => "Operator",
    /// Legacy spelling of `cuda_runtime`.
    LegacyRuntime => "Runtime",
    /// Legacy spelling of `kernel`.
    LegacyKernel => "Kernel",
    /// Legacy spelling of `gpu_memcpy`.
    LegacyMemcpy => "Memcpy",
    /// Legacy spelling of `gpu_memset`.
    LegacyMemset => "Memset",
    /// Legacy flow category `async`, today's `ac2g`.
    LegacyAsync => "async",
    /// Legacy flow category `async_cpu_to_gpu`, today's `ac2g`.
    LegacyAsyncCpuToGpu => "async_cpu_to_gpu",
}

impl<'a> Category<'a> {
    /// The modern category this one means: legacy spellings map to `cpu_op`,
    /// `cuda_runtime`, `kernel`, `gpu_memcpy`, `gpu_memset` and `ac2g`; others are unchanged.
    pub fn normalized(&self) -> Category<'a> {
        match self {
            Category::LegacyOperator => Category::CpuOp,
            Category::LegacyRuntime => Category::CudaRuntime,
            Category::LegacyKernel => Category::Kernel,
            Category::LegacyMemcpy => Category::GpuMemcpy,
            Category::LegacyMemset => Category::GpuMemset,
            Category::LegacyAsync | Category::LegacyAsyncCpuToGpu => Category::Ac2g,
            other => other.clone(),
        }
    }

    /// Whether this is a legacy spelling that [`Category::normalized`] rewrites.
    pub fn is_legacy(&self) -> bool {
        self.normalized() != *self
    }

    /// Whether the category is device activity (kernel, memcpy, memset, device-side
    /// annotation), after normalisation.
    pub fn is_device_activity(&self) -> bool {
        matches!(
            self.normalized(),
            Category::Kernel
                | Category::GpuMemcpy
                | Category::GpuMemset
                | Category::GpuUserAnnotation
        )
    }

    /// Copies a borrowed `Other` spelling so the category no longer borrows the input.
    pub fn into_owned(self) -> Category<'static> {
        match self {
            Category::Other(text) => Category::Other(Cow::Owned(text.into_owned())),
            // Every other variant holds no data; re-parse its static spelling.
            known => Category::parse(Cow::Owned(known.as_str().to_owned())),
        }
    }
}

impl fmt::Display for Category<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_legacy_categories_round_trip() {
        for text in [
            "cpu_op",
            "privateuse1_runtime",
            "Operator",
            "async",
            "ac2g",
            "weird",
        ] {
            let cat = Category::parse(Cow::Borrowed(text));
            assert_eq!(cat.as_str(), text);
            assert_eq!(cat.clone().into_owned(), cat);
        }
        assert_eq!(
            Category::parse("weird".into()),
            Category::Other("weird".into())
        );
    }

    #[test]
    fn legacy_categories_normalise_to_modern_meaning() {
        let norm = |t: &str| {
            Category::parse(Cow::Borrowed(t))
                .normalized()
                .as_str()
                .to_owned()
        };
        assert_eq!(norm("Operator"), "cpu_op");
        assert_eq!(norm("Runtime"), "cuda_runtime");
        assert_eq!(norm("Kernel"), "kernel");
        assert_eq!(norm("Memcpy"), "gpu_memcpy");
        assert_eq!(norm("Memset"), "gpu_memset");
        assert_eq!(norm("async"), "ac2g");
        assert_eq!(norm("async_cpu_to_gpu"), "ac2g");
        assert_eq!(norm("kernel"), "kernel");
        assert!(Category::LegacyKernel.is_legacy());
        assert!(!Category::Kernel.is_legacy());
        assert!(Category::LegacyMemcpy.is_device_activity());
    }
}
