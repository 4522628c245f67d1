//! Layer normalisation of a row, with the canonical sums of exact mode.
//!
//! `mean = canonical sum of x / n`; `var = canonical sum of (x - mean)^2 / n`;
//! `sd = sqrt(var + eps)` (IEEE square root, correctly rounded);
//! `y_i = ((x_i - mean) / sd) * gamma_i + beta_i`. Every step is an IEEE operation in a fixed
//! order, so exact mode gives the same bits on every instruction set. Fast mode multiplies by
//! `1/sd` and fuses the last multiply-add.

use super::reduce::canonical_sum_of;
use crate::lanes::{Lanes, Supported, WithLanes};
use crate::mode::Mode;

/// `(mean, sd)` of a row: the canonical mean and `sqrt(var + eps)`.
#[inline(always)]
fn mean_and_sd<L: Lanes>(l: L, row: &[f32], eps: f32) -> (f32, f32) {
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
fn layer_norm_row<L: Lanes, M: Mode>(l: L, row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    if row.is_empty() {
        return;
    }
    let (mean, sd) = mean_and_sd(l, row, eps);
    let mv = l.splat(mean);
    let sdv = l.splat(sd);
    let inv = l.splat(1.0 / sd);
    let w = L::WIDTH;
    for ((x, g), b) in row.chunks_mut(w).zip(gamma.chunks(w)).zip(beta.chunks(w)) {
        let d = l.sub(l.load_partial(x, 0.0), mv);
        let z = if M::FAST {
            l.mul(d, inv)
        } else {
            l.div(d, sdv)
        };
        let y = M::madd(l, z, l.load_partial(g, 0.0), l.load_partial(b, 0.0));
        l.store_partial(y, x);
    }
}

struct LayerNormRow<'a, M> {
    row: &'a mut [f32],
    gamma: &'a [f32],
    beta: &'a [f32],
    eps: f32,
    mode: core::marker::PhantomData<M>,
}

impl<M: Mode> WithLanes for LayerNormRow<'_, M> {
    type Output = ();
    const USES_FMA: bool = M::FAST;
    #[inline(always)]
    fn run<L: Lanes>(self, l: L) {
        layer_norm_row::<L, M>(l, self.row, self.gamma, self.beta, self.eps)
    }
}

/// Layer normalisation of `row` in place in mode `M` on `isa`. `gamma` and `beta` have the
/// row's length (the caller checks it).
pub fn layer_norm_row_on<M: Mode>(
    isa: Supported,
    row: &mut [f32],
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    debug_assert!(gamma.len() == row.len() && beta.len() == row.len());
    isa.dispatch(LayerNormRow::<M> {
        row,
        gamma,
        beta,
        eps,
        mode: core::marker::PhantomData,
    })
}
