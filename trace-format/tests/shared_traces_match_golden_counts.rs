//! Golden test on the shared real traces: event counts per phase and per normalised
//! category, `[memory]` events, rank/world size, devices, time base and time span.
//! Expected values were computed independently with Python's `json` module (exact
//! decimals), not with this crate.

#[path = "support/shared.rs"]
mod shared;

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use trace_format::{CountingSink, Event, TraceMeta, TraceReader, TraceSink};

struct Golden {
    path: &'static str,
    events: u64,
    by_phase: &'static [(&'static str, u64)],
    by_category: &'static [(&'static str, u64)],
    memory_events: u64,
    rank: Option<i64>,
    world_size: Option<i64>,
    devices: usize,
    base_time_ns: Option<i64>,
    first_ts_ns: i64,
    last_end_ns: i64,
}

const GOLDEN: &[Golden] = &[
    Golden {
        path: "hta/amd_mi250_train.json.gz",
        events: 220,
        by_phase: &[("M", 60), ("X", 113), ("f", 25), ("i", 2), ("s", 20)],
        by_category: &[
            ("", 62),
            ("Trace", 1),
            ("ac2g", 37),
            ("cpu_op", 70),
            ("cuda_runtime", 21),
            ("fwdbwd", 8),
            ("gpu_memcpy", 2),
            ("gpu_user_annotation", 2),
            ("kernel", 14),
            ("user_annotation", 3),
        ],
        memory_events: 0,
        rank: None,
        world_size: None,
        devices: 4,
        base_time_ns: Some(1735632360000000000),
        first_ts_ns: 1739836029603018756,
        last_end_ns: 1739836029613175703,
    },
    Golden {
        path: "hta/compare_base.json.gz",
        events: 33,
        by_phase: &[("X", 33)],
        by_category: &[
            ("cpu_op", 6),
            ("cuda_runtime", 5),
            ("gpu_memcpy", 6),
            ("gpu_memset", 6),
            ("kernel", 6),
            ("user_annotation", 4),
        ],
        memory_events: 0,
        rank: Some(1),
        world_size: None,
        devices: 0,
        base_time_ns: None,
        first_ts_ns: 1661938466265032000,
        last_end_ns: 1661938467010373000,
    },
    Golden {
        path: "hta/compare_test.json.gz",
        events: 34,
        by_phase: &[("X", 34)],
        by_category: &[
            ("cpu_op", 9),
            ("cuda_runtime", 5),
            ("gpu_memcpy", 6),
            ("gpu_memset", 6),
            ("kernel", 5),
            ("user_annotation", 3),
        ],
        memory_events: 0,
        rank: Some(1),
        world_size: None,
        devices: 0,
        base_time_ns: None,
        first_ts_ns: 1661938466265032000,
        last_end_ns: 1661938467010373000,
    },
    Golden {
        path: "hta/cpu_only_rank34.json.gz",
        events: 30,
        by_phase: &[("M", 12), ("X", 16), ("i", 2)],
        by_category: &[
            ("", 14),
            ("Trace", 1),
            ("cpu_op", 4),
            ("user_annotation", 11),
        ],
        memory_events: 0,
        rank: Some(34),
        world_size: Some(300),
        devices: 0,
        base_time_ns: Some(1719853884000000000),
        first_ts_ns: 1721065959525586016,
        last_end_ns: 1721065960832503044,
    },
    Golden {
        path: "hta/memory_events.json.gz",
        events: 216092,
        by_phase: &[
            ("M", 38),
            ("X", 123379),
            ("f", 42373),
            ("i", 28012),
            ("s", 22290),
        ],
        by_category: &[
            ("", 40),
            ("Trace", 1),
            ("ac2g", 64663),
            ("cpu_instant_event", 28010),
            ("cpu_op", 56680),
            ("cuda_runtime", 42373),
            ("gpu_memcpy", 2040),
            ("gpu_memset", 880),
            ("kernel", 19370),
            ("user_annotation", 2035),
        ],
        memory_events: 28010,
        rank: Some(1),
        world_size: Some(2),
        devices: 2,
        base_time_ns: None,
        first_ts_ns: 1669783687352244000,
        last_end_ns: 1669783689181563000,
    },
    Golden {
        path: "hta/mtia_inference_rank_0.json.gz",
        events: 16158,
        by_phase: &[("M", 176), ("X", 14179), ("f", 1166), ("i", 2), ("s", 635)],
        by_category: &[
            ("", 178),
            ("Trace", 1),
            ("ac2g", 1801),
            ("cpu_op", 10346),
            ("mtia_ccp_events", 1313),
            ("mtia_runtime", 823),
            ("user_annotation", 1696),
        ],
        memory_events: 0,
        rank: None,
        world_size: None,
        devices: 1,
        base_time_ns: Some(1767189312000000000),
        first_ts_ns: 1767189312000000000,
        last_end_ns: 1767891117534038956,
    },
    Golden {
        path: "hta/nccl_data.json.gz",
        events: 40573,
        by_phase: &[("M", 38), ("X", 26933), ("f", 9195), ("i", 2), ("s", 4405)],
        by_category: &[
            ("", 40),
            ("Trace", 1),
            ("ac2g", 12514),
            ("cpu_op", 14346),
            ("cuda_runtime", 8740),
            ("fwdbwd", 1086),
            ("gpu_memcpy", 960),
            ("gpu_memset", 114),
            ("gpu_user_annotation", 30),
            ("kernel", 2700),
            ("user_annotation", 42),
        ],
        memory_events: 0,
        rank: Some(0),
        world_size: Some(2),
        devices: 8,
        base_time_ns: Some(1711964646000000000),
        first_ts_ns: 1716423322388068751,
        last_end_ns: 1716423323117099727,
    },
    Golden {
        path: "hta/simple_add.json.gz",
        events: 1348,
        by_phase: &[("M", 38), ("X", 838), ("f", 315), ("i", 2), ("s", 155)],
        by_category: &[
            ("", 40),
            ("Trace", 1),
            ("ac2g", 470),
            ("cpu_op", 359),
            ("cuda_runtime", 331),
            ("cuda_sync", 41),
            ("gpu_memcpy", 16),
            ("gpu_memset", 3),
            ("kernel", 79),
            ("user_annotation", 8),
        ],
        memory_events: 0,
        rank: Some(0),
        world_size: None,
        devices: 8,
        base_time_ns: None,
        first_ts_ns: 1694039968933321000,
        last_end_ns: 1694040010536061000,
    },
    Golden {
        path: "hta/triton_example.json.gz",
        events: 71,
        by_phase: &[("M", 58), ("X", 8), ("f", 1), ("i", 2), ("s", 2)],
        by_category: &[
            ("", 60),
            ("Trace", 1),
            ("ac2g", 3),
            ("cpu_op", 3),
            ("cuda_driver", 1),
            ("cuda_runtime", 1),
            ("kernel", 1),
            ("user_annotation", 1),
        ],
        memory_events: 0,
        rank: None,
        world_size: None,
        devices: 8,
        base_time_ns: Some(1727743122000000000),
        first_ts_ns: 1730156790742269099,
        last_end_ns: 1730156804432405905,
    },
    Golden {
        path: "hta/two_rank-rank0.json.gz",
        events: 4855,
        by_phase: &[("M", 44), ("X", 4811)],
        by_category: &[
            ("", 44),
            ("Trace", 1),
            ("cpu_op", 2329),
            ("cuda_runtime", 1204),
            ("gpu_memcpy", 40),
            ("gpu_memset", 10),
            ("kernel", 1154),
            ("user_annotation", 73),
        ],
        memory_events: 0,
        rank: Some(0),
        world_size: Some(128),
        devices: 0,
        base_time_ns: None,
        first_ts_ns: 1682725897226747000,
        last_end_ns: 1682725900594091000,
    },
    Golden {
        path: "hta/two_rank-rank1.json.gz",
        events: 4720,
        by_phase: &[("M", 44), ("X", 4676)],
        by_category: &[
            ("", 44),
            ("Trace", 1),
            ("cpu_op", 2302),
            ("cuda_runtime", 1154),
            ("gpu_memcpy", 40),
            ("gpu_memset", 10),
            ("kernel", 1104),
            ("user_annotation", 65),
        ],
        memory_events: 0,
        rank: Some(1),
        world_size: Some(128),
        devices: 0,
        base_time_ns: None,
        first_ts_ns: 1682725897227300000,
        last_end_ns: 1682725900593698000,
    },
    Golden {
        path: "kineto-legacy/resnet50_2021.json.gz",
        events: 75718,
        by_phase: &[
            ("M", 20),
            ("X", 44666),
            ("f", 9096),
            ("i", 12840),
            ("s", 9096),
        ],
        by_category: &[
            ("", 12860),
            ("Trace", 1),
            ("ac2g", 18192),
            ("cpu_op", 23646),
            ("cuda_runtime", 11923),
            ("gpu_memcpy", 12),
            ("gpu_memset", 312),
            ("kernel", 8772),
        ],
        memory_events: 12838,
        rank: None,
        world_size: None,
        devices: 4,
        base_time_ns: None,
        first_ts_ns: 1623142623460016000,
        last_end_ns: 1623142624633484000,
    },
    Golden {
        path: "torch-2.15/gloo_2rank-rank0.pt.trace.json.gz",
        events: 721,
        by_phase: &[("M", 12), ("X", 499), ("f", 21), ("i", 168), ("s", 21)],
        by_category: &[
            ("", 14),
            ("Trace", 1),
            ("cpu_instant_event", 166),
            ("cpu_op", 480),
            ("fwdbwd", 42),
            ("user_annotation", 18),
        ],
        memory_events: 166,
        rank: Some(0),
        world_size: Some(2),
        devices: 0,
        base_time_ns: Some(1790857026000000000),
        first_ts_ns: 1795974316934209043,
        last_end_ns: 1795974317343971972,
    },
    Golden {
        path: "torch-2.15/gloo_2rank-rank1.pt.trace.json.gz",
        events: 721,
        by_phase: &[("M", 12), ("X", 499), ("f", 21), ("i", 168), ("s", 21)],
        by_category: &[
            ("", 14),
            ("Trace", 1),
            ("cpu_instant_event", 166),
            ("cpu_op", 480),
            ("fwdbwd", 42),
            ("user_annotation", 18),
        ],
        memory_events: 166,
        rank: Some(1),
        world_size: Some(2),
        devices: 0,
        base_time_ns: Some(1790857026000000000),
        first_ts_ns: 1795974316926747113,
        last_end_ns: 1795974317351465117,
    },
    Golden {
        path: "torch-2.15/python_privateuse1_neuron.pt.trace.json.gz",
        events: 720,
        by_phase: &[("M", 10), ("X", 696), ("f", 6), ("i", 2), ("s", 6)],
        by_category: &[
            ("", 12),
            ("Trace", 1),
            ("cpu_op", 54),
            ("fwdbwd", 12),
            ("python_function", 638),
            ("user_annotation", 3),
        ],
        memory_events: 0,
        rank: None,
        world_size: None,
        devices: 0,
        base_time_ns: Some(1790857026000000000),
        first_ts_ns: 1795974287916140596,
        last_end_ns: 1795974287924613600,
    },
];

#[derive(Default)]
struct Stats {
    counts: CountingSink,
    memory_events: u64,
    first_ts_ns: Option<i64>,
    last_end_ns: Option<i64>,
    header: TraceMeta,
}

impl TraceSink for Stats {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.header = meta.clone();
        ControlFlow::Continue(())
    }
    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        self.memory_events += u64::from(event.is_memory_event());
        if let Some(ts) = event.ts_ns {
            self.first_ts_ns = Some(self.first_ts_ns.map_or(ts, |f| f.min(ts)));
            let end = event.end_ns().unwrap();
            self.last_end_ns = Some(self.last_end_ns.map_or(end, |l| l.max(end)));
        }
        self.counts.on_event(index, event)
    }
}

fn as_map(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn shared_traces_match_golden_counts() {
    let dir = shared::traces_dir();
    assert_eq!(
        shared::all_traces(&dir).len(),
        GOLDEN.len(),
        "a shared trace has no golden entry"
    );
    for golden in GOLDEN {
        let path = dir.join(golden.path);
        let mut stats = Stats::default();
        let report = TraceReader::open(&path)
            .read(&mut stats)
            .unwrap_or_else(|e| panic!("{e}"));
        let name = golden.path;
        assert!(report.is_clean(), "{name}");
        assert!(report.gzip, "{name}: gzip detected by magic bytes");
        assert_eq!(stats.counts.events, golden.events, "{name}");
        assert_eq!(report.events_delivered, golden.events, "{name}");
        assert_eq!(stats.counts.by_phase(), as_map(golden.by_phase), "{name}");
        assert_eq!(
            stats.counts.by_category(),
            as_map(golden.by_category),
            "{name}"
        );
        assert_eq!(stats.memory_events, golden.memory_events, "{name}");
        assert_eq!(report.meta.rank(), golden.rank, "{name}");
        assert_eq!(report.meta.world_size(), golden.world_size, "{name}");
        assert_eq!(
            report.meta.device_properties().len(),
            golden.devices,
            "{name}"
        );
        assert_eq!(report.meta.base_time_ns(), golden.base_time_ns, "{name}");
        // The header already knows the base when it was before traceEvents or pre-scanned.
        assert_eq!(stats.header.base_time_ns(), golden.base_time_ns, "{name}");
        assert_eq!(stats.first_ts_ns, Some(golden.first_ts_ns), "{name}");
        assert_eq!(stats.last_end_ns, Some(golden.last_end_ns), "{name}");
    }
}
