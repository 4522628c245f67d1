//! The online (flash-attention) softmax: [`OnlineSoftmax`], the running state of a row whose
//! keys come tile by tile.

use super::scores::{ScoreMask, scale_and_mask};
use super::{exp_shift, exp_shifted_sum};
use crate::lanes::{LaneOp, Lanes, Mode, Scalar, Supported, compiled_once_per_mode};
use crate::ops::CANONICAL_NAN;
use crate::ops::reduce::{RowExtremes, row_extremes};

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
        let state = self;
        OnlineUpdate {
            state,
            tile,
            scale,
            mask,
        }
        .dispatch::<M>(isa)
    }

    /// `1 / sum`, the factor that normalises the accumulated output: the canonical NaN if a
    /// score was NaN; `None` if nothing was unmasked (the caller applies its [`super::MaskedRow`]
    /// policy).
    pub(crate) fn normalizer(&self) -> Option<f32> {
        if self.nan {
            return Some(CANONICAL_NAN);
        }
        (self.max != f32::NEG_INFINITY).then(|| 1.0 / self.sum)
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
    let s = exp_shifted_sum::<L, M, true>(l, None, head, new, min, &[]);
    tail.fill(0.0);
    state.sum = state.sum * rescale + s;
    state.max = new;
    rescale
}

/// [`OnlineSoftmax::update`] of one row's tile.
struct OnlineUpdate<'a> {
    state: &'a mut OnlineSoftmax,
    tile: &'a mut [f32],
    scale: f32,
    mask: ScoreMask<'a>,
}

impl LaneOp for OnlineUpdate<'_> {
    type Output = f32;
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) -> f32 {
        online_update_row::<L, M>(l, self.state, self.tile, self.scale, &self.mask)
    }
}

compiled_once_per_mode!(OnlineUpdate<'_>);

/// [`OnlineSoftmax::update`] of consecutive rows of `cols` raw scores (a tile of several query
/// rows), row `i` masked from key `ends[i]` of the tile on and nothing else, with state
/// `states[i]`, its rescale factor written to `rescale[i]`: in one dispatch, the bits of one
/// update per row.
pub(crate) struct OnlineUpdateRows<'a> {
    /// One state per row.
    pub states: &'a mut [OnlineSoftmax],
    /// The raw scores, in place: rows of `cols`.
    pub tile: &'a mut [f32],
    /// Keys per row.
    pub cols: usize,
    /// The factor of every score.
    pub scale: f32,
    /// Where each row's masked keys start.
    pub ends: &'a [usize],
    /// Each row's rescale factor, written.
    pub rescale: &'a mut [f32],
}

impl LaneOp for OnlineUpdateRows<'_> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
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

compiled_once_per_mode!(OnlineUpdateRows<'_>);

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use crate::lanes::{Exact, Fast, Isa};
    use crate::ops::SrcDst;
    use crate::ops::softmax::scores::{MaskedSoftmaxRow, RaggedSoftmaxRows};
    use crate::ops::softmax::tests::values;
    use crate::ops::softmax::{MaskedRow, SoftmaxRow};

    /// The keys past a causal limit are not read (`ScoreMask::visible`), with the bits of the
    /// whole row masked: the same limit written as a `keep` mask (which takes the whole-row path)
    /// gives the same bits, for the two-pass softmax under every policy and for the online
    /// update (its tile and its state), on every instruction set and in both modes. The rows
    /// hold a NaN and an infinity past the limit (which must not show), and some a `+inf`, a
    /// NaN or only `-inf` before it.
    pub fn keys_past_the_limit_are_not_read_and_change_no_bit() {
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
                                    let (row, scale, mask) = (&mut a[..], 0.75, limit);
                                    MaskedSoftmaxRow {
                                        row,
                                        scale,
                                        mask,
                                        policy,
                                    }
                                    .dispatch::<M>(isa);
                                    let (row, mask) = (&mut b[..], written);
                                    MaskedSoftmaxRow {
                                        row,
                                        scale,
                                        mask,
                                        policy,
                                    }
                                    .dispatch::<M>(isa);
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
        check::<Fast>();
    }
    /// Rows in one dispatch with their own limits give the bits of one call per row, on every
    /// instruction set, in both modes and under every policy (limits of none, some, all and more
    /// than all keys; a NaN and an infinity past a limit): the two-pass softmax and the online
    /// update.
    pub fn ragged_rows_give_the_bits_of_one_call_per_row() {
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
                    let (scores, scale) = (&mut together[..], 0.3);
                    RaggedSoftmaxRows {
                        scores,
                        cols,
                        scale,
                        ends: &ends,
                        policy,
                    }
                    .dispatch::<M>(isa);
                    let mut alone = raw.clone();
                    for (row, &end) in alone.chunks_exact_mut(cols).zip(&ends) {
                        let mask = ScoreMask {
                            end,
                            keep: None,
                            add: None,
                        };
                        MaskedSoftmaxRow {
                            row,
                            scale: 0.3,
                            mask,
                            policy,
                        }
                        .dispatch::<M>(isa);
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
                    OnlineUpdateRows {
                        states: &mut states,
                        tile: &mut tile,
                        cols,
                        scale: 0.3,
                        ends: &ends,
                        rescale: &mut rescale,
                    }
                    .dispatch::<M>(isa);
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
        check::<Fast>();
    }

    pub fn online_softmax_over_tiles_matches_the_two_pass_softmax_and_survives_masked_tiles() {
        let isa = Isa::detect().supported().unwrap();
        let row = values(200, 6);
        let mut with_masked = row.clone();
        with_masked[64..128].fill(f32::NEG_INFINITY); // a fully masked tile
        for x in [row, with_masked] {
            let mut two_pass = x.clone();
            let io = SrcDst::in_place(&mut two_pass);
            let policy = MaskedRow::Zero;
            SoftmaxRow {
                io,
                policy,
                log_form: false,
            }
            .dispatch::<Exact>(isa);
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
            state.update::<Fast>(isa, &mut t, 1.0, ScoreMask::none(8)),
            1.0
        );
        assert_eq!(t, [0.0; 8]);
        assert_eq!(state.normalizer(), None);
        let mut t2 = [0.0f32, 1.0];
        assert_eq!(
            state.update::<Fast>(isa, &mut t2, 1.0, ScoreMask::none(2)),
            0.0
        );
        assert!(state.sum.is_finite() && state.max == 1.0);
        // A NaN score in any tile makes the row NaN, before or after finite tiles.
        let mut t3 = [f32::NAN, 0.0];
        state.update::<Fast>(isa, &mut t3, 1.0, ScoreMask::none(2));
        let mut t4 = [5.0f32, 1.0];
        state.update::<Fast>(isa, &mut t4, 1.0, ScoreMask::none(2));
        assert!(state.normalizer().is_some_and(f32::is_nan));
    }
}
