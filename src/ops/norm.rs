//! Layer normalisation of a row, with the canonical sums of exact mode.
//!
//! `mean = canonical_sum(x) / n`; `var = canonical_sum((x - mean)^2) / n`;
//! `sd = sqrt(var + eps)` (IEEE square root, correctly rounded);
//! `y_i = ((x_i - mean) / sd) * gamma_i + beta_i`. Every step is an IEEE operation in a fixed
//! order, so exact mode gives the same bits on every instruction set. Fast mode multiplies by
//! `1/sd` and fuses the last multiply-add.

use super::reduce::canonical_sum_of;
use crate::lanes::{Isa, Lanes, MAX_WIDTH, WithLanes};
use crate::mode::Mode;

/// `(mean, sd)` of a row: the canonical mean and `sqrt(var + eps)`.
#[inline(always)]
pub fn mean_and_sd<L: Lanes>(l: L, row: &[f32], eps: f32) -> (f32, f32) {
    let n = row.len() as f32;
    let mean = canonical_sum_of(l, row, |v| v) / n;
    let mv = l.splat(mean);
    let var = canonical_sum_of(l, row, |v| {
        let d = l.sub(v, mv);
        l.mul(d, d)
    }) / n;
    (mean, (var + eps).sqrt())
}

/// Normalises `row` in place with the affine `gamma`, `beta` (each the row's length).
#[inline(always)]
pub fn layer_norm_row<L: Lanes, M: Mode>(
    l: L,
    row: &mut [f32],
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    if row.is_empty() {
        return;
    }
    let (mean, sd) = mean_and_sd(l, row, eps);
    let mv = l.splat(mean);
    let sdv = l.splat(sd);
    let inv = l.splat(1.0 / sd);
    let step = |x: L::F, g: L::F, b: L::F| {
        let d = l.sub(x, mv);
        let z = if M::FAST {
            l.mul(d, inv)
        } else {
            l.div(d, sdv)
        };
        M::madd(l, z, g, b)
    };
    let w = L::WIDTH;
    let full = row.len() / w * w;
    for i in (0..full).step_by(w) {
        let y = step(l.load(&row[i..]), l.load(&gamma[i..]), l.load(&beta[i..]));
        l.store(y, &mut row[i..]);
    }
    let rest = row.len() - full;
    if rest > 0 {
        let mut pads = [[0f32; MAX_WIDTH]; 3];
        pads[0][..rest].copy_from_slice(&row[full..]);
        pads[1][..rest].copy_from_slice(&gamma[full..]);
        pads[2][..rest].copy_from_slice(&beta[full..]);
        let y = step(l.load(&pads[0]), l.load(&pads[1]), l.load(&pads[2]));
        l.store(y, &mut pads[0]);
        row[full..].copy_from_slice(&pads[0][..rest]);
    }
}

struct NormOp<'a, M> {
    row: &'a mut [f32],
    gamma: &'a [f32],
    beta: &'a [f32],
    eps: f32,
    mode: core::marker::PhantomData<M>,
}

impl<M: Mode> WithLanes for NormOp<'_, M> {
    type Output = ();
    const USES_FMA: bool = M::FAST;
    #[inline(always)]
    fn run<L: Lanes>(self, l: L) {
        layer_norm_row::<L, M>(l, self.row, self.gamma, self.beta, self.eps)
    }
}

/// [`layer_norm_row`] in mode `M` on `isa`. `gamma` and `beta` must have the row's length.
pub fn layer_norm_row_on<M: Mode>(
    isa: Isa,
    row: &mut [f32],
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) -> Result<(), crate::Error> {
    if gamma.len() != row.len() || beta.len() != row.len() {
        return Err(crate::Error::ShapeMismatch {
            what: "layer norm gamma/beta and row",
            expected: vec![row.len()],
            found: vec![gamma.len(), beta.len()],
        });
    }
    isa.dispatch(NormOp::<M> {
        row,
        gamma,
        beta,
        eps,
        mode: core::marker::PhantomData,
    })
}
