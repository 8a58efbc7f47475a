//! How the model sees each device row: the category of the operator that launched it
//! and the modeled call it belongs to, for re-timing rows on another device
//! ([`crate::critical_path::cross_device`]). Built by [`super::roofline_table`] when
//! [`super::RooflineOptions::row_models`] asks for it (one entry per device row, so not
//! by default).

use std::sync::Arc;

use perf_model::{Category, OpCost};

/// The modeled call a device row belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct CallModel {
    /// Its cost (FLOPs, bytes, units), shared by the call's rows.
    pub cost: Arc<OpCost>,
    /// The call's kernel time (the union of its rows), µs.
    pub kernel_time_us: f64,
}

/// One device row (kernel, copy, memset) as the roofline table saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct RowModel {
    /// Index into [`crate::model::RankTrace::rows`].
    pub row: u32,
    /// The category of the operator that launched it directly ([`Category::Other`] when
    /// no operator did).
    pub category: Category,
    /// The outermost call the model costs that it belongs to; `None` when no operator
    /// of its chain is costed (or it is a compiled graph's kernel).
    pub call: Option<CallModel>,
}
