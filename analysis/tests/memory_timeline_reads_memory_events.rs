//! The memory timeline of `hta/memory_events.json.gz` (28,010 `[memory]` events): the
//! expected numbers were computed independently with a short Python replay of the JSON
//! (first maximum of `Total Allocated` / `Total Reserved`, allocations replayed by `Addr`).

mod support {
    pub mod traces;
}

use analysis::analyses::memory::memory_timeline;
use analysis::{load_paths, LoadOptions};
use support::traces::traces_dir;

#[test]
fn memory_events_trace_peaks_and_never_freed() {
    let dir = traces_dir();
    let traces = load_paths(
        &[dir.join("hta/memory_events.json.gz")],
        &LoadOptions::default(),
    )
    .unwrap();
    let timeline = memory_timeline(&traces.ranks[0]);
    let devices: Vec<&str> = timeline.devices.iter().map(|d| d.device.as_str()).collect();
    assert_eq!(devices, ["cpu", "cuda:1"]);
    let cuda = &timeline.devices[1];
    assert_eq!(
        (cuda.events, cuda.allocations, cuda.frees),
        (26_770, 13_385, 13_385)
    );
    assert_eq!(
        (cuda.peak_allocated_bytes, cuda.peak_allocated_at_us),
        (6_629_508_096, 194_461.0)
    );
    assert_eq!(
        (cuda.peak_reserved_bytes, cuda.peak_reserved_at_us),
        (12_782_141_440, 79_631.0)
    );
    assert_eq!(
        cuda.fragmentation_at_peak_bytes,
        12_782_141_440 - 6_629_508_096
    );
    assert_eq!(
        (cuda.never_freed.count, cuda.never_freed.bytes),
        (316, 1_329_586_176)
    );
    assert_eq!(cuda.frees_of_unknown_allocations, 1_580);
    assert!(
        cuda.peak_allocated_step.is_some(),
        "the peak falls inside a ProfilerStep"
    );
    assert!(!cuda.leaks_by_step.is_empty());
    let cpu = &timeline.devices[0];
    assert_eq!(
        (cpu.events, cpu.peak_allocated_bytes, cpu.never_freed.count),
        (1_240, 8, 0)
    );
}
