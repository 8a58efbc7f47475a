//! HTA parity checks shared by the tests against HTA's printed references
//! (`analyses_match_hta_reference_outputs.rs`) and against HTA run here
//! (`analyses_match_hta_run_here.rs`): each parses one section of what HTA printed and
//! compares our HTA-compat result with it, value by value at the printed precision.
//! Where HTA raised (`ERROR: …`) or found nothing (`Empty DataFrame`), ours must give
//! no result either.

use analysis::analyses::idle_time::idle_time_breakdown;
use analysis::analyses::kernel_breakdown::kernel_breakdown;
use analysis::analyses::launch_stats::launch_stats;
use analysis::analyses::memory_bw::memory_bw_summary;
use analysis::analyses::overlap::comm_comp_overlap;
use analysis::analyses::queue_length::queue_length_summary;
use analysis::analyses::stragglers::potential_stragglers;
use analysis::analyses::temporal::temporal_breakdown;
use analysis::stats::{Describe, NumpySort};
use analysis::{Frames, HtaVersion, Mode, TraceSet};

use super::reference::{all_numeric, assert_printed, name_matches, split_name_row, Reference};

/// A reference output and the traces it was printed on.
pub struct Case {
    /// What HTA printed.
    pub reference: Reference,
    /// The traces, read by us.
    pub traces: TraceSet,
    /// Which HTA release printed it (its kernel-name rules).
    pub version: HtaVersion,
    /// The argsort kernel of the numpy under that HTA (its order of equal timestamps).
    pub sort: NumpySort,
}

impl Case {
    /// Our frames under HTA's preprocessing for this case's HTA release.
    pub fn frames(&self) -> Frames<'_> {
        Frames::build_for(&self.traces, Mode::HtaCompat, self.version, true)
            .with_numpy_sort(self.sort)
    }
}

/// The `ERROR: …` line HTA's call raised with, if it did.
pub fn hta_error(section: &[String]) -> Option<&str> {
    section.iter().find_map(|l| l.strip_prefix("ERROR: "))
}

pub fn data_rows(lines: &[String]) -> Vec<Vec<&str>> {
    lines
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|t| all_numeric(t))
        .collect()
}

/// The header line `rank R: rows=… gpu_rows(stream!=-1)=N`: device rows after HTA's
/// preprocessing (filter included).
pub fn check_device_rows(case: &Case) {
    let frames = case.frames();
    let header = case.reference.section("header");
    for frame in &frames.ranks {
        let prefix = format!("rank {}: ", frame.rank());
        let line = header
            .iter()
            .find(|l| l.starts_with(&prefix))
            .expect("rank line");
        let printed = line.rsplit('=').next().unwrap();
        assert_eq!(
            frame.device_rows().count().to_string(),
            printed,
            "{} rank {}",
            case.reference.file,
            frame.rank()
        );
    }
}

/// The header line `ranks [...] device_type D iterations [np.int16(551)]`.
pub fn check_header(case: &Case) {
    let frames = case.frames();
    let line = &case.reference.section("header")[0];
    let ranks: Vec<i64> = frames.ranks.iter().map(|f| f.rank()).collect();
    let expected = if line.contains("device_type") {
        format!(
            "ranks {ranks:?} device_type {} iterations [",
            frames.device_type
        )
    } else {
        format!("ranks {ranks:?} iterations [")
    };
    assert!(
        line.starts_with(&expected),
        "{}: {line} vs {expected}",
        case.reference.file
    );
    let printed: Vec<i64> = line
        .split("iterations [")
        .nth(1)
        .unwrap()
        .split(')')
        .filter_map(|part| part.rsplit('(').next()?.parse::<f64>().ok())
        .map(|f| f as i64)
        .collect();
    assert_eq!(
        frames.ranks[0].iterations(),
        printed,
        "{}: {line}",
        case.reference.file
    );
}

pub fn check_temporal(case: &Case) {
    let frames = case.frames();
    let section = case.reference.section("temporal_breakdown");
    if let Some(error) = hta_error(section) {
        let ours = temporal_breakdown(&frames);
        assert!(
            ours.is_err(),
            "{}: HTA raised ({error}), we returned {ours:?}",
            case.reference.file
        );
        return;
    }
    let ours = temporal_breakdown(&frames).expect("temporal breakdown");
    let rows = data_rows(section);
    assert_eq!(
        rows.len(),
        ours.ranks.len(),
        "{}: ranks",
        case.reference.file
    );
    for (printed, r) in rows.iter().zip(&ours.ranks) {
        let values = [
            r.rank as f64,
            r.idle_time_us,
            r.compute_time_us,
            r.non_compute_time_us,
            r.kernel_time_us,
            r.idle_time_pctg,
            r.compute_time_pctg,
            r.non_compute_time_pctg,
        ];
        for (i, v) in values.iter().enumerate() {
            assert_printed(
                Some(*v),
                printed[i + 1],
                &format!("{} temporal rank {} col {i}", case.reference.file, r.rank),
            );
        }
    }
}

pub fn check_overlap(case: &Case) {
    let frames = case.frames();
    let ours = comm_comp_overlap(&frames);
    let rows = data_rows(case.reference.section("comm_comp_overlap"));
    assert_eq!(rows.len(), ours.ranks.len());
    for (printed, r) in rows.iter().zip(&ours.ranks) {
        assert_printed(Some(r.rank as f64), printed[1], "overlap rank");
        assert_printed(
            r.comp_comm_overlap_pctg,
            printed[2],
            &format!("{} overlap rank {}", case.reference.file, r.rank),
        );
    }
}

pub fn check_kernel_breakdown(case: &Case) {
    let frames = case.frames();
    let ours = kernel_breakdown(&frames, 5, 0.8);
    let lines = case.reference.section("gpu_kernel_breakdown");
    if lines.iter().any(|l| l.starts_with("Empty DataFrame")) {
        assert!(
            ours.by_type.is_empty() && ours.kernels.is_empty(),
            "{}: HTA found no kernels, we have {ours:?}",
            case.reference.file
        );
        return;
    }
    let split = lines
        .iter()
        .position(|l| l.contains("sum (us)"))
        .expect("per-kernel table header");
    let types: Vec<_> = lines[1..split]
        .iter()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(
        types.len(),
        ours.by_type.len(),
        "{}: kernel type labels",
        case.reference.file
    );
    for (line, ours) in types.iter().zip(&ours.by_type) {
        let (label, tail) = split_name_row(line, 2);
        assert_eq!(
            label, ours.kernel_type,
            "{}: label order",
            case.reference.file
        );
        assert_printed(
            Some(ours.sum_us),
            &tail[0],
            &format!("{} sum of {label}", case.reference.file),
        );
        assert_printed(
            Some(ours.percentage),
            &tail[1],
            &format!("{} % of {label}", case.reference.file),
        );
    }
    let kernels: Vec<_> = lines[split + 1..]
        .iter()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(
        kernels.len(),
        ours.kernels.len(),
        "{}: kernel table rows",
        case.reference.file
    );
    for (line, k) in kernels.iter().zip(&ours.kernels) {
        let (name, tail) = split_name_row(line, 7);
        let what = format!("{} kernel {name} rank {}", case.reference.file, k.rank);
        assert!(name_matches(&k.name, &name), "{what}: we have {}", k.name);
        assert_eq!(tail[5], k.kernel_type.as_str(), "{what}: type");
        assert_printed(Some(k.rank as f64), &tail[6], &what);
        for (i, v) in [k.sum_us, k.max_us, k.min_us, k.stddev_us, k.mean_us]
            .iter()
            .enumerate()
        {
            assert_printed(Some(*v), &tail[i], &format!("{what} col {i}"));
        }
    }
}

pub fn assert_describe(d: &Describe, printed: &[&str], what: &str) {
    assert_eq!(printed.len(), 8, "{what}: printed describe columns");
    for (i, (v, p)) in d.values().iter().zip(printed).enumerate() {
        assert_printed(*v, p, &format!("{what} stat {i}"));
    }
}

pub fn check_idle_time(case: &Case) {
    let frames = case.frames();
    let frame = &frames.ranks[0];
    let ours = idle_time_breakdown(frame, 30);
    let section = case
        .reference
        .section(&format!("idle_time_breakdown rank{}", frame.rank()));
    if let Some(error) = hta_error(section) {
        assert!(
            ours.entries.is_empty(),
            "{}: HTA raised ({error}), we have {ours:?}",
            case.reference.file
        );
        return;
    }
    let split = section
        .iter()
        .position(|l| l.contains("count"))
        .expect("stats header");
    let breakdown: Vec<Vec<&str>> = section[..split]
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|t| t.len() == 6 && t[0].parse::<i64>().is_ok())
        .collect();
    assert_eq!(
        breakdown.len(),
        ours.entries.len(),
        "{}: idle entries",
        case.reference.file
    );
    for (p, e) in breakdown.iter().zip(&ours.entries) {
        let what = format!(
            "{} idle stream {} {}",
            case.reference.file,
            e.stream,
            e.idle_category.as_str()
        );
        assert_eq!(p[2], e.stream.to_string(), "{what}: stream order");
        assert_eq!(p[3], e.idle_category.as_str(), "{what}: category");
        assert_printed(Some(e.idle_time_us), p[4], &what);
        assert_printed(e.idle_time_ratio, p[5], &format!("{what} ratio"));
    }
    let stats: Vec<Vec<&str>> = section[split + 1..]
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|t| t.len() == 11)
        .collect();
    assert_eq!(
        stats.len(),
        ours.entries.len(),
        "{}: idle stats rows",
        case.reference.file
    );
    for (p, e) in stats.iter().zip(&ours.entries) {
        let what = format!(
            "{} idle stats stream {} {}",
            case.reference.file,
            e.stream,
            e.idle_category.as_str()
        );
        assert_eq!(p[0], e.idle_category.as_str(), "{what}");
        assert_eq!(p[2], e.stream.to_string(), "{what}");
        assert_describe(&e.interval_stats, &p[3..], &what);
    }
}

pub fn check_queue_length(case: &Case) {
    let frames = case.frames();
    let mut ours = Vec::new();
    for frame in &frames.ranks {
        ours.extend(queue_length_summary(frame));
    }
    let rows: Vec<Vec<&str>> = data_rows(case.reference.section("queue_length_summary"))
        .into_iter()
        .filter(|t| t.len() >= 9)
        .collect();
    assert_eq!(
        rows.len(),
        ours.len(),
        "{}: queue length rows",
        case.reference.file
    );
    let mut rank = -1;
    for (p, q) in rows.iter().zip(&ours) {
        let (stream, values) = if p.len() == 10 {
            rank = p[0].parse().unwrap();
            (p[1], &p[2..])
        } else {
            (p[0], &p[1..])
        };
        let what = format!("{} queue rank {rank} stream {stream}", case.reference.file);
        assert_eq!(
            (rank, stream.to_string()),
            (q.rank, q.stream.to_string()),
            "{what}"
        );
        assert_describe(&q.queue_length, values, &what);
    }
}

pub fn check_memory_bw(case: &Case) {
    let frames = case.frames();
    let mut ours = Vec::new();
    for frame in &frames.ranks {
        ours.extend(memory_bw_summary(frame));
    }
    let section = case.reference.section("memory_bw_summary");
    if section.iter().any(|l| l.starts_with("Empty DataFrame")) {
        assert!(
            ours.is_empty(),
            "{}: HTA found no memory bandwidth, we have {ours:?}",
            case.reference.file
        );
        return;
    }
    let rows: Vec<Vec<&str>> = section
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|t| {
            t.len() >= 9
                && all_numeric(&t[t.len() - 8..])
                && (t[0].starts_with("Mem") || t[1].starts_with("Mem"))
        })
        .collect();
    assert_eq!(
        rows.len(),
        ours.len(),
        "{}: memory bw rows",
        case.reference.file
    );
    let mut rank = -1;
    for (p, m) in rows.iter().zip(&ours) {
        let values = &p[p.len() - 8..];
        let mut head = &p[..p.len() - 8];
        if head[0].parse::<i64>().is_ok() {
            rank = head[0].parse().unwrap();
            head = &head[1..];
        }
        let name = head.join(" ");
        let what = format!("{} memory bw rank {rank} {name}", case.reference.file);
        assert_eq!((rank, name.as_str()), (m.rank, m.name.as_str()), "{what}");
        assert_describe(&m.memory_bw_gbps, values, &what);
    }
}

pub fn check_launch_stats(case: &Case) {
    let frames = case.frames();
    let section = case.reference.section("cuda_kernel_launch_stats");
    for frame in &frames.ranks {
        let ours = launch_stats(frame, 50.0, 100.0);
        let start = section
            .iter()
            .position(|l| l.trim() == format!("-- rank {}", frame.rank()))
            .expect("rank block");
        let block: Vec<&String> = section[start + 1..]
            .iter()
            .take_while(|l| !l.starts_with("--"))
            .collect();
        let what = format!("{} launch stats rank {}", case.reference.file, frame.rank());
        if block.iter().any(|l| l.starts_with("Empty DataFrame")) {
            assert_eq!(ours.cpu_duration.count, 0, "{what}: HTA found no pairs");
            continue;
        }
        let stat_names = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"];
        for (i, stat) in stat_names.iter().enumerate() {
            let line = block
                .iter()
                .find(|l| l.split_whitespace().next() == Some(stat))
                .unwrap_or_else(|| panic!("{what}: no {stat} line"));
            let p: Vec<&str> = line.split_whitespace().collect();
            for (j, d) in [
                &ours.correlation,
                &ours.cpu_duration,
                &ours.gpu_duration,
                &ours.launch_delay,
            ]
            .iter()
            .enumerate()
            {
                assert_printed(d.values()[i], p[j + 1], &format!("{what} {stat} col {j}"));
            }
        }
    }
}

pub fn check_stragglers(case: &Case) {
    let frames = case.frames();
    let printed = case.reference.section("potential_stragglers").join("\n");
    let ours = potential_stragglers(&frames, 2);
    if printed.contains("ERROR") {
        assert!(
            ours.is_err(),
            "{}: HTA raised ({printed}), we returned {ours:?}",
            case.reference.file
        );
    } else {
        let ours = ours.expect("stragglers");
        assert_eq!(
            format!("{:?}", ours.stragglers),
            printed.trim(),
            "{}",
            case.reference.file
        );
    }
}
