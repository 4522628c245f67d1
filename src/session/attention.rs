//! Scaled dot-product attention over `[batch, heads, seq, head_dim]` tensors (or 2-D single
//! head): scores from the crate's GEMM, the scale and every mask applied in the score GEMM's
//! tile epilogue, then the softmax rows, then the product with V.
//!
//! Exact mode scores each block of query rows against every key it can see and takes the
//! two-pass exact softmax (canonical sums) of each row, then `P V` with the exact GEMM. Keys a
//! whole block cannot see (beyond the causal limit or a key length) are left out of both
//! products: their probabilities are `+0`, and adding `+0 * v` never changes a sum, so the bits
//! depend neither on the block size, the instruction set nor the thread count (for finite V).
//!
//! Fast mode runs an online (flash) softmax over key tiles with the fast exp: memory O(tile) per
//! query block, the accumulated output rescaled by `exp(m_old - m_new)` as the running maximum
//! grows, and a fully masked tile changes nothing (no NaN).

use ndarray::{
    Array2, ArrayRef, ArrayView2, ArrayView4, ArrayViewD, ArrayViewMut2, ArrayViewMut4, Axis,
    Dimension, Ix2, Ix4, IxDyn, s,
};
use rayon::prelude::*;

use super::Session;
use super::softmax::Mask;
use crate::epilogue::{FromFn, Identity};
use crate::ops::softmax::{MaskedRow, OnlineSoftmax};
use crate::{Error, Mode};

/// Query rows per work item, by default.
pub const DEFAULT_QUERY_BLOCK: usize = 64;
/// Keys per tile of the fast (online) softmax, by default.
pub const DEFAULT_KEY_BLOCK: usize = 256;

/// The options of [`Session::attention`].
///
/// ```
/// use activation_kernels::session::AttentionOptions;
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
    /// queries are the last `seq_q` positions.
    pub causal_offset: Option<usize>,
    /// A boolean keep-mask or an additive mask, broadcast to `[batch, heads, seq_q, seq_k]`
    /// (`Mask::Causal` here is the same as `causal` with that offset).
    pub mask: Mask<'a>,
    /// Per batch item, the number of valid keys (the rest are padding).
    pub key_lengths: Option<&'a [usize]>,
    /// Query rows per work item (0: [`DEFAULT_QUERY_BLOCK`]). Exact results do not depend on it.
    pub query_block: usize,
    /// Keys per tile of the fast online softmax (0: [`DEFAULT_KEY_BLOCK`]).
    pub key_block: usize,
}

impl<'a> AttentionOptions<'a> {
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
}

/// Everything a work item needs to know about masking, resolved once.
struct Plan<'a> {
    scale: f32,
    causal_offset: Option<usize>,
    keep: Option<ArrayViewD<'a, bool>>,
    additive: Option<ArrayViewD<'a, f32>>,
    key_lengths: Option<&'a [usize]>,
    seq_k: usize,
    policy: MaskedRow,
}

impl Plan<'_> {
    /// The keys `[0, end)` that some row of queries `q0..q1` of batch item `b` may see.
    fn key_end(&self, b: usize, q1: usize) -> usize {
        let mut end = self.seq_k;
        if self.policy == MaskedRow::Uniform {
            return end; // a fully masked row is uniform over every key: keep them all
        }
        if let Some(len) = self.key_lengths {
            end = end.min(len[b]);
        }
        if let Some(off) = self.causal_offset {
            end = end.min((q1 - 1).saturating_add(off).saturating_add(1));
        }
        end
    }

    /// Scales and masks a tile of scores of batch `b`, head `h`, whose element `[i, j]` is
    /// query `qi + i`, key `kj + j`.
    fn scale_and_mask(
        &self,
        tile: &mut ndarray::ArrayRef2<f32>,
        b: usize,
        h: usize,
        qi: usize,
        kj: usize,
    ) {
        for (i, mut row) in tile.rows_mut().into_iter().enumerate() {
            let q = qi + i;
            let limit = self
                .causal_offset
                .map_or(usize::MAX, |o| q.saturating_add(o));
            let len = self.key_lengths.map_or(usize::MAX, |l| l[b]);
            let keep = self.keep.as_ref().map(|m| m.slice(s![b, h, q, ..]));
            let add = self.additive.as_ref().map(|m| m.slice(s![b, h, q, ..]));
            for (j, v) in row.iter_mut().enumerate() {
                let k = kj + j;
                let mut x = *v * self.scale;
                if let Some(a) = &add {
                    x += a[k];
                }
                let masked = k > limit || k >= len || keep.as_ref().is_some_and(|m| !m[k]);
                *v = if masked { f32::NEG_INFINITY } else { x };
            }
        }
    }
}

/// One work item: a block of query rows of batch item `b`, head `h`, starting at query `q0`,
/// with the keys and values of its kv head.
struct Block<'a> {
    b: usize,
    h: usize,
    q0: usize,
    q: ArrayView2<'a, f32>,
    k: ArrayView2<'a, f32>,
    v: ArrayView2<'a, f32>,
}

impl<M: Mode> Session<M> {
    /// Scaled dot-product attention: `out = softmax(scale * q k^T + mask) v`, for `q`
    /// `[batch, heads, seq_q, head_dim]`, `k` `[batch, kv_heads, seq_k, head_dim]`, `v`
    /// `[batch, kv_heads, seq_k, v_dim]` and `out` `[batch, heads, seq_q, v_dim]` (or all 2-D:
    /// one head). `heads` must be a multiple of `kv_heads` (grouped-query attention: query head
    /// `h` uses key/value head `h / (heads / kv_heads)`). Fully masked rows follow the session's
    /// [`MaskedRow`] policy.
    ///
    /// ```
    /// use activation_kernels::{Session, session::AttentionOptions};
    /// use ndarray::Array2;
    /// let q = Array2::from_shape_fn((3, 4), |(i, j)| (i + j) as f32 * 0.1);
    /// let (k, v) = (q.clone(), Array2::from_shape_fn((3, 2), |(i, j)| (i * 2 + j) as f32));
    /// let mut out = Array2::zeros((3, 2));
    /// Session::exact().attention(&q, &k, &v, &mut out, &AttentionOptions::default().causal())?;
    /// assert_eq!(out.row(0), v.row(0)); // the first query sees only the first key
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn attention<D: Dimension>(
        &self,
        q: &ArrayRef<f32, D>,
        k: &ArrayRef<f32, D>,
        v: &ArrayRef<f32, D>,
        out: &mut ArrayRef<f32, D>,
        opts: &AttentionOptions<'_>,
    ) -> Result<(), Error> {
        let (q4, k4, v4) = (four(q)?, four(k)?, four(v)?);
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
            n => {
                return Err(Error::InvalidArgument(format!(
                    "attention takes 2-D or 4-D tensors, got {n}-D"
                )));
            }
        };
        self.attention4(q4, k4, v4, &mut out4, opts)
    }

    fn attention4(
        &self,
        q: ArrayView4<'_, f32>,
        k: ArrayView4<'_, f32>,
        v: ArrayView4<'_, f32>,
        out: &mut ArrayViewMut4<'_, f32>,
        opts: &AttentionOptions<'_>,
    ) -> Result<(), Error> {
        let (batch, heads, seq_q, dim) = q.dim();
        let (kb, kv_heads, seq_k, kd) = k.dim();
        let v_dim = v.shape()[3];
        let mismatch = |what, expected: Vec<usize>, found: &[usize]| Error::ShapeMismatch {
            what,
            expected,
            found: found.to_vec(),
        };
        if kb != batch || kd != dim || kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
            return Err(mismatch(
                "attention k (batch, a divisor of the heads, seq_k, head_dim)",
                vec![batch, heads, seq_k, dim],
                k.shape(),
            ));
        }
        if v.shape()[..3] != [batch, kv_heads, seq_k] {
            return Err(mismatch(
                "attention v",
                vec![batch, kv_heads, seq_k, v_dim],
                v.shape(),
            ));
        }
        if out.shape() != [batch, heads, seq_q, v_dim] {
            return Err(mismatch(
                "attention out",
                vec![batch, heads, seq_q, v_dim],
                out.shape(),
            ));
        }
        if let Some(l) = opts.key_lengths
            && (l.len() != batch || l.iter().any(|&n| n > seq_k))
        {
            return Err(mismatch(
                "attention key_lengths (one per batch item, each <= seq_k)",
                vec![batch],
                &[l.len()],
            ));
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
        let plan = Plan {
            scale: opts.scale.unwrap_or(1.0 / (dim as f32).sqrt()),
            causal_offset,
            keep,
            additive,
            key_lengths: opts.key_lengths,
            seq_k,
            policy: self.masked_row,
        };
        let qb = if opts.query_block == 0 {
            DEFAULT_QUERY_BLOCK
        } else {
            opts.query_block
        };
        let kblk = if opts.key_block == 0 {
            DEFAULT_KEY_BLOCK
        } else {
            opts.key_block
        };
        let group = heads / kv_heads;

        // One work item per (batch, head, block of query rows); each owns its block of `out`.
        let mut items = Vec::new();
        for (b, per_batch) in out.view_mut().into_outer_iter_mut().enumerate() {
            for (h, per_head) in per_batch.into_outer_iter_mut().enumerate() {
                for (blk, o) in per_head.into_axis_chunks_iter_mut(Axis(0), qb).enumerate() {
                    items.push((b, h, blk * qb, o));
                }
            }
        }
        // Each item runs the GEMMs on the calling thread; the items are spread over the threads.
        let inner = Session::<M> {
            pool: None,
            parallel_threshold: usize::MAX,
            ..self.clone()
        };
        let run = |(b, h, q0, mut o): (usize, usize, usize, ArrayViewMut2<'_, f32>)| {
            let block = Block {
                b,
                h,
                q0,
                q: q.slice(s![b, h, q0..q0 + o.nrows(), ..]),
                k: k.slice(s![b, h / group, .., ..]),
                v: v.slice(s![b, h / group, .., ..]),
            };
            if M::FAST {
                inner.attention_block_online(&plan, &block, &mut o, kblk)
            } else {
                inner.attention_block_exact(&plan, &block, &mut o)
            }
        };
        let work = batch * heads * seq_q * seq_k.max(1) * (dim + v_dim).max(1);
        if self.parallel(work / 64) {
            self.install(|| items.into_par_iter().try_for_each(run))
        } else {
            items.into_iter().try_for_each(run)
        }
    }

    /// Exact mode: the scores of the block against every key it may see, the two-pass exact
    /// softmax of each row, then `P V`.
    fn attention_block_exact(
        &self,
        plan: &Plan<'_>,
        block: &Block<'_>,
        out: &mut ArrayViewMut2<'_, f32>,
    ) -> Result<(), Error> {
        let Block { b, h, q0, q, k, v } = *block;
        let end = plan.key_end(b, q0 + q.nrows());
        let mut p = Array2::<f32>::zeros((q.nrows(), end));
        let mask = FromFn(|t: &mut ndarray::ArrayRef2<f32>, i: usize, j: usize| {
            plan.scale_and_mask(t, b, h, q0 + i, j)
        });
        self.matmul(&q, &k.slice(s![..end, ..]).t(), &mut p, &mask)?;
        for mut row in p.rows_mut() {
            if let Some(r) = row.as_slice_mut() {
                self.row_kernel(r, plan.policy, false);
            }
        }
        if end == 0 {
            out.fill(if plan.policy == MaskedRow::Nan {
                crate::ops::CANONICAL_NAN
            } else {
                0.0
            });
            return Ok(());
        }
        self.matmul(&p, &v.slice(s![..end, ..]), out, &Identity)
    }

    /// Fast mode: the online softmax over key tiles.
    fn attention_block_online(
        &self,
        plan: &Plan<'_>,
        block: &Block<'_>,
        out: &mut ArrayViewMut2<'_, f32>,
        key_block: usize,
    ) -> Result<(), Error> {
        let Block { b, h, q0, q, k, v } = *block;
        let rows = q.nrows();
        let end = plan.key_end(b, q0 + rows);
        let mut state = vec![OnlineSoftmax::new(); rows];
        out.fill(0.0);
        let mut part = Array2::<f32>::zeros((rows, v.ncols()));
        let mut k0 = 0;
        while k0 < end {
            let k1 = (k0 + key_block).min(end);
            let mut p = Array2::<f32>::zeros((rows, k1 - k0));
            let mask = FromFn(|t: &mut ndarray::ArrayRef2<f32>, i: usize, j: usize| {
                plan.scale_and_mask(t, b, h, q0 + i, k0 + j)
            });
            self.matmul(&q, &k.slice(s![k0..k1, ..]).t(), &mut p, &mask)?;
            let mut rescale = vec![1f32; rows];
            for ((mut row, st), r) in p.rows_mut().into_iter().zip(&mut state).zip(&mut rescale) {
                if let Some(slice) = row.as_slice_mut() {
                    *r = st.update::<M>(self.isa, slice)?;
                }
            }
            self.matmul(&p, &v.slice(s![k0..k1, ..]), &mut part, &Identity)?;
            for ((mut o, pr), r) in out.rows_mut().into_iter().zip(part.rows()).zip(&rescale) {
                o.zip_mut_with(&pr, |o, &x| *o = *o * *r + x);
            }
            k0 = k1;
        }
        for (mut o, st) in out.rows_mut().into_iter().zip(&state) {
            match (st.normalizer(), plan.policy) {
                (Some(inv), _) => o.mapv_inplace(|x| x * inv),
                (None, MaskedRow::Nan) => o.fill(crate::ops::CANONICAL_NAN),
                (None, MaskedRow::Zero) => o.fill(0.0),
                (None, MaskedRow::Uniform) => {
                    let n = v.nrows().max(1) as f32;
                    o.assign(&v.sum_axis(Axis(0)).mapv(|s| s / n));
                }
            }
        }
        Ok(())
    }
}

/// A 2-D or 4-D tensor as `[batch, heads, seq, dim]`.
fn four<D: Dimension>(a: &ArrayRef<f32, D>) -> Result<ArrayView4<'_, f32>, Error> {
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
        n => Err(Error::InvalidArgument(format!(
            "attention takes 2-D or 4-D tensors, got {n}-D"
        ))),
    }
}

fn shape_err(shape: &[usize]) -> impl FnOnce(ndarray::ShapeError) -> Error + '_ {
    move |e| Error::InvalidArgument(format!("attention tensor of shape {shape:?}: {e}"))
}
