//! Near-zero-overhead event recording for neuronprof.
#![warn(missing_docs)]

pub mod clock;
pub mod collector;
mod ffi;
mod hooks;
mod local;
mod names;
mod record;
mod ring;

pub use collector::{
    drain, drain_with, dropped_total, records_lost_at_exit, ring_capacity, set_ring_capacity,
    thread_stats, ThreadStats, DEFAULT_RING_CAPACITY,
};
pub use hooks::{
    collective, collective_begin, collective_end, counter, counter_at, dma, flow_end, flow_start,
    instruction, is_enabled, kernel, memory, next_corr_id, operator_begin, operator_end,
    range_begin, range_end, record, record_now, record_span, runtime_call, set_enabled,
    OperatorScope, RangeScope, RuntimeCallScope,
};
pub use names::{intern, names_from, resolve, NameId, NameSite};
pub use record::*;
