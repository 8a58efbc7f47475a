//! The `mlp` workload: a two-layer classifier on Gaussian clusters.
//!
//! Data: `CLASSES` clusters in `FEATURES` dimensions, cluster `k` centred at
//! `CENTER_SCALE · e_k` with unit-variance noise (seeded); sample `i` belongs to class
//! `i % CLASSES`. Every step trains on the same global batch of the first `batch`
//! samples (each data-parallel rank on its contiguous share); accuracy is measured on
//! 512 other samples.

use super::ddp::Reducer;
use super::{begin_step, dp_group, RankResult, StepReport, WorkloadConfig, WorkloadHooks};
use crate::autograd::Tape;
use crate::dist::{Rank, ReduceOp};
use crate::ops::random_normal;
use crate::optim::{clip_grad_norm, Sgd};
use crate::{BackendError, DType, Device, Tensor};

const CLASSES: usize = 4;
const FEATURES: usize = 8;
const HIDDEN: usize = 32;
const CENTER_SCALE: f64 = 3.5;
/// First index of the held-out samples.
const TEST_OFFSET: usize = 1 << 20;
const TEST_SAMPLES: usize = 512;

/// Samples `first..first + n`: features `[n, FEATURES]` and classes `[n]`.
fn samples(seed: u64, first: usize, n: usize) -> (Vec<f32>, Vec<i64>) {
    let mut x = Vec::with_capacity(n * FEATURES);
    let mut y = Vec::with_capacity(n);
    for i in first..first + n {
        let class = i % CLASSES;
        for j in 0..FEATURES {
            let center = if j == class { CENTER_SCALE } else { 0.0 };
            x.push((center + random_normal(seed, (i * FEATURES + j) as u64)) as f32);
        }
        y.push(class as i64);
    }
    (x, y)
}

fn upload_f32(device: &Device, shape: &[usize], values: Vec<f32>) -> Result<Tensor, BackendError> {
    Tensor::from_f32(shape, values)?.to_device(device)
}

fn init(device: &Device, seed: u64) -> Result<Vec<Tensor>, BackendError> {
    let he = |fan_in: usize| (2.0 / fan_in as f64).sqrt();
    Ok(vec![
        device
            .randn(&[HIDDEN, FEATURES], DType::F32, seed)?
            .mul_scalar(he(FEATURES))?,
        device.zeros(&[HIDDEN], DType::F32)?,
        device
            .randn(&[CLASSES, HIDDEN], DType::F32, seed + 1)?
            .mul_scalar(he(HIDDEN))?,
        device.zeros(&[CLASSES], DType::F32)?,
    ])
}

fn logits(
    tape: &Tape,
    params: &[Tensor],
    x: &Tensor,
    dtype: DType,
) -> Result<(crate::autograd::Var, Vec<crate::autograd::Var>), BackendError> {
    let vars: Vec<_> = params.iter().map(|p| tape.param(p.clone())).collect();
    let w: Vec<_> = vars
        .iter()
        .map(|v| v.cast(dtype))
        .collect::<Result<_, _>>()?;
    let x = tape.constant(x.cast(dtype)?);
    let h = x.linear(&w[0], Some(&w[1]))?.relu()?;
    Ok((h.linear(&w[2], Some(&w[3]))?, vars))
}

pub(crate) fn train(
    config: &WorkloadConfig,
    rank: &Rank,
    hooks: &(impl WorkloadHooks + ?Sized),
) -> Result<RankResult, BackendError> {
    let device = rank.device();
    let dtype = config.compute_dtype();
    let dp = dp_group(rank)?;
    let (dp_size, dp_rank) = dp.as_ref().map_or((1, 0), |g| (g.size(), g.rank()));
    let local = config.batch / dp_size;
    let (x, y) = samples(config.seed, dp_rank * local, local);
    let mut params = init(device, config.seed)?;
    let mut sgd = Sgd::new(0.1, 0.9);
    let mut result = RankResult::default();
    hooks.on_start(rank.rank());
    for step in 0..config.steps {
        if !begin_step(config, rank, step) {
            return Ok(result);
        }
        let x = upload_f32(device, &[local, FEATURES], x.clone())?;
        let targets = Tensor::from_i64(&[local], y.clone())?.to_device(device)?;
        let tape = Tape::new();
        let (out, vars) = logits(&tape, &params, &x, dtype)?;
        let loss = out.cross_entropy(&targets)?;
        let mut reducer = Reducer::new(dp.clone(), vars.len(), config.bucket_bytes);
        tape.backward_with(&loss, &vars, |i, g| reducer.ready(i, g))?;
        let (grads, buckets) = reducer.finish()?;
        let mut grads: Vec<Tensor> = grads
            .into_iter()
            .map(|g| g.ok_or_else(|| missing_grad("mlp")))
            .collect::<Result<_, _>>()?;
        if config.clip_norm > 0.0 {
            clip_grad_norm(&mut grads, config.clip_norm)?;
        }
        sgd.step(&mut params, &grads)?;
        let report = StepReport {
            rank: rank.rank(),
            step,
            loss: mean_loss(config, dp.as_ref(), loss.tensor())?,
            end_ns: runtime_hooks::clock::now_ns(),
            buckets,
        };
        hooks.on_step(&report);
        result.steps.push(report);
    }
    if config.numerics && rank.rank() == 0 {
        let (tx, ty) = samples(config.seed, TEST_OFFSET, TEST_SAMPLES);
        let tx = upload_f32(device, &[TEST_SAMPLES, FEATURES], tx)?;
        let (out, _) = logits(&Tape::new(), &params, &tx, dtype)?;
        let scores = out.tensor().to_vec_f32()?;
        let correct = scores
            .chunks(CLASSES)
            .zip(&ty)
            .filter(|(row, &class)| argmax(row) == class as usize)
            .count();
        result.accuracy = Some(correct as f64 / TEST_SAMPLES as f64);
    }
    Ok(result)
}

/// The loss averaged over the data-parallel group, read by the host (`loss.item()`).
pub(crate) fn mean_loss(
    config: &WorkloadConfig,
    dp: Option<&crate::dist::ProcessGroup>,
    loss: &Tensor,
) -> Result<Option<f64>, BackendError> {
    let loss = match dp {
        Some(group) => group.all_reduce(&loss.cast(DType::F32)?, ReduceOp::Avg)?,
        None => loss.clone(),
    };
    // The host reads the loss every step (as a training script prints it), values or
    // not: the copy and the wait for it are part of the step's timeline either way.
    let loss = loss.to_host()?;
    if !config.numerics {
        return Ok(None);
    }
    Ok(Some(f64::from(loss.to_vec_f32()?[0])))
}

pub(crate) fn argmax(row: &[f32]) -> usize {
    row.iter()
        .enumerate()
        .fold(
            (0, f32::MIN),
            |best, (i, &v)| if v > best.1 { (i, v) } else { best },
        )
        .0
}

pub(crate) fn missing_grad(workload: &'static str) -> BackendError {
    BackendError::InvalidArgument {
        op: workload,
        reason: "a parameter got no gradient".into(),
    }
}
