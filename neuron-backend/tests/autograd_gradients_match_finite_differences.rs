//! Reverse-mode gradients through a small transformer-like graph (embedding, linear,
//! GELU, layer norm, batched attention with transposes and softmax, residual adds,
//! cross-entropy) against central finite differences of the same device forward.

use neuron_backend::autograd::{Tape, Var};
use neuron_backend::{Device, Runtime, Tensor};
use runtime_hooks::{Event, FlowKind, Phase};

struct Param {
    shape: Vec<usize>,
    values: Vec<f32>,
}

fn params() -> Vec<Param> {
    let p = |shape: &[usize], seed: u32| {
        let n: usize = shape.iter().product();
        let values = (0..n)
            .map(|i| (((i as u32 * 7 + seed * 13) % 17) as f32 - 8.0) / 10.0)
            .collect();
        Param {
            shape: shape.to_vec(),
            values,
        }
    };
    vec![
        p(&[5, 4], 1), // embedding table
        p(&[4, 4], 2), // w1
        p(&[4], 3),    // b1
        p(&[4], 4),    // ln weight
        p(&[4], 5),    // ln bias
        p(&[5, 4], 6), // head weight
    ]
}

/// The loss of the graph at `values` (one list per parameter), on a fresh tape.
fn forward(device: &Device, values: &[Vec<f32>]) -> (Tape, Var, Vec<Var>) {
    let tape = Tape::new();
    let ps: Vec<Var> = params()
        .iter()
        .zip(values)
        .map(|(p, v)| {
            tape.param(
                Tensor::from_f32(&p.shape, v.clone())
                    .unwrap()
                    .to_device(device)
                    .unwrap(),
            )
        })
        .collect();
    let tokens = Tensor::from_i64(&[2, 3], vec![0, 3, 1, 4, 2, 3])
        .unwrap()
        .to_device(device)
        .unwrap();
    let targets = Tensor::from_i64(&[6], vec![1, 2, 0, 4, 3, 1])
        .unwrap()
        .to_device(device)
        .unwrap();
    let x = ps[0].embedding(&tokens).unwrap(); // [2, 3, 4]
    let h = x.linear(&ps[1], Some(&ps[2])).unwrap().gelu().unwrap();
    let h = h.layer_norm(&ps[3], &ps[4], 1e-5).unwrap();
    // Self-attention over the 3 positions (q = k = v = h), scaled.
    let scores = h
        .matmul(&h.transpose(-1, -2).unwrap())
        .unwrap()
        .mul_scalar(0.5)
        .unwrap();
    let attn = scores.softmax().unwrap().matmul(&h).unwrap();
    let y = attn.add(&x).unwrap(); // residual
    let logits = y.reshape(&[6, 4]).unwrap().linear(&ps[5], None).unwrap();
    let loss = logits.cross_entropy(&targets).unwrap();
    (tape, loss, ps)
}

#[test]
fn gradients_match_central_differences() {
    let device = Runtime::trn2().device(0).unwrap();
    let base: Vec<Vec<f32>> = params().into_iter().map(|p| p.values).collect();
    let (tape, loss, ps) = forward(&device, &base);
    let grads = tape.backward(&loss).unwrap();
    let eps = 1e-2f32;
    let loss_at = |values: &[Vec<f32>]| {
        let (_, loss, _) = forward(&device, values);
        f64::from(loss.tensor().to_vec_f32().unwrap()[0])
    };
    let mut worst = 0.0f64;
    for (p, var) in ps.iter().enumerate() {
        let analytic = grads.get(var).unwrap().to_vec_f32().unwrap();
        assert_eq!(analytic.len(), base[p].len());
        for i in 0..base[p].len() {
            let mut plus = base.clone();
            plus[p][i] += eps;
            let mut minus = base.clone();
            minus[p][i] -= eps;
            let numeric = (loss_at(&plus) - loss_at(&minus)) / (2.0 * f64::from(eps));
            let err = (f64::from(analytic[i]) - numeric).abs();
            worst = worst.max(err);
            assert!(
                err < 2e-3 + 2e-2 * numeric.abs(),
                "param {p}[{i}]: analytic {} vs numeric {numeric}",
                analytic[i]
            );
        }
    }
    eprintln!("largest |analytic − numeric| = {worst:.2e}");
}

#[test]
fn backward_ops_carry_their_forward_sequence_number_and_close_its_flow() {
    let device = Runtime::trn2().device(0).unwrap();
    let base: Vec<Vec<f32>> = params().into_iter().map(|p| p.values).collect();
    runtime_hooks::set_enabled(true);
    let (tape, loss, _) = forward(&device, &base);
    let _grads = tape.backward(&loss).unwrap();
    runtime_hooks::set_enabled(false);
    let mut records = Vec::new();
    runtime_hooks::drain(&mut records);
    let me = runtime_hooks::current_thread_id().unwrap();
    let mine: Vec<_> = records.iter().filter(|r| r.thread_id == me).collect();
    let mut flow_starts = Vec::new();
    let mut flow_ends = Vec::new();
    let mut fwd_seq = std::collections::HashMap::new();
    let mut bwd = Vec::new();
    for r in &mine {
        match r.event() {
            Some(Event::Flow(FlowKind::ForwardToBackward, f)) => match r.phase() {
                Some(Phase::Begin) => flow_starts.push(f.flow_id),
                _ => flow_ends.push(f.flow_id),
            },
            Some(Event::Operator(op)) if r.phase() == Some(Phase::Begin) => {
                let name = runtime_hooks::resolve(op.name_id).unwrap().to_string();
                if name.starts_with("autograd::engine::evaluate_function: ") {
                    bwd.push((name, op.seq_nr));
                } else {
                    fwd_seq.entry(op.seq_nr).or_insert(name);
                }
            }
            _ => {}
        }
    }
    // Every forward op of the graph starts a flow; every backward function ends the
    // flow of its forward op and carries its sequence number.
    assert!(bwd.len() >= 10, "{bwd:?}");
    for (name, seq) in &bwd {
        assert!(
            flow_starts.contains(seq),
            "{name} #{seq} has no forward flow start"
        );
        assert!(flow_ends.contains(seq));
        assert!(fwd_seq.contains_key(seq), "{name} #{seq}");
    }
    let mm = bwd
        .iter()
        .find(|(n, _)| n.ends_with("MmBackward0"))
        .unwrap();
    assert_eq!(fwd_seq[&mm.1], "aten::matmul");
    let ln = bwd
        .iter()
        .find(|(n, _)| n.ends_with("NativeLayerNormBackward0"))
        .unwrap();
    assert_eq!(fwd_seq[&ln.1], "aten::native_layer_norm");
}
