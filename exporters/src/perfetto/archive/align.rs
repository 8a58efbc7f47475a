//! Clock offsets between hosts, from the ends of the collectives their ranks share.
//!
//! A collective cannot end on any rank before every rank has joined, and its ranks
//! finish together: the last to join waits for nobody and the others leave as the data
//! arrives (`analysis::analyses::collectives`). So where two hosts' clocks disagree, the
//! same collective instance ends at different readings on them, and the difference is
//! the offset between the clocks (plus the few microseconds the ends really differ by).
//! For each host other than the reference: per collective instance matched across
//! ranks (by `analysis`), the median end of the reference host's ranks minus the
//! median end of this host's ranks; the host's offset is the median over instances.

use std::collections::BTreeMap;
use std::path::PathBuf;

use analysis::analyses::collectives::collectives;
use analysis::{Frames, LoadOptions, Mode};

use crate::perfetto::ExportError;

/// The offset measured for one host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostOffset {
    /// Reference host's reading minus this host's reading of one instant, ns (what the
    /// manifest's `offset_ns` says); `None` when no collective joins the two hosts.
    pub offset_ns: Option<i64>,
    /// Collective instances the offset was measured on.
    pub instances: usize,
}

/// The offset of each host in `hosts` (one per file of `files`, in order) other than
/// `reference`, measured on the collectives of the files' ranks.
pub fn host_offsets(
    files: &[PathBuf],
    hosts: &[String],
    reference: &str,
) -> Result<BTreeMap<String, HostOffset>, ExportError> {
    let set = analysis::load_paths(files, &LoadOptions::default())
        .map_err(|e| ExportError::Open(format!("reading the traces to align hosts: {e}")))?;
    let host_of: BTreeMap<i64, &str> = set
        .ranks
        .iter()
        .filter_map(|trace| {
            let index = files.iter().position(|f| *f == trace.path)?;
            Some((trace.rank, hosts[index].as_str()))
        })
        .collect();
    let frames = Frames::build_with(&set, Mode::Default, false);
    let report = collectives(&frames, None);
    let mut samples: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for instance in &report.instances {
        // Ends relative to the instance's first start, ns, per host.
        let mut ends: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
        for part in &instance.ranks {
            if let Some(host) = host_of.get(&part.rank) {
                let end_ns = ((part.arrival_us + part.dur_us) * 1000.0).round() as i64;
                ends.entry(host).or_default().push(end_ns);
            }
        }
        let Some(reference_end) = ends.get(reference).map(|e| median(e.clone())) else {
            continue;
        };
        for (host, host_ends) in &ends {
            if *host != reference {
                samples
                    .entry(host)
                    .or_default()
                    .push(reference_end - median(host_ends.clone()));
            }
        }
    }
    let mut offsets = BTreeMap::new();
    for host in hosts.iter().filter(|h| *h != reference) {
        let measured = samples.remove(host.as_str()).unwrap_or_default();
        let instances = measured.len();
        let offset_ns = (!measured.is_empty()).then(|| median(measured));
        offsets.entry(host.clone()).or_insert(HostOffset {
            offset_ns,
            instances,
        });
    }
    Ok(offsets)
}

/// The median (the lower middle value of an even count). `values` is not empty.
fn median(mut values: Vec<i64>) -> i64 {
    values.sort_unstable();
    values[(values.len() - 1) / 2]
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_takes_the_lower_middle() {
        assert_eq!(median(vec![5]), 5);
        assert_eq!(median(vec![9, 1, 5]), 5);
        assert_eq!(median(vec![4, 1, 9, 7]), 4);
        assert_eq!(
            median(vec![-3, 100_000, -2]),
            -2,
            "one outlier does not move it"
        );
    }
}
