//! Memory transfers per kind: counts, bytes, achieved bandwidth and small transfers
//! (no HTA counterpart).
//!
//! Small copies cost a fixed setup (a DMA descriptor, a launch) each, so many of them
//! waste bandwidth; this counts copies below `small_bytes` (64 KiB by default) among the
//! device's memory rows (`gpu_memcpy`/`gpu_memset` categories in the default mode, HTA's
//! memory names in compat mode), grouped like HTA's memory bandwidth (`Memcpy HtoD`, …).

use std::collections::BTreeMap;

use serde::Serialize;

use super::merge_intervals;
use crate::classify::{memory_kind, KernelType};
use crate::frame::Frame;

/// Transfers of one kind on one rank.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransferKind {
    /// The rank.
    pub rank: i64,
    /// `Memcpy HtoD`, `Memcpy DtoD`, `Memset`, … or the row's name when it is not
    /// CUDA-style.
    pub kind: String,
    /// Transfers.
    pub count: u64,
    /// Transfers with a `bytes` arg.
    pub with_bytes: u64,
    /// Σ bytes.
    pub bytes: i64,
    /// Transfers smaller than the small-transfer limit.
    pub small_count: u64,
    /// Σ bytes of the small ones.
    pub small_bytes: i64,
    /// Time with at least one transfer of this kind running, µs.
    pub busy_us: f64,
    /// `bytes / busy time`, GB/s.
    pub achieved_gbps: Option<f64>,
}

/// Default limit of a small transfer: 64 KiB.
pub const SMALL_TRANSFER_BYTES: i64 = 64 << 10;

/// Summarizes the transfers of one rank, by kind.
pub fn transfers(frame: &Frame<'_>, small_bytes: i64) -> Vec<TransferKind> {
    let mut by_kind: BTreeMap<String, Vec<&crate::frame::FrameRow>> = BTreeMap::new();
    for row in frame
        .device_rows()
        .filter(|r| r.kernel_type == KernelType::Memory)
    {
        let name = frame.name(row);
        let kind = if name.starts_with("Memcpy") || name.starts_with("Memset") {
            memory_kind(name)
        } else {
            name.to_owned()
        };
        by_kind.entry(kind).or_default().push(row);
    }
    by_kind
        .into_iter()
        .map(|(kind, rows)| {
            let sizes: Vec<i64> = rows
                .iter()
                .map(|r| frame.model_row(r).bytes)
                .filter(|&b| b >= 0)
                .collect();
            let bytes: i64 = sizes.iter().sum();
            let small: Vec<i64> = sizes.iter().copied().filter(|&b| b < small_bytes).collect();
            let busy = merge_intervals(rows.iter().copied())
                .iter()
                .map(|(s, e)| e - s)
                .sum::<i64>();
            let busy_us = frame.us(busy);
            TransferKind {
                rank: frame.rank(),
                kind,
                count: rows.len() as u64,
                with_bytes: sizes.len() as u64,
                bytes,
                small_count: small.len() as u64,
                small_bytes: small.iter().sum(),
                busy_us,
                achieved_gbps: (busy_us > 0.0 && !sizes.is_empty())
                    .then(|| bytes as f64 / (busy_us * 1000.0)),
            }
        })
        .collect()
}
