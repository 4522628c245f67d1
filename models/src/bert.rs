//! The BERT encoder on `activation-kernels`: post-LN layers, weights packed once, run on
//! packed (varlen) token rows or on a padded batch.
//!
//! One layer on token rows `x` `[tokens, hidden]`:
//! `qkv = x Wqkv + b` (one product for the three projections), attention per sequence and
//! head, `h = LayerNorm(attn Wo + bo + x)`, `y = LayerNorm(gelu(h W1 + b1) W2 + b2 + h)`; the
//! biases, GELU and residuals run as GEMM epilogues on each output tile. In exact mode every
//! step gives a token row bits that depend only on its own sequence (the GEMM sums each
//! output in increasing k whatever the rows beside it; LayerNorm is per row; attention sees
//! the sequence's own keys only), so an embedding does not depend on the batch it came in.

use std::sync::{Mutex, TryLockError};

use activation_kernels::epilogue::{Bias, Chain, Residual};
use activation_kernels::{AttentionOptions, Func, Mode, PackedMatrix, Session};
use ndarray::{
    Array1, Array2, ArrayView2, ArrayView4, ArrayViewMut2, ArrayViewMut4, Axis, ShapeBuilder,
    concatenate, s,
};

use crate::bert_weights::{BertWeights, Linear, Norm};
use crate::config::BertConfig;
use crate::error::ModelError;

/// A linear layer packed for the session: `y = x w + b`, `w` `[in, out]`.
struct Packed {
    w: PackedMatrix,
    b: Array1<f32>,
}

impl Packed {
    fn new<M: Mode>(
        session: &Session<M>,
        w: &Array2<f32>,
        b: Array1<f32>,
    ) -> Result<Self, ModelError> {
        Ok(Packed {
            w: session.pack(&w.t())?,
            b,
        })
    }
}

struct Layer {
    qkv: Packed,
    attn_out: Packed,
    attn_norm: Norm,
    ff_in: Packed,
    ff_out: Packed,
    ff_norm: Norm,
}

/// The intermediate rows of a layer (QKV, attention output, attention block output, FFN
/// hidden), kept from one forward call to the next. Fresh buffers of this size come from
/// `mmap` or a heap top the allocator trims on every free, so each layer would page-fault them
/// in again (zeroed by the kernel); reused, they stay mapped. Every element is written before
/// it is read, so what a buffer held before never reaches an output.
#[derive(Default)]
struct Scratch {
    qkv: Vec<f32>,
    attn: Vec<f32>,
    hidden: Vec<f32>,
    ff: Vec<f32>,
}

/// `buf` as a `[rows, cols]` matrix, grown if it is too short.
fn matrix(
    buf: &mut Vec<f32>,
    rows: usize,
    cols: usize,
) -> Result<ArrayViewMut2<'_, f32>, ModelError> {
    let len = rows
        .checked_mul(cols)
        .ok_or_else(|| ModelError::Weights(format!("[{rows}, {cols}] rows overflow")))?;
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
    ArrayViewMut2::from_shape((rows, cols), &mut buf[..len])
        .map_err(|e| ModelError::Weights(e.to_string()))
}

/// A BERT encoder with its weights packed for one session.
pub struct Bert<M: Mode> {
    session: Session<M>,
    config: BertConfig,
    word: Array2<f32>,
    position: Array2<f32>,
    token_type: Array2<f32>,
    embed_norm: Norm,
    layers: Vec<Layer>,
    scratch: Mutex<Scratch>,
}

/// One tokenised sentence: its ids and token-type ids (of equal length).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Word-piece ids.
    pub ids: Vec<u32>,
    /// Token-type (segment) ids.
    pub type_ids: Vec<u32>,
}

impl<M: Mode> Bert<M> {
    /// Packs `weights` for `session` (once; every forward call reuses them).
    pub fn new(session: Session<M>, weights: &BertWeights) -> Result<Self, ModelError> {
        let layers = weights
            .layers
            .iter()
            .map(|l| {
                let qkv_w = concatenate(
                    Axis(0),
                    &[l.query.w.view(), l.key.w.view(), l.value.w.view()],
                )
                .map_err(|e| ModelError::Weights(e.to_string()))?;
                let qkv_b = concatenate(
                    Axis(0),
                    &[l.query.b.view(), l.key.b.view(), l.value.b.view()],
                )
                .map_err(|e| ModelError::Weights(e.to_string()))?;
                let pack = |lin: &Linear| Packed::new(&session, &lin.w, lin.b.clone());
                Ok(Layer {
                    qkv: Packed::new(&session, &qkv_w, qkv_b)?,
                    attn_out: pack(&l.attn_out)?,
                    attn_norm: l.attn_norm.clone(),
                    ff_in: pack(&l.ff_in)?,
                    ff_out: pack(&l.ff_out)?,
                    ff_norm: l.ff_norm.clone(),
                })
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        Ok(Bert {
            config: weights.config.clone(),
            word: weights.word.clone(),
            position: weights.position.clone(),
            token_type: weights.token_type.clone(),
            embed_norm: weights.embed_norm.clone(),
            layers,
            session,
            scratch: Mutex::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &BertConfig {
        &self.config
    }

    /// The session the weights are packed for.
    pub fn session(&self) -> &Session<M> {
        &self.session
    }

    /// Checks one sentence's tokens against the tables.
    fn check(&self, t: &Tokens) -> Result<(), ModelError> {
        if t.ids.len() != t.type_ids.len() {
            return Err(ModelError::Tokenizer(format!(
                "{} ids but {} type ids",
                t.ids.len(),
                t.type_ids.len()
            )));
        }
        if t.ids.len() > self.config.max_position_embeddings {
            return Err(ModelError::Tokenizer(format!(
                "a sequence of {} tokens is longer than the model's {} positions",
                t.ids.len(),
                self.config.max_position_embeddings
            )));
        }
        Ok(())
    }

    /// The embedding rows (word + token type + position, then LayerNorm) of `rows` tokens.
    fn embed(
        &self,
        ids: &[u32],
        types: &[u32],
        positions: &[u32],
    ) -> Result<Array2<f32>, ModelError> {
        let s = &self.session;
        let mut x = s.embedding_sum(&[
            (&self.word, ids),
            (&self.token_type, types),
            (&self.position, positions),
        ])?;
        let eps = self.config.layer_norm_eps;
        s.layer_norm(&mut x, &self.embed_norm.gamma, &self.embed_norm.beta, eps)?;
        Ok(x)
    }

    /// The encoder's output rows of packed sentences: `[total tokens, hidden]`, sentence `i`
    /// in rows `offsets[i]..offsets[i + 1]` (returned beside). No padding anywhere.
    pub fn forward_varlen(
        &self,
        batch: &[Tokens],
    ) -> Result<(Array2<f32>, Vec<usize>), ModelError> {
        let mut offsets = vec![0usize];
        let (mut ids, mut types, mut positions) = (Vec::new(), Vec::new(), Vec::new());
        for t in batch {
            self.check(t)?;
            ids.extend_from_slice(&t.ids);
            types.extend_from_slice(&t.type_ids);
            positions.extend(0..t.ids.len() as u32);
            offsets.push(ids.len());
        }
        let mut x = self.embed(&ids, &types, &positions)?;
        let heads = self.config.num_attention_heads;
        let h = self.config.hidden_size;
        let opts = AttentionOptions::default();
        let mut scratch = self.scratch();
        for layer in &self.layers {
            let session = &self.session;
            let attention = |qkv: &ArrayView2<'_, f32>, out: &mut ArrayViewMut2<'_, f32>| {
                session.varlen_attention_into(
                    &qkv.slice(s![.., ..h]),
                    &qkv.slice(s![.., h..2 * h]),
                    &qkv.slice(s![.., 2 * h..]),
                    out,
                    &offsets,
                    heads,
                    &opts,
                )
            };
            x = self.layer(layer, x, &mut scratch, attention)?;
        }
        Ok((x, offsets))
    }

    /// The encoder's output rows of a padded batch: every sentence padded (at its end, with
    /// id 0) to the longest, `[batch * longest, hidden]` (sentence `b` in rows
    /// `b * longest..`, its padding rows after its tokens, their values meaningless), and the
    /// longest length. Attention sees each sentence's own keys only (key lengths).
    pub fn forward_padded(&self, batch: &[Tokens]) -> Result<(Array2<f32>, usize), ModelError> {
        let longest = batch.iter().map(|t| t.ids.len()).max().unwrap_or(0);
        let (mut ids, mut types, mut positions) = (Vec::new(), Vec::new(), Vec::new());
        let mut lengths = Vec::new();
        for t in batch {
            self.check(t)?;
            let n = t.ids.len();
            ids.extend(
                t.ids
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(0, longest - n)),
            );
            types.extend(
                t.type_ids
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(0, longest - n)),
            );
            positions.extend(0..longest as u32);
            lengths.push(n);
        }
        let mut x = self.embed(&ids, &types, &positions)?;
        let (heads, hd) = (self.config.num_attention_heads, self.config.head_dim());
        let h = self.config.hidden_size;
        let b = batch.len();
        let opts = AttentionOptions::default().with_key_lengths(&lengths);
        let mut scratch = self.scratch();
        for layer in &self.layers {
            let session = &self.session;
            let attention = |qkv: &ArrayView2<'_, f32>, out: &mut ArrayViewMut2<'_, f32>| {
                // `[batch, heads, seq, head_dim]` views of the packed rows: no transposes.
                let data = qkv.as_slice().expect("a C-order scratch matrix");
                let in_shape = (b, heads, longest, hd).strides((longest * 3 * h, hd, 3 * h, 1));
                let view = |at: usize| ArrayView4::from_shape(in_shape, &data[at..]);
                let (q, k, v) = (view(0), view(h), view(2 * h));
                let (Ok(q), Ok(k), Ok(v)) = (q, k, v) else {
                    return Err(activation_kernels::Error::InvalidArgument(
                        "qkv view".into(),
                    ));
                };
                let out_shape = (b, heads, longest, hd).strides((longest * h, hd, h, 1));
                let out_data = out.as_slice_mut().expect("a C-order scratch matrix");
                let mut o = ArrayViewMut4::from_shape(out_shape, out_data)
                    .map_err(|e| activation_kernels::Error::InvalidArgument(e.to_string()))?;
                session.attention_into(&q, &k, &v, &mut o, &opts)
            };
            if longest > 0 {
                x = self.layer(layer, x, &mut scratch, attention)?;
            }
        }
        Ok((x, longest))
    }

    /// The scratch buffers: the kept ones, or new ones while another call holds those.
    fn scratch(&self) -> ScratchGuard<'_> {
        match self.scratch.try_lock() {
            Ok(kept) => ScratchGuard::Kept(kept),
            // A panic in an earlier call leaves nothing that matters: every element is
            // written before it is read.
            Err(TryLockError::Poisoned(p)) => ScratchGuard::Kept(p.into_inner()),
            Err(TryLockError::WouldBlock) => ScratchGuard::Own(Scratch::default()),
        }
    }

    /// One post-LN layer on token rows `x`, with `attention(qkv, out)`, its intermediate rows
    /// in `scratch`.
    fn layer(
        &self,
        layer: &Layer,
        x: Array2<f32>,
        scratch: &mut Scratch,
        attention: impl Fn(
            &ArrayView2<'_, f32>,
            &mut ArrayViewMut2<'_, f32>,
        ) -> Result<(), activation_kernels::Error>,
    ) -> Result<Array2<f32>, ModelError> {
        let s = &self.session;
        let (tokens, h) = x.dim();
        let eps = self.config.layer_norm_eps;
        let mut qkv = matrix(&mut scratch.qkv, tokens, 3 * h)?;
        s.matmul_into(&x, &layer.qkv.w, &mut qkv, &Bias::per_column(&layer.qkv.b))?;
        let mut attn = matrix(&mut scratch.attn, tokens, h)?;
        attention(&qkv.view(), &mut attn)?;
        let mut hidden = matrix(&mut scratch.hidden, tokens, h)?;
        let out_epilogue = Chain(Bias::per_column(&layer.attn_out.b), Residual::new(x.view()));
        s.matmul_into(&attn, &layer.attn_out.w, &mut hidden, &out_epilogue)?;
        let n = &layer.attn_norm;
        s.layer_norm(&mut hidden, &n.gamma, &n.beta, eps)?;
        let mut ff = matrix(&mut scratch.ff, tokens, self.config.intermediate_size)?;
        let gelu = s.bias_activation(Bias::per_column(&layer.ff_in.b), Func::GeluErf);
        s.matmul_into(&hidden, &layer.ff_in.w, &mut ff, &gelu)?;
        let mut y = x;
        let ff_epilogue = Chain(
            Bias::per_column(&layer.ff_out.b),
            Residual::new(hidden.view()),
        );
        s.matmul_into(&ff, &layer.ff_out.w, &mut y, &ff_epilogue)?;
        let n = &layer.ff_norm;
        s.layer_norm(&mut y, &n.gamma, &n.beta, eps)?;
        Ok(y)
    }
}

/// The scratch buffers of one forward call.
enum ScratchGuard<'a> {
    Kept(std::sync::MutexGuard<'a, Scratch>),
    Own(Scratch),
}

impl std::ops::Deref for ScratchGuard<'_> {
    type Target = Scratch;
    fn deref(&self) -> &Scratch {
        match self {
            ScratchGuard::Kept(g) => g,
            ScratchGuard::Own(s) => s,
        }
    }
}

impl std::ops::DerefMut for ScratchGuard<'_> {
    fn deref_mut(&mut self) -> &mut Scratch {
        match self {
            ScratchGuard::Kept(g) => g,
            ScratchGuard::Own(s) => s,
        }
    }
}
