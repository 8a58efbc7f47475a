//! Every op's numerics against a direct `f64` computation.
//!
//! Tolerances: f32 results within 1e-5 relative (plus 1e-5 absolute; matmul 1e-4 for
//! its length-k sums); bf16 results within 2⁻⁸ relative of the reference computed on
//! the same bf16-rounded inputs (one rounding of the output), plus 1e-2 absolute for
//! matmul's accumulated products.

use neuron_backend::{round_bf16, DType, Device, Runtime, Tensor};

fn device() -> Device {
    Runtime::trn2().device(0).unwrap()
}

/// Deterministic test data in [-2, 2).
fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f64 / (1u64 << 24) as f64 * 4.0 - 2.0) as f32
        })
        .collect()
}

fn put(device: &Device, shape: &[usize], values: &[f32]) -> Tensor {
    Tensor::from_f32(shape, values.to_vec())
        .unwrap()
        .to_device(device)
        .unwrap()
}

fn close(got: &[f32], want: &[f64], rel: f64, abs: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (f64::from(g) - w).abs();
        assert!(
            err <= abs + rel * w.abs(),
            "{what}[{i}]: got {g}, want {w} (err {err:e})"
        );
    }
}

fn reference_matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k)
                .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
                .sum();
        }
    }
    c
}

#[test]
fn matmul_f32_and_bf16_match() {
    let dev = device();
    let (m, k, n) = (37, 150, 70);
    let (a, b) = (data(m * k, 1), data(k * n, 2));
    let got = put(&dev, &[m, k], &a)
        .matmul(&put(&dev, &[k, n], &b))
        .unwrap();
    close(
        &got.to_vec_f32().unwrap(),
        &reference_matmul(&a, &b, m, k, n),
        1e-4,
        1e-4,
        "matmul f32",
    );

    let ab = Tensor::from_f32_as_bf16(&[m, k], &a)
        .unwrap()
        .to_device(&dev)
        .unwrap();
    let bb = Tensor::from_f32_as_bf16(&[k, n], &b)
        .unwrap()
        .to_device(&dev)
        .unwrap();
    let got = ab.matmul(&bb).unwrap();
    assert_eq!(got.dtype(), DType::BF16);
    let (ar, br): (Vec<f32>, Vec<f32>) = (
        a.iter().map(|&v| round_bf16(v)).collect(),
        b.iter().map(|&v| round_bf16(v)).collect(),
    );
    close(
        &got.to_vec_f32().unwrap(),
        &reference_matmul(&ar, &br, m, k, n),
        1.0 / 256.0,
        1e-2,
        "matmul bf16",
    );
}

#[test]
fn batched_matmul_and_linear_match() {
    let dev = device();
    let (batch, m, k, n) = (3, 5, 8, 4);
    let (a, b) = (data(batch * m * k, 3), data(batch * k * n, 4));
    let got = put(&dev, &[batch, m, k], &a)
        .matmul(&put(&dev, &[batch, k, n], &b))
        .unwrap();
    let mut want = Vec::new();
    for i in 0..batch {
        want.extend(reference_matmul(&a[i * m * k..], &b[i * k * n..], m, k, n));
    }
    close(&got.to_vec_f32().unwrap(), &want, 1e-5, 1e-5, "bmm");

    let (x, w, bias) = (data(m * k, 5), data(n * k, 6), data(n, 7));
    let got = put(&dev, &[m, k], &x)
        .linear(&put(&dev, &[n, k], &w), Some(&put(&dev, &[n], &bias)))
        .unwrap();
    let want: Vec<f64> = (0..m * n)
        .map(|idx| {
            let (i, j) = (idx / n, idx % n);
            (0..k)
                .map(|p| f64::from(x[i * k + p]) * f64::from(w[j * k + p]))
                .sum::<f64>()
                + f64::from(bias[j])
        })
        .collect();
    close(&got.to_vec_f32().unwrap(), &want, 1e-5, 1e-5, "linear");
}

#[test]
fn elementwise_and_activations_match() {
    let dev = device();
    let (x, y) = (data(24, 8), data(6, 9));
    let (tx, ty) = (put(&dev, &[4, 6], &x), put(&dev, &[6], &y));
    let want: Vec<f64> = (0..24)
        .map(|i| f64::from(x[i]) + f64::from(y[i % 6]))
        .collect();
    close(
        &tx.add(&ty).unwrap().to_vec_f32().unwrap(),
        &want,
        1e-6,
        1e-6,
        "add broadcast",
    );
    let want: Vec<f64> = (0..24)
        .map(|i| f64::from(x[i]) * f64::from(y[i % 6]))
        .collect();
    close(
        &tx.mul(&ty).unwrap().to_vec_f32().unwrap(),
        &want,
        1e-6,
        1e-6,
        "mul broadcast",
    );
    let want: Vec<f64> = x.iter().map(|&v| f64::from(v) * 2.5 - 1.0).collect();
    close(
        &tx.affine(2.5, -1.0).unwrap().to_vec_f32().unwrap(),
        &want,
        1e-6,
        1e-6,
        "affine",
    );
    let erf_gelu = |v: f64| {
        // Reference Φ by numerical integration of the normal density (Simpson).
        let steps = 2000;
        let (lo, h) = (-10.0f64, (v + 10.0) / steps as f64);
        let pdf = |t: f64| (-0.5 * t * t).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let mut s = pdf(lo) + pdf(v);
        for i in 1..steps {
            s += pdf(lo + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
        }
        v * s * h / 3.0
    };
    type Case = (&'static str, Tensor, fn(f64) -> f64);
    let cases: [Case; 3] = [
        ("relu", tx.relu().unwrap(), |v| v.max(0.0)),
        ("silu", tx.silu().unwrap(), |v| v / (1.0 + (-v).exp())),
        ("exp", tx.exp().unwrap(), f64::exp),
    ];
    for (name, got, f) in cases {
        let want: Vec<f64> = x.iter().map(|&v| f(f64::from(v))).collect();
        close(&got.to_vec_f32().unwrap(), &want, 1e-6, 1e-6, name);
    }
    let want: Vec<f64> = x.iter().map(|&v| erf_gelu(f64::from(v))).collect();
    close(
        &tx.gelu().unwrap().to_vec_f32().unwrap(),
        &want,
        1e-6,
        1e-6,
        "gelu",
    );
}

#[test]
fn softmax_and_norms_match() {
    let dev = device();
    let (rows, cols) = (3, 10);
    let x = data(rows * cols, 10);
    let tx = put(&dev, &[rows, cols], &x);
    let mut soft = Vec::new();
    let mut logsoft = Vec::new();
    let mut ln = Vec::new();
    let mut rms = Vec::new();
    let (w, b) = (data(cols, 11), data(cols, 12));
    for row in x.chunks(cols) {
        let r: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
        let sum: f64 = r.iter().map(|v| v.exp()).sum();
        soft.extend(r.iter().map(|v| v.exp() / sum));
        logsoft.extend(r.iter().map(|v| v - sum.ln()));
        let mean = r.iter().sum::<f64>() / cols as f64;
        let var = r.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / cols as f64;
        ln.extend(
            r.iter()
                .enumerate()
                .map(|(j, v)| (v - mean) / (var + 1e-5).sqrt() * f64::from(w[j]) + f64::from(b[j])),
        );
        let ms = r.iter().map(|v| v * v).sum::<f64>() / cols as f64;
        rms.extend(
            r.iter()
                .enumerate()
                .map(|(j, v)| v / (ms + 1e-6).sqrt() * f64::from(w[j])),
        );
    }
    close(
        &tx.softmax().unwrap().to_vec_f32().unwrap(),
        &soft,
        1e-6,
        1e-7,
        "softmax",
    );
    close(
        &tx.log_softmax().unwrap().to_vec_f32().unwrap(),
        &logsoft,
        1e-6,
        1e-6,
        "log_softmax",
    );
    let (tw, tb) = (put(&dev, &[cols], &w), put(&dev, &[cols], &b));
    close(
        &tx.layer_norm(&tw, &tb, 1e-5).unwrap().to_vec_f32().unwrap(),
        &ln,
        1e-5,
        1e-5,
        "layer_norm",
    );
    close(
        &tx.rms_norm(&tw, 1e-6).unwrap().to_vec_f32().unwrap(),
        &rms,
        1e-5,
        1e-5,
        "rms_norm",
    );
}

#[test]
fn reductions_and_shape_ops_match() {
    let dev = device();
    let x = data(2 * 3 * 4, 13);
    let tx = put(&dev, &[2, 3, 4], &x);
    let at = |i: usize, j: usize, k: usize| f64::from(x[i * 12 + j * 4 + k]);
    let sum1: Vec<f64> = (0..8)
        .map(|o| (0..3).map(|j| at(o / 4, j, o % 4)).sum())
        .collect();
    let got = tx.sum(1, false).unwrap();
    assert_eq!(got.shape(), &[2, 4]);
    close(&got.to_vec_f32().unwrap(), &sum1, 1e-6, 1e-6, "sum dim 1");
    let mean2: Vec<f64> = (0..6)
        .map(|o| (0..4).map(|k| at(o / 3, o % 3, k)).sum::<f64>() / 4.0)
        .collect();
    assert_eq!(tx.mean(-1, true).unwrap().shape(), &[2, 3, 1]);
    close(
        &tx.mean(-1, true).unwrap().to_vec_f32().unwrap(),
        &mean2,
        1e-6,
        1e-6,
        "mean",
    );
    let max0: Vec<f64> = (0..12)
        .map(|o| at(0, o / 4, o % 4).max(at(1, o / 4, o % 4)))
        .collect();
    close(
        &tx.max(0, false).unwrap().to_vec_f32().unwrap(),
        &max0,
        0.0,
        0.0,
        "max",
    );
    let total: f64 = x.iter().map(|&v| f64::from(v)).sum();
    close(
        &tx.sum_all().unwrap().to_vec_f32().unwrap(),
        &[total],
        1e-6,
        1e-6,
        "sum_all",
    );

    let tr: Vec<f64> = (0..24).map(|o| at(o / 12, o % 3, (o / 3) % 4)).collect();
    let got = tx.transpose(1, 2).unwrap();
    assert_eq!(got.shape(), &[2, 4, 3]);
    close(&got.to_vec_f32().unwrap(), &tr, 0.0, 0.0, "transpose");
    let view = tx.reshape(&[6, -1]).unwrap();
    assert_eq!(view.shape(), &[6, 4]);
    assert_eq!(view.addr(), tx.addr(), "a view shares storage");
    let sl = tx.slice(2, 1, 3).unwrap();
    let want: Vec<f64> = (0..12).map(|o| at(o / 6, (o / 2) % 3, 1 + o % 2)).collect();
    close(&sl.to_vec_f32().unwrap(), &want, 0.0, 0.0, "slice");
    let cat = Tensor::concat(&[&tx, &tx.affine(1.0, 1.0).unwrap()], 1).unwrap();
    assert_eq!(cat.shape(), &[2, 6, 4]);
    let got = cat.to_vec_f32().unwrap();
    assert_eq!(f64::from(got[12]), at(0, 0, 0) + 1.0);
}

#[test]
fn embedding_cross_entropy_dropout_and_random_match() {
    let dev = device();
    let w = data(5 * 3, 14);
    let tw = put(&dev, &[5, 3], &w);
    let idx = Tensor::from_i64(&[2, 2], vec![4, 0, 2, 4])
        .unwrap()
        .to_device(&dev)
        .unwrap();
    let got = tw.embedding(&idx).unwrap();
    assert_eq!(got.shape(), &[2, 2, 3]);
    let want: Vec<f64> = [4usize, 0, 2, 4]
        .iter()
        .flat_map(|&r| (0..3).map(|c| f64::from(w[r * 3 + c])).collect::<Vec<_>>())
        .collect();
    close(&got.to_vec_f32().unwrap(), &want, 0.0, 0.0, "embedding");
    let grad = got.embedding_backward(&idx, 5).unwrap();
    let g = grad.to_vec_f32().unwrap();
    close(
        &g[12..15],
        &[
            2.0 * f64::from(w[12]),
            2.0 * f64::from(w[13]),
            2.0 * f64::from(w[14]),
        ],
        1e-6,
        1e-6,
        "embedding backward",
    );

    let logits = data(4 * 6, 15);
    let targets = vec![1i64, 5, 0, 3];
    let (tl, tt) = (
        put(&dev, &[4, 6], &logits),
        Tensor::from_i64(&[4], targets.clone())
            .unwrap()
            .to_device(&dev)
            .unwrap(),
    );
    let mut loss = 0.0;
    for (row, &t) in logits.chunks(6).zip(&targets) {
        let lse = row.iter().map(|&v| f64::from(v).exp()).sum::<f64>().ln();
        loss += lse - f64::from(row[t as usize]);
    }
    let got = tl.cross_entropy(&tt).unwrap();
    assert_eq!(got.shape(), &[] as &[usize]);
    close(
        &got.to_vec_f32().unwrap(),
        &[loss / 4.0],
        1e-6,
        1e-6,
        "cross_entropy",
    );

    let ones = put(&dev, &[1000], &[1.0; 1000]);
    let (out, mask) = ones.dropout(0.25, 42).unwrap();
    let (out2, _) = ones.dropout(0.25, 42).unwrap();
    assert_eq!(
        out.to_vec_f32().unwrap(),
        out2.to_vec_f32().unwrap(),
        "seeded"
    );
    let kept = mask
        .to_vec_f32()
        .unwrap()
        .iter()
        .filter(|&&m| m > 0.0)
        .count();
    assert!((700..800).contains(&kept), "{kept} of 1000 kept at p=0.25");
    assert!(out
        .to_vec_f32()
        .unwrap()
        .iter()
        .all(|&v| v == 0.0 || (v - 4.0 / 3.0).abs() < 1e-6));

    let a = dev
        .randn(&[500], DType::F32, 9)
        .unwrap()
        .to_vec_f32()
        .unwrap();
    let b = device()
        .randn(&[500], DType::F32, 9)
        .unwrap()
        .to_vec_f32()
        .unwrap();
    assert_eq!(a, b, "same seed, same values on another device");
    assert_eq!(
        dev.zeros(&[3], DType::BF16).unwrap().to_vec_f32().unwrap(),
        vec![0.0; 3]
    );
    assert_eq!(
        dev.ones(&[2], DType::I64).unwrap().to_vec_i64().unwrap(),
        vec![1, 1]
    );
}

#[test]
fn shape_ops_keep_i64_values_exact() {
    let dev = device();
    let big = (1i64 << 40) + 3;
    let t = Tensor::from_i64(&[2, 2], vec![big, 1, 2, -big])
        .unwrap()
        .to_device(&dev)
        .unwrap();
    assert_eq!(
        t.transpose(0, 1).unwrap().to_vec_i64().unwrap(),
        vec![big, 2, 1, -big]
    );
    assert_eq!(
        t.slice(1, 0, 1).unwrap().to_vec_i64().unwrap(),
        vec![big, 2]
    );
    let cat = Tensor::concat(&[&t, &t], 0).unwrap();
    assert_eq!(cat.to_vec_i64().unwrap()[4], big);
    assert_eq!(t.copy().unwrap().to_vec_i64().unwrap()[3], -big);
}

#[test]
fn fp8_matmul_matches_on_rounded_inputs() {
    use neuron_backend::{f32_to_f8e4m3, f8e4m3_to_f32};
    let dev = device();
    let (m, k, n) = (8, 32, 16);
    let (a, b) = (data(m * k, 16), data(k * n, 17));
    let fp8 = |v: &[f32], shape: &[usize]| {
        Tensor::from_f32_as_f8e4m3(shape, v)
            .unwrap()
            .to_device(&dev)
            .unwrap()
    };
    let got = fp8(&a, &[m, k]).matmul(&fp8(&b, &[k, n])).unwrap();
    assert_eq!(got.dtype(), DType::BF16);
    let round =
        |v: &[f32]| -> Vec<f32> { v.iter().map(|&x| f8e4m3_to_f32(f32_to_f8e4m3(x))).collect() };
    let want = reference_matmul(&round(&a), &round(&b), m, k, n);
    close(
        &got.to_vec_f32().unwrap(),
        &want,
        1.0 / 256.0,
        1e-2,
        "matmul fp8",
    );
    let err = fp8(&a, &[m, k]).relu().unwrap_err();
    assert!(err.to_string().contains("aten::relu"), "{err}");
}

#[test]
fn casts_round_like_the_host_conversions() {
    let dev = device();
    let x = data(64, 18);
    let t = put(&dev, &[64], &x);
    let bf = t.cast(DType::BF16).unwrap();
    assert_eq!(bf.dtype(), DType::BF16);
    let want: Vec<f64> = x.iter().map(|&v| f64::from(round_bf16(v))).collect();
    close(&bf.to_vec_f32().unwrap(), &want, 0.0, 0.0, "cast to bf16");
    let back = bf.cast(DType::F32).unwrap();
    close(
        &back.to_vec_f32().unwrap(),
        &want,
        0.0,
        0.0,
        "cast back to f32",
    );
    let idx = t
        .mul_scalar(10.0)
        .unwrap()
        .cast(DType::I64)
        .unwrap()
        .to_vec_i64()
        .unwrap();
    assert_eq!(idx[0], (x[0] * 10.0) as i64);
}
