//! Attention over packed variable-length sequences (FlashAttention's varlen form): the token
//! rows of every sequence one after the other, `[total_tokens, heads * head_dim]`, as a QKV
//! projection writes them, with the sequences' offsets. No padding is stored or computed:
//! each (sequence, head) is one work item, the attention of `attention.rs` on that sequence's
//! rows and that head's columns (views, no copies), so in exact mode a row's bits are those of
//! its sequence run alone.

use ndarray::{Array2, ArrayRef2, ArrayViewMut2, Axis, s};

use super::Session;
use super::attention::AttentionOptions;
use super::softmax::Mask;
use crate::{Error, Mode};

/// Checks `offsets` (`[0, n0, n0 + n1, ..., total]`: from 0, non-decreasing, ending at
/// `total`, the rows of the packed tensor named by `what`; `[0]` is a batch of no sequence).
pub(crate) fn check_offsets(offsets: &[usize], total: usize, what: &str) -> Result<(), Error> {
    let bad = |why: String| {
        Err(Error::InvalidArgument(format!(
            "sequence offsets {offsets:?}: {why}"
        )))
    };
    match (offsets.first(), offsets.last()) {
        (Some(0), Some(&last)) => {
            if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
                return bad(format!("offset {} is less than offset {i}", i + 1));
            }
            if last != total {
                return bad(format!("the last offset is {last}, but {what} are {total}"));
            }
            Ok(())
        }
        _ => bad("expected [0, n0, n0 + n1, ..., total] (from 0)".into()),
    }
}

/// The head layout of a varlen attention call, from the column counts and `heads`.
struct Heads {
    heads: usize,
    head_dim: usize,
    kv_heads: usize,
    v_dim: usize,
}

fn heads_of(heads: usize, q_cols: usize, k_cols: usize, v_cols: usize) -> Result<Heads, Error> {
    if heads == 0 || q_cols == 0 || !q_cols.is_multiple_of(heads) {
        return Err(Error::InvalidArgument(format!(
            "varlen attention: q has {q_cols} columns, which is not heads ({heads}) x head_dim \
             with head_dim >= 1"
        )));
    }
    let head_dim = q_cols / heads;
    let kv_heads = k_cols / head_dim;
    if !k_cols.is_multiple_of(head_dim) || kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
        return Err(Error::InvalidArgument(format!(
            "varlen attention: k has {k_cols} columns, which is not kv_heads x head_dim \
             ({head_dim}) with kv_heads a divisor of heads ({heads})"
        )));
    }
    if !v_cols.is_multiple_of(kv_heads) {
        return Err(Error::InvalidArgument(format!(
            "varlen attention: v has {v_cols} columns, which is not kv_heads ({kv_heads}) x \
             v_dim"
        )));
    }
    Ok(Heads {
        heads,
        head_dim,
        kv_heads,
        v_dim: v_cols / kv_heads,
    })
}

impl<M: Mode> Session<M> {
    /// Attention over packed sequences: `q` `[total, heads * head_dim]`, `k`
    /// `[total, kv_heads * head_dim]`, `v` `[total, kv_heads * v_dim]` and `out`
    /// `[total, heads * v_dim]` hold the rows of every sequence one after the other (head `h`
    /// in columns `h * head_dim..(h + 1) * head_dim`, the layout a QKV projection writes: any
    /// of them may be column slices of one buffer), and `offsets` is
    /// `[0, n0, n0 + n1, ..., total]` (FlashAttention's `cu_seqlens`). Each row attends to the
    /// rows of its own sequence only; `kv_heads` is read from `k`'s columns (grouped-query
    /// attention as in [`Session::attention_into`]).
    ///
    /// `opts` gives the scale, causal masking (within each sequence) and the block sizes; a
    /// mask or key lengths are an error here (the offsets say where each sequence ends). The
    /// (sequence, head) items run spread over the session's threads; in exact mode a row's bits
    /// are those of [`Session::attention_into`] on its sequence alone, whatever the other
    /// sequences, the instruction set or the thread count. Empty sequences are allowed.
    ///
    /// ```
    /// use activation_kernels::{AttentionOptions, Session};
    /// use ndarray::{Array2, s};
    /// // Two sequences (3 and 2 tokens), 2 heads of 4.
    /// let qkv = Array2::from_shape_fn((5, 24), |(i, j)| ((i * 7 + j) % 5) as f32 * 0.1);
    /// let (q, k, v) = (qkv.slice(s![.., ..8]), qkv.slice(s![.., 8..16]), qkv.slice(s![.., 16..]));
    /// let session = Session::exact();
    /// let out = session.varlen_attention(&q, &k, &v, &[0, 3, 5], 2, &AttentionOptions::default())?;
    /// // The second sequence alone gives the same bits.
    /// let alone = session.varlen_attention(
    ///     &q.slice(s![3.., ..]), &k.slice(s![3.., ..]), &v.slice(s![3.., ..]),
    ///     &[0, 2], 2, &AttentionOptions::default(),
    /// )?;
    /// assert_eq!(out.slice(s![3.., ..]), alone);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn varlen_attention(
        &self,
        q: &ArrayRef2<f32>,
        k: &ArrayRef2<f32>,
        v: &ArrayRef2<f32>,
        offsets: &[usize],
        heads: usize,
        opts: &AttentionOptions<'_>,
    ) -> Result<Array2<f32>, Error> {
        let h = heads_of(heads, q.ncols(), k.ncols(), v.ncols())?;
        let cols = h.heads.saturating_mul(h.v_dim);
        let mut out =
            super::owned::try_zeros(ndarray::Ix2(q.nrows(), cols), "varlen_attention output")?;
        self.varlen_attention_into(q, k, v, &mut out, offsets, heads, opts)?;
        Ok(out)
    }

    /// [`Session::varlen_attention`] into `out` (`[total, heads * v_dim]`). Attention has no
    /// in-place form: the output is none of the inputs.
    #[allow(clippy::too_many_arguments)]
    pub fn varlen_attention_into(
        &self,
        q: &ArrayRef2<f32>,
        k: &ArrayRef2<f32>,
        v: &ArrayRef2<f32>,
        out: &mut ArrayRef2<f32>,
        offsets: &[usize],
        heads: usize,
        opts: &AttentionOptions<'_>,
    ) -> Result<(), Error> {
        let h = heads_of(heads, q.ncols(), k.ncols(), v.ncols())?;
        let total = q.nrows();
        check_offsets(offsets, total, "q rows")?;
        for (what, rows) in [("k rows", k.nrows()), ("v rows", v.nrows())] {
            if rows != total {
                return Err(Error::ShapeMismatch {
                    what: if what == "k rows" {
                        "varlen attention k ([total, kv_heads * head_dim])"
                    } else {
                        "varlen attention v ([total, kv_heads * v_dim])"
                    },
                    expected: vec![total],
                    found: vec![rows],
                });
            }
        }
        crate::error::same_shape(
            "varlen attention out ([total, heads * v_dim])",
            &[total, h.heads * h.v_dim],
            out.shape(),
        )?;
        if !matches!(opts.mask, Mask::None) || opts.key_lengths.is_some() {
            return Err(Error::InvalidArgument(
                "varlen attention takes no mask or key lengths: the offsets bound each sequence"
                    .into(),
            ));
        }
        let group = h.heads / h.kv_heads;
        // One item per (sequence, head), each owning its block of `out`.
        let mut items = Vec::new();
        let mut rest: ArrayViewMut2<'_, f32> = out.view_mut();
        for (seq, w) in offsets.windows(2).enumerate() {
            let (mine, after) = rest.split_at(Axis(0), w[1] - w[0]);
            rest = after;
            if w[1] == w[0] {
                continue;
            }
            for (head, o) in mine.into_axis_chunks_iter_mut(Axis(1), h.v_dim).enumerate() {
                items.push((seq, head, o));
            }
        }
        let inner = Session::<M> {
            pool: super::Threads::Caller,
            parallel_threshold: usize::MAX,
            ..self.clone()
        };
        let (hd, vd) = (h.head_dim, h.v_dim);
        let run = |(seq, head, mut o): (usize, usize, ArrayViewMut2<'_, f32>)| {
            let (a, b) = (offsets[seq], offsets[seq + 1]);
            let kh = head / group;
            inner.attention_into(
                &q.slice(s![a..b, head * hd..(head + 1) * hd]),
                &k.slice(s![a..b, kh * hd..(kh + 1) * hd]),
                &v.slice(s![a..b, kh * vd..(kh + 1) * vd]),
                &mut o,
                opts,
            )
        };
        // The work of every item: its scores and its products with V, or the values it reads.
        let madds = offsets
            .windows(2)
            .map(|w| (w[1] - w[0]).saturating_mul(w[1] - w[0]))
            .fold(0usize, usize::saturating_add)
            .saturating_mul(h.heads)
            .saturating_mul(hd + vd);
        let values = total.saturating_mul(q.ncols() + k.ncols() + v.ncols() + h.heads * vd);
        let work = super::matmul::work_of(madds, values);
        let parallel = self.parallel(work) && items.len() > 1;
        self.try_for_each_item(parallel, items, run)
    }
}
