//! A pre-LayerNorm GPT-2-style transformer block, in f32 through a `Session` (exact or fast) and
//! in f64 as the reference. Shared by the `transformer_block` example and its test.

use std::time::{Duration, Instant};

use activation_kernels::AttentionOptions;
use activation_kernels::epilogue::{Bias, Chain, Residual};
use activation_kernels::{Error, Func, Mode, PackedMatrix, Session};
use ndarray::{Array1, Array2, Array4, ArrayView2, s};

/// The block's sizes.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub d_model: usize,
    pub heads: usize,
    pub d_ff: usize,
    pub seq: usize,
    pub batch: usize,
}

impl Config {
    /// GPT-2 small: d_model 768, 12 heads, d_ff 3072, sequence 256.
    pub const GPT2_SMALL: Config = Config {
        d_model: 768,
        heads: 12,
        d_ff: 3072,
        seq: 256,
        batch: 1,
    };

    pub fn tokens(&self) -> usize {
        self.seq * self.batch
    }

    /// Bytes of the weights (f32), as the block holds them once.
    pub fn weight_bytes(&self) -> Option<usize> {
        let (d, f) = (self.d_model, self.d_ff);
        let values = d
            .checked_mul(d)?
            .checked_mul(4)?
            .checked_add(d.checked_mul(f)?.checked_mul(2)?)?;
        values
            .checked_add(d.checked_mul(9)?)?
            .checked_add(f)?
            .checked_mul(4)
    }

    /// Bytes of the activations one run of a mode holds at once, about: the input, q/k/v, the
    /// attention output, the residual stream and its norms (f32), and the MLP's hidden layer.
    pub fn activation_bytes(&self) -> Option<usize> {
        let per_token = self
            .d_model
            .checked_mul(10)?
            .checked_add(self.d_ff.checked_mul(2)?)?;
        self.tokens().checked_mul(per_token)?.checked_mul(4)
    }

    /// Bytes the f64 reference holds at once, about: its activations in f64 and one chunk of
    /// attention scores.
    pub fn reference_bytes(&self) -> Option<usize> {
        let per_token = self
            .d_model
            .checked_mul(12)?
            .checked_add(self.d_ff.checked_mul(2)?)?;
        let acts = self.tokens().checked_mul(per_token)?;
        let scores = REFERENCE_ROWS
            .min(self.seq)
            .checked_mul(self.seq)?
            .checked_mul(2)?;
        acts.checked_add(scores)?.checked_mul(8)
    }
}

/// Seeded weights, each an integer below 2^23 times a power of two: exact in f32 and f64, the
/// same on every machine.
pub struct Weights {
    pub ln1_g: Array1<f32>,
    pub ln1_b: Array1<f32>,
    pub w_qkv: Array2<f32>,
    pub b_qkv: Array1<f32>,
    pub w_o: Array2<f32>,
    pub b_o: Array1<f32>,
    pub ln2_g: Array1<f32>,
    pub ln2_b: Array1<f32>,
    pub w_up: Array2<f32>,
    pub b_up: Array1<f32>,
    pub w_down: Array2<f32>,
    pub b_down: Array1<f32>,
}

/// splitmix64.
pub struct IntRng(u64);

impl IntRng {
    pub fn new(seed: u64) -> Self {
        IntRng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// An integer in `[-2^23, 2^23)` times `2^-23 * amplitude` (`amplitude` a power of two):
    /// uniform in `[-amplitude, amplitude)`, exactly representable.
    pub fn value(&mut self, amplitude: f32) -> f32 {
        let i = (self.next() >> 40) as i32 - (1 << 23);
        i as f32 * (amplitude / 8_388_608.0)
    }
    pub fn vector(&mut self, n: usize, center: f32, amplitude: f32) -> Array1<f32> {
        Array1::from_shape_fn(n, |_| center + self.value(amplitude))
    }
    pub fn matrix(&mut self, r: usize, c: usize, amplitude: f32) -> Array2<f32> {
        Array2::from_shape_fn((r, c), |_| self.value(amplitude))
    }
}

impl Weights {
    pub fn new(c: &Config, seed: u64) -> Weights {
        let mut g = IntRng::new(seed);
        let (d, f) = (c.d_model, c.d_ff);
        // Amplitudes near 1/sqrt(fan_in), rounded to powers of two.
        let a_in = pow2_near(1.0 / (d as f32).sqrt());
        let a_ff = pow2_near(1.0 / (f as f32).sqrt());
        Weights {
            ln1_g: g.vector(d, 1.0, 0.125),
            ln1_b: g.vector(d, 0.0, 0.0625),
            w_qkv: g.matrix(d, 3 * d, a_in),
            b_qkv: g.vector(3 * d, 0.0, 0.03125),
            w_o: g.matrix(d, d, a_in),
            b_o: g.vector(d, 0.0, 0.03125),
            ln2_g: g.vector(d, 1.0, 0.125),
            ln2_b: g.vector(d, 0.0, 0.0625),
            w_up: g.matrix(d, f, a_in),
            b_up: g.vector(f, 0.0, 0.03125),
            w_down: g.matrix(f, d, a_ff),
            b_down: g.vector(d, 0.0, 0.03125),
        }
    }
}

/// The four weight matrices packed once for a session's GEMM, as a model holds them.
pub struct Packed {
    pub w_qkv: PackedMatrix,
    pub w_o: PackedMatrix,
    pub w_up: PackedMatrix,
    pub w_down: PackedMatrix,
}

impl Packed {
    pub fn new<M: Mode>(s: &Session<M>, w: &Weights) -> Result<Packed, Error> {
        Ok(Packed {
            w_qkv: s.pack(&w.w_qkv)?,
            w_o: s.pack(&w.w_o)?,
            w_up: s.pack(&w.w_up)?,
            w_down: s.pack(&w.w_down)?,
        })
    }
}

fn pow2_near(x: f32) -> f32 {
    2f32.powi(x.log2().round() as i32)
}

/// The block's input `[tokens, d_model]`, from the seed after the weights'.
pub fn input(c: &Config, seed: u64) -> Array2<f32> {
    IntRng::new(seed ^ 0xA5A5_A5A5).matrix(c.tokens(), c.d_model, 2.0)
}

/// Wall time of each stage.
#[derive(Default, Clone, Debug)]
pub struct Timings {
    pub stages: Vec<(&'static str, Duration)>,
}

impl Timings {
    fn time<R>(&mut self, name: &'static str, f: impl FnOnce() -> R) -> R {
        let t = Instant::now();
        let r = f();
        self.stages.push((name, t.elapsed()));
        r
    }
    pub fn total(&self) -> Duration {
        self.stages.iter().map(|s| s.1).sum()
    }
}

pub const LN_EPS: f32 = 1e-5;

/// The block in f32 through `session`: returns the output `[tokens, d_model]`. Packs the
/// weights (untimed), then [`forward_packed`]. (For the tests; the example packs once.)
#[allow(dead_code)]
pub fn forward<M: Mode>(
    s: &Session<M>,
    c: &Config,
    w: &Weights,
    x: &Array2<f32>,
    t: &mut Timings,
) -> Result<Array2<f32>, Error> {
    forward_packed(s, c, w, &Packed::new(s, w)?, x, t)
}

/// The first layer norm of the rows of `x`, then their q, k and v: `ln1(x) W_qkv + b_qkv`
/// (`[rows, 3 d_model]`).
fn norm_and_qkv<M: Mode>(
    s: &Session<M>,
    w: &Weights,
    p: &Packed,
    x: &Array2<f32>,
    t: &mut Timings,
) -> Result<Array2<f32>, Error> {
    let mut h = x.clone();
    t.time("layernorm 1", || {
        s.layer_norm(&mut h, &w.ln1_g, &w.ln1_b, LN_EPS)
    })?;
    let mut qkv = Array2::<f32>::zeros((x.nrows(), p.w_qkv.dim().1));
    t.time("qkv projection + bias", || {
        s.matmul_into(&h, &p.w_qkv, &mut qkv, &Bias::per_column(w.b_qkv.view()))
    })?;
    Ok(qkv)
}

/// The block with the weight matrices packed once (`p`, from `w`); vectors from `w`.
pub fn forward_packed<M: Mode>(
    s: &Session<M>,
    c: &Config,
    w: &Weights,
    p: &Packed,
    x: &Array2<f32>,
    t: &mut Timings,
) -> Result<Array2<f32>, Error> {
    let (d, hd) = (c.d_model, c.d_model / c.heads);
    let qkv = norm_and_qkv(s, w, p, x, t)?;
    // [tokens, 3d] as [batch, seq, 3, heads, hd], then q, k, v as [batch, heads, seq, hd] views.
    let qkv5 = qkv
        .view()
        .into_shape_with_order((c.batch, c.seq, 3, c.heads, hd))
        .map_err(|e| Error::InvalidArgument(e.to_string()))?;
    let part = |i: usize| {
        qkv5.slice_move(s![.., .., i, .., ..])
            .permuted_axes([0, 2, 1, 3])
    };
    let (q, k, v) = (part(0), part(1), part(2));
    let mut heads_out = Array4::<f32>::zeros((c.batch, c.seq, c.heads, hd));
    t.time("causal attention", || {
        let mut o = heads_out.view_mut().permuted_axes([0, 2, 1, 3]);
        s.attention_into(&q, &k, &v, &mut o, &AttentionOptions::default().causal())
    })?;
    let attn = heads_out
        .into_shape_with_order((c.tokens(), d))
        .map_err(|e| Error::InvalidArgument(e.to_string()))?;
    after_attention(s, c, w, p, x, &attn, t)
}

/// The keys and values of the tokens seen so far, `[1, heads, capacity, head_dim]` each, the
/// first `len` positions filled: the state of decoding one token at a time (batch 1).
#[derive(Clone)]
pub struct KvCache {
    pub k: Array4<f32>,
    pub v: Array4<f32>,
    pub len: usize,
}

/// The cache after the first `n` tokens of `x` (`[seq, d_model]`, batch 1), with room for
/// `x.nrows()` positions.
pub fn prefill<M: Mode>(
    s: &Session<M>,
    c: &Config,
    w: &Weights,
    p: &Packed,
    x: &Array2<f32>,
    n: usize,
) -> Result<KvCache, Error> {
    let (d, hd) = (c.d_model, c.d_model / c.heads);
    let mut h = x.slice(s![..n, ..]).to_owned();
    s.layer_norm(&mut h, &w.ln1_g, &w.ln1_b, LN_EPS)?;
    let mut qkv = Array2::<f32>::zeros((n, 3 * d));
    s.matmul_into(&h, &p.w_qkv, &mut qkv, &Bias::per_column(w.b_qkv.view()))?;
    let mut cache = KvCache {
        k: Array4::zeros((1, c.heads, x.nrows(), hd)),
        v: Array4::zeros((1, c.heads, x.nrows(), hd)),
        len: n,
    };
    for (part, dst) in [(1, &mut cache.k), (2, &mut cache.v)] {
        let src = qkv
            .view()
            .into_shape_with_order((n, 3, c.heads, hd))
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        dst.slice_mut(s![0, .., ..n, ..])
            .assign(&src.slice(s![.., part, .., ..]).permuted_axes([1, 0, 2]));
    }
    Ok(cache)
}

/// One new token `x` (`[1, d_model]`) through the block against `cache` (its key and value
/// appended): the decode step of a model. Returns its output `[1, d_model]`.
pub fn decode_step<M: Mode>(
    s: &Session<M>,
    c: &Config,
    w: &Weights,
    p: &Packed,
    x: &Array2<f32>,
    cache: &mut KvCache,
    t: &mut Timings,
) -> Result<Array2<f32>, Error> {
    let (d, hd) = (c.d_model, c.d_model / c.heads);
    let qkv = norm_and_qkv(s, w, p, x, t)?;
    let n = cache.len;
    let qkv3 = qkv
        .view()
        .into_shape_with_order((3, c.heads, hd))
        .map_err(|e| Error::InvalidArgument(e.to_string()))?;
    let mut attn = Array2::<f32>::zeros((1, d));
    t.time("attention against the cache", || {
        cache
            .k
            .slice_mut(s![0, .., n, ..])
            .assign(&qkv3.slice(s![1, .., ..]));
        cache
            .v
            .slice_mut(s![0, .., n, ..])
            .assign(&qkv3.slice(s![2, .., ..]));
        let q = qkv3.slice(s![0, .., ..]).insert_axis(ndarray::Axis(0));
        let q = q.insert_axis(ndarray::Axis(2));
        let mut o = attn
            .view_mut()
            .into_shape_with_order((1, c.heads, 1, hd))
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        s.attention_into(
            &q,
            &cache.k.slice(s![.., .., ..n + 1, ..]),
            &cache.v.slice(s![.., .., ..n + 1, ..]),
            &mut o,
            &AttentionOptions::default().causal(),
        )
    })?;
    cache.len = n + 1;
    after_attention(s, c, w, p, x, &attn, t)
}

/// The rest of the block after attention, for `attn` of the rows of `x`: the output projection
/// with its bias and the residual, layer norm 2, and the MLP with its residual.
fn after_attention<M: Mode>(
    s: &Session<M>,
    c: &Config,
    w: &Weights,
    p: &Packed,
    x: &Array2<f32>,
    attn: &Array2<f32>,
    t: &mut Timings,
) -> Result<Array2<f32>, Error> {
    let (rows, d) = x.dim();
    let mut x1 = Array2::<f32>::zeros((rows, d));
    t.time("output projection + bias + residual", || {
        s.matmul_into(
            attn,
            &p.w_o,
            &mut x1,
            &Chain(Bias::per_column(w.b_o.view()), Residual::new(x.view())),
        )
    })?;
    let mut h2 = x1.clone();
    t.time("layernorm 2", || {
        s.layer_norm(&mut h2, &w.ln2_g, &w.ln2_b, LN_EPS)
    })?;
    let mut u = Array2::<f32>::zeros((rows, c.d_ff));
    t.time("mlp up + bias + gelu", || {
        s.matmul_into(
            &h2,
            &p.w_up,
            &mut u,
            &s.bias_activation(Bias::per_column(w.b_up.view()), Func::GeluErf),
        )
    })?;
    let mut y = Array2::<f32>::zeros((rows, d));
    t.time("mlp down + bias + residual", || {
        s.matmul_into(
            &u,
            &p.w_down,
            &mut y,
            &Chain(Bias::per_column(w.b_down.view()), Residual::new(x1.view())),
        )
    })?;
    Ok(y)
}

fn matmul64(a: &Array2<f64>, b: ArrayView2<'_, f32>) -> Array2<f64> {
    let b = b.mapv(f64::from);
    a.dot(&b)
}

fn layer_norm64(x: &Array2<f64>, g: &Array1<f32>, b: &Array1<f32>) -> Array2<f64> {
    let mut y = x.clone();
    for mut row in y.rows_mut() {
        let n = row.len() as f64;
        let mean = row.sum() / n;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let sd = (var + f64::from(LN_EPS)).sqrt();
        for (j, v) in row.iter_mut().enumerate() {
            *v = (*v - mean) / sd * f64::from(g[j]) + f64::from(b[j]);
        }
    }
    y
}

/// The same block in f64 (exact GELU through the `libm` crate's erf), the reference.
/// Query rows per chunk of the f64 reference's attention: its scores take
/// `REFERENCE_ROWS x seq` values at a time, never `seq x seq`.
pub const REFERENCE_ROWS: usize = 256;

/// The f64 run of the block. `progress` is called after each (sequence, head) of attention,
/// the long part, with how many are done and how many there are.
pub fn forward_f64(
    c: &Config,
    w: &Weights,
    x: &Array2<f32>,
    progress: &mut dyn FnMut(usize, usize),
) -> Array2<f64> {
    let (d, hd) = (c.d_model, c.d_model / c.heads);
    let x = x.mapv(f64::from);
    let h = layer_norm64(&x, &w.ln1_g, &w.ln1_b);
    let qkv = matmul64(&h, w.w_qkv.view()) + &w.b_qkv.mapv(f64::from);
    let scale = 1.0 / (hd as f64).sqrt();
    let mut attn = Array2::<f64>::zeros((c.tokens(), d));
    for b in 0..c.batch {
        let rows = b * c.seq..(b + 1) * c.seq;
        for head in 0..c.heads {
            let col = |p: usize| p * d + head * hd..p * d + (head + 1) * hd;
            let q = qkv.slice(s![rows.clone(), col(0)]);
            let k = qkv.slice(s![rows.clone(), col(1)]);
            let v = qkv.slice(s![rows.clone(), col(2)]);
            for i0 in (0..c.seq).step_by(REFERENCE_ROWS) {
                let i1 = (i0 + REFERENCE_ROWS).min(c.seq);
                let mut sc = q.slice(s![i0..i1, ..]).dot(&k.t()) * scale;
                for (r, mut row) in sc.rows_mut().into_iter().enumerate() {
                    row.slice_mut(s![i0 + r + 1..]).fill(f64::NEG_INFINITY);
                    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    row.mapv_inplace(|v| (v - m).exp());
                    let sum = row.sum();
                    row.mapv_inplace(|v| v / sum);
                }
                attn.slice_mut(s![
                    b * c.seq + i0..b * c.seq + i1,
                    head * hd..(head + 1) * hd
                ])
                .assign(&sc.dot(&v));
            }
            progress(b * c.heads + head + 1, c.batch * c.heads);
        }
    }
    let x1 = &x + &(matmul64(&attn, w.w_o.view()) + &w.b_o.mapv(f64::from));
    let h2 = layer_norm64(&x1, &w.ln2_g, &w.ln2_b);
    let u = (matmul64(&h2, w.w_up.view()) + &w.b_up.mapv(f64::from))
        .mapv(|v| 0.5 * v * libm::erfc(-v / std::f64::consts::SQRT_2));
    &x1 + &(matmul64(&u, w.w_down.view()) + &w.b_down.mapv(f64::from))
}

/// `(max, mean)` of `|a - b|`.
pub fn abs_diff(a: &Array2<f32>, b: &Array2<f64>) -> (f64, f64) {
    let mut max = 0f64;
    let mut sum = 0f64;
    for (x, y) in a.iter().zip(b) {
        let d = (f64::from(*x) - y).abs();
        max = max.max(d);
        sum += d;
    }
    (max, sum / a.len().max(1) as f64)
}

/// SHA-256 (hex) of the little-endian bytes of the output, in row-major order.
pub fn digest(y: &Array2<f32>) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for v in y.iter() {
        h.update(v.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}
