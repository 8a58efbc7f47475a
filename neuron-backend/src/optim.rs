//! Optimizers and gradient clipping as device ops.
//!
//! Each update is a short chain of elementwise device ops (as PyTorch's non-fused,
//! per-parameter implementations are), inside a user range named like PyTorch's
//! (`Optimizer.step#SGD.step`, `Optimizer.step#AdamW.step`). Parameters are replaced by
//! their updated tensors. For mixed precision keep `f32` master parameters here and
//! cast them to bf16 for the forward; cast the bf16 gradients back to `f32` first.

use runtime_hooks::RangeScope;

use crate::{BackendError, Tensor, UnaryOp};

/// Stochastic gradient descent with momentum (PyTorch's formulation:
/// `v = μ v + (g + λ p)`, `p = p − lr v`).
#[derive(Debug, Clone)]
pub struct Sgd {
    /// Learning rate.
    pub lr: f64,
    /// Momentum μ (0: plain SGD).
    pub momentum: f64,
    /// L2 weight decay λ added to the gradient.
    pub weight_decay: f64,
    velocity: Vec<Option<Tensor>>,
}

impl Sgd {
    /// SGD with `lr` and `momentum`, no weight decay.
    pub fn new(lr: f64, momentum: f64) -> Self {
        Sgd {
            lr,
            momentum,
            weight_decay: 0.0,
            velocity: Vec::new(),
        }
    }

    /// Updates `params[i]` with `grads[i]` (same shapes and dtypes).
    pub fn step(&mut self, params: &mut [Tensor], grads: &[Tensor]) -> Result<(), BackendError> {
        check_lengths("Sgd::step", params, grads)?;
        let _range = RangeScope::new(runtime_hooks::name!("Optimizer.step#SGD.step"), 0);
        self.velocity.resize(params.len(), None);
        for (i, (p, g)) in params.iter_mut().zip(grads).enumerate() {
            let mut d = g.clone();
            if self.weight_decay != 0.0 {
                d = d.add(&p.mul_scalar(self.weight_decay)?)?;
            }
            if self.momentum != 0.0 {
                d = match self.velocity[i].take() {
                    Some(v) => v.mul_scalar(self.momentum)?.add(&d)?,
                    None => d,
                };
                self.velocity[i] = Some(d.clone());
            }
            *p = p.sub(&d.mul_scalar(self.lr)?)?;
        }
        Ok(())
    }
}

/// AdamW (decoupled weight decay, bias-corrected moments).
#[derive(Debug, Clone)]
pub struct AdamW {
    /// Learning rate.
    pub lr: f64,
    /// First-moment decay β1.
    pub beta1: f64,
    /// Second-moment decay β2.
    pub beta2: f64,
    /// Denominator epsilon.
    pub eps: f64,
    /// Decoupled weight decay.
    pub weight_decay: f64,
    moments: Vec<Option<(Tensor, Tensor)>>,
    step_count: i32,
}

impl AdamW {
    /// AdamW with `lr` and PyTorch's defaults (β 0.9/0.999, eps 1e-8, decay 0.01).
    pub fn new(lr: f64) -> Self {
        AdamW {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
            moments: Vec::new(),
            step_count: 0,
        }
    }

    /// Steps taken.
    pub fn steps(&self) -> i32 {
        self.step_count
    }

    /// Updates `params[i]` with `grads[i]`.
    pub fn step(&mut self, params: &mut [Tensor], grads: &[Tensor]) -> Result<(), BackendError> {
        check_lengths("AdamW::step", params, grads)?;
        let _range = RangeScope::new(runtime_hooks::name!("Optimizer.step#AdamW.step"), 0);
        self.step_count += 1;
        self.moments.resize(params.len(), None);
        let (b1, b2) = (self.beta1, self.beta2);
        let c1 = 1.0 - b1.powi(self.step_count);
        let c2 = 1.0 - b2.powi(self.step_count);
        for (i, (p, g)) in params.iter_mut().zip(grads).enumerate() {
            let g2 = g.mul(g)?;
            let (m, v) = match self.moments[i].take() {
                Some((m, v)) => (
                    m.mul_scalar(b1)?.add(&g.mul_scalar(1.0 - b1)?)?,
                    v.mul_scalar(b2)?.add(&g2.mul_scalar(1.0 - b2)?)?,
                ),
                None => (g.mul_scalar(1.0 - b1)?, g2.mul_scalar(1.0 - b2)?),
            };
            let denom = v
                .mul_scalar(1.0 / c2)?
                .unary(UnaryOp::Sqrt)?
                .add_scalar(self.eps)?;
            let update = m.mul_scalar(self.lr / c1)?.div(&denom)?;
            *p = p
                .mul_scalar(1.0 - self.lr * self.weight_decay)?
                .sub(&update)?;
            self.moments[i] = Some((m, v));
        }
        Ok(())
    }
}

/// Scales `grads` so their global L2 norm is at most `max_norm`; returns the norm
/// before clipping. The norm is summed on the device and read once by the host (a
/// synchronization, as `clip_grad_norm_` followed by a host check would be).
pub fn clip_grad_norm(grads: &mut [Tensor], max_norm: f64) -> Result<f64, BackendError> {
    let mut total: Option<Tensor> = None;
    for g in grads.iter() {
        let sq = g.mul(g)?.sum_all()?;
        total = Some(match total {
            Some(t) => t.add(&sq)?,
            None => sq,
        });
    }
    let Some(total) = total else { return Ok(0.0) };
    let norm = match total.to_vec_f32() {
        Ok(values) => f64::from(values[0]).sqrt(),
        // Timing only: no values to clip by.
        Err(BackendError::NumericsOff { .. }) => return Ok(0.0),
        Err(err) => return Err(err),
    };
    if norm > max_norm {
        let scale = max_norm / (norm + 1e-6);
        for g in grads.iter_mut() {
            *g = g.mul_scalar(scale)?;
        }
    }
    Ok(norm)
}

fn check_lengths(
    op: &'static str,
    params: &[Tensor],
    grads: &[Tensor],
) -> Result<(), BackendError> {
    if params.len() != grads.len() {
        return Err(BackendError::InvalidArgument {
            op,
            reason: format!("{} parameters but {} gradients", params.len(), grads.len()),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Runtime;

    fn put(values: &[f32]) -> Tensor {
        thread_local! {
            static DEVICE: crate::Device = Runtime::trn2().device(0).unwrap();
        }
        let device = DEVICE.with(Clone::clone);
        Tensor::from_f32(&[values.len()], values.to_vec())
            .unwrap()
            .to_device(&device)
            .unwrap()
    }

    #[test]
    fn sgd_with_momentum_matches_the_host_formula() {
        let mut p = vec![put(&[1.0, -2.0])];
        let mut sgd = Sgd::new(0.1, 0.9);
        let (mut host, mut vel) = ([1.0f64, -2.0], [0.0f64; 2]);
        for g in [[0.5, 1.0], [0.25, -1.0], [1.0, 0.0]] {
            sgd.step(&mut p, &[put(&[g[0] as f32, g[1] as f32])])
                .unwrap();
            for i in 0..2 {
                vel[i] = 0.9 * vel[i] + g[i];
                host[i] -= 0.1 * vel[i];
            }
        }
        let got = p[0].to_vec_f32().unwrap();
        for i in 0..2 {
            assert!(
                (f64::from(got[i]) - host[i]).abs() < 1e-6,
                "{got:?} vs {host:?}"
            );
        }
    }

    #[test]
    fn adamw_matches_the_host_formula() {
        let mut p = vec![put(&[0.5, -1.5, 3.0])];
        let mut adam = AdamW::new(0.01);
        let mut host = [0.5f64, -1.5, 3.0];
        let (mut m, mut v) = ([0.0f64; 3], [0.0f64; 3]);
        let grads = [[0.1, -0.2, 0.3], [0.4, 0.0, -0.1], [-0.3, 0.2, 0.2]];
        for (t, g) in grads.iter().enumerate() {
            let gt: Vec<f32> = g.iter().map(|&x| x as f32).collect();
            adam.step(&mut p, &[put(&gt)]).unwrap();
            let t = t as i32 + 1;
            for i in 0..3 {
                m[i] = 0.9 * m[i] + 0.1 * g[i];
                v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
                let mh = m[i] / (1.0 - 0.9f64.powi(t));
                let vh = v[i] / (1.0 - 0.999f64.powi(t));
                host[i] = host[i] * (1.0 - 0.01 * 0.01) - 0.01 * mh / (vh.sqrt() + 1e-8);
            }
        }
        let got = p[0].to_vec_f32().unwrap();
        for i in 0..3 {
            assert!(
                (f64::from(got[i]) - host[i]).abs() < 1e-5,
                "{got:?} vs {host:?}"
            );
        }
    }

    #[test]
    fn clipping_scales_to_the_max_norm() {
        let mut grads = vec![put(&[3.0, 0.0]), put(&[0.0, 4.0])];
        let norm = clip_grad_norm(&mut grads, 1.0).unwrap();
        assert!((norm - 5.0).abs() < 1e-6);
        let a = grads[0].to_vec_f32().unwrap();
        let b = grads[1].to_vec_f32().unwrap();
        let clipped = (a[0].powi(2) + b[1].powi(2)).sqrt();
        assert!((clipped - 1.0).abs() < 1e-5, "{clipped}");
        let mut small = vec![put(&[0.1])];
        assert!((clip_grad_norm(&mut small, 1.0).unwrap() - 0.1).abs() < 1e-6);
        assert_eq!(small[0].to_vec_f32().unwrap(), vec![0.1]);
    }
}
