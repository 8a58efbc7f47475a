//! Every operator record carries its input signature (`Input Dims` and `Input type` as
//! Kineto writes them), for kernel ops, view ops and copies alike.

use neuron_backend::{DType, Runtime, Tensor};
use runtime_hooks::{Event, OperatorPayload, Phase};

#[test]
fn every_operator_record_names_its_input_dims_and_dtypes() {
    runtime_hooks::register_thread();
    let runtime = Runtime::trn2();
    let device = runtime.device(0).unwrap();
    runtime_hooks::set_enabled(true);
    let mut scratch = Vec::new();
    runtime_hooks::drain(&mut scratch);

    let a = Tensor::from_f32_as_bf16(&[2, 3], &[1.0; 6])
        .unwrap()
        .to_device(&device)
        .unwrap();
    let b = device.ones(&[3, 4], DType::BF16).unwrap();
    let c = a.matmul(&b).unwrap();
    let d = c.add_scalar(1.0).unwrap();
    let e = d.reshape(&[4, 2]).unwrap();
    let table = device.randn(&[10, 4], DType::F32, 7).unwrap();
    let idx = Tensor::from_i64(&[3], vec![1, 2, 9])
        .unwrap()
        .to_device(&device)
        .unwrap();
    let rows = table.embedding(&idx).unwrap();
    let _ = rows.to_host().unwrap();
    let _ = e.gelu().unwrap();
    // The same op on the same shapes again: the same interned signature.
    let _ = a.matmul(&b).unwrap();
    runtime_hooks::set_enabled(false);

    let mut records = Vec::new();
    runtime_hooks::drain(&mut records);
    let mut sigs = Vec::new();
    for record in &records {
        if let (Some(Event::Operator(op)), Some(Phase::Begin)) = (record.event(), record.phase()) {
            assert!(!op.input_sig_id.is_none(), "{record:?} has no signature");
            let name = runtime_hooks::resolve(op.name_id).unwrap().to_string();
            let sig = runtime_hooks::resolve(op.input_sig_id).unwrap().to_string();
            let (dims, types) = OperatorPayload::split_input_sig(&sig).unwrap();
            assert!(dims.starts_with('[') && types.ends_with(']'), "{sig}");
            sigs.push((name, sig, op.input_sig_id));
        }
    }
    let expect = [
        ("aten::_to_copy", r#"[[2, 3]]|["c10::BFloat16"]"#),
        ("aten::fill_", r#"[[]]|["Scalar"]"#),
        (
            "aten::matmul",
            r#"[[2, 3], [3, 4]]|["c10::BFloat16", "c10::BFloat16"]"#,
        ),
        (
            "aten::affine_scalar",
            r#"[[2, 4], [], []]|["c10::BFloat16", "Scalar", "Scalar"]"#,
        ),
        ("aten::view", r#"[[2, 4]]|["c10::BFloat16"]"#),
        ("aten::randn", "[]|[]"),
        ("aten::_to_copy", r#"[[3]]|["long int"]"#),
        // aten's argument order (weight, indices, padding_idx, scale_grad_by_freq,
        // sparse), as PyTorch records it, not the gather kernel's (indices first).
        (
            "aten::embedding",
            r#"[[10, 4], [3], [], [], []]|["float", "long int", "Scalar", "Scalar", "Scalar"]"#,
        ),
        ("aten::_to_copy", r#"[[3, 4]]|["float"]"#),
        ("aten::gelu", r#"[[4, 2]]|["c10::BFloat16"]"#),
        (
            "aten::matmul",
            r#"[[2, 3], [3, 4]]|["c10::BFloat16", "c10::BFloat16"]"#,
        ),
    ];
    let got: Vec<(&str, &str)> = sigs.iter().map(|(n, s, _)| (&n[..], &s[..])).collect();
    assert_eq!(got, expect);
    assert_eq!(
        sigs[2].2, sigs[10].2,
        "one interned id per distinct signature"
    );
}
