//! All-to-all(v): who sends how much to whom. Each rank's `In split size` lists the
//! elements it sends to each rank of its group, in group order; without one (an even
//! all-to-all, or a trace that does not record splits) a rank sends `In msg nelems / n` to
//! each of the `n` ranks. Summed over a group's instances, that is a rank × rank matrix of
//! bytes, whose row sums are what each rank sent and column sums what each received; the
//! imbalance is the largest of those over their mean (1: even).
//!
//! Group position `j` is global rank `Process Group Ranks[j]` when the trace records the
//! group's ranks; otherwise the instance's ranks in order when every rank of the group is
//! present. An instance whose positions cannot be placed (a group without its ranks listed
//! and with ranks missing from the traces) or whose dtype is unknown is counted, not
//! guessed.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

/// One process group's all-to-all traffic.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AllToAll {
    /// `Process Group Name`.
    pub process_group: String,
    /// `Collective name` (`all_to_all`, `alltoall_base`, …).
    pub collective: String,
    /// The global ranks of the matrix's rows and columns, in order.
    pub ranks: Vec<i64>,
    /// Instances summed into the matrix.
    pub instances: u64,
    /// Instances left out: their group positions could not be placed on ranks, or their
    /// dtype's size is unknown.
    pub unplaced_instances: u64,
    /// Whether any instance recorded its split sizes (otherwise every row is an even
    /// split).
    pub recorded_splits: bool,
    /// `bytes[i][j]`: bytes `ranks[i]` sent to `ranks[j]`, over the instances.
    pub bytes: Vec<Vec<i64>>,
    /// Bytes each rank sent (the rows' sums).
    pub send_bytes: Vec<i64>,
    /// Bytes each rank received (the columns' sums).
    pub recv_bytes: Vec<i64>,
    /// Largest sent / mean sent (1: even).
    pub send_imbalance: Option<f64>,
    /// Largest received / mean received.
    pub recv_imbalance: Option<f64>,
}

/// One rank's part of an all-to-all instance: its rank, `In split size` and `In msg
/// nelems`.
pub(crate) type RankSplits = (i64, Vec<i64>, i64);

/// Whether `collective` is an all-to-all(v) (PyTorch's and NCCL's spellings).
pub(crate) fn is_all_to_all(collective: &str) -> bool {
    collective
        .to_ascii_lowercase()
        .replace(['_', ' '], "")
        .starts_with("alltoall")
}

#[derive(Default)]
struct Acc {
    bytes: BTreeMap<(i64, i64), i64>,
    ranks: BTreeSet<i64>,
    instances: u64,
    unplaced: u64,
    recorded: bool,
}

/// The matrices being summed, by (process group, collective).
#[derive(Default)]
pub(crate) struct Matrices {
    by_group: BTreeMap<(String, String), Acc>,
}

impl Matrices {
    /// Adds one instance: its group's listed ranks (empty: not recorded), its group size
    /// (≤ 0: unknown), the bytes of one element (`None`: unknown) and each present
    /// rank's splits.
    pub(crate) fn add(
        &mut self,
        key: (&str, &str),
        group_ranks: &[i64],
        group_size: i64,
        elem_bytes: Option<i64>,
        parts: &[RankSplits],
    ) {
        let acc = self
            .by_group
            .entry((key.0.to_owned(), key.1.to_owned()))
            .or_default();
        let mut present: Vec<i64> = parts.iter().map(|p| p.0).collect();
        present.sort_unstable();
        let positions: Vec<i64> = if !group_ranks.is_empty() {
            group_ranks.to_vec()
        } else if group_size <= 0 || present.len() as i64 == group_size {
            present
        } else {
            Vec::new()
        };
        let (Some(elem_bytes), false) = (elem_bytes, positions.is_empty()) else {
            acc.unplaced += 1;
            return;
        };
        let n = positions.len() as i64;
        let mut rows = Vec::with_capacity(parts.len());
        for (rank, splits, in_nelems) in parts {
            let row: Vec<i64> = if splits.is_empty() {
                vec![in_nelems.max(&0) / n; positions.len()]
            } else if splits.len() == positions.len() {
                splits.clone()
            } else {
                acc.unplaced += 1;
                return;
            };
            rows.push((*rank, row));
        }
        acc.recorded |= parts.iter().any(|p| !p.1.is_empty());
        acc.instances += 1;
        acc.ranks.extend(positions.iter().copied());
        for (rank, row) in rows {
            for (&dst, elems) in positions.iter().zip(row) {
                *acc.bytes.entry((rank, dst)).or_default() += elems.max(0) * elem_bytes;
            }
        }
    }

    /// One matrix per group and collective.
    pub(crate) fn finish(self) -> Vec<AllToAll> {
        self.by_group
            .into_iter()
            .map(|((process_group, collective), acc)| {
                let ranks: Vec<i64> = acc.ranks.into_iter().collect();
                let bytes: Vec<Vec<i64>> = ranks
                    .iter()
                    .map(|&src| {
                        ranks
                            .iter()
                            .map(|&dst| acc.bytes.get(&(src, dst)).copied().unwrap_or(0))
                            .collect()
                    })
                    .collect();
                let send_bytes: Vec<i64> = bytes.iter().map(|row| row.iter().sum()).collect();
                let recv_bytes: Vec<i64> = (0..ranks.len())
                    .map(|j| bytes.iter().map(|row| row[j]).sum())
                    .collect();
                AllToAll {
                    process_group,
                    collective,
                    instances: acc.instances,
                    unplaced_instances: acc.unplaced,
                    recorded_splits: acc.recorded,
                    send_imbalance: imbalance(&send_bytes),
                    recv_imbalance: imbalance(&recv_bytes),
                    ranks,
                    bytes,
                    send_bytes,
                    recv_bytes,
                }
            })
            .collect()
    }
}

/// Largest / mean, when the mean is positive.
fn imbalance(values: &[i64]) -> Option<f64> {
    let mean = values.iter().sum::<i64>() as f64 / values.len().max(1) as f64;
    let max = values.iter().copied().max()? as f64;
    (mean > 0.0).then(|| max / mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uneven_splits_make_the_matrix_and_even_ones_divide_the_message() {
        let mut m = Matrices::default();
        // Ranks 4, 5, 6 in group order [6, 4, 5]; floats.
        let parts = [
            (4, vec![1, 2, 3], 6),
            (5, vec![10, 0, 0], 10),
            (6, vec![0, 0, 7], 7),
        ];
        m.add(("g", "all_to_allv"), &[6, 4, 5], 3, Some(4), &parts);
        // An even all-to-all of the same group, 9 elements a rank.
        let even = [(4, vec![], 9), (5, vec![], 9), (6, vec![], 9)];
        m.add(("g", "all_to_allv"), &[6, 4, 5], 3, Some(4), &even);
        // Unknown dtype and a group with a rank missing: counted, not summed.
        m.add(("g", "all_to_allv"), &[], 3, Some(4), &even[..2]);
        m.add(("g", "all_to_allv"), &[6, 4, 5], 3, None, &even);
        let all = m.finish();
        let a = &all[0];
        assert_eq!(a.ranks, [4, 5, 6]);
        assert_eq!(
            (a.instances, a.unplaced_instances, a.recorded_splits),
            (2, 2, true)
        );
        // Row 4 sends 1 to 6, 2 to 4, 3 to 5 (then 3 each): bytes [2+3, 3+3, 1+3] × 4.
        assert_eq!(a.bytes[0], [20, 24, 16]);
        assert_eq!(a.bytes[1], [12, 12, 52]);
        assert_eq!(a.bytes[2], [12, 40, 12]);
        assert_eq!(a.send_bytes, [60, 76, 64]);
        assert_eq!(a.recv_bytes, [44, 76, 80]);
        let mean = (44 + 76 + 80) as f64 / 3.0;
        assert!((a.recv_imbalance.unwrap() - 80.0 / mean).abs() < 1e-12);
    }
}
