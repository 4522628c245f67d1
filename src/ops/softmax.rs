//! Softmax rows: max, shifted exp with the canonical sum, normalisation; the scale-and-mask
//! step of attention scores; and the online (flash-attention) accumulator. No tensors here:
//! rows are `&mut [f32]`.
//!
//! Exact mode: `m = max(row)`, `e_i = exp_nonpositive(x_i - m)`, `s = canonical sum of e`,
//! `y_i = e_i / s`; log-softmax `(x_i - m) - log(s)`. Fast mode: the fast exp and
//! `y_i = e_i * (1/s)`.
//!
//! Special rows: a NaN anywhere makes the whole row canonical NaN. A row whose entries are all
//! `-inf` (fully masked) follows [`MaskedRow`]. A row containing `+inf` is the limit of
//! softmax as those entries grow: the `+inf` entries share the mass equally and every finite
//! entry gets `+0` (log-softmax: `-log(k)` and `-inf`), because `x_i - m` is taken as `0`
//! wherever `x_i == m`.

use super::exp::{
    EXP_NONPOSITIVE_FLUSH, FAST_EXP_LOW, exp_nonpositive, exp_one_scale, fast_exp,
    fast_exp_in_range,
};
use super::map::map_registers_in_place_by;
use super::reduce::{RowExtremes, canonical_sum_with, row_extremes, row_extremes_beside};
use super::{CANONICAL_NAN, log::log};
use crate::lanes::{Lanes, MAX_WIDTH, Scalar, Supported, WithLanes};
use crate::mode::{Exact, Mode, compiled_once_per_mode};

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

impl MaskedRow {
    /// The value every entry of a fully masked row of `n` entries gets.
    fn fill<M: Mode>(self, n: usize, log_form: bool) -> f32 {
        let n = n as f32;
        match (self, log_form) {
            (MaskedRow::Zero, false) => 0.0,
            (MaskedRow::Zero, true) => f32::NEG_INFINITY,
            (MaskedRow::Uniform, false) => 1.0 / n,
            (MaskedRow::Uniform, true) => 0.0 - log::<Scalar, M>(Scalar::new(), n),
            (MaskedRow::Nan, _) => CANONICAL_NAN,
        }
    }
}

/// `exp(x - m)` lane by lane, with `x - m` taken as `0` where `x == m`. Only `m = +inf`
/// (`m_is_inf`) needs the select: for a finite `m`, `x - m` is already zero where `x == m`
/// (`+0`, or `-0` under a caller's round-down in fast mode, and `exp(-0) = exp(+0) = 1`).
///
/// `IN_RANGE`: the caller knows (from [`shift_in_range`]) that every `x - m` of the row lies
/// where the exp needs no clamp and no select, so the exp goes straight to its select-free
/// form, with no test per register: the same bits.
#[inline(always)]
fn exp_shift<L: Lanes, M: Mode, const IN_RANGE: bool>(
    l: L,
    x: L::F,
    m: L::F,
    m_is_inf: bool,
) -> L::F {
    let d = l.sub(x, m);
    if IN_RANGE {
        return if M::FAST {
            fast_exp_in_range(l, d)
        } else {
            exp_one_scale::<L, Exact>(l, d)
        };
    }
    let d = if m_is_inf {
        l.select(l.eq(x, m), l.splat(0.0), d)
    } else {
        d
    };
    if M::FAST {
        fast_exp(l, d)
    } else {
        exp_nonpositive::<L, Exact>(l, d)
    }
}

/// Whether every `x - m` of a row whose entries lie in `[lowest, m]` (no NaN) is on the select-
/// free path of the mode's exp: `m` finite and `lowest - m` at or above the exp's lower limit
/// ([`FAST_EXP_LOW`] in fast mode, [`EXP_NONPOSITIVE_FLUSH`] in exact mode; the upper limits
/// are above 0). Rounding is monotonic, so every `x - m` rounds to at least `lowest - m`.
fn shift_in_range<M: Mode>(lowest: f32, m: f32) -> bool {
    let limit = if M::FAST {
        FAST_EXP_LOW
    } else {
        EXP_NONPOSITIVE_FLUSH
    };
    m.is_finite() && lowest - m >= limit
}

/// The canonical sum of `exp(x_i - m)` over a row whose smallest entry is `lowest`: the row is
/// `src`, or `row` itself when `src` is `None`; with `STORE` the exps are written to `row`.
#[inline(always)]
fn exp_shifted_sum<L: Lanes, M: Mode, const STORE: bool>(
    l: L,
    src: Option<&[f32]>,
    row: &mut [f32],
    m: f32,
    lowest: f32,
) -> f32 {
    if shift_in_range::<M>(lowest, m) {
        exp_shifted_sum_on::<L, M, STORE, true>(l, src, row, m)
    } else {
        exp_shifted_sum_on::<L, M, STORE, false>(l, src, row, m)
    }
}

/// [`exp_shifted_sum`] with the range known.
#[inline(always)]
fn exp_shifted_sum_on<L: Lanes, M: Mode, const STORE: bool, const IN_RANGE: bool>(
    l: L,
    src: Option<&[f32]>,
    row: &mut [f32],
    m: f32,
) -> f32 {
    let (mv, m_is_inf) = (l.splat(m), m == f32::INFINITY);
    // Inlined by force: a closure left out of line loses the trampoline's target features and
    // calls every intrinsic as a function.
    // In range (no select in the exp), a wide group of exps formed before they are summed:
    // measured to pay on AVX2 (two groups of 16), about even on AVX-512; with the selects of
    // the out-of-range form (masked rows) fast mode lost, so not there (BENCHMARKS.md).
    let ahead = if IN_RANGE {
        L::WideGroup::WIDTH / L::WIDTH
    } else {
        1
    };
    canonical_sum_with(
        l,
        row.len(),
        ahead,
        #[inline(always)]
        |start, len| {
            let part = &mut row[start..start + len];
            let from = src.map_or(&*part, |s| &s[start..start + len]);
            let x = l.load_partial(from, f32::NEG_INFINITY);
            let e = exp_shift::<L, M, IN_RANGE>(l, x, mv, m_is_inf);
            if STORE {
                l.store_partial(e, part);
            }
            e
        },
    )
}

/// The value every entry of a row of `n` entries gets when the row holds a NaN (`nan`: the
/// canonical NaN) or is fully masked (its maximum `m` is `-inf`: the [`MaskedRow`] policy);
/// `None` for an ordinary row.
fn special_row_fill<M: Mode>(
    m: f32,
    nan: bool,
    n: usize,
    policy: MaskedRow,
    log_form: bool,
) -> Option<f32> {
    if nan {
        Some(CANONICAL_NAN)
    } else if m == f32::NEG_INFINITY {
        Some(policy.fill::<M>(n, log_form))
    } else {
        None
    }
}

/// Softmax (or log-softmax) of one row, in place.
#[inline(always)]
pub fn softmax_row<L: Lanes, M: Mode>(l: L, row: &mut [f32], policy: MaskedRow, log_form: bool) {
    if row.is_empty() {
        return;
    }
    let RowExtremes { max: m, min, nan } = row_extremes(l, row);
    if let Some(fill) = special_row_fill::<M>(m, nan, row.len(), policy, log_form) {
        return row.fill(fill);
    }
    let mv = l.splat(m);
    if log_form {
        let s = exp_shifted_sum::<L, M, false>(l, None, row, m, min);
        let log_s = l.splat(log::<Scalar, M>(Scalar::new(), s));
        map_registers_in_place_by::<L, 2>(
            l,
            row,
            #[inline(always)]
            |x| {
                let d = l.select(l.eq(x, mv), l.splat(0.0), l.sub(x, mv));
                l.sub(d, log_s)
            },
        );
    } else {
        let s = exp_shifted_sum::<L, M, true>(l, None, row, m, min);
        normalise::<L, M>(l, row, s);
    }
}

/// `e_i / s` (exact) or `e_i * (1/s)` (fast), in place.
#[inline(always)]
fn normalise<L: Lanes, M: Mode>(l: L, row: &mut [f32], s: f32) {
    if M::FAST {
        let inv = l.splat(1.0 / s);
        map_registers_in_place_by::<L, 4>(
            l,
            row,
            #[inline(always)]
            |e| l.mul(e, inv),
        );
    } else {
        let sv = l.splat(s);
        map_registers_in_place_by::<L, 4>(
            l,
            row,
            #[inline(always)]
            |e| l.div(e, sv),
        );
    }
}

/// Softmax of consecutive rows of `cols` entries, in one dispatch: row `i` of `dst` is the
/// softmax of row `i` of `src` (of `dst` itself, in place, when `src` is `None`), bit for bit
/// as [`softmax_row_into`] (or [`softmax_row`]) gives it row by row.
///
/// In exact mode each row is normalised in the same pass that finds the extremes of the next
/// row, a register of each per step: the normalisation is a division per register on a divider
/// of its own that is slow (a wide division issues far less often than a multiply), the
/// extremes pass is a few cheap operations per register on the other units, so the two
/// overlap; and the row is still in cache, just written by its exp pass. Fast mode's
/// normalisation is a multiply, no bottleneck: fused, it measured slower, so fast mode goes
/// row by row.
#[inline(always)]
pub fn softmax_rows<L: Lanes, M: Mode>(
    l: L,
    src: Option<&[f32]>,
    dst: &mut [f32],
    cols: usize,
    policy: MaskedRow,
) {
    if cols == 0 || dst.is_empty() {
        return;
    }
    debug_assert_eq!(dst.len() % cols, 0);
    debug_assert!(src.is_none_or(|s| s.len() == dst.len()));
    if M::FAST {
        for (i, row) in dst.chunks_exact_mut(cols).enumerate() {
            match src {
                Some(s) => {
                    softmax_row_into::<L, M>(l, &s[i * cols..(i + 1) * cols], row, policy, false)
                }
                None => softmax_row::<L, M>(l, row, policy, false),
            }
        }
        return;
    }
    let rows = dst.len() / cols;
    let mut extremes = row_extremes(l, src.map_or(&dst[..cols], |s| &s[..cols]));
    for i in 0..rows {
        let (row, after) = dst[i * cols..].split_at_mut(cols);
        let from = src.map(|s| &s[i * cols..(i + 1) * cols]);
        let RowExtremes { max: m, min, nan } = extremes;
        let sum = match special_row_fill::<M>(m, nan, cols, policy, false) {
            Some(fill) => {
                row.fill(fill);
                None
            }
            None => Some(exp_shifted_sum::<L, M, true>(l, from, row, m, min)),
        };
        if i + 1 == rows {
            if let Some(s) = sum {
                normalise::<L, M>(l, row, s);
            }
            break;
        }
        let next = src.map_or(&after[..cols], |s| &s[(i + 1) * cols..(i + 2) * cols]);
        extremes = match sum {
            None => row_extremes(l, next),
            Some(s) => {
                let sv = l.splat(s);
                row_extremes_beside(
                    l,
                    next,
                    #[inline(always)]
                    |start, len| {
                        let part = &mut row[start..start + len];
                        let e = l.load_partial(part, 0.0);
                        l.store_partial(l.div(e, sv), part);
                    },
                )
            }
        };
    }
}

/// [`softmax_row`] of `src` written to `dst` (equal lengths), with the same bits. Softmax reads
/// `src` in its first two passes (maximum; exp, stored to `dst`, and sum), so no copy of it is
/// made; log-softmax copies `src` to `dst` and works there.
#[inline(always)]
pub fn softmax_row_into<L: Lanes, M: Mode>(
    l: L,
    src: &[f32],
    dst: &mut [f32],
    policy: MaskedRow,
    log_form: bool,
) {
    debug_assert_eq!(src.len(), dst.len());
    if log_form || src.is_empty() {
        dst.copy_from_slice(src);
        return softmax_row::<L, M>(l, dst, policy, log_form);
    }
    let RowExtremes { max: m, min, nan } = row_extremes(l, src);
    if let Some(fill) = special_row_fill::<M>(m, nan, src.len(), policy, false) {
        return dst.fill(fill);
    }
    let s = exp_shifted_sum::<L, M, true>(l, Some(src), dst, m, min);
    normalise::<L, M>(l, dst, s);
}

/// What masks the scores of one row of attention: the keys from `end` on (a causal limit or
/// a key length), keys whose `keep` entry is `false`, and an additive term.
#[derive(Clone, Copy, Debug)]
pub struct ScoreMask<'a> {
    /// Keys `end..` are masked out.
    pub end: usize,
    /// `false` masks the key out (the row's length).
    pub keep: Option<&'a [bool]>,
    /// Added to the scaled score, one more rounding (the row's length).
    pub add: Option<&'a [f32]>,
}

impl<'a> ScoreMask<'a> {
    /// Nothing masked in a row of `n` keys.
    pub fn none(n: usize) -> Self {
        ScoreMask {
            end: n,
            keep: None,
            add: None,
        }
    }

    /// The leading keys of a row of `n` that this mask may leave visible: without a `keep`
    /// mask, those before `end`; every key after them is masked whatever its score, so it
    /// need not be read. With a `keep` mask, all `n`.
    pub fn visible(&self, n: usize) -> usize {
        if self.keep.is_none() {
            self.end.min(n)
        } else {
            n
        }
    }

    /// This mask over the first `len` keys of the row.
    fn prefix(&self, len: usize) -> ScoreMask<'a> {
        ScoreMask {
            end: self.end.min(len),
            keep: self.keep.map(|k| &k[..len]),
            add: self.add.map(|a| &a[..len]),
        }
    }
}

/// Scales and masks a row of raw scores in place: `x * scale`, then `+ add`, then `-inf` where
/// masked (whatever the score was, NaN included). One register at a time.
#[inline(always)]
pub fn scale_and_mask<L: Lanes>(l: L, row: &mut [f32], scale: f32, mask: &ScoreMask<'_>) {
    let w = L::WIDTH;
    let (sv, ninf) = (l.splat(scale), l.splat(f32::NEG_INFINITY));
    let end = mask.end.min(row.len());
    for (r, part) in row.chunks_mut(w).enumerate() {
        let start = r * w;
        if start >= end {
            part.fill(f32::NEG_INFINITY);
            continue;
        }
        let len = part.len();
        let mut x = l.mul(l.load_partial(part, 0.0), sv);
        if let Some(add) = mask.add {
            x = l.add(x, l.load_partial(&add[start..start + len], 0.0));
        }
        if mask.keep.is_none() && start + len <= end {
            // Every lane visible: nothing to mask.
            l.store_partial(x, part);
            continue;
        }
        // Masked lanes: past `end`, or `keep` false. Built as 0/1 lanes, then one compare.
        let mut open = [0f32; MAX_WIDTH];
        let visible = (end - start).min(len);
        match mask.keep {
            Some(keep) => {
                for (o, &k) in open.iter_mut().zip(&keep[start..start + visible]) {
                    *o = if k { 1.0 } else { 0.0 };
                }
            }
            None => open[..visible].fill(1.0),
        }
        let open = l.gt(l.load(&open), l.splat(0.0));
        l.store_partial(l.select(open, x, ninf), part);
    }
}

/// [`scale_and_mask`], then the softmax of the row.
///
/// The keys past the mask's visible ones ([`ScoreMask::visible`]: a causal limit or a key
/// length) are neither read nor scaled: the softmax runs over the visible keys, with the
/// bits of the whole row masked to `-inf` ([`softmax_row_visible`]).
#[inline(always)]
pub fn masked_softmax_row<L: Lanes, M: Mode>(
    l: L,
    row: &mut [f32],
    scale: f32,
    mask: &ScoreMask<'_>,
    policy: MaskedRow,
) {
    let visible = mask.visible(row.len());
    scale_and_mask(l, &mut row[..visible], scale, &mask.prefix(visible));
    softmax_row_visible::<L, M>(l, row, visible, policy);
}

/// The softmax of a row whose entries from `visible` on are masked, without reading them: the
/// bits of [`softmax_row`] of the row with those entries `-inf`. A masked entry adds
/// `exp(-inf) = +0` to a partial of the canonical sum, which changes no partial (each is a sum
/// of exps, never `-0`), and comes out `+0`; a row with nothing visible or a NaN takes the fill
/// of the whole row. With the masked entries out of the row, the visible ones can take the
/// exp's select-free form.
#[inline(always)]
fn softmax_row_visible<L: Lanes, M: Mode>(
    l: L,
    row: &mut [f32],
    visible: usize,
    policy: MaskedRow,
) {
    if visible == row.len() {
        return softmax_row::<L, M>(l, row, policy, false);
    }
    let n = row.len();
    let (head, tail) = row.split_at_mut(visible);
    let RowExtremes { max: m, min, nan } = row_extremes(l, head);
    if let Some(fill) = special_row_fill::<M>(m, nan, n, policy, false) {
        head.fill(fill);
        return tail.fill(fill);
    }
    let s = exp_shifted_sum::<L, M, true>(l, None, head, m, min);
    normalise::<L, M>(l, head, s);
    tail.fill(0.0);
}

/// One row through [`softmax_row`] (or [`softmax_row_into`] from `src`) or
/// [`masked_softmax_row`], inside a dispatch.
struct SoftmaxRow<'a, M> {
    src: Option<&'a [f32]>,
    row: &'a mut [f32],
    masked: Option<(f32, ScoreMask<'a>)>,
    policy: MaskedRow,
    log_form: bool,
    mode: core::marker::PhantomData<M>,
}

impl<M: Mode> WithLanes for SoftmaxRow<'_, M> {
    type Output = ();
    const USES_FMA: bool = M::FAST;
    #[inline(always)]
    fn run<L: Lanes>(self, l: L) {
        match self.masked {
            Some((scale, mask)) => {
                masked_softmax_row::<L, M>(l, self.row, scale, &mask, self.policy)
            }
            None => match self.src {
                Some(src) => softmax_row_into::<L, M>(l, src, self.row, self.policy, self.log_form),
                None => softmax_row::<L, M>(l, self.row, self.policy, self.log_form),
            },
        }
    }
}

compiled_once_per_mode! {
    /// Softmax (or log-softmax with `log_form`) of one row in mode `M` on `isa`.
    pub fn softmax_row_on(isa: Supported, row: &mut [f32], policy: MaskedRow, log_form: bool) =
        softmax_row_in_mode;
}

fn softmax_row_in_mode<M: Mode>(
    isa: Supported,
    row: &mut [f32],
    policy: MaskedRow,
    log_form: bool,
) {
    isa.dispatch(SoftmaxRow::<M> {
        src: None,
        row,
        masked: None,
        policy,
        log_form,
        mode: core::marker::PhantomData,
    })
}

compiled_once_per_mode! {
    /// Softmax (or log-softmax with `log_form`) of `src` into `dst` (equal lengths) in mode `M`
    /// on `isa`: the bits of [`softmax_row_on`] on a copy of `src`.
    pub fn softmax_row_into_on(
        isa: Supported,
        src: &[f32],
        dst: &mut [f32],
        policy: MaskedRow,
        log_form: bool,
    ) = softmax_row_into_in_mode;
}

fn softmax_row_into_in_mode<M: Mode>(
    isa: Supported,
    src: &[f32],
    dst: &mut [f32],
    policy: MaskedRow,
    log_form: bool,
) {
    isa.dispatch(SoftmaxRow::<M> {
        src: Some(src),
        row: dst,
        masked: None,
        policy,
        log_form,
        mode: core::marker::PhantomData,
    })
}

compiled_once_per_mode! {
    /// Scale, mask and softmax of one row of attention scores in mode `M` on `isa`.
    pub fn masked_softmax_row_on(
        isa: Supported,
        row: &mut [f32],
        scale: f32,
        mask: ScoreMask<'_>,
        policy: MaskedRow,
    ) = masked_softmax_row_in_mode;
}

fn masked_softmax_row_in_mode<M: Mode>(
    isa: Supported,
    row: &mut [f32],
    scale: f32,
    mask: ScoreMask<'_>,
    policy: MaskedRow,
) {
    isa.dispatch(SoftmaxRow::<M> {
        src: None,
        row,
        masked: Some((scale, mask)),
        policy,
        log_form: false,
        mode: core::marker::PhantomData,
    })
}

/// Consecutive rows of `cols` raw scores, row `i` masked from key `ends[i]` on (a causal limit
/// or a key length, nothing else): each scaled by `scale`, then its softmax, in one dispatch;
/// the bits of [`masked_softmax_row_on`] row by row.
#[inline(always)]
pub fn ragged_softmax_rows<L: Lanes, M: Mode>(
    l: L,
    scores: &mut [f32],
    cols: usize,
    scale: f32,
    ends: &[usize],
    policy: MaskedRow,
) {
    if cols == 0 {
        return;
    }
    for (row, &end) in scores.chunks_exact_mut(cols).zip(ends) {
        let mask = ScoreMask {
            end,
            keep: None,
            add: None,
        };
        masked_softmax_row::<L, M>(l, row, scale, &mask, policy);
    }
}

/// [`ragged_softmax_rows`] inside a dispatch.
struct RaggedSoftmaxRows<'a, M> {
    scores: &'a mut [f32],
    cols: usize,
    scale: f32,
    ends: &'a [usize],
    policy: MaskedRow,
    mode: core::marker::PhantomData<M>,
}

impl<M: Mode> WithLanes for RaggedSoftmaxRows<'_, M> {
    type Output = ();
    const USES_FMA: bool = M::FAST;
    #[inline(always)]
    fn run<L: Lanes>(self, l: L) {
        ragged_softmax_rows::<L, M>(
            l,
            self.scores,
            self.cols,
            self.scale,
            self.ends,
            self.policy,
        )
    }
}

compiled_once_per_mode! {
    /// [`ragged_softmax_rows`] in mode `M` on `isa`: row `i` of `scores` (rows of `cols`)
    /// scaled, masked from key `ends[i]` on, and through its softmax.
    pub fn ragged_softmax_rows_on(
        isa: Supported,
        scores: &mut [f32],
        cols: usize,
        scale: f32,
        ends: &[usize],
        policy: MaskedRow,
    ) = ragged_softmax_rows_in_mode;
}

fn ragged_softmax_rows_in_mode<M: Mode>(
    isa: Supported,
    scores: &mut [f32],
    cols: usize,
    scale: f32,
    ends: &[usize],
    policy: MaskedRow,
) {
    isa.dispatch(RaggedSoftmaxRows::<M> {
        scores,
        cols,
        scale,
        ends,
        policy,
        mode: core::marker::PhantomData,
    })
}

/// Consecutive rows through [`softmax_rows`], inside a dispatch.
struct SoftmaxRows<'a, M> {
    src: Option<&'a [f32]>,
    dst: &'a mut [f32],
    cols: usize,
    policy: MaskedRow,
    mode: core::marker::PhantomData<M>,
}

impl<M: Mode> WithLanes for SoftmaxRows<'_, M> {
    type Output = ();
    const USES_FMA: bool = M::FAST;
    #[inline(always)]
    fn run<L: Lanes>(self, l: L) {
        softmax_rows::<L, M>(l, self.src, self.dst, self.cols, self.policy)
    }
}

compiled_once_per_mode! {
    /// Softmax of the consecutive rows of `cols` entries of `src` into `dst` (equal lengths, a
    /// multiple of `cols`), or of `dst` in place when `src` is `None`, in mode `M` on `isa`:
    /// the bits of [`softmax_row_into_on`] row by row, in one dispatch.
    pub fn softmax_rows_on(
        isa: Supported,
        src: Option<&[f32]>,
        dst: &mut [f32],
        cols: usize,
        policy: MaskedRow,
    ) = softmax_rows_in_mode;
}

fn softmax_rows_in_mode<M: Mode>(
    isa: Supported,
    src: Option<&[f32]>,
    dst: &mut [f32],
    cols: usize,
    policy: MaskedRow,
) {
    isa.dispatch(SoftmaxRows::<M> {
        src,
        dst,
        cols,
        policy,
        mode: core::marker::PhantomData,
    })
}

/// The running state of an online (flash-attention) softmax over a row split into key tiles:
/// the running maximum and the running sum of `exp(x - max)`. Its result depends on how the
/// row is split into tiles (the sum is rescaled at each new maximum), so only fast mode uses it;
/// exact attention takes the two-pass softmax of whole rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct OnlineSoftmax {
    max: f32,
    sum: f32,
    /// A NaN score was seen: the row's result is NaN, whatever the tiles.
    nan: bool,
}

impl OnlineSoftmax {
    /// The state before any tile.
    pub(crate) fn new() -> Self {
        OnlineSoftmax {
            max: f32::NEG_INFINITY,
            sum: 0.0,
            nan: false,
        }
    }

    /// Absorbs a tile of raw scores on `isa`: scales and masks them ([`scale_and_mask`]),
    /// overwrites them with `exp(x - max_new)`, updates the running sum, and returns
    /// `exp(max_old - max_new)`, the factor by which the caller rescales what it accumulated
    /// with the old maximum. A tile that is entirely masked (`-inf`) becomes zeros and returns
    /// `1` while nothing unmasked has been seen, never NaN. A NaN score makes the row NaN:
    /// [`OnlineSoftmax::normalizer`] is then the canonical NaN, whatever the other tiles hold.
    pub(crate) fn update<M: Mode>(
        &mut self,
        isa: Supported,
        tile: &mut [f32],
        scale: f32,
        mask: ScoreMask<'_>,
    ) -> f32 {
        online_update::<M>(self, isa, tile, scale, mask)
    }

    /// `1 / sum`, the factor that normalises the accumulated output: the canonical NaN if a
    /// score was NaN; `None` if nothing was unmasked (the caller applies its [`MaskedRow`]
    /// policy).
    pub(crate) fn normalizer(&self) -> Option<f32> {
        if self.nan {
            return Some(CANONICAL_NAN);
        }
        (self.max != f32::NEG_INFINITY).then(|| 1.0 / self.sum)
    }
}

compiled_once_per_mode! {
    /// [`OnlineSoftmax::update`].
    fn online_update(
        state: &mut OnlineSoftmax,
        isa: Supported,
        tile: &mut [f32],
        scale: f32,
        mask: ScoreMask<'_>,
    ) -> f32 = online_update_in_mode;
}

fn online_update_in_mode<M: Mode>(
    state: &mut OnlineSoftmax,
    isa: Supported,
    tile: &mut [f32],
    scale: f32,
    mask: ScoreMask<'_>,
) -> f32 {
    isa.dispatch(OnlineUpdate::<M> {
        state,
        tile,
        scale,
        mask,
        mode: core::marker::PhantomData,
    })
}

struct OnlineUpdate<'a, M> {
    state: &'a mut OnlineSoftmax,
    tile: &'a mut [f32],
    scale: f32,
    mask: ScoreMask<'a>,
    mode: core::marker::PhantomData<M>,
}

impl<M: Mode> WithLanes for OnlineUpdate<'_, M> {
    type Output = f32;
    const USES_FMA: bool = M::FAST;
    #[inline(always)]
    fn run<L: Lanes>(self, l: L) -> f32 {
        online_update_row::<L, M>(l, self.state, self.tile, self.scale, &self.mask)
    }
}

/// [`OnlineSoftmax::update`] of one row's tile, inside a dispatch.
#[inline(always)]
fn online_update_row<L: Lanes, M: Mode>(
    l: L,
    state: &mut OnlineSoftmax,
    tile: &mut [f32],
    scale: f32,
    mask: &ScoreMask<'_>,
) -> f32 {
    // The keys past the visible ones are masked whatever their scores: not read, their exps
    // `+0` (see `softmax_row_visible`).
    let visible = mask.visible(tile.len());
    let (head, tail) = tile.split_at_mut(visible);
    scale_and_mask(l, head, scale, &mask.prefix(visible));
    let RowExtremes {
        max: tile_max,
        min,
        nan,
    } = row_extremes(l, head);
    state.nan |= nan;
    let old = state.max;
    let new = if tile_max > old { tile_max } else { old };
    if new == f32::NEG_INFINITY || state.nan {
        tile.fill(0.0);
        return 1.0;
    }
    let rescale = exp_shift::<Scalar, M, false>(Scalar::new(), old, new, new == f32::INFINITY);
    let s = exp_shifted_sum::<L, M, true>(l, None, head, new, min);
    tail.fill(0.0);
    state.sum = state.sum * rescale + s;
    state.max = new;
    rescale
}

compiled_once_per_mode! {
    /// [`OnlineSoftmax::update`] of consecutive rows of `cols` raw scores (a tile of several
    /// query rows), row `i` masked from key `ends[i]` of the tile on and nothing else, with
    /// state `states[i]`, its rescale factor written to `rescale[i]`: in one dispatch, the
    /// bits of one update per row.
    pub(crate) fn online_update_rows(
        states: &mut [OnlineSoftmax],
        isa: Supported,
        tile: &mut [f32],
        cols: usize,
        scale: f32,
        ends: &[usize],
        rescale: &mut [f32],
    ) = online_update_rows_in_mode;
}

fn online_update_rows_in_mode<M: Mode>(
    states: &mut [OnlineSoftmax],
    isa: Supported,
    tile: &mut [f32],
    cols: usize,
    scale: f32,
    ends: &[usize],
    rescale: &mut [f32],
) {
    isa.dispatch(OnlineUpdateRows::<M> {
        states,
        tile,
        cols,
        scale,
        ends,
        rescale,
        mode: core::marker::PhantomData,
    })
}

struct OnlineUpdateRows<'a, M> {
    states: &'a mut [OnlineSoftmax],
    tile: &'a mut [f32],
    cols: usize,
    scale: f32,
    ends: &'a [usize],
    rescale: &'a mut [f32],
    mode: core::marker::PhantomData<M>,
}

impl<M: Mode> WithLanes for OnlineUpdateRows<'_, M> {
    type Output = ();
    const USES_FMA: bool = M::FAST;
    #[inline(always)]
    fn run<L: Lanes>(self, l: L) {
        if self.cols == 0 {
            return;
        }
        let rows = self.tile.chunks_exact_mut(self.cols);
        for (((row, state), &end), r) in rows
            .zip(self.states.iter_mut())
            .zip(self.ends)
            .zip(self.rescale.iter_mut())
        {
            let mask = ScoreMask {
                end,
                keep: None,
                add: None,
            };
            *r = online_update_row::<L, M>(l, state, row, self.scale, &mask);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::Isa;

    /// The row-level range decision changes no bit: a row whose spread `max - min` sits at,
    /// just inside or just outside each mode's limit gives the softmax of the same row with a
    /// `-inf` appended (which forces the per-register path, and adds `exp(-inf) = +0` to the
    /// last partial of the canonical sum, which changes no sum), on every instruction set and
    /// in both modes, both for the in-place and the `src -> dst` form.
    #[test]
    fn the_row_range_decision_changes_no_bit() {
        fn check<M: Mode>(limit: f32) {
            let mut took_both = [false; 2];
            for isa in Isa::available() {
                let isa = isa.supported().unwrap();
                for spread in [
                    10.0,
                    -limit.next_down(),
                    -limit,
                    -limit.next_up(),
                    -limit + 0.01,
                    -limit - 0.01,
                    120.0,
                ] {
                    for n in [2, 7, 16, 37, 100] {
                        let top = 3.25f32;
                        // Entries in [top - 5, top], then the maximum and the minimum placed.
                        let mut row: Vec<f32> = values(n, n as u32)
                            .iter()
                            .map(|v| top - v.abs() / 2.0)
                            .collect();
                        row[n / 2] = top;
                        row[n - 1] = top - spread;
                        took_both[shift_in_range::<M>(top - spread, top) as usize] = true;
                        let mut general = row.clone();
                        general.push(f32::NEG_INFINITY);
                        softmax_row_on::<M>(isa, &mut general, MaskedRow::Zero, false);
                        let mut in_place = row.clone();
                        softmax_row_on::<M>(isa, &mut in_place, MaskedRow::Zero, false);
                        let mut into = vec![0f32; n];
                        softmax_row_into_on::<M>(isa, &row, &mut into, MaskedRow::Zero, false);
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        let at = format!("{:?} spread {spread} n {n}", isa.isa());
                        assert_eq!(bits(&in_place), bits(&general[..n]), "in place, {at}");
                        assert_eq!(bits(&into), bits(&general[..n]), "into, {at}");
                    }
                }
            }
            assert_eq!(took_both, [true, true], "both paths taken");
        }
        check::<Exact>(EXP_NONPOSITIVE_FLUSH);
        check::<crate::mode::Fast>(FAST_EXP_LOW);
    }

    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 8) as f32 / (1u32 << 24) as f32 * 20.0 - 10.0
            })
            .collect()
    }

    /// The keys past a causal limit are not read (`ScoreMask::visible`), with the bits of the
    /// whole row masked: the same limit written as a `keep` mask (which takes the whole-row path)
    /// gives the same bits, for the two-pass softmax under every policy and for the online
    /// update (its tile and its state), on every instruction set and in both modes. The rows
    /// hold a NaN and an infinity past the limit (which must not show), and some a `+inf`, a
    /// NaN or only `-inf` before it.
    #[test]
    fn keys_past_the_limit_are_not_read_and_change_no_bit() {
        fn check<M: Mode>() {
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for isa in Isa::available() {
                let isa = isa.supported().unwrap();
                for n in [1usize, 5, 16, 33, 100] {
                    let add: Vec<f32> = (0..n).map(|i| 0.125 * (i % 5) as f32).collect();
                    for case in 0..4 {
                        let mut raw = values(n, 7 + n as u32);
                        match case {
                            1 => raw[0] = f32::INFINITY,
                            2 => raw[0] = f32::NAN,
                            3 => raw.fill(f32::NEG_INFINITY),
                            _ => {}
                        }
                        for end in [0, 1, n / 2, n.saturating_sub(1), n] {
                            if end < n {
                                raw[n - 1] = f32::NAN;
                            }
                            if end + 1 < n {
                                raw[end] = f32::INFINITY;
                            }
                            let keep: Vec<bool> = (0..n).map(|j| j < end).collect();
                            for add in [None, Some(&add[..])] {
                                let limit = ScoreMask {
                                    end,
                                    keep: None,
                                    add,
                                };
                                let written = ScoreMask {
                                    end: n,
                                    keep: Some(&keep),
                                    add,
                                };
                                assert_eq!(limit.visible(n), end);
                                let at = format!("{:?} n {n} case {case} end {end}", isa.isa());
                                for policy in [MaskedRow::Zero, MaskedRow::Uniform, MaskedRow::Nan]
                                {
                                    let (mut a, mut b) = (raw.clone(), raw.clone());
                                    masked_softmax_row_on::<M>(isa, &mut a, 0.75, limit, policy);
                                    masked_softmax_row_on::<M>(isa, &mut b, 0.75, written, policy);
                                    assert_eq!(bits(&a), bits(&b), "{policy:?} {at}");
                                }
                                let mut seen = OnlineSoftmax::new();
                                let mut first = values(n, 3);
                                seen.update::<M>(isa, &mut first, 0.5, ScoreMask::none(n));
                                for start in [OnlineSoftmax::new(), seen] {
                                    let (mut sa, mut sb) = (start, start);
                                    let (mut a, mut b) = (raw.clone(), raw.clone());
                                    let ra = sa.update::<M>(isa, &mut a, 0.75, limit);
                                    let rb = sb.update::<M>(isa, &mut b, 0.75, written);
                                    assert_eq!(bits(&a), bits(&b), "online tile, {at}");
                                    assert_eq!(
                                        bits(&[ra, sa.sum, sa.max]),
                                        bits(&[rb, sb.sum, sb.max]),
                                        "online state, {at}"
                                    );
                                    assert_eq!(sa.nan, sb.nan, "online NaN, {at}");
                                }
                            }
                        }
                    }
                }
            }
        }
        check::<Exact>();
        check::<crate::mode::Fast>();
    }

    /// Rows in one dispatch with their own limits give the bits of one call per row, on every
    /// instruction set, in both modes and under every policy (limits of none, some, all and more
    /// than all keys; a NaN and an infinity past a limit): the two-pass softmax and the online
    /// update.
    #[test]
    fn ragged_rows_give_the_bits_of_one_call_per_row() {
        fn check<M: Mode>() {
            let cols = 37;
            let ends = [0, 1, 5, 16, 17, 36, 37, 50];
            let mut raw = values(cols * ends.len(), 11);
            for (i, &end) in ends.iter().enumerate() {
                if end < cols {
                    raw[i * cols + end] = f32::NAN;
                    raw[i * cols + cols - 1] = f32::INFINITY;
                }
            }
            for isa in Isa::available() {
                let isa = isa.supported().unwrap();
                for policy in [MaskedRow::Zero, MaskedRow::Uniform, MaskedRow::Nan] {
                    let mut together = raw.clone();
                    ragged_softmax_rows_on::<M>(isa, &mut together, cols, 0.3, &ends, policy);
                    let mut alone = raw.clone();
                    for (row, &end) in alone.chunks_exact_mut(cols).zip(&ends) {
                        let mask = ScoreMask {
                            end,
                            keep: None,
                            add: None,
                        };
                        masked_softmax_row_on::<M>(isa, row, 0.3, mask, policy);
                    }
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&together), bits(&alone), "{:?} {policy:?}", isa.isa());
                }
                // The online update likewise, from a fresh state and from one that has seen a
                // tile.
                let mut seen = OnlineSoftmax::new();
                seen.update::<M>(isa, &mut values(cols, 4), 0.5, ScoreMask::none(cols));
                for start in [OnlineSoftmax::new(), seen] {
                    let mut states = vec![start; ends.len()];
                    let (mut tile, mut rescale) = (raw.clone(), vec![0f32; ends.len()]);
                    online_update_rows::<M>(
                        &mut states,
                        isa,
                        &mut tile,
                        cols,
                        0.3,
                        &ends,
                        &mut rescale,
                    );
                    for (i, &end) in ends.iter().enumerate() {
                        let mut st = start;
                        let mut row = raw[i * cols..(i + 1) * cols].to_vec();
                        let mask = ScoreMask {
                            end,
                            keep: None,
                            add: None,
                        };
                        let r = st.update::<M>(isa, &mut row, 0.3, mask);
                        let at = format!("{:?} row {i}", isa.isa());
                        assert_eq!(r.to_bits(), rescale[i].to_bits(), "rescale, {at}");
                        assert_eq!(st, states[i], "state, {at}");
                        let got = &tile[i * cols..(i + 1) * cols];
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(got), bits(&row), "tile, {at}");
                    }
                }
            }
        }
        check::<Exact>();
        check::<crate::mode::Fast>();
    }

    #[test]
    fn online_softmax_over_tiles_matches_the_two_pass_softmax_and_survives_masked_tiles() {
        let isa = Isa::detect().supported().unwrap();
        let row = values(200, 6);
        let mut with_masked = row.clone();
        with_masked[64..128].fill(f32::NEG_INFINITY); // a fully masked tile
        for x in [row, with_masked] {
            let mut two_pass = x.clone();
            softmax_row_on::<Exact>(isa, &mut two_pass, MaskedRow::Zero, false);
            // Online over tiles of 64: track the rescaled exps, then normalise.
            let mut state = OnlineSoftmax::new();
            let mut probs = vec![0f32; x.len()];
            for (t, tile) in x.chunks(64).enumerate() {
                let mut e = tile.to_vec();
                let rescale = state.update::<Exact>(isa, &mut e, 1.0, ScoreMask::none(tile.len()));
                assert!(rescale.is_finite() && e.iter().all(|v| v.is_finite()));
                for p in &mut probs[..t * 64] {
                    *p *= rescale;
                }
                probs[t * 64..t * 64 + e.len()].copy_from_slice(&e);
            }
            let norm = state.normalizer().unwrap();
            for (p, w) in probs.iter().zip(&two_pass) {
                let got = p * norm;
                assert!(
                    (got - w).abs() <= 1e-6 * w.max(1e-30) + 1e-12,
                    "{got} vs {w}"
                );
            }
        }
        // A state that has seen only masked tiles stays finite and reports no normaliser.
        let mut state = OnlineSoftmax::new();
        let mut t = [f32::NEG_INFINITY; 8];
        assert_eq!(
            state.update::<crate::mode::Fast>(isa, &mut t, 1.0, ScoreMask::none(8)),
            1.0
        );
        assert_eq!(t, [0.0; 8]);
        assert_eq!(state.normalizer(), None);
        let mut t2 = [0.0f32, 1.0];
        assert_eq!(
            state.update::<crate::mode::Fast>(isa, &mut t2, 1.0, ScoreMask::none(2)),
            0.0
        );
        assert!(state.sum.is_finite() && state.max == 1.0);
        // A NaN score in any tile makes the row NaN, before or after finite tiles.
        let mut t3 = [f32::NAN, 0.0];
        state.update::<crate::mode::Fast>(isa, &mut t3, 1.0, ScoreMask::none(2));
        let mut t4 = [5.0f32, 1.0];
        state.update::<crate::mode::Fast>(isa, &mut t4, 1.0, ScoreMask::none(2));
        assert!(state.normalizer().is_some_and(f32::is_nan));
    }

    #[test]
    fn scale_and_mask_masks_past_the_end_and_where_keep_is_false_on_every_isa() {
        for isa in Isa::available() {
            for n in [1usize, 5, 8, 17, 40] {
                let raw: Vec<f32> = (0..n).map(|i| i as f32 - 3.0).collect();
                let keep: Vec<bool> = (0..n).map(|i| i % 3 != 1).collect();
                let add: Vec<f32> = (0..n).map(|i| 0.25 * i as f32).collect();
                for end in [0, 1, n / 2, n] {
                    let mask = ScoreMask {
                        end,
                        keep: Some(&keep),
                        add: Some(&add),
                    };
                    let mut row = raw.clone();
                    row[0] = f32::NAN; // masked or not, the NaN only shows where visible
                    struct Op<'a>(&'a mut [f32], ScoreMask<'a>);
                    impl WithLanes for Op<'_> {
                        type Output = ();
                        const USES_FMA: bool = false;
                        fn run<L: Lanes>(self, l: L) {
                            scale_and_mask(l, self.0, 0.5, &self.1)
                        }
                    }
                    isa.supported().unwrap().dispatch(Op(&mut row, mask));
                    for j in 0..n {
                        let want = if j >= end || !keep[j] {
                            f32::NEG_INFINITY
                        } else if j == 0 {
                            f32::NAN
                        } else {
                            raw[j] * 0.5 + add[j]
                        };
                        assert_eq!(
                            row[j].to_bits(),
                            want.to_bits(),
                            "{isa} n {n} end {end} j {j}"
                        );
                    }
                }
            }
        }
    }
}
