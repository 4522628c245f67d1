//! Scaled dot-product attention over `[batch, heads, seq, head_dim]` tensors (or 2-D, one
//! head): the scores from the crate's GEMM, then the one score-row kernel of `ops` (scale,
//! mask, softmax), then the product with V. Where several query blocks or query heads read one
//! key head, its `k^T` is packed for the GEMM once and each block reads its window of it.
//!
//! Exact mode scores each block of query rows against every key it can see and takes the
//! two-pass exact softmax (canonical sums) of each row, then `P V`: each row sums over its own
//! keys only (those before its causal limit and key length, and not hidden by a keep mask or a
//! `-inf` additive term), in increasing order from `+0` (the keys every row of the block sees
//! through the GEMM, then four rows at a time over the keys all four see, then each row alone).
//! Keys a row cannot see never enter its sum, so for any V (inf and NaN included) a row's
//! output depends only on the keys it sees, and the bits depend neither on the block size, the
//! instruction set nor the thread count. A row that sees no key
//! follows the [`MaskedRow`] policy (`Uniform`: the mean of the value rows of its batch item's
//! real keys, those within its key length and kept by a key-padding mask: padding never
//! reaches an output).
//!
//! Fast mode does the same, with the fast exp and fused multiply-adds, for a query block whose
//! keys fit in one key tile; beyond that it runs an online (flash) softmax over key tiles:
//! memory O(tile) per query block, the accumulated output rescaled by `exp(m_old - m_new)` as
//! the running maximum grows, a fully masked tile changes nothing (no NaN), and a NaN score
//! makes its row NaN. A tile's `P V` is one GEMM where every row sees the whole tile, and where
//! some do not (the tile on a causal diagonal or a key length), one GEMM over the keys all rows
//! see and each row over the rest of its own.
//!
//! A key-padding mask ([`AttentionOptions::with_key_padding`]) removes keys before anything
//! runs: the kept keys and values of each batch row are gathered in order, so each batch row
//! has the bits of a run over its kept keys alone.

use ndarray::{
    Array, Array2, Array3, ArrayRef, ArrayView1, ArrayView2, ArrayView4, ArrayViewMut2,
    ArrayViewMut4, Axis, Dimension, Ix2, Ix4, IxDyn, s,
};

use super::Session;
use super::attention_plan::{KeptKeys, Plan};
use super::softmax::Mask;
use std::ops::Range;
use std::sync::OnceLock;

use crate::epilogue::Identity;
use crate::gemm::{Operand, PackedMatrix, RaggedProduct, contiguous_rows, view_panel_width};
use crate::lanes::{exact_scalar, prefetch_l2};
use crate::ops::CANONICAL_NAN;
use crate::ops::softmax::MaskedRow;
use crate::ops::softmax::online::{OnlineSoftmax, OnlineUpdateRows};
use crate::ops::softmax::scores::{MaskedSoftmaxRow, RaggedSoftmaxRows};
use crate::row_buffer::{give_back, take_buffer};
use crate::{Error, Mode};

/// The options of [`Session::attention_into`].
///
/// ```
/// use activation_kernels::AttentionOptions;
/// let opts = AttentionOptions::default().causal().with_scale(0.125);
/// assert!(opts.causal && opts.scale == Some(0.125));
/// ```
#[derive(Clone, Debug, Default)]
pub struct AttentionOptions<'a> {
    /// The score scale; `None` is `1/sqrt(head_dim)`.
    pub scale: Option<f32>,
    /// Causal masking: query `i` sees key `j` only if `j <= i + offset`.
    pub causal: bool,
    /// The causal offset (keys cached before the first query); `None` is `seq_k - seq_q`, so the
    /// queries are the last `seq_q` positions. Only with `causal`: an offset without it is
    /// [`Error::InvalidArgument`], not silently ignored.
    pub causal_offset: Option<usize>,
    /// A boolean keep-mask or an additive mask, broadcast to `[batch, heads, seq_q, seq_k]`
    /// (`Mask::Causal` here is the same as `causal` with that offset).
    ///
    /// Broadcasting aligns the trailing axes: a 2-D mask is `[seq_q, seq_k]`, whatever its
    /// sizes. A `[batch, seq_k]` padding mask on 4-D attention where `batch == seq_q` is read
    /// as `[seq_q, seq_k]` without an error; padding per batch row belongs in
    /// [`AttentionOptions::key_padding`].
    pub mask: Mask<'a>,
    /// Per batch item, the number of valid keys (the rest are padding: in exact mode a batch
    /// row has the bits of a run over its valid keys alone; a fully masked row's `Uniform`
    /// policy averages the valid keys only).
    pub key_lengths: Option<&'a [usize]>,
    /// Per batch item, which keys are real (`true`) and which are padding (`false`), at any
    /// positions: `[batch, seq_k]` (`[1, seq_k]` for 2-D attention). A padding key is removed
    /// before anything runs, so in exact mode a batch row has the bits of attention over its
    /// kept keys alone (the same row run by itself, with only those keys). Causal limits and
    /// key lengths still count positions of the full sequence; a fully masked row's
    /// `Uniform` policy averages the kept keys only.
    pub key_padding: Option<ArrayView2<'a, bool>>,
    /// Query rows per work item (0: [`AttentionOptions::DEFAULT_QUERY_BLOCK`]). Exact results
    /// do not depend on it.
    pub query_block: usize,
    /// Keys per tile of the fast online softmax (0: [`AttentionOptions::DEFAULT_KEY_BLOCK`], or
    /// more for blocks of fewer query rows). A fast query block whose keys fit in one tile takes
    /// the two-pass softmax of whole rows instead.
    pub key_block: usize,
}

impl<'a> AttentionOptions<'a> {
    /// Query rows per work item, by default.
    pub const DEFAULT_QUERY_BLOCK: usize = 64;
    /// Keys per tile of the fast (online) softmax, by default, for a block of
    /// [`AttentionOptions::DEFAULT_QUERY_BLOCK`] query rows or more; a block of fewer rows (a
    /// decode step) takes longer tiles, up to 65,536 scores per tile.
    pub const DEFAULT_KEY_BLOCK: usize = 1024;

    /// Causal masking with the default offset.
    pub fn causal(self) -> Self {
        AttentionOptions {
            causal: true,
            ..self
        }
    }
    /// Causal masking with `offset` keys cached before the first query.
    pub fn causal_with_offset(self, offset: usize) -> Self {
        AttentionOptions {
            causal: true,
            causal_offset: Some(offset),
            ..self
        }
    }
    /// Another score scale.
    pub fn with_scale(self, scale: f32) -> Self {
        AttentionOptions {
            scale: Some(scale),
            ..self
        }
    }
    /// A keep or additive mask.
    pub fn with_mask(self, mask: Mask<'a>) -> Self {
        AttentionOptions { mask, ..self }
    }
    /// Valid keys per batch item.
    pub fn with_key_lengths(self, lengths: &'a [usize]) -> Self {
        AttentionOptions {
            key_lengths: Some(lengths),
            ..self
        }
    }
    /// A key-padding mask, `[batch, seq_k]`, `true` for a real key (see
    /// [`AttentionOptions::key_padding`]).
    ///
    /// ```
    /// use activation_kernels::{AttentionOptions, Session};
    /// use ndarray::{Array4, array, s};
    /// let x = Array4::from_shape_fn((2, 1, 3, 2), |(b, _, i, j)| (b + i * 2 + j) as f32 * 0.25);
    /// let keep = array![[true, true, true], [false, true, true]]; // item 1: key 0 is padding
    /// let opts = AttentionOptions::default().with_key_padding(keep.view());
    /// let s = Session::exact();
    /// let out = s.attention_owned(&x, &x, &x, &opts)?;
    /// // Item 1 alone, on its two real keys: the same bits.
    /// let (q1, kv1) = (x.slice(s![1, 0, .., ..]), x.slice(s![1, 0, 1.., ..]));
    /// let alone = s.attention_owned(&q1, &kv1, &kv1, &AttentionOptions::default())?;
    /// assert_eq!(out.slice(s![1, 0, .., ..]), alone);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn with_key_padding(self, keep: ArrayView2<'a, bool>) -> Self {
        AttentionOptions {
            key_padding: Some(keep),
            ..self
        }
    }
}

/// The [`work_of`](super::matmul::work_of) attention over `batch x heads` blocks of `seq_q`
/// queries against `seq_k` keys (of `kv_heads` heads; `dims` the key and value widths
/// together). A decode step over the example's cache (12 heads, 255 keys) counts 6,120 by its
/// multiply-adds and 393,216 by the values it streams: too little arithmetic to split by the
/// first count, yet it gains from two threads.
fn attention_work(
    batch: usize,
    heads: usize,
    kv_heads: usize,
    seq_q: usize,
    seq_k: usize,
    dims: usize,
) -> usize {
    let madds = batch
        .saturating_mul(heads)
        .saturating_mul(seq_q)
        .saturating_mul(seq_k.max(1))
        .saturating_mul(dims);
    let values = heads
        .saturating_mul(seq_q)
        .saturating_add(kv_heads.saturating_mul(seq_k))
        .saturating_mul(dims)
        .saturating_mul(batch);
    super::matmul::work_of(madds, values)
}

/// Scores per key tile of the fast online softmax when the options leave `key_block` at 0
/// (256 KiB of `f32`, within L2: 64 query rows x 1,024 keys, or one row x 65,536 keys). The
/// two-pass form of a query block whose keys fit in one tile measured faster than the online
/// form at 256 and 1,024 keys, so a large tile lets more blocks take it.
const TILE_SCORES: usize =
    AttentionOptions::DEFAULT_QUERY_BLOCK * AttentionOptions::DEFAULT_KEY_BLOCK;

/// Values of the keys packed for the scores' GEMM at most, over every (batch item, key head)
/// of one call (64 MiB of `f32`): the packed copy is as large as the keys it packs, so past
/// this each query block packs the keys it reads itself, as a head read by one block does.
const PACKED_KEYS_BUDGET: usize = 1 << 24;

/// One work item: a block of query rows of batch item `b`, head `h`, starting at query `q0`,
/// with the keys and values of its kv head, and `k^T` packed once for every block of that
/// head when it is shared (`kt`, keys `0..` its width).
struct Block<'a> {
    b: usize,
    h: usize,
    q0: usize,
    q: ArrayView2<'a, f32>,
    k: ArrayView2<'a, f32>,
    v: ArrayView2<'a, f32>,
    kt: Option<&'a PackedMatrix>,
}

impl<M: Mode> Session<M> {
    /// Scaled dot-product attention: `out = softmax(scale * q k^T + mask) v`, for `q`
    /// `[batch, heads, seq_q, head_dim]`, `k` `[batch, kv_heads, seq_k, head_dim]`, `v`
    /// `[batch, kv_heads, seq_k, v_dim]` and `out` `[batch, heads, seq_q, v_dim]` (or all 2-D:
    /// one head). `heads` must be a multiple of `kv_heads` (grouped-query attention: query head
    /// `h` uses key/value head `h / (heads / kv_heads)`); `head_dim` must be at least 1. Fully
    /// masked rows follow the session's [`MaskedRow`] policy. Attention has no in-place form:
    /// the output is none of the inputs.
    ///
    /// ```
    /// use activation_kernels::{AttentionOptions, Session};
    /// use ndarray::Array2;
    /// let q = Array2::from_shape_fn((3, 4), |(i, j)| (i + j) as f32 * 0.1);
    /// let (k, v) = (q.clone(), Array2::from_shape_fn((3, 2), |(i, j)| (i * 2 + j) as f32));
    /// let mut out = Array2::zeros((3, 2));
    /// let causal = AttentionOptions::default().causal();
    /// Session::exact().attention_into(&q, &k, &v, &mut out, &causal)?;
    /// assert_eq!(out.row(0), v.row(0)); // the first query sees only the first key
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn attention_into<D: Dimension>(
        &self,
        q: &ArrayRef<f32, D>,
        k: &ArrayRef<f32, D>,
        v: &ArrayRef<f32, D>,
        out: &mut ArrayRef<f32, D>,
        opts: &AttentionOptions<'_>,
    ) -> Result<(), Error> {
        let (q4, k4, v4) = (as_4d(q)?, as_4d(k)?, as_4d(v)?);
        let out_shape = out.shape().to_vec();
        let mut out4: ArrayViewMut4<'_, f32> = match out.ndim() {
            4 => out
                .view_mut()
                .into_dimensionality::<Ix4>()
                .map_err(shape_err(&out_shape))?,
            2 => out
                .view_mut()
                .into_dimensionality::<Ix2>()
                .map_err(shape_err(&out_shape))?
                .insert_axis(Axis(0))
                .insert_axis(Axis(0)),
            n => return Err(not_2d_or_4d(n)),
        };
        let plan = self.plan(&q4, &k4, &v4, out4.shape(), opts)?;
        self.attention_blocks(q4, k4, v4, &mut out4, &plan, opts)
    }

    /// `attention(q, k, v)` as a new array of the shape of `q` with the last axis `v_dim`;
    /// see [`Session::attention_into`].
    pub fn attention_owned<D: Dimension>(
        &self,
        q: &ArrayRef<f32, D>,
        k: &ArrayRef<f32, D>,
        v: &ArrayRef<f32, D>,
        opts: &AttentionOptions<'_>,
    ) -> Result<Array<f32, D>, Error> {
        // Every shape and option first: a mismatch is its error, whatever the size of the output.
        let (q4, k4, v4) = (as_4d(q)?, as_4d(k)?, as_4d(v)?);
        let (batch, heads, seq_q, _) = q4.dim();
        let v_dim = v4.shape()[3];
        self.plan(&q4, &k4, &v4, &[batch, heads, seq_q, v_dim], opts)?;
        let mut dim = q.raw_dim();
        let nd = q.ndim();
        dim[nd - 1] = v_dim;
        let mut out = super::owned::try_zeros(dim, "attention output")?;
        self.attention_into(q, k, v, &mut out, opts)?;
        Ok(out)
    }

    /// Checks every shape and option against each other and resolves the masks.
    fn plan<'o>(
        &self,
        q: &ArrayView4<'_, f32>,
        k: &ArrayView4<'_, f32>,
        v: &ArrayView4<'_, f32>,
        out_shape: &[usize],
        opts: &'o AttentionOptions<'_>,
    ) -> Result<Plan<'o>, Error> {
        let (batch, heads, seq_q, dim) = q.dim();
        let (kb, kv_heads, seq_k, kd) = k.dim();
        let v_dim = v.shape()[3];
        let mismatch = |what, expected: Vec<usize>, found: &[usize]| Error::ShapeMismatch {
            what,
            expected,
            found: found.to_vec(),
        };
        if dim == 0 {
            return Err(Error::InvalidArgument(
                "attention needs head_dim >= 1 (q has an empty last axis)".into(),
            ));
        }
        if kb != batch || kd != dim || kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
            return Err(mismatch(
                "attention k ([batch, kv_heads, seq_k, head_dim] with kv_heads a divisor of the \
                 query heads; shown with kv_heads = heads)",
                vec![batch, heads, seq_k, dim],
                k.shape(),
            ));
        }
        if v.shape()[..3] != [batch, kv_heads, seq_k] {
            return Err(mismatch(
                "attention v ([batch, kv_heads, seq_k, v_dim])",
                vec![batch, kv_heads, seq_k, v_dim],
                v.shape(),
            ));
        }
        if out_shape != [batch, heads, seq_q, v_dim] {
            return Err(mismatch(
                "attention out ([batch, heads, seq_q, v_dim])",
                vec![batch, heads, seq_q, v_dim],
                out_shape,
            ));
        }
        if opts.causal_offset.is_some() && !opts.causal {
            return Err(Error::InvalidArgument(
                "attention causal_offset is set but causal is not: set both \
                 (AttentionOptions::causal_with_offset)"
                    .into(),
            ));
        }
        if let Some(l) = opts.key_lengths {
            if l.len() != batch {
                return Err(mismatch(
                    "attention key_lengths (one per batch item)",
                    vec![batch],
                    &[l.len()],
                ));
            }
            if let Some((b, &n)) = l.iter().enumerate().find(|&(_, &n)| n > seq_k) {
                return Err(Error::InvalidArgument(format!(
                    "attention key_lengths[{b}] = {n} is more than seq_k = {seq_k}"
                )));
            }
        }
        let mut kept = Vec::new();
        if let Some(pad) = &opts.key_padding {
            if pad.shape() != [batch, seq_k] {
                return Err(mismatch(
                    "attention key_padding ([batch, seq_k])",
                    vec![batch, seq_k],
                    pad.shape(),
                ));
            }
            kept = pad.outer_iter().map(KeptKeys::new).collect();
        } else {
            kept.resize_with(batch, || None);
        }
        let full = IxDyn(&[batch, heads, seq_q, seq_k]);
        let bad_mask = |m: &[usize]| {
            mismatch(
                "attention mask (does not broadcast to [batch, heads, seq_q, seq_k])",
                full.slice().to_vec(),
                m,
            )
        };
        let (mut keep, mut additive, mut causal_offset) = (None, None, None);
        if opts.causal {
            causal_offset = Some(opts.causal_offset.unwrap_or(seq_k.saturating_sub(seq_q)));
        }
        match &opts.mask {
            Mask::None => {}
            Mask::Causal { offset } => causal_offset = Some(*offset),
            Mask::Keep(m) => {
                keep = Some(
                    m.broadcast(full.clone())
                        .ok_or_else(|| bad_mask(m.shape()))?,
                )
            }
            Mask::Additive(m) => {
                additive = Some(
                    m.broadcast(full.clone())
                        .ok_or_else(|| bad_mask(m.shape()))?,
                )
            }
        }
        Ok(Plan {
            // In the exact environment: the caller's rounding mode must not change the scale.
            scale: opts
                .scale
                .unwrap_or_else(|| exact_scalar(dim as f32, |d| 1.0 / d.sqrt())),
            causal_offset,
            keep,
            additive,
            key_lengths: opts.key_lengths,
            seq_k,
            policy: self.masked_row,
            kept,
        })
    }

    /// Cuts the work into (batch, head, block of query rows) items, each owning its block of
    /// `out`, and runs them (spread over the session's threads when the work is large; each
    /// item's GEMMs run on the thread that has it).
    fn attention_blocks(
        &self,
        q: ArrayView4<'_, f32>,
        k: ArrayView4<'_, f32>,
        v: ArrayView4<'_, f32>,
        out: &mut ArrayViewMut4<'_, f32>,
        plan: &Plan<'_>,
        opts: &AttentionOptions<'_>,
    ) -> Result<(), Error> {
        let (batch, heads, seq_q, dim) = q.dim();
        let (seq_k, v_dim, group) = (k.shape()[2], v.shape()[3], heads / k.shape()[1]);
        let query_block = match opts.query_block {
            0 => AttentionOptions::DEFAULT_QUERY_BLOCK,
            n => n,
        };
        let key_block = match opts.key_block {
            // The default tile holds at most `TILE_SCORES` scores: few query rows (a decode
            // step) take long key tiles, so a step is a few large products, not many small
            // ones.
            0 => {
                AttentionOptions::DEFAULT_KEY_BLOCK.max(TILE_SCORES / query_block.min(seq_q).max(1))
            }
            n => n,
        };
        let mut items = Vec::new();
        for (b, per_batch) in out.view_mut().into_outer_iter_mut().enumerate() {
            for (h, per_head) in per_batch.into_outer_iter_mut().enumerate() {
                let blocks = per_head.into_axis_chunks_iter_mut(Axis(0), query_block);
                for (i, o) in blocks.enumerate() {
                    items.push((b, h, i * query_block, o));
                }
            }
        }
        // The kept keys and values of each batch item that a key-padding mask thins, in order.
        let gathered: Vec<Option<(Array3<f32>, Array3<f32>)>> = plan
            .kept
            .iter()
            .enumerate()
            .map(|(b, kept)| {
                kept.as_ref().map(|kept| {
                    (
                        k.slice(s![b, .., .., ..]).select(Axis(1), &kept.keys),
                        v.slice(s![b, .., .., ..]).select(Axis(1), &kept.keys),
                    )
                })
            })
            .collect();
        // `k^T` of each (batch item, key head), packed by the first block that reads it when
        // more than one block does (the query blocks of a head and the query heads of a
        // group): each block's scores then read the keys it sees from it, where each packed
        // them again. Packing only copies: the bits do not change.
        let kv_heads = k.shape()[1];
        let readers = seq_q.div_ceil(query_block) * group;
        let share_keys = readers > 1
            && batch
                .saturating_mul(kv_heads)
                .saturating_mul(seq_k)
                .saturating_mul(dim)
                <= PACKED_KEYS_BUDGET;
        let packed_keys: Vec<OnceLock<Option<PackedMatrix>>> = if share_keys {
            (0..batch * kv_heads).map(|_| OnceLock::new()).collect()
        } else {
            Vec::new()
        };
        let inner = Session::<M> {
            pool: super::Threads::Caller,
            parallel_threshold: usize::MAX,
            ..self.clone()
        };
        let run = |(b, h, q0, mut o): (usize, usize, usize, ArrayViewMut2<'_, f32>)| {
            let (kb, vb) = match &gathered[b] {
                Some((kg, vg)) => (
                    kg.slice(s![h / group, .., ..]),
                    vg.slice(s![h / group, .., ..]),
                ),
                None => (
                    k.slice(s![b, h / group, .., ..]),
                    v.slice(s![b, h / group, .., ..]),
                ),
            };
            // Up to the last key any row of the batch item sees (no further: a key length or a
            // causal limit ends every block's keys there). A failed allocation packs per block.
            let kt = packed_keys.get(b * kv_heads + h / group).and_then(|once| {
                once.get_or_init(|| {
                    let end = plan.block_end(b, seq_q);
                    PackedMatrix::new_narrow(self.isa.isa(), &kb.slice(s![..end, ..]).t()).ok()
                })
                .as_ref()
            });
            let block = Block {
                b,
                h,
                q0,
                q: q.slice(s![b, h, q0..q0 + o.nrows(), ..]),
                k: kb,
                v: vb,
                kt,
            };
            // Fast mode tiles the keys only where they exceed one tile.
            if M::FAST && plan.block_end(b, q0 + block.q.nrows()) > key_block {
                inner.attention_block_online(plan, &block, &mut o, key_block)
            } else {
                inner.attention_block_two_pass(plan, &block, &mut o)
            }
        };
        let work = attention_work(batch, heads, heads / group, seq_q, seq_k, dim + v_dim);
        self.try_for_each_item(self.parallel(work), items, run)
    }

    /// The scores of the block against every key it may see, the two-pass softmax of each row,
    /// then `P V` over each row's visible keys (exact mode; fast mode where the keys fit in one
    /// tile).
    fn attention_block_two_pass(
        &self,
        plan: &Plan<'_>,
        block: &Block<'_>,
        out: &mut ArrayViewMut2<'_, f32>,
    ) -> Result<(), Error> {
        let Block { b, h, q0, q, v, .. } = *block;
        let rows = q.nrows();
        let end = plan.block_end(b, q0 + rows);
        let mut limits: Vec<usize> = (0..rows).map(|i| plan.row_end(b, q0 + i)).collect();
        if end == 0 {
            let seen = vec![false; rows];
            return self.write_rows(plan, b, v, out, &[], &seen);
        }
        if rows < SHARED_ROWS_GEMM {
            prefetch_keys_and_values(block.k.slice(s![..end, ..]), v.slice(s![..end, ..]));
        }
        // The scores and `P V` in buffers of this thread, kept from block to block rather than
        // allocated and zeroed for each: every entry is written before it is used (the scores
        // past a row's limit by the softmax, which masks them).
        let mut scores = take_buffer(rows * end);
        let mut p = matrix(&mut scores, rows, end)?;
        self.block_scores(block, &limits, end, &mut p)?;
        // A row that sees no key comes out of the softmax as zeros (never NaN: that is a NaN
        // score); it takes the session's policy when the rows are written.
        let policy = MaskedRow::Zero;
        if plan.limits_only() {
            // Masked by limits only: every row in one dispatch.
            let (scores, scale, ends) = (&mut scores[..], plan.scale, &limits[..]);
            RaggedSoftmaxRows {
                scores,
                cols: end,
                scale,
                ends,
                policy,
            }
            .dispatch::<M>(self.isa);
        } else {
            for (i, row) in scores.chunks_exact_mut(end).enumerate() {
                plan.with_row_mask((b, h, q0 + i), (0, end), |mask| {
                    let scale = plan.scale;
                    MaskedSoftmaxRow {
                        row,
                        scale,
                        mask,
                        policy,
                    }
                    .dispatch::<M>(self.isa)
                });
            }
        }
        // The softmax of a row that sees a key has a positive entry (its maximum's).
        let seen: Vec<bool> = scores
            .chunks_exact(end)
            .map(|row| row.iter().any(|&p| p != 0.0))
            .collect();
        let mut sparse = Vec::new();
        for (i, limit) in limits.iter_mut().enumerate() {
            if !seen[i] {
                *limit = 0;
            } else if let Some(keys) = plan.sparse_keys((b, h, q0 + i), (0, end), *limit) {
                sparse.push((i, keys));
                *limit = 0;
            }
        }
        let v_used = v.slice(s![..end, ..]);
        let mut pv = take_buffer(rows * v.ncols());
        self.visible_products(&mut pv, &scores, end, &limits, &sparse, v_used)?;
        self.write_rows(plan, b, v, out, &pv, &seen)?;
        give_back(pv);
        give_back(scores);
        Ok(())
    }

    /// The block's raw scores against the keys each row sees (`limits[i]` for row `i`, at most
    /// `end`) into `p` (`rows x end`). Where the limits grow down the block (a causal block),
    /// the rows go in bands of one key panel (at least 16 rows), each against the keys up to
    /// its last row's limit rounded up to a whole panel: the scores above the diagonal, which
    /// the softmax masks whatever they hold, are not computed. Each score is
    /// the same dot product whichever band computes it: the GEMM's bits do not depend on its
    /// shape.
    fn block_scores(
        &self,
        block: &Block<'_>,
        limits: &[usize],
        end: usize,
        p: &mut ArrayViewMut2<'_, f32>,
    ) -> Result<(), Error> {
        let rows = limits.len();
        let nr = block.kt.map_or_else(
            || view_panel_width(self.isa.isa(), end),
            |kt| kt.panel_width(),
        );
        let band = nr.max(SCORE_BAND_ROWS);
        if rows <= band || limits.first() == limits.last() {
            return self.key_scores(block, 0..end, p);
        }
        for r0 in (0..rows).step_by(band) {
            let r1 = (r0 + band).min(rows);
            let needed = limits[r0..r1].iter().copied().max().unwrap_or(0);
            let keys = needed.next_multiple_of(nr).min(end);
            if keys == 0 {
                continue;
            }
            let part = Block {
                q0: block.q0 + r0,
                q: block.q.slice(s![r0..r1, ..]),
                ..*block
            };
            self.key_scores(&part, 0..keys, &mut p.slice_mut(s![r0..r1, ..keys]))?;
        }
        Ok(())
    }

    /// The block's raw scores against `keys`: `q k[keys]^T` into `p`, from the head's packed
    /// `k^T` where the block has it and the GEMM would pack a view of these keys in panels of
    /// its width (on AVX-512 a window wide enough for the 96-column kernel packs its own, so
    /// that the kernel is the one it always was), else from the view.
    fn key_scores(
        &self,
        block: &Block<'_>,
        keys: Range<usize>,
        p: &mut ArrayViewMut2<'_, f32>,
    ) -> Result<(), Error> {
        if let Some(kt) = block.kt {
            let nr = kt.panel_width();
            if keys.end <= kt.dim().1
                && keys.start.is_multiple_of(nr)
                && view_panel_width(self.isa.isa(), keys.len()) == nr
            {
                let b = Operand::Packed(kt.columns(keys));
                return self.matmul_operand_into(&block.q, b, p, &Identity);
            }
        }
        self.matmul_into(&block.q, &block.k.slice(s![keys, ..]).t(), p, &Identity)
    }

    /// `P V` with each row over the keys it sees, so that a key it cannot see never enters its
    /// sum, whatever its value row holds (`0 x inf` would be NaN): row `i` over its keys
    /// `[0, limits[i])` in increasing order from `+0`, and each row of `sparse` over its own
    /// list of keys, in the same order. The keys that every row sees (at least
    /// [`SHARED_KEYS_GEMM`] of them, in a block of at least [`SHARED_ROWS_GEMM`] rows) go
    /// through the GEMM, at its rate, and each row continues from there over the rest of its
    /// own (`gemm::RaggedProduct`, four rows sharing each value row): the same sequence of
    /// steps for every element. Skipping a hidden key's `+0` weight changes no bit of a sum
    /// over finite values (a sum from `+0` is never `-0`, so adding `±0` leaves it as it is).
    fn visible_products(
        &self,
        pv: &mut [f32],
        p: &[f32],
        ldp: usize,
        limits: &[usize],
        sparse: &[(usize, Vec<usize>)],
        v: ArrayView2<'_, f32>,
    ) -> Result<(), Error> {
        let rows = limits.len();
        let v_dim = pv.len() / rows.max(1);
        // The keys every row sees (the first `q0 + 1` of a causal block): one GEMM, which sums
        // each element over them in increasing order from `+0`, as the rows would; each row
        // then continues over the rest of its own keys.
        let shared = limits.iter().copied().min().unwrap_or(0);
        let shared = if shared >= SHARED_KEYS_GEMM && rows >= SHARED_ROWS_GEMM {
            shared
        } else {
            0
        };
        if shared > 0 {
            let scores = ArrayView2::from_shape((rows, ldp), &p[..rows * ldp])
                .map_err(|e| Error::InvalidArgument(e.to_string()))?;
            let mut out = matrix(pv, rows, v_dim)?;
            self.matmul_into(
                &scores.slice(s![.., ..shared]),
                &v.slice(s![..shared, ..]),
                &mut out,
                &Identity,
            )?;
        }
        // The value rows the ragged rows read (copied only if strided): those past the shared
        // keys. A row of `sparse` has limit 0, so with one `shared` is 0 and these are all.
        debug_assert!(sparse.is_empty() || shared == 0);
        let mut copy = Vec::new();
        let v_rest = v.slice(s![shared.., ..]);
        let v_rows = row_slices(&v_rest, &mut copy);
        let lens: Vec<usize> = limits.iter().map(|&l| l - shared).collect();
        RaggedProduct {
            out: pv,
            cols: v_dim,
            p: &p[shared..],
            ldp,
            lens: &lens,
            rows: &v_rows,
            continued: shared > 0,
        }
        .dispatch::<M>(self.isa);
        for (i, keys) in sparse {
            let weights: Vec<f32> = keys.iter().map(|&j| p[i * ldp + j]).collect();
            let rows: Vec<&[f32]> = keys.iter().map(|&j| v_rows[j]).collect();
            let n = keys.len();
            let out = &mut pv[i * v_dim..(i + 1) * v_dim];
            let (p, lens, rows) = (&weights[..], &[n][..], &rows[..]);
            RaggedProduct {
                out,
                cols: v_dim,
                p,
                ldp: n,
                lens,
                rows,
                continued: false,
            }
            .dispatch::<M>(self.isa);
        }
        Ok(())
    }

    /// Writes the block's output rows (of batch item `b`): `pv` for a row that sees a key, the
    /// masked-row policy for one that sees none (`Uniform`: the mean of the value rows of the
    /// item's real keys, as a softmax of equal weights over all of them).
    fn write_rows(
        &self,
        plan: &Plan<'_>,
        b: usize,
        v: ArrayView2<'_, f32>,
        out: &mut ArrayViewMut2<'_, f32>,
        pv: &[f32],
        seen: &[bool],
    ) -> Result<(), Error> {
        let v_dim = v.ncols();
        let mut uniform = None;
        for (i, mut o) in out.rows_mut().into_iter().enumerate() {
            if seen[i] {
                o.assign(&ArrayView1::from(&pv[i * v_dim..(i + 1) * v_dim]));
                continue;
            }
            match plan.policy {
                MaskedRow::Zero => o.fill(0.0),
                MaskedRow::Nan => o.fill(CANONICAL_NAN),
                MaskedRow::Uniform => {
                    let mean = uniform.get_or_insert_with(|| self.uniform_row(plan, b, v));
                    o.assign(&ArrayView1::from(&mean[..]));
                }
            }
        }
        Ok(())
    }

    /// The row the `Uniform` policy gives batch item `b`: the mean of the value rows of its real
    /// keys ([`Plan::real_keys`]; padding never enters), weights `1/n` over those `n` rows,
    /// summed in order from `+0` (zeros if it has none).
    fn uniform_row(&self, plan: &Plan<'_>, b: usize, v: ArrayView2<'_, f32>) -> Vec<f32> {
        let v = v.slice(s![..plan.real_keys(b), ..]);
        let (n, v_dim) = v.dim();
        let mut mean = vec![0f32; v_dim];
        if n > 0 {
            let weights = vec![1.0 / n as f32; n];
            let mut copy = Vec::new();
            let rows = row_slices(&v, &mut copy);
            let (out, p, lens, rows) = (&mut mean[..], &weights[..], &[n][..], &rows[..]);
            RaggedProduct {
                out,
                cols: v_dim,
                p,
                ldp: n,
                lens,
                rows,
                continued: false,
            }
            .dispatch::<M>(self.isa);
        }
        mean
    }

    /// Fast mode: the online softmax over key tiles.
    fn attention_block_online(
        &self,
        plan: &Plan<'_>,
        block: &Block<'_>,
        out: &mut ArrayViewMut2<'_, f32>,
        key_block: usize,
    ) -> Result<(), Error> {
        let Block { b, h, q0, q, v, .. } = *block;
        let rows = q.nrows();
        let v_dim = v.ncols();
        let end = plan.block_end(b, q0 + rows);
        let mut state = vec![OnlineSoftmax::new(); rows];
        out.fill(0.0);
        let mut part = Array2::<f32>::zeros((rows, v_dim));
        // One scores buffer and one rescale vector for every key tile of the block.
        let mut buf = vec![0f32; rows * key_block.min(end)];
        let mut rescale = vec![1f32; rows];
        let mut ends = vec![0usize; rows];
        let mut limits = vec![0usize; rows];
        let mut k0 = 0;
        while k0 < end {
            let k1 = (k0 + key_block).min(end);
            let width = k1 - k0;
            let scores = &mut buf[..rows * width];
            let mut p = matrix(scores, rows, width)?;
            self.key_scores(block, k0..k1, &mut p)?;
            for (i, e) in ends.iter_mut().enumerate() {
                *e = plan.row_end(b, q0 + i).saturating_sub(k0);
            }
            if plan.limits_only() {
                // Masked by limits only: every row of the tile in one dispatch.
                OnlineUpdateRows {
                    states: &mut state,
                    tile: scores,
                    cols: width,
                    scale: plan.scale,
                    ends: &ends,
                    rescale: &mut rescale,
                }
                .dispatch::<M>(self.isa);
            } else {
                for (i, (row, st)) in scores.chunks_exact_mut(width).zip(&mut state).enumerate() {
                    rescale[i] = plan.with_row_mask((b, h, q0 + i), (k0, k1), |mask| {
                        st.update::<M>(self.isa, row, plan.scale, mask)
                    });
                }
            }
            // Each row's keys of the tile: those before its limit, less those its mask hides.
            let mut sparse = Vec::new();
            for (i, (limit, &e)) in limits.iter_mut().zip(&ends).enumerate() {
                *limit = e.min(width);
                if let Some(keys) = plan.sparse_keys((b, h, q0 + i), (k0, k1), *limit) {
                    sparse.push((i, keys));
                    *limit = 0;
                }
            }
            if sparse.is_empty() && limits.iter().all(|&l| l == width) {
                // Every row sees the whole tile: one GEMM.
                let p = matrix(scores, rows, width)?;
                self.matmul_into(&p, &v.slice(s![k0..k1, ..]), &mut part, &Identity)?;
            } else {
                let v_tile = v.slice(s![k0..k1, ..]);
                let part_values = part.as_slice_mut().ok_or_else(|| {
                    Error::InvalidArgument("attention: a strided tile buffer".into())
                })?;
                self.visible_products(part_values, scores, width, &limits, &sparse, v_tile)?;
            }
            for ((mut o, pr), r) in out.rows_mut().into_iter().zip(part.rows()).zip(&rescale) {
                o.zip_mut_with(&pr, |o, &x| *o = *o * *r + x);
            }
            k0 = k1;
        }
        let mut uniform = None;
        for (mut o, st) in out.rows_mut().into_iter().zip(&state) {
            match (st.normalizer(), plan.policy) {
                (Some(inv), _) => o.mapv_inplace(|x| x * inv),
                (None, MaskedRow::Nan) => o.fill(CANONICAL_NAN),
                (None, MaskedRow::Zero) => o.fill(0.0),
                (None, MaskedRow::Uniform) => {
                    let mean = uniform.get_or_insert_with(|| self.uniform_row(plan, b, v));
                    o.assign(&ArrayView1::from(&mean[..]));
                }
            }
        }
        Ok(())
    }
}

/// The fewest keys that every row of a block sees for their part of `P V` to go through the
/// GEMM: a causal block's rows share all the keys before its first row (all but the block's
/// own triangle), which the ragged rows, one value row at a time, ran well below the GEMM's
/// rate (BENCHMARKS.md, "Choices in the code").
const SHARED_KEYS_GEMM: usize = 16;

/// The fewest rows of a band of a causal block's scores ([`Session::block_scores`]): one 16-key
/// panel of AVX2. Narrower bands make more, smaller products that cost more than the scores
/// they skip; a band of 18 rows rounds its keys up past the next panel and skips less
/// (BENCHMARKS.md, "Choices in the code").
const SCORE_BAND_ROWS: usize = 16;

/// The fewest rows of a block for the GEMM of [`SHARED_KEYS_GEMM`]: it packs the value rows
/// of the shared keys first, a cost the ragged rows do not have, which a decode step's single
/// query row does not repay (its attention ran slower through the GEMM).
const SHARED_ROWS_GEMM: usize = 16;

/// The most values of the keys, and of the values, that a block of few rows has brought into
/// L2 before its scores ([`prefetch_keys_and_values`]): 128 KiB each, a head of 512 keys of 64
/// values, both together half of the smallest L2 the crate meets (Zen 3's 512 KiB).
const FEW_ROWS_PREFETCH_VALUES: usize = 1 << 15;

/// Asks for the keys and the values of a block of fewer than [`SHARED_ROWS_GEMM`] rows (a
/// decode step's query) to be brought into L2, row by row, before its scores start, where each
/// holds at most [`FEW_ROWS_PREFETCH_VALUES`]: a hint, no value changes. Such a block reads
/// each key and value once, and in a decode step they come from L3 or memory (the step's
/// weights streamed through the caches since the last step). The scores' kernel asks for a few
/// blocks of keys ahead and `P V` for a few value rows ahead, which left the two streams one
/// after the other and each short; asked for at once, the head's lines are in flight together
/// (BENCHMARKS.md, "Choices in the code"). A longer cache streams as it did: the values asked
/// for first would leave L2 while the keys stream through it (a 4,096-key head ran slower with
/// its first 512 keys and values asked for). Rows that are not contiguous are left alone.
fn prefetch_keys_and_values(k: ArrayView2<'_, f32>, v: ArrayView2<'_, f32>) {
    if k.len() > FEW_ROWS_PREFETCH_VALUES || v.len() > FEW_ROWS_PREFETCH_VALUES {
        return;
    }
    for m in [k, v] {
        for row in m.rows() {
            let Some(r) = row.to_slice() else { break };
            prefetch_l2(r);
        }
    }
}

/// The rows of `v` as slices, copied into `copy` first if they are not contiguous.
fn row_slices<'v>(v: &'v ArrayView2<'_, f32>, copy: &'v mut Vec<f32>) -> Vec<&'v [f32]> {
    if v.ncols() == 0 {
        return vec![&[]; v.nrows()];
    }
    if let Some(rows) = contiguous_rows(v.view()) {
        return rows;
    }
    *copy = v.iter().copied().collect();
    copy.chunks_exact(v.ncols()).collect()
}

/// `buf` as a C-order `rows x cols` matrix.
fn matrix(buf: &mut [f32], rows: usize, cols: usize) -> Result<ArrayViewMut2<'_, f32>, Error> {
    ArrayViewMut2::from_shape((rows, cols), buf).map_err(|e| Error::InvalidArgument(e.to_string()))
}

/// A 2-D or 4-D tensor as `[batch, heads, seq, dim]`.
fn as_4d<D: Dimension>(a: &ArrayRef<f32, D>) -> Result<ArrayView4<'_, f32>, Error> {
    match a.ndim() {
        4 => a
            .view()
            .into_dimensionality::<Ix4>()
            .map_err(shape_err(a.shape())),
        2 => {
            let a2 = a
                .view()
                .into_dimensionality::<Ix2>()
                .map_err(shape_err(a.shape()))?;
            Ok(a2.insert_axis(Axis(0)).insert_axis(Axis(0)))
        }
        n => Err(not_2d_or_4d(n)),
    }
}

fn not_2d_or_4d(n: usize) -> Error {
    Error::InvalidArgument(format!("attention takes 2-D or 4-D tensors, got {n}-D"))
}

fn shape_err(shape: &[usize]) -> impl FnOnce(ndarray::ShapeError) -> Error + '_ {
    move |e| Error::InvalidArgument(format!("attention tensor of shape {shape:?}: {e}"))
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::attention_work;
    use crate::{Fast, Session};

    /// A decode step over the example's cache (12 heads, 255 keys of 64 + 64 values) reaches the
    /// default parallel threshold by the cache it streams; a small one does not; the block's
    /// prefill (256 queries) counts by its multiply-adds, as before.
    pub fn a_decode_step_over_a_large_cache_is_parallel_work_and_a_small_one_is_not() {
        let line = Session::<Fast>::DEFAULT_PARALLEL_THRESHOLD;
        assert!(attention_work(1, 12, 12, 1, 255, 128) >= line);
        assert!(attention_work(1, 12, 12, 1, 16, 128) < line);
        assert_eq!(
            attention_work(1, 12, 12, 256, 256, 128),
            12 * 256 * 256 * 128 / 64
        );
        // Grouped keys (4 query heads per key head) stream a quarter of the cache.
        assert!(attention_work(1, 12, 3, 1, 255, 128) < attention_work(1, 12, 12, 1, 255, 128));
        assert_eq!(attention_work(usize::MAX, 2, 2, 2, 2, 2), usize::MAX);
    }
}
