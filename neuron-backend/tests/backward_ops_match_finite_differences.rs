//! Backward ops against central finite differences of an `f64` reference of the forward
//! op (step 1e-6), within 1e-4 absolute.

use neuron_backend::{DType, Device, Runtime, Tensor, UnaryOp};

fn device() -> Device {
    Runtime::trn2().device(0).unwrap()
}

fn put(device: &Device, shape: &[usize], values: &[f64]) -> Tensor {
    let values = values.iter().map(|&v| v as f32).collect();
    Tensor::from_f32(shape, values)
        .unwrap()
        .to_device(device)
        .unwrap()
}

/// Gradient of `sum(g ⊙ f(x))` with respect to `x`, by central differences.
fn numeric_grad(x: &[f64], g: &[f64], f: impl Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
    let h = 1e-6;
    (0..x.len())
        .map(|i| {
            let (mut plus, mut minus) = (x.to_vec(), x.to_vec());
            plus[i] += h;
            minus[i] -= h;
            let (fp, fm) = (f(&plus), f(&minus));
            (0..g.len())
                .map(|j| g[j] * (fp[j] - fm[j]) / (2.0 * h))
                .sum()
        })
        .collect()
}

fn assert_close(got: &Tensor, want: &[f64], what: &str) {
    for (i, (g, w)) in got.to_vec_f32().unwrap().iter().zip(want).enumerate() {
        assert!((f64::from(*g) - w).abs() < 1e-4, "{what}[{i}]: {g} vs {w}");
    }
}

const X: [f64; 8] = [-1.3, -0.4, 0.05, 0.7, 1.9, -2.2, 0.33, 1.1];
const G: [f64; 8] = [0.5, -1.0, 0.25, 2.0, -0.75, 1.5, -0.3, 0.9];

#[test]
fn activation_backward_ops_match() {
    let dev = device();
    let (x, g) = (put(&dev, &[8], &X), put(&dev, &[8], &G));
    for op in [UnaryOp::Gelu, UnaryOp::Silu, UnaryOp::Relu] {
        let want = numeric_grad(&X, &G, |x| x.iter().map(|&v| op.apply(v)).collect());
        assert_close(
            &x.activation_backward(op, &g).unwrap(),
            &want,
            &format!("{op:?}"),
        );
    }
}

fn softmax_rows(x: &[f64], cols: usize, log: bool) -> Vec<f64> {
    x.chunks(cols)
        .flat_map(|row| {
            let sum: f64 = row.iter().map(|v| v.exp()).sum();
            row.iter()
                .map(move |v| if log { v - sum.ln() } else { v.exp() / sum })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn softmax_and_log_softmax_backward_match() {
    let dev = device();
    let (x, g) = (put(&dev, &[2, 4], &X), put(&dev, &[2, 4], &G));
    let y = x.softmax().unwrap();
    let want = numeric_grad(&X, &G, |x| softmax_rows(x, 4, false));
    assert_close(&y.softmax_backward(&g).unwrap(), &want, "softmax");
    let y = x.log_softmax().unwrap();
    let want = numeric_grad(&X, &G, |x| softmax_rows(x, 4, true));
    assert_close(&y.log_softmax_backward(&g).unwrap(), &want, "log_softmax");
}

#[test]
fn norm_backward_ops_match() {
    let dev = device();
    let w = [0.9, -1.2, 0.4, 1.5];
    let b = [0.1, 0.0, -0.3, 0.2];
    let (x, g, tw) = (
        put(&dev, &[2, 4], &X),
        put(&dev, &[2, 4], &G),
        put(&dev, &[4], &w),
    );
    let layer_norm = |x: &[f64], w: &[f64]| -> Vec<f64> {
        x.chunks(4)
            .flat_map(|r| {
                let mean = r.iter().sum::<f64>() / 4.0;
                let var = r.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 4.0;
                (0..4)
                    .map(move |j| (r[j] - mean) / (var + 1e-5).sqrt() * w[j] + b[j])
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let (dx, dw, db) = x.layer_norm_backward(&g, &tw, 1e-5).unwrap();
    assert_close(
        &dx,
        &numeric_grad(&X, &G, |x| layer_norm(x, &w)),
        "layer_norm dx",
    );
    assert_close(
        &dw,
        &numeric_grad(&w, &G, |w| layer_norm(&X, w)),
        "layer_norm dw",
    );
    assert_close(
        &db,
        &[G[0] + G[4], G[1] + G[5], G[2] + G[6], G[3] + G[7]],
        "layer_norm db",
    );

    let rms_norm = |x: &[f64], w: &[f64]| -> Vec<f64> {
        x.chunks(4)
            .flat_map(|r| {
                let rstd = 1.0 / (r.iter().map(|v| v * v).sum::<f64>() / 4.0 + 1e-6).sqrt();
                (0..4).map(move |j| r[j] * rstd * w[j]).collect::<Vec<_>>()
            })
            .collect()
    };
    let (dx, dw) = x.rms_norm_backward(&g, &tw, 1e-6).unwrap();
    assert_close(
        &dx,
        &numeric_grad(&X, &G, |x| rms_norm(x, &w)),
        "rms_norm dx",
    );
    assert_close(
        &dw,
        &numeric_grad(&w, &G, |w| rms_norm(&X, w)),
        "rms_norm dw",
    );
}

#[test]
fn cross_entropy_backward_matches() {
    let dev = device();
    let targets = Tensor::from_i64(&[2], vec![3, 0])
        .unwrap()
        .to_device(&dev)
        .unwrap();
    let x = put(&dev, &[2, 4], &X);
    let grad = dev.full(&[], 2.0, DType::F32).unwrap();
    let loss = |x: &[f64]| -> Vec<f64> {
        let total: f64 = x
            .chunks(4)
            .zip([3usize, 0])
            .map(|(r, t)| r.iter().map(|v| v.exp()).sum::<f64>().ln() - r[t])
            .sum();
        vec![total / 2.0]
    };
    let want = numeric_grad(&X, &[2.0], loss);
    assert_close(
        &x.cross_entropy_backward(&targets, &grad).unwrap(),
        &want,
        "cross_entropy",
    );
}
