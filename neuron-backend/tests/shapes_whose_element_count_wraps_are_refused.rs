//! Shapes whose dimensions multiply past 64 bits are refused with an error naming the
//! op and the shape, for every way a shape comes in: a host tensor, a device tensor, a
//! view, and the output of a matmul, a linear layer or a broadcast. Before, a release
//! build wrapped the product (2³² × 2³² is 0): an empty `[2³², 0] · [0, 2³²]` matmul
//! passed the size check that guards its `unsafe` sgemm with a 0-element output buffer
//! for 2⁶⁴ results, and a debug build panicked on the overflow.

use neuron_backend::{BackendError, DType, Runtime, Tensor};

const HUGE: usize = 1 << 32;

fn assert_refused(result: Result<Tensor, BackendError>, op: &str, shape: &str) {
    let err = result.expect_err("a shape past 64 bits is refused");
    assert!(
        matches!(&err, BackendError::ShapeMismatch { op: o, .. } if *o == op),
        "{op}: {err}"
    );
    let text = err.to_string();
    assert!(text.contains(shape) && text.contains("64 bits"), "{text}");
}

#[test]
fn a_host_tensor_whose_element_count_wraps_is_refused() {
    assert_refused(
        Tensor::from_f32(&[HUGE, HUGE], vec![]),
        "from_f32",
        "[4294967296, 4294967296]",
    );
    assert_refused(
        Tensor::from_i64(&[HUGE, HUGE, 0], vec![]),
        "from_i64",
        "[4294967296, 4294967296, 0]",
    );
}

#[test]
fn device_tensors_and_views_whose_element_count_wraps_are_refused() {
    let device = Runtime::trn2().device(0).unwrap();
    assert_refused(
        device.zeros(&[HUGE, HUGE], DType::F32),
        "aten::fill_",
        "[4294967296, 4294967296]",
    );
    assert_refused(
        device.randn(&[HUGE, HUGE, 2], DType::F32, 7),
        "aten::randn",
        "[4294967296, 4294967296, 2]",
    );
    // An empty tensor viewed as 2³² × 2³²: the wrapped product equalled its 0 elements.
    let empty = device.zeros(&[0], DType::F32).unwrap();
    let err = empty
        .reshape(&[HUGE as isize, HUGE as isize])
        .expect_err("the view is refused");
    assert!(err.to_string().contains("aten::view"), "{err}");
    // Still usable.
    assert_eq!(
        device
            .zeros(&[2, 3], DType::F32)
            .unwrap()
            .reshape(&[6])
            .unwrap()
            .shape(),
        &[6]
    );
}

#[test]
fn ops_whose_output_count_wraps_are_refused_before_a_kernel_runs() {
    let device = Runtime::trn2().device(0).unwrap();
    let tall = device.zeros(&[HUGE, 0], DType::F32).unwrap();
    let wide = device.zeros(&[0, HUGE], DType::F32).unwrap();
    assert_refused(
        tall.matmul(&wide),
        "aten::matmul",
        "[4294967296, 4294967296]",
    );
    // x [2³², 0] · w [2³², 0]ᵀ: also 2³² × 2³² outputs from empty operands.
    assert_refused(
        tall.linear(&tall, None),
        "aten::linear",
        "[4294967296, 4294967296]",
    );
    let column = device.zeros(&[HUGE, 1, 0], DType::F32).unwrap();
    let row = device.zeros(&[1, HUGE, 0], DType::F32).unwrap();
    assert_refused(column.add(&row), "aten::add", "[4294967296, 4294967296, 0]");
    // Shapes that fit are still served.
    let a = device.ones(&[3, 4], DType::F32).unwrap();
    let b = device.ones(&[4, 5], DType::F32).unwrap();
    assert_eq!(a.matmul(&b).unwrap().shape(), &[3, 5]);
}
