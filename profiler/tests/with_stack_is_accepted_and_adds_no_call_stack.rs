//! `with_stack(true)` is accepted, noted in the metadata, and adds no `Call stack`
//! (there are no Python frames; see the crate docs' "Choices").

mod common;

use neuron_backend::{DType, Runtime};
use profiler::Profiler;

#[test]
fn with_stack_is_accepted_and_adds_no_call_stack() {
    let _serial = common::serial();
    let runtime = Runtime::trn2();
    let device = runtime.device(0).unwrap();
    let x = device.ones(&[8, 8], DType::F32).unwrap();
    let prof = Profiler::builder()
        .device(common::device_info(&device))
        .record_shapes(true)
        .with_stack(true)
        .start();
    assert!(prof.config().with_stack);
    {
        let _range = profiler::record_function("forward");
        let y = x.matmul(&x).unwrap();
        device.synchronize();
        drop(y);
    }
    let result = prof.stop().unwrap().expect("recorded from start to stop");
    let path = common::temp_dir("with-stack").join("trace.json");
    result.export_chrome_trace(&path).unwrap();
    let trace = common::read_back(&path);
    assert_eq!(trace.meta.get("with_stack").map(|v| v.as_str()), Some("1"));
    let ops = trace
        .events
        .iter()
        .filter(|e| e.category.as_ref().is_some_and(|c| c.as_str() == "cpu_op"))
        .count();
    assert!(ops > 0, "the matmul was recorded");
    assert!(
        trace.events.iter().all(|e| e.arg("Call stack").is_none()),
        "no event carries a call stack"
    );
}
