//! Bad input returns errors that name the op and the offending shapes or values, and
//! the device stays usable afterwards.

use neuron_backend::{BackendError, DType, MemoryCategory, QueueKind, Runtime, Tensor};

#[test]
fn shape_dtype_and_device_mismatches_name_op_and_inputs() {
    let runtime = Runtime::trn2();
    let (d0, d1) = (runtime.device(0).unwrap(), runtime.device(1).unwrap());
    let a = d0.zeros(&[2, 3], DType::F32).unwrap();
    let b = d0.zeros(&[4, 5], DType::F32).unwrap();
    let err = a.matmul(&b).unwrap_err();
    assert!(
        matches!(&err, BackendError::ShapeMismatch { op: "aten::matmul", shapes, .. } if shapes == &vec![vec![2, 3], vec![4, 5]]),
        "{err}"
    );
    assert!(err.to_string().contains("[[2, 3], [4, 5]]"), "{err}");

    let err = a.add(&b).unwrap_err();
    assert!(
        err.to_string().contains("aten::add") && err.to_string().contains("broadcast"),
        "{err}"
    );

    let h = d0.zeros(&[2, 3], DType::BF16).unwrap();
    let err = a.add(&h).unwrap_err();
    assert!(
        matches!(&err, BackendError::DTypeMismatch { op: "aten::add", dtypes, .. } if dtypes == &vec![DType::F32, DType::BF16]),
        "{err}"
    );

    let other = d1.zeros(&[2, 3], DType::F32).unwrap();
    let err = a.add(&other).unwrap_err();
    assert!(
        matches!(&err, BackendError::DeviceMismatch { op: "aten::add", devices } if devices == &vec!["neuron:0".to_string(), "neuron:1".to_string()]),
        "{err}"
    );

    let host = Tensor::from_f32(&[2, 3], vec![0.0; 6]).unwrap();
    let err = a.mul(&host).unwrap_err();
    assert!(err.to_string().contains("cpu"), "{err}");
    assert!(Tensor::from_f32(&[2, 2], vec![1.0]).is_err());
    assert!(matches!(
        runtime.device(9),
        Err(BackendError::NoSuchDevice { index: 9, count: 4 })
    ));
    // Still usable.
    assert_eq!(a.add(&a).unwrap().shape(), &[2, 3]);
}

#[test]
fn use_after_free_and_out_of_range_indices_are_errors() {
    let device = Runtime::trn2().device(0).unwrap();
    let a = device.ones(&[4, 4], DType::F32).unwrap();
    let view = a.reshape(&[16]).unwrap();
    a.release();
    let err = view.relu().unwrap_err();
    assert!(
        matches!(&err, BackendError::UseAfterFree { op: "aten::relu", shape, .. } if shape == &vec![16]),
        "{err}"
    );
    assert_eq!(device.memory_stats().allocated_bytes, 0);

    let table = device.ones(&[10, 4], DType::F32).unwrap();
    let idx = Tensor::from_i64(&[3], vec![1, 10, 2])
        .unwrap()
        .to_device(&device)
        .unwrap();
    let err = table.embedding(&idx).unwrap_err();
    assert!(
        matches!(
            err,
            BackendError::IndexOutOfRange {
                op: "aten::embedding",
                index: 10,
                size: 10,
                ..
            }
        ),
        "{err}"
    );
    let logits = device.zeros(&[2, 3], DType::F32).unwrap();
    let targets = Tensor::from_i64(&[2], vec![0, -1])
        .unwrap()
        .to_device(&device)
        .unwrap();
    let err = logits.cross_entropy(&targets).unwrap_err();
    assert!(
        err.to_string().contains("aten::cross_entropy_loss") && err.to_string().contains("-1"),
        "{err}"
    );
    let err = logits.slice(1, 2, 5).unwrap_err();
    assert!(
        matches!(
            err,
            BackendError::IndexOutOfRange {
                op: "aten::slice",
                size: 3,
                ..
            }
        ),
        "{err}"
    );
    let err = logits.sum(2, false).unwrap_err();
    assert!(
        matches!(
            err,
            BackendError::IndexOutOfRange {
                op: "aten::sum",
                index: 2,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn out_of_memory_names_the_numbers_and_the_device_recovers() {
    let profile =
        neuron_backend::DeviceProfile::from_json(r#"{"hbm_bytes_per_chip": 1073741824}"#).unwrap();
    let runtime = Runtime::new(profile).unwrap();
    runtime.set_numerics(false);
    let device = runtime.device(0).unwrap();
    assert_eq!(device.memory_capacity_bytes(), 256 << 20);
    device.set_category(MemoryCategory::Parameters);
    let weights = device.zeros(&[40 << 20], DType::F32).unwrap();
    device.set_category(MemoryCategory::Activations);
    let err = device.zeros(&[40 << 20], DType::F32).unwrap_err();
    let BackendError::OutOfMemory {
        device: name,
        requested_bytes,
        capacity_bytes,
        largest_categories,
        ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(name, "neuron:0");
    assert_eq!(*requested_bytes, 160 << 20);
    assert_eq!(*capacity_bytes, 256 << 20);
    assert_eq!(largest_categories[0].0, "parameters");
    let stats = device.memory_stats();
    assert_eq!(stats.num_ooms, 1);
    assert_eq!(
        stats.category(MemoryCategory::Parameters).allocated_bytes,
        160 << 20
    );
    drop(weights);
    let again = device.zeros(&[40 << 20], DType::F32).unwrap();
    assert_eq!(
        device
            .memory_stats()
            .category(MemoryCategory::Activations)
            .allocated_bytes,
        160 << 20
    );
    again.set_category(MemoryCategory::Gradients);
    let stats = device.memory_stats();
    assert_eq!(
        stats.category(MemoryCategory::Activations).allocated_bytes,
        0
    );
    assert_eq!(
        stats.category(MemoryCategory::Gradients).allocated_bytes,
        160 << 20
    );
    drop(again);
    assert_eq!(
        device
            .memory_stats()
            .category(MemoryCategory::Gradients)
            .allocated_bytes,
        0
    );
    assert_eq!(device.empty_cache(), 160 << 20);
    assert_eq!(device.memory_stats().reserved_bytes, 0);
}

#[test]
fn released_streams_refuse_work_and_events_order_streams() {
    let device = Runtime::trn2().device(0).unwrap();
    let side = device.stream(QueueKind::TensorOp, 1).unwrap();
    assert_eq!(side.to_string(), "neuron:0/tensor_op1");
    assert!(device.stream(QueueKind::Collective, 3).is_err());
    let a = device.ones(&[256, 256], DType::F32).unwrap();
    let done = device.default_stream().record_event();
    side.wait_event(&done);
    side.make_current();
    let b = a.add(&a).unwrap();
    let span = device.last_kernel().unwrap();
    assert_eq!(span.queue, side.queue());
    assert!(span.start_ns >= done.ready_ns(), "waited for the event");
    side.release();
    assert_eq!(
        device.current_stream().queue(),
        0,
        "default stream current again"
    );
    side.make_current();
    let err = b.add(&b).unwrap_err();
    assert!(
        matches!(&err, BackendError::StreamReleased { op: "aten::add", stream } if stream == "neuron:0/tensor_op1"),
        "{err}"
    );
    device.default_stream().make_current();
    let host_after = device.synchronize();
    assert!(
        host_after >= span.end_ns,
        "synchronize waits for the modeled end"
    );
    assert!(done.query());
    assert_eq!(b.to_vec_f32().unwrap()[0], 2.0);
}

#[test]
fn devices_and_tensors_can_move_between_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<neuron_backend::Device>();
    shareable::<Tensor>();
    shareable::<neuron_backend::Stream>();
    let device = Runtime::trn2().device(0).unwrap();
    let t = device.ones(&[8], DType::F32).unwrap();
    let doubled = std::thread::spawn(move || t.add(&t).unwrap().to_vec_f32().unwrap())
        .join()
        .unwrap();
    assert_eq!(doubled, vec![2.0; 8]);
}
