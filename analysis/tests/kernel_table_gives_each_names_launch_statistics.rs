//! In the default mode the kernel table gives each name's statistics over its launches
//! (count, total, mean, min, p50, p99, max, std), every name, none folded; HTA's
//! regrouped table (sum = max = min for a kept name, std 0) stays in compat mode.

mod support {
    pub mod traces;
}

use analysis::analyses::kernel_breakdown::kernel_breakdown;
use analysis::{load_paths, Frames, HtaVersion, LoadOptions, Mode};
use support::traces::traces_dir;

#[test]
fn kernel_table_gives_each_names_launch_statistics() {
    let traces = load_paths(
        &[traces_dir().join("hta/nccl_data.json.gz")],
        &LoadOptions::default(),
    )
    .unwrap();
    let trace = &traces.ranks[0];
    let frames = Frames::build_for(&traces, Mode::Default, HtaVersion::V0_6, true);
    let table = kernel_breakdown(&frames, 5, 0.8);
    assert!(
        table.kernels.iter().all(|k| &*k.name != "others"),
        "nothing folded"
    );
    let frame = &frames.ranks[0];
    let mut checked = 0;
    for k in &table.kernels {
        let mut durations: Vec<i64> = frame
            .device_rows()
            .filter(|r| frame.name(r) == &*k.name && r.kernel_type == k.kernel_type)
            .map(|r| r.dur_ticks())
            .collect();
        durations.sort_unstable();
        assert_eq!(k.count, durations.len() as u64, "{}", k.name);
        let us = |ns: i64| ns as f64 / 1000.0;
        assert_eq!(k.min_us, us(durations[0]), "{}", k.name);
        assert_eq!(k.max_us, us(*durations.last().unwrap()), "{}", k.name);
        let total: i64 = durations.iter().sum();
        assert!((k.sum_us - us(total)).abs() < 1e-6, "{}", k.name);
        let p50 = k.p50_us.expect("p50 in the default mode");
        let p99 = k.p99_us.expect("p99 in the default mode");
        assert!(k.min_us <= p50 && p50 <= p99 && p99 <= k.max_us, "{k:?}");
        if durations.len() > 1 && durations[0] != *durations.last().unwrap() {
            assert!(k.stddev_us > 0.0 && k.min_us < k.max_us, "{k:?}");
            checked += 1;
        }
    }
    assert!(checked >= 5, "names with varying durations: {checked}");
    assert!(trace.rows.len() > 1000);

    // Compat mode: HTA's table; where it folded names into `others` (more than 5 of a
    // type), the kept names show sum = max = min and std 0.
    let compat = Frames::build_for(&traces, Mode::HtaCompat, HtaVersion::V0_6, true);
    let hta = kernel_breakdown(&compat, 5, 0.8);
    let folded_types: Vec<_> = hta
        .kernels
        .iter()
        .filter(|k| &*k.name == "others")
        .map(|k| k.kernel_type)
        .collect();
    let kept: Vec<_> = hta
        .kernels
        .iter()
        .filter(|k| &*k.name != "others" && folded_types.contains(&k.kernel_type))
        .collect();
    assert!(!kept.is_empty());
    for k in kept {
        assert_eq!((k.sum_us, k.stddev_us), (k.max_us, 0.0), "{k:?}");
        assert_eq!((k.p50_us, k.p99_us), (None, None));
    }
}
