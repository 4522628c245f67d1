//! The scale-and-mask step of attention scores ([`ScoreMask`], [`scale_and_mask`]) and the
//! softmax of masked rows of scores: one row with any mask, or consecutive rows each masked
//! from its own key on.

use super::{MaskedRow, softmax_row_visible, softmax_row_visible_scaled};
use crate::lanes::{LaneOp, Lanes, MAX_WIDTH, Mode, compiled_once_per_mode};

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
    pub(super) fn prefix(&self, len: usize) -> ScoreMask<'a> {
        ScoreMask {
            end: self.end.min(len),
            keep: self.keep.map(|k| &k[..len]),
            add: self.add.map(|a| &a[..len]),
        }
    }
}

/// Scales and masks a row of raw scores in place: `x * scale`, then `+ add`, then `-inf` where
/// masked (whatever the score was, NaN included). An additive `-inf` masks as a `false` keep
/// entry does: a score of `+inf` or NaN there gives `-inf`, not the NaN of `inf + -inf` that
/// would make the whole row NaN. One register at a time.
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
            let a = l.load_partial(&add[start..start + len], 0.0);
            x = l.select(l.eq(a, ninf), ninf, l.add(x, a));
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
    if mask.keep.is_none() && mask.add.is_none() && scale > 0.0 && scale.is_finite() {
        // Nothing to mask among the visible keys: the scale goes into the softmax's exp pass
        // instead of a pass of its own, with the same bits.
        return softmax_row_visible_scaled::<L, M>(l, row, visible, scale, policy);
    }
    scale_and_mask(l, &mut row[..visible], scale, &mask.prefix(visible));
    softmax_row_visible::<L, M>(l, row, visible, policy);
}

/// Consecutive rows of `cols` raw scores, row `i` masked from key `ends[i]` on (a causal limit
/// or a key length, nothing else): each scaled by `scale`, then its softmax, in one dispatch;
/// the bits of [`MaskedSoftmaxRow`] row by row.
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

/// Scale, mask and softmax of one row of attention scores: [`masked_softmax_row`].
pub struct MaskedSoftmaxRow<'a> {
    /// The raw scores, in place.
    pub row: &'a mut [f32],
    /// The factor of every score.
    pub scale: f32,
    /// What masks the scores.
    pub mask: ScoreMask<'a>,
    /// What a fully masked row gives.
    pub policy: MaskedRow,
}

impl LaneOp for MaskedSoftmaxRow<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        masked_softmax_row::<L, M>(l, self.row, self.scale, &self.mask, self.policy)
    }
}

compiled_once_per_mode!(MaskedSoftmaxRow<'_>);

/// Row `i` of `scores` (rows of `cols`) scaled, masked from key `ends[i]` on, and through its
/// softmax, in one dispatch: [`ragged_softmax_rows`].
pub struct RaggedSoftmaxRows<'a> {
    /// The raw scores, in place.
    pub scores: &'a mut [f32],
    /// Keys per row.
    pub cols: usize,
    /// The factor of every score.
    pub scale: f32,
    /// Where each row's masked keys start.
    pub ends: &'a [usize],
    /// What a fully masked row gives.
    pub policy: MaskedRow,
}

impl LaneOp for RaggedSoftmaxRows<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
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

compiled_once_per_mode!(RaggedSoftmaxRows<'_>);

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::{Exact, Isa};

    /// A row masked by a limit alone takes its scale in the softmax's exp pass: the bits of
    /// [`scale_and_mask`] in place, then the softmax of the visible keys, on every instruction
    /// set and in both modes, for rows with NaN, infinities, zeros of both signs, subnormals
    /// and values whose product overflows or underflows, at limits inside, at and past the
    /// row, and with scales that leave the pass unfused (zero, negative, infinite, NaN).
    pub fn the_scale_in_the_exp_pass_gives_the_bits_of_a_scaling_pass() {
        fn check<M: Mode>() {
            let n = 37;
            let base: Vec<f32> = (0..n)
                .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.75)
                .collect();
            let mut rows = vec![base.clone()];
            for (j, special) in [
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                -0.0,
                1e-40,
                3e38,
                -3e38,
            ]
            .into_iter()
            .enumerate()
            {
                let mut row = base.clone();
                row[(j * 5) % n] = special;
                row[(j * 5 + 17) % n] = special;
                rows.push(row);
            }
            rows.push(vec![f32::NEG_INFINITY; n]);
            rows.push(vec![-0.0; n]);
            let scales = [
                0.125f32,
                1.0,
                3e30,
                1e-30,
                0.0,
                -0.5,
                f32::INFINITY,
                f32::NAN,
            ];
            for isa in Isa::available() {
                let isa = isa.supported().unwrap();
                for row in &rows {
                    for end in [0, 1, 8, 20, n, n + 3] {
                        for &scale in &scales {
                            for policy in [MaskedRow::Zero, MaskedRow::Uniform, MaskedRow::Nan] {
                                let mask = ScoreMask {
                                    end,
                                    keep: None,
                                    add: None,
                                };
                                let mut got = row.clone();
                                MaskedSoftmaxRow {
                                    row: &mut got,
                                    scale,
                                    mask,
                                    policy,
                                }
                                .dispatch::<M>(isa);
                                struct Unfused<'a>(&'a mut [f32], f32, ScoreMask<'a>, MaskedRow);
                                impl LaneOp for Unfused<'_> {
                                    type Output = ();
                                    fn run<L: Lanes, M: Mode>(self, l: L) {
                                        let visible = self.2.visible(self.0.len());
                                        let prefix = self.2.prefix(visible);
                                        scale_and_mask(l, &mut self.0[..visible], self.1, &prefix);
                                        super::softmax_row_visible::<L, M>(
                                            l, self.0, visible, self.3,
                                        );
                                    }
                                }
                                let mut want = row.clone();
                                isa.dispatch::<M, _>(Unfused(&mut want, scale, mask, policy));
                                let bits =
                                    |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                                assert_eq!(
                                    bits(&got),
                                    bits(&want),
                                    "{:?} {} end {end} scale {scale} row {row:?}",
                                    isa.isa(),
                                    M::NAME
                                );
                            }
                        }
                    }
                }
            }
        }
        check::<Exact>();
        check::<crate::lanes::Fast>();
    }

    pub fn scale_and_mask_masks_past_the_end_and_where_keep_is_false_on_every_isa() {
        for isa in Isa::available() {
            for n in [1usize, 5, 8, 17, 40] {
                // An additive `-inf` (every fourth key from the third) over a score of `+inf`
                // or NaN masks the key as a `false` keep entry does.
                let raw: Vec<f32> = (0..n)
                    .map(|i| match i % 8 {
                        2 => f32::INFINITY,
                        6 => f32::NAN,
                        _ => i as f32 - 3.0,
                    })
                    .collect();
                let keep: Vec<bool> = (0..n).map(|i| i % 3 != 1).collect();
                let add: Vec<f32> = (0..n)
                    .map(|i| match i % 4 {
                        2 => f32::NEG_INFINITY,
                        _ => 0.25 * i as f32,
                    })
                    .collect();
                for end in [0, 1, n / 2, n] {
                    let mask = ScoreMask {
                        end,
                        keep: Some(&keep),
                        add: Some(&add),
                    };
                    let mut row = raw.clone();
                    row[0] = f32::NAN; // masked or not, the NaN only shows where visible
                    struct Op<'a>(&'a mut [f32], ScoreMask<'a>);
                    impl LaneOp for Op<'_> {
                        type Output = ();
                        fn run<L: Lanes, M: Mode>(self, l: L) {
                            scale_and_mask(l, self.0, 0.5, &self.1)
                        }
                    }
                    isa.supported()
                        .unwrap()
                        .dispatch::<Exact, _>(Op(&mut row, mask));
                    for j in 0..n {
                        let want = if j >= end || !keep[j] || add[j] == f32::NEG_INFINITY {
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
