//! Softmax rows: max, shifted exp with the canonical sum, normalisation; and the online
//! (flash-attention) accumulator. No tensors here: rows are `&mut [f32]`.
//!
//! Exact mode: `m = max(row)`, `e_i = exp_nonpositive(x_i - m)`, `s = canonical_sum(e)`,
//! `y_i = e_i / s`; log-softmax `(x_i - m) - log(s)`. Fast mode: the fast exp and
//! `y_i = e_i * (1/s)`.
//!
//! Special rows: a NaN anywhere makes the whole row canonical NaN. A row whose entries are all
//! `-inf` (fully masked) follows [`MaskedRow`]. A row containing `+inf` is the limit of
//! softmax as those entries grow: the `+inf` entries share the mass equally and every finite
//! entry gets `+0` (log-softmax: `-log(k)` and `-inf`), because `x_i - m` is taken as `0`
//! wherever `x_i == m`.

use super::exp::{exp_nonpositive, fast_exp};
use super::reduce::{CanonicalSum, PARTIALS, max_and_nan};
use super::{CANONICAL_NAN, log::log};
use crate::lanes::{Isa, Lanes, MAX_WIDTH, Scalar, WithLanes};
use crate::mode::{Exact, Mode};

/// What a softmax row whose entries are all `-inf` (fully masked) gives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MaskedRow {
    /// Every output `+0` (log-softmax: `-inf`), as PyTorch's SDPA and the ONNX Attention op.
    #[default]
    Zero,
    /// Every output `1/n` (log-softmax: `-log(n)`), as if nothing were masked.
    Uniform,
    /// Every output the canonical NaN.
    Nan,
}

/// `exp(x - m)` lane by lane, with `x - m` taken as `0` where `x == m`.
#[inline(always)]
fn exp_shift<L: Lanes, M: Mode>(l: L, x: L::F, m: L::F) -> L::F {
    let d = l.select(l.eq(x, m), l.splat(0.0), l.sub(x, m));
    if M::FAST {
        fast_exp(l, d)
    } else {
        exp_nonpositive::<L, Exact>(l, d)
    }
}

/// The canonical sum of `exp(x_i - m)`; with `STORE` the exps overwrite the row.
#[inline(always)]
pub fn exp_shifted_sum<L: Lanes, M: Mode, const STORE: bool>(l: L, row: &mut [f32], m: f32) -> f32 {
    let mv = l.splat(m);
    let regs = PARTIALS / L::WIDTH;
    let mut sum = CanonicalSum::new(l);
    let mut blocks = row.chunks_exact_mut(PARTIALS);
    for b in &mut blocks {
        for r in 0..regs {
            let e = exp_shift::<L, M>(l, l.load(&b[r * L::WIDTH..]), mv);
            if STORE {
                l.store(e, &mut b[r * L::WIDTH..]);
            }
            sum.add_register(l, r, e);
        }
    }
    let rest = blocks.into_remainder();
    if !rest.is_empty() {
        // Padded with -inf, whose exp is +0: the canonical padding.
        let mut pad = [f32::NEG_INFINITY; PARTIALS];
        pad[..rest.len()].copy_from_slice(rest);
        for r in 0..regs {
            let e = exp_shift::<L, M>(l, l.load(&pad[r * L::WIDTH..]), mv);
            l.store(e, &mut pad[r * L::WIDTH..]);
            sum.add_register(l, r, e);
        }
        if STORE {
            rest.copy_from_slice(&pad[..rest.len()]);
        }
    }
    sum.finish(l)
}

/// Applies `f` to every register of `row` (the tail through one padded register).
#[inline(always)]
fn for_each_register<L: Lanes>(l: L, row: &mut [f32], f: impl Fn(L::F) -> L::F) {
    let mut chunks = row.chunks_exact_mut(L::WIDTH);
    for c in &mut chunks {
        l.store(f(l.load(c)), c);
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let mut pad = [0f32; MAX_WIDTH];
        pad[..rest.len()].copy_from_slice(rest);
        l.store(f(l.load(&pad)), &mut pad);
        rest.copy_from_slice(&pad[..rest.len()]);
    }
}

/// Softmax (or log-softmax) of one row, in place.
#[inline(always)]
pub fn softmax_row<L: Lanes, M: Mode>(l: L, row: &mut [f32], policy: MaskedRow, log_form: bool) {
    if row.is_empty() {
        return;
    }
    let (m, nan) = max_and_nan(l, row);
    if nan {
        row.fill(CANONICAL_NAN);
        return;
    }
    if m == f32::NEG_INFINITY {
        let n = row.len() as f32;
        let v = match (policy, log_form) {
            (MaskedRow::Zero, false) => 0.0,
            (MaskedRow::Zero, true) => f32::NEG_INFINITY,
            (MaskedRow::Uniform, false) => 1.0 / n,
            (MaskedRow::Uniform, true) => 0.0 - log::<Scalar, M>(Scalar::new(), n),
            (MaskedRow::Nan, _) => CANONICAL_NAN,
        };
        row.fill(v);
        return;
    }
    let mv = l.splat(m);
    if log_form {
        let s = exp_shifted_sum::<L, M, false>(l, row, m);
        let log_s = l.splat(log::<Scalar, M>(Scalar::new(), s));
        for_each_register(l, row, |x| {
            let d = l.select(l.eq(x, mv), l.splat(0.0), l.sub(x, mv));
            l.sub(d, log_s)
        });
    } else {
        let s = exp_shifted_sum::<L, M, true>(l, row, m);
        if M::FAST {
            let inv = l.splat(1.0 / s);
            for_each_register(l, row, |e| l.mul(e, inv));
        } else {
            let sv = l.splat(s);
            for_each_register(l, row, |e| l.div(e, sv));
        }
    }
}

struct RowOp<'a, M> {
    row: &'a mut [f32],
    policy: MaskedRow,
    log_form: bool,
    mode: core::marker::PhantomData<M>,
}

impl<M: Mode> WithLanes for RowOp<'_, M> {
    type Output = ();
    const USES_FMA: bool = M::FAST;
    #[inline(always)]
    fn run<L: Lanes>(self, l: L) {
        softmax_row::<L, M>(l, self.row, self.policy, self.log_form)
    }
}

/// Softmax (or log-softmax with `log_form`) of one row in mode `M` on `isa`.
pub fn softmax_row_on<M: Mode>(
    isa: Isa,
    row: &mut [f32],
    policy: MaskedRow,
    log_form: bool,
) -> Result<(), crate::Error> {
    isa.dispatch(RowOp::<M> {
        row,
        policy,
        log_form,
        mode: core::marker::PhantomData,
    })
}

/// The running state of an online (flash-attention) softmax over a row split into key tiles:
/// the running maximum and the running sum of `exp(x - max)`.
///
/// ```
/// use activation_kernels::ops::softmax::OnlineSoftmax;
/// use activation_kernels::{Exact, Isa};
/// let mut state = OnlineSoftmax::new();
/// let mut tile = [1.0f32, 2.0];
/// let rescale = state.update::<Exact>(Isa::Scalar, &mut tile).unwrap();
/// assert_eq!(rescale, 0.0); // nothing was accumulated before
/// let mut masked = [f32::NEG_INFINITY; 4];
/// let rescale = state.update::<Exact>(Isa::Scalar, &mut masked).unwrap();
/// assert_eq!((rescale, masked), (1.0, [0.0; 4])); // a fully masked tile changes nothing
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OnlineSoftmax {
    /// The maximum of every score seen (`-inf` before any unmasked one).
    pub max: f32,
    /// The sum of `exp(x - max)` over every score seen.
    pub sum: f32,
}

impl Default for OnlineSoftmax {
    fn default() -> Self {
        Self::new()
    }
}

impl OnlineSoftmax {
    /// The state before any tile.
    pub fn new() -> Self {
        OnlineSoftmax {
            max: f32::NEG_INFINITY,
            sum: 0.0,
        }
    }

    /// Absorbs a tile of (scaled, masked) scores: overwrites them with `exp(x - max_new)`,
    /// updates the running sum, and returns `exp(max_old - max_new)`, the factor by which the
    /// caller rescales what it accumulated with the old maximum. A tile that is entirely masked
    /// (`-inf`) becomes zeros and returns `1` while nothing unmasked has been seen, never NaN.
    /// NaN scores are the caller's to check (they propagate into the sum).
    pub fn update<M: Mode>(&mut self, isa: Isa, tile: &mut [f32]) -> Result<f32, crate::Error> {
        isa.dispatch(OnlineOp::<M> {
            state: self,
            tile,
            mode: core::marker::PhantomData,
        })
    }

    /// `1 / sum`, the factor that normalises the accumulated output; `None` if nothing was
    /// unmasked (the caller applies its [`MaskedRow`] policy).
    pub fn normalizer(&self) -> Option<f32> {
        (self.max != f32::NEG_INFINITY).then(|| 1.0 / self.sum)
    }
}

struct OnlineOp<'a, M> {
    state: &'a mut OnlineSoftmax,
    tile: &'a mut [f32],
    mode: core::marker::PhantomData<M>,
}

impl<M: Mode> WithLanes for OnlineOp<'_, M> {
    type Output = f32;
    const USES_FMA: bool = M::FAST;
    #[inline(always)]
    fn run<L: Lanes>(self, l: L) -> f32 {
        let (tile_max, _) = max_and_nan(l, self.tile);
        let old = self.state.max;
        let new = if tile_max > old { tile_max } else { old };
        if new == f32::NEG_INFINITY {
            self.tile.fill(0.0);
            return 1.0;
        }
        let rescale = exp_shift::<Scalar, M>(Scalar::new(), old, new);
        let s = exp_shifted_sum::<L, M, true>(l, self.tile, new);
        self.state.sum = self.state.sum * rescale + s;
        self.state.max = new;
        rescale
    }
}
