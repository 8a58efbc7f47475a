//! The 2021 trace's legacy categories (`Operator`, `Runtime`, `Kernel`, `Memcpy`,
//! `Memset`) and flow category (`async`) keep their spelling and normalise to today's.

#[path = "support/shared.rs"]
mod shared;

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use trace_format::{from_fn, Category, TraceReader};

#[test]
fn legacy_categories_keep_spelling_and_normalise() {
    let dir = shared::traces_dir();
    let mut pairs: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut flow_names = BTreeMap::new();
    let mut sink = from_fn(|_, event| {
        if let Some(cat) = &event.category {
            let normalized = cat.normalized().as_str().to_owned();
            *pairs
                .entry((cat.as_str().to_owned(), normalized))
                .or_default() += 1;
        }
        if event.flow_end().is_some() {
            *flow_names.entry(event.name().to_owned()).or_insert(0u64) += 1;
        }
        ControlFlow::Continue(())
    });
    TraceReader::open(dir.join("kineto-legacy/resnet50_2021.json.gz"))
        .read(&mut sink)
        .unwrap();
    let get = |a: &str, b: &str| pairs.get(&(a.to_owned(), b.to_owned())).copied();
    assert_eq!(get("Operator", "cpu_op"), Some(23_646));
    assert_eq!(get("Runtime", "cuda_runtime"), Some(11_923));
    assert_eq!(get("Kernel", "kernel"), Some(8_772));
    assert_eq!(get("Memcpy", "gpu_memcpy"), Some(12));
    assert_eq!(get("Memset", "gpu_memset"), Some(312));
    assert_eq!(get("async", "ac2g"), Some(18_192));
    // The 2021 flows are `{"cat": "async", "name": "launch"}`; today `ac2g` for both.
    assert_eq!(flow_names.get("launch"), Some(&18_192));
    assert!(Category::parse("async_cpu_to_gpu".into()).normalized() == Category::Ac2g);
}
