//! The masking of one attention call, resolved once ([`Plan`]): which keys each query row of
//! each work item sees (causal limit, key lengths, keep and additive masks, a key-padding mask's
//! kept keys), and the score mask of a row over a key tile.

use ndarray::{Array1, ArrayView1, ArrayViewD, s};

use crate::ops::softmax::MaskedRow;
use crate::ops::softmax::scores::ScoreMask;
use crate::row_buffer::{with_bool_row, with_row};

/// Everything a work item needs to know about masking, resolved once.
pub(super) struct Plan<'a> {
    pub(super) scale: f32,
    pub(super) causal_offset: Option<usize>,
    pub(super) keep: Option<ArrayViewD<'a, bool>>,
    pub(super) additive: Option<ArrayViewD<'a, f32>>,
    pub(super) key_lengths: Option<&'a [usize]>,
    pub(super) seq_k: usize,
    pub(super) policy: MaskedRow,
    /// Per batch item, the keys a key-padding mask keeps, if it drops any.
    pub(super) kept: Vec<Option<KeptKeys>>,
}

/// The keys of one batch item that a key-padding mask keeps: the blocks of that item run on
/// these keys alone, gathered in order.
pub(super) struct KeptKeys {
    /// The positions of the kept keys, increasing.
    pub(super) keys: Vec<usize>,
    /// `below[e]`: how many kept keys lie before position `e` (`seq_k + 1` entries), which
    /// maps a limit over positions to one over kept keys.
    pub(super) below: Vec<usize>,
}

impl KeptKeys {
    pub(super) fn new(keep: ArrayView1<'_, bool>) -> Option<KeptKeys> {
        if keep.iter().all(|&k| k) {
            return None;
        }
        let mut below = Vec::with_capacity(keep.len() + 1);
        let mut keys = Vec::new();
        below.push(0);
        for (j, &k) in keep.iter().enumerate() {
            if k {
                keys.push(j);
            }
            below.push(keys.len());
        }
        Some(KeptKeys { keys, below })
    }
}

impl Plan<'_> {
    /// The keys `[0, end)` query `q` of batch item `b` may see by the causal limit and the key
    /// length (counted among the kept keys where a key-padding mask drops some).
    pub(super) fn row_end(&self, b: usize, q: usize) -> usize {
        let mut end = self.length(b);
        if let Some(off) = self.causal_offset {
            end = end.min(q.saturating_add(off).saturating_add(1));
        }
        self.kept_before(b, end)
    }

    /// How many keys of batch item `b` are real, not padding: those within its key length and
    /// kept by a key-padding mask. A fully masked row's `Uniform` policy averages these, so that
    /// a sequence gives the same row however it is padded.
    pub(super) fn real_keys(&self, b: usize) -> usize {
        self.kept_before(b, self.length(b))
    }

    /// The positions batch item `b` has before its key length.
    fn length(&self, b: usize) -> usize {
        match self.key_lengths {
            Some(len) => self.seq_k.min(len[b]),
            None => self.seq_k,
        }
    }

    /// The keys of batch item `b` before position `end` (counted among the kept keys where a
    /// key-padding mask drops some).
    fn kept_before(&self, b: usize, end: usize) -> usize {
        match &self.kept[b] {
            Some(kept) => kept.below[end],
            None => end,
        }
    }

    /// Whether the rows are masked only by their limits ([`Plan::row_end`]: a causal limit or a
    /// key length), with no keep or additive mask: then a block's rows go through softmax
    /// together, each with its limit.
    pub(super) fn limits_only(&self) -> bool {
        self.keep.is_none() && self.additive.is_none()
    }

    /// The keys `[0, end)` that some row of queries `..q1` of batch item `b` may see (the
    /// limits grow with the row).
    pub(super) fn block_end(&self, b: usize, q1: usize) -> usize {
        self.row_end(b, q1 - 1)
    }

    /// Calls `f` with the mask of query `q` (batch `b`, head `h`) over the keys `k0..k1` (kept
    /// keys, where a key-padding mask drops some).
    pub(super) fn with_row_mask<R>(
        &self,
        (b, h, q): (usize, usize, usize),
        (k0, k1): (usize, usize),
        f: impl FnOnce(ScoreMask<'_>) -> R,
    ) -> R {
        let end = self.row_end(b, q).saturating_sub(k0);
        let keep_row = self.keep.as_ref().map(|m| m.slice(s![b, h, q, ..]));
        let add_row = self.additive.as_ref().map(|a| a.slice(s![b, h, q, ..]));
        let (gathered_keep, gathered_add): (Option<Array1<bool>>, Option<Array1<f32>>);
        let (keep, add) = match &self.kept[b] {
            None => (
                keep_row.map(|m| m.slice_move(s![k0..k1])),
                add_row.map(|a| a.slice_move(s![k0..k1])),
            ),
            Some(kept) => {
                // The mask entries of the kept keys, in their order.
                let keys = &kept.keys[k0..k1];
                gathered_keep = keep_row.map(|m| keys.iter().map(|&j| m[j]).collect());
                gathered_add = add_row.map(|a| keys.iter().map(|&j| a[j]).collect());
                (
                    gathered_keep.as_ref().map(|m| m.view()),
                    gathered_add.as_ref().map(|a| a.view()),
                )
            }
        };
        let with_add = |keep: Option<&[bool]>| match add {
            Some(a) => with_row(a, |a| {
                f(ScoreMask {
                    end,
                    keep,
                    add: Some(a),
                })
            }),
            None => f(ScoreMask {
                end,
                keep,
                add: None,
            }),
        };
        match keep {
            Some(k) => with_bool_row(k, |k| with_add(Some(k))),
            None => with_add(None),
        }
    }

    /// The keys of `[0, limit)` (relative to `k0`) that query `q` sees, if its keep or additive
    /// mask hides any of them (`-inf` hides a key); `None` if it sees all of them.
    pub(super) fn sparse_keys(
        &self,
        row: (usize, usize, usize),
        (k0, k1): (usize, usize),
        limit: usize,
    ) -> Option<Vec<usize>> {
        if self.limits_only() || limit == 0 {
            return None;
        }
        self.with_row_mask(row, (k0, k1), |m| {
            let seen = |j: usize| {
                m.keep.is_none_or(|k| k[j]) && m.add.is_none_or(|a| a[j] != f32::NEG_INFINITY)
            };
            if (0..limit).all(seen) {
                None
            } else {
                Some((0..limit).filter(|&j| seen(j)).collect())
            }
        })
    }
}
