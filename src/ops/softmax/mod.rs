//! Softmax rows: max, shifted exp with the canonical sum, normalisation. No tensors here: rows
//! are `&mut [f32]`. The scale-and-mask step of attention scores is in [`scores`], the online
//! (flash-attention) accumulator in [`online`].
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

pub mod online;
pub mod scores;

use super::exp::{
    EXP_NONPOSITIVE_FLUSH, FAST_EXP_LOW, exp_nonpositive, exp_one_scale, fast_exp,
    fast_exp_in_range,
};
use super::map::map_registers_in_place_by;
use super::reduce::{RowExtremes, canonical_sum_grouped, row_extremes, row_extremes_beside};
use super::{CANONICAL_NAN, SrcDst, log::log};
use crate::lanes::{Exact, LaneOp, Lanes, Mode, Scalar, compiled_once_per_mode, prefetch_part};

/// What a softmax row whose entries are all `-inf` (fully masked) gives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MaskedRow {
    /// Every output `+0` (log-softmax: `-inf`), as PyTorch's SDPA and the ONNX Attention op.
    #[default]
    Zero,
    /// Every output `1/n` (log-softmax: `-log(n)`), as if nothing were masked. In attention,
    /// the mean of the value rows of the batch item's real keys: padding (past a key length,
    /// or dropped by a key-padding mask) is not a key and is never averaged.
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
/// The pass brings `ahead` (the next row, or empty) into the cache as it goes.
#[inline(always)]
fn exp_shifted_sum<L: Lanes, M: Mode, const STORE: bool>(
    l: L,
    src: Option<&[f32]>,
    row: &mut [f32],
    m: f32,
    lowest: f32,
    ahead: &[f32],
) -> f32 {
    if shift_in_range::<M>(lowest, m) {
        exp_shifted_sum_on::<L, M, STORE, true, false>(l, src, row, 1.0, m, ahead)
    } else {
        exp_shifted_sum_on::<L, M, STORE, false, false>(l, src, row, 1.0, m, ahead)
    }
}

/// [`exp_shifted_sum`] of the row's entries each multiplied by `scale` first (one rounding,
/// in the register: `x_i` is `row[i] * scale`, `m` and `lowest` those of the products), the
/// exps written to `row`: a pass that scaled the row in place would give the same bits.
#[inline(always)]
fn exp_scaled_shifted_sum<L: Lanes, M: Mode>(
    l: L,
    row: &mut [f32],
    scale: f32,
    m: f32,
    lowest: f32,
) -> f32 {
    if shift_in_range::<M>(lowest, m) {
        exp_shifted_sum_on::<L, M, true, true, true>(l, None, row, scale, m, &[])
    } else {
        exp_shifted_sum_on::<L, M, true, false, true>(l, None, row, scale, m, &[])
    }
}

/// [`exp_shifted_sum`] with the range known; with `SCALED` each entry is multiplied by
/// `scale` as it is loaded. In range, each group prefetches the same offset of `ahead`.
#[inline(always)]
fn exp_shifted_sum_on<
    L: Lanes,
    M: Mode,
    const STORE: bool,
    const IN_RANGE: bool,
    const SCALED: bool,
>(
    l: L,
    src: Option<&[f32]>,
    row: &mut [f32],
    scale: f32,
    m: f32,
    ahead: &[f32],
) -> f32 {
    // In range (no select in the exp), the exps of a wide group of registers (four on AVX2)
    // are formed together, one straight block of independent chains side by side, then summed
    // register by register: formed one register after another, each exp's long dependent
    // chain sat alone in the program order, and the out-of-order window held too few of them
    // to keep the pipes busy (the pass ran well behind the exp kernel, which takes the same
    // group). With the selects of the out-of-range form (masked rows) one register at a time
    // (fast mode lost with a group there: BENCHMARKS.md). The closures are inlined by force
    // (see `LaneOp`).
    let n = row.len();
    if IN_RANGE {
        let g = l.wide_group();
        canonical_sum_grouped(
            l,
            g,
            n,
            row,
            #[inline(always)]
            |row, start| {
                prefetch_part(ahead, start, <L::WideGroup as Lanes>::WIDTH);
                exp_shift_at::<_, M, STORE, true, SCALED>(
                    g,
                    src,
                    row,
                    start,
                    <L::WideGroup as Lanes>::WIDTH,
                    scale,
                    m,
                )
            },
            #[inline(always)]
            |row, start, len| {
                exp_shift_at::<L, M, STORE, true, SCALED>(l, src, row, start, len, scale, m)
            },
        )
    } else {
        // `l` as its own group: no group is formed. A row out of range (masked) is rare: no
        // prefetch.
        canonical_sum_grouped(
            l,
            l,
            n,
            row,
            #[inline(always)]
            |row, start| {
                exp_shift_at::<L, M, STORE, false, SCALED>(l, src, row, start, L::WIDTH, scale, m)
            },
            #[inline(always)]
            |row, start, len| {
                exp_shift_at::<L, M, STORE, false, SCALED>(l, src, row, start, len, scale, m)
            },
        )
    }
}

/// `exp(x - m)` of the register of elements `start..start + len` of `src` (of `row` when
/// `src` is `None`), each `x` times `scale` first with `SCALED`, stored to `row` with `STORE`.
#[inline(always)]
fn exp_shift_at<L: Lanes, M: Mode, const STORE: bool, const IN_RANGE: bool, const SCALED: bool>(
    l: L,
    src: Option<&[f32]>,
    row: &mut [f32],
    start: usize,
    len: usize,
    scale: f32,
    m: f32,
) -> L::F {
    let part = &mut row[start..start + len];
    let from = src.map_or(&*part, |s| &s[start..start + len]);
    let x = l.load_partial(from, f32::NEG_INFINITY);
    let x = if SCALED { l.mul(x, l.splat(scale)) } else { x };
    let e = exp_shift::<L, M, IN_RANGE>(l, x, l.splat(m), m == f32::INFINITY);
    if STORE {
        l.store_partial(e, part);
    }
    e
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
    if !log_form {
        return softmax_row_ahead::<L, M>(l, None, row, policy, &[]);
    }
    let RowExtremes { max: m, min, nan } = row_extremes(l, row);
    if let Some(fill) = special_row_fill::<M>(m, nan, row.len(), policy, true) {
        return row.fill(fill);
    }
    let mv = l.splat(m);
    let s = exp_shifted_sum::<L, M, false>(l, None, row, m, min, &[]);
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
}

/// Softmax of `src` (of `row` itself when `src` is `None`) written to `row`, its exp pass
/// prefetching `ahead`: [`softmax_row`] or [`softmax_row_into`], the same bits.
#[inline(always)]
fn softmax_row_ahead<L: Lanes, M: Mode>(
    l: L,
    src: Option<&[f32]>,
    row: &mut [f32],
    policy: MaskedRow,
    ahead: &[f32],
) {
    let RowExtremes { max: m, min, nan } = row_extremes(l, src.unwrap_or(row));
    if let Some(fill) = special_row_fill::<M>(m, nan, row.len(), policy, false) {
        return row.fill(fill);
    }
    let s = exp_shifted_sum::<L, M, true>(l, src, row, m, min, ahead);
    normalise::<L, M>(l, row, s);
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

/// Entries in a 4 KiB page.
const PAGE: usize = 1024;

/// The part of the next row exact mode's exp pass prefetches: its first 4 KiB. The hardware
/// prefetchers follow a stream within a 4 KiB page but start again at each new one, so a row
/// of a page or less (1,024 entries, the common width) would wait on memory at its start,
/// every row; a longer row has the rest of its pages streamed, and prefetching all of it
/// crowded out of L1 the row being worked on (AVX-512, rows of 4,096: slower).
fn first_page(next: &[f32]) -> &[f32] {
    &next[..next.len().min(PAGE)]
}

/// The part of the next row fast mode's exp pass prefetches: all of it where rows are a page
/// or less and registers at most 256 bits, nothing otherwise. Fast mode's exp pass is short:
/// on AVX-512 it ends before the page arrives, and its prefetches waited for the line fill
/// buffers and held the pass up (rows of 1,024: slower, whatever part of the row was asked
/// for); on AVX2 the pass is twice as long and the next row arrives in time. On rows of
/// several pages the hardware streams all but the first page, and asking for that one lost
/// (AVX2, rows of 4,096).
fn fast_ahead<L: Lanes>(next: &[f32], cols: usize) -> &[f32] {
    if cols <= PAGE && L::WIDTH <= 8 {
        &next[..next.len().min(cols)]
    } else {
        &[]
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
/// row by row, its exp pass prefetching [`fast_ahead`] of the next row.
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
    let rows = dst.len() / cols;
    if M::FAST {
        for i in 0..rows {
            let (row, after) = dst[i * cols..].split_at_mut(cols);
            match src {
                Some(s) => {
                    let ahead = fast_ahead::<L>(&s[(i + 1) * cols..], cols);
                    let from = &s[i * cols..(i + 1) * cols];
                    softmax_row_ahead::<L, M>(l, Some(from), row, policy, ahead)
                }
                None => {
                    softmax_row_ahead::<L, M>(l, None, row, policy, fast_ahead::<L>(after, cols))
                }
            }
        }
        return;
    }
    let mut extremes = row_extremes(l, src.map_or(&dst[..cols], |s| &s[..cols]));
    for i in 0..rows {
        let (row, after) = dst[i * cols..].split_at_mut(cols);
        let from = src.map(|s| &s[i * cols..(i + 1) * cols]);
        let RowExtremes { max: m, min, nan } = extremes;
        let next = src.map_or(&after[..], |s| &s[(i + 1) * cols..]);
        let next = &next[..cols.min(next.len())];
        let sum = match special_row_fill::<M>(m, nan, cols, policy, false) {
            Some(fill) => {
                row.fill(fill);
                None
            }
            None => Some(exp_shifted_sum::<L, M, true>(
                l,
                from,
                row,
                m,
                min,
                first_page(next),
            )),
        };
        if i + 1 == rows {
            if let Some(s) = sum {
                normalise::<L, M>(l, row, s);
            }
            break;
        }
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
    softmax_row_ahead::<L, M>(l, Some(src), dst, policy, &[]);
}

/// The softmax of a row whose entries from `visible` on are masked, without reading them: the
/// bits of [`softmax_row`] of the row with those entries `-inf`. A masked entry adds
/// `exp(-inf) = +0` to a partial of the canonical sum, which changes no partial (each is a sum
/// of exps, never `-0`), and comes out `+0`; a row with nothing visible or a NaN takes the fill
/// of the whole row. With the masked entries out of the row, the visible ones can take the
/// exp's select-free form.
#[inline(always)]
pub(super) fn softmax_row_visible<L: Lanes, M: Mode>(
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
    let s = exp_shifted_sum::<L, M, true>(l, None, head, m, min, &[]);
    normalise::<L, M>(l, head, s);
    tail.fill(0.0);
}

/// [`softmax_row_visible`] of the row with each visible entry multiplied by `scale` (positive
/// and finite) first: the bits of scaling them in place, then the softmax, without that pass.
/// The products are formed in the exp pass; rounding is monotonic, so their maximum and
/// minimum are the entries' maximum and minimum times `scale`, and a product is NaN exactly
/// where the entry is.
#[inline(always)]
pub(super) fn softmax_row_visible_scaled<L: Lanes, M: Mode>(
    l: L,
    row: &mut [f32],
    visible: usize,
    scale: f32,
    policy: MaskedRow,
) {
    debug_assert!(scale > 0.0 && scale.is_finite());
    let n = row.len();
    let (head, tail) = row.split_at_mut(visible);
    let RowExtremes { max, min, nan } = row_extremes(l, head);
    let (m, lowest) = (max * scale, min * scale);
    if let Some(fill) = special_row_fill::<M>(m, nan, n, policy, false) {
        head.fill(fill);
        return tail.fill(fill);
    }
    let s = exp_scaled_shifted_sum::<L, M>(l, head, scale, m, lowest);
    normalise::<L, M>(l, head, s);
    tail.fill(0.0);
}

/// Softmax (or log-softmax with `log_form`) of one row, from `io.src` into `io.dst` or in
/// place: [`softmax_row_into`] or [`softmax_row`], with the same bits either way.
pub struct SoftmaxRow<'a> {
    /// The row.
    pub io: SrcDst<'a>,
    /// What a fully masked row gives.
    pub policy: MaskedRow,
    /// Log-softmax instead of softmax.
    pub log_form: bool,
}

impl LaneOp for SoftmaxRow<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        match self.io.src {
            Some(src) => softmax_row_into::<L, M>(l, src, self.io.dst, self.policy, self.log_form),
            None => softmax_row::<L, M>(l, self.io.dst, self.policy, self.log_form),
        }
    }
}

compiled_once_per_mode!(SoftmaxRow<'_>);

/// Softmax of the consecutive rows of `cols` entries of `io` (a multiple of `cols`), in one
/// dispatch: [`softmax_rows`], the bits of [`SoftmaxRow`] row by row.
pub struct SoftmaxRows<'a> {
    /// The rows.
    pub io: SrcDst<'a>,
    /// Entries per row.
    pub cols: usize,
    /// What a fully masked row gives.
    pub policy: MaskedRow,
}

impl LaneOp for SoftmaxRows<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        softmax_rows::<L, M>(l, self.io.src, self.io.dst, self.cols, self.policy)
    }
}

compiled_once_per_mode!(SoftmaxRows<'_>);

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::{Fast, Isa};

    /// The row-level range decision changes no bit: a row whose spread `max - min` sits at,
    /// just inside or just outside each mode's limit gives the softmax of the same row with a
    /// `-inf` appended (which forces the per-register path, and adds `exp(-inf) = +0` to the
    /// last partial of the canonical sum, which changes no sum), on every instruction set and
    /// in both modes, both for the in-place and the `src -> dst` form.
    pub fn the_row_range_decision_changes_no_bit() {
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
                        let io = SrcDst::in_place(&mut general);
                        let policy = MaskedRow::Zero;
                        SoftmaxRow {
                            io,
                            policy,
                            log_form: false,
                        }
                        .dispatch::<M>(isa);
                        let mut in_place = row.clone();
                        let io = SrcDst::in_place(&mut in_place);
                        SoftmaxRow {
                            io,
                            policy,
                            log_form: false,
                        }
                        .dispatch::<M>(isa);
                        let mut into = vec![0f32; n];
                        let io = SrcDst::new(&row, &mut into);
                        SoftmaxRow {
                            io,
                            policy,
                            log_form: false,
                        }
                        .dispatch::<M>(isa);
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
        check::<Fast>(FAST_EXP_LOW);
    }

    /// Test rows: `n` values in `[-10, 10)` from `seed`.
    pub(super) fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 8) as f32 / (1u32 << 24) as f32 * 20.0 - 10.0
            })
            .collect()
    }
}
