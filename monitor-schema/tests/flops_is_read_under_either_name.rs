//! A NeuronCore's flops counter is read from `flops` (AWS's documentation) or
//! `effective_flops` (what neuron-monitor writes), `flops` first when a report has both,
//! and written back as `flops`.

use monitor_schema::CoreCounters;

fn read(json: &str) -> CoreCounters {
    serde_json::from_str(json).unwrap()
}

#[test]
fn flops_is_read_under_either_name() {
    let documented = read(r#"{"neuroncore_utilization": 42.5, "flops": 1.5e14}"#);
    let deployed = read(r#"{"neuroncore_utilization": 42.5, "effective_flops": 1.5e14}"#);
    assert_eq!(documented.flops, Some(1.5e14));
    assert_eq!(deployed, documented, "nothing left over in extra");
    let both = read(r#"{"flops": 2.0, "effective_flops": 1.0}"#);
    assert_eq!(both.flops, Some(2.0));
    assert!(both.extra.is_empty());
    assert_eq!(read("{}").flops, None);
    // Other keys (physical cores at LNC=2) are kept beside it.
    let lnc2 = read(
        r#"{"neuroncore_utilization": 40.0, "effective_flops": 3.0,
            "v3d": {"nc_v3.0": {"neuroncore_utilization": 20.0}}}"#,
    );
    assert_eq!(lnc2.flops, Some(3.0));
    assert_eq!(lnc2.physical_cores(), vec![("v3d", "nc_v3.0", 20.0)]);
    let written = serde_json::to_value(&deployed).unwrap();
    assert_eq!(
        written,
        serde_json::json!({"neuroncore_utilization": 42.5, "flops": 1.5e14})
    );
}
