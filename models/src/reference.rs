//! The float64 reference of the BERT encoder and the sentence embedding: the same weights
//! widened to `f64`, one sentence at a time, textbook formulas (two-pass softmax, GELU with
//! `erf`, LayerNorm with the mean and variance in f64). The accuracy tests measure the kernels
//! against it.

use ndarray::{Array1, Array2, Axis, s};

use crate::bert::Tokens;
use crate::bert_weights::{BertWeights, Linear, Norm};

struct Lin64 {
    /// `[in, out]`.
    w: Array2<f64>,
    b: Array1<f64>,
}

impl Lin64 {
    fn new(l: &Linear) -> Self {
        Lin64 {
            w: l.w.t().mapv(f64::from),
            b: l.b.mapv(f64::from),
        }
    }
    fn apply(&self, x: &Array2<f64>) -> Array2<f64> {
        x.dot(&self.w) + &self.b
    }
}

struct Norm64 {
    gamma: Array1<f64>,
    beta: Array1<f64>,
}

impl Norm64 {
    fn new(n: &Norm) -> Self {
        Norm64 {
            gamma: n.gamma.mapv(f64::from),
            beta: n.beta.mapv(f64::from),
        }
    }
    fn apply(&self, x: &mut Array2<f64>, eps: f64) {
        for mut row in x.rows_mut() {
            let n = row.len() as f64;
            let mean = row.sum() / n;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
            let sd = (var + eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
                *v = (*v - mean) / sd * g + b;
            }
        }
    }
}

struct Layer64 {
    query: Lin64,
    key: Lin64,
    value: Lin64,
    attn_out: Lin64,
    attn_norm: Norm64,
    ff_in: Lin64,
    ff_out: Lin64,
    ff_norm: Norm64,
}

/// The f64 encoder.
pub struct Reference {
    word: Array2<f64>,
    position: Array2<f64>,
    token_type: Array2<f64>,
    embed_norm: Norm64,
    layers: Vec<Layer64>,
    heads: usize,
    eps: f64,
}

impl Reference {
    /// Widens `weights` to f64.
    pub fn new(weights: &BertWeights) -> Self {
        Reference {
            word: weights.word.mapv(f64::from),
            position: weights.position.mapv(f64::from),
            token_type: weights.token_type.mapv(f64::from),
            embed_norm: Norm64::new(&weights.embed_norm),
            layers: weights
                .layers
                .iter()
                .map(|l| Layer64 {
                    query: Lin64::new(&l.query),
                    key: Lin64::new(&l.key),
                    value: Lin64::new(&l.value),
                    attn_out: Lin64::new(&l.attn_out),
                    attn_norm: Norm64::new(&l.attn_norm),
                    ff_in: Lin64::new(&l.ff_in),
                    ff_out: Lin64::new(&l.ff_out),
                    ff_norm: Norm64::new(&l.ff_norm),
                })
                .collect(),
            heads: weights.config.num_attention_heads,
            eps: weights.config.layer_norm_eps as f64,
        }
    }

    /// The encoder's output rows of one sentence, `[tokens, hidden]`.
    pub fn forward(&self, t: &Tokens) -> Array2<f64> {
        let n = t.ids.len();
        let h = self.word.ncols();
        let mut x = Array2::from_shape_fn((n, h), |(i, j)| {
            self.word[[t.ids[i] as usize, j]]
                + self.token_type[[t.type_ids[i] as usize, j]]
                + self.position[[i, j]]
        });
        self.embed_norm.apply(&mut x, self.eps);
        let hd = h / self.heads;
        for l in &self.layers {
            let (q, k, v) = (l.query.apply(&x), l.key.apply(&x), l.value.apply(&x));
            let mut attn = Array2::zeros((n, h));
            for head in 0..self.heads {
                let c = s![.., head * hd..(head + 1) * hd];
                let scores = q.slice(c).dot(&k.slice(c).t()) / (hd as f64).sqrt();
                let mut p = scores;
                for mut row in p.rows_mut() {
                    let m = row.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
                    row.mapv_inplace(|v| (v - m).exp());
                    let sum = row.sum();
                    row.mapv_inplace(|v| v / sum);
                }
                attn.slice_mut(c).assign(&p.dot(&v.slice(c)));
            }
            let mut hidden = l.attn_out.apply(&attn) + &x;
            l.attn_norm.apply(&mut hidden, self.eps);
            let ff = l
                .ff_in
                .apply(&hidden)
                .mapv(|v| 0.5 * v * (1.0 + libm::erf(v / std::f64::consts::SQRT_2)));
            let mut y = l.ff_out.apply(&ff) + &hidden;
            l.ff_norm.apply(&mut y, self.eps);
            x = y;
        }
        x
    }

    /// The sentence embedding: the mean of the output rows, L2-normalised.
    pub fn embed(&self, t: &Tokens) -> Array1<f64> {
        let x = self.forward(t);
        let mean = x.mean_axis(Axis(0)).expect("a sentence has tokens");
        let norm = mean.dot(&mean).sqrt().max(1e-12);
        mean / norm
    }
}
