//! The tensors of a BERT encoder by role, read from [`Weights`] under Hugging Face's names,
//! as stored (`f32`, linear weights `[out, in]`): what the encoder packs and the f64 reference
//! widens.

use ndarray::{Array1, Array2};

use crate::config::BertConfig;
use crate::error::ModelError;
use crate::weights::Weights;

/// A linear layer as stored: `y = x w^T + b`, `w` `[out, in]`.
#[derive(Clone, Debug)]
pub struct Linear {
    /// `[out, in]`.
    pub w: Array2<f32>,
    /// `[out]`.
    pub b: Array1<f32>,
}

/// A LayerNorm's affine parameters.
#[derive(Clone, Debug)]
pub struct Norm {
    /// Scale.
    pub gamma: Array1<f32>,
    /// Shift.
    pub beta: Array1<f32>,
}

/// One post-LN encoder layer.
#[derive(Clone, Debug)]
pub struct LayerWeights {
    /// Query, key and value projections.
    pub query: Linear,
    /// See `query`.
    pub key: Linear,
    /// See `query`.
    pub value: Linear,
    /// The attention output projection.
    pub attn_out: Linear,
    /// The LayerNorm after attention (and its residual).
    pub attn_norm: Norm,
    /// The feed-forward up projection (GELU after it).
    pub ff_in: Linear,
    /// The feed-forward down projection.
    pub ff_out: Linear,
    /// The LayerNorm after the feed-forward (and its residual).
    pub ff_norm: Norm,
}

/// Every tensor of a BERT encoder (the pooler is not used by sentence embeddings).
#[derive(Clone, Debug)]
pub struct BertWeights {
    /// The configuration the shapes were checked against.
    pub config: BertConfig,
    /// `[vocab_size, hidden]`.
    pub word: Array2<f32>,
    /// `[max_position_embeddings, hidden]`.
    pub position: Array2<f32>,
    /// `[type_vocab_size, hidden]`.
    pub token_type: Array2<f32>,
    /// The LayerNorm of the embedding sum.
    pub embed_norm: Norm,
    /// The encoder layers.
    pub layers: Vec<LayerWeights>,
}

impl BertWeights {
    /// Reads every tensor the encoder needs, checking its shape against `config`.
    pub fn from_weights(w: &Weights, config: &BertConfig) -> Result<BertWeights, ModelError> {
        let (h, i) = (config.hidden_size, config.intermediate_size);
        let linear = |name: &str, out: usize, inp: usize| -> Result<Linear, ModelError> {
            Ok(Linear {
                w: w.matrix(&format!("{name}.weight"), out, inp)?,
                b: w.vector(&format!("{name}.bias"), out)?,
            })
        };
        let norm = |name: &str| -> Result<Norm, ModelError> {
            let (gamma, beta) = w.layer_norm(name, h)?;
            Ok(Norm { gamma, beta })
        };
        let layers = (0..config.num_hidden_layers)
            .map(|l| {
                let p = format!("encoder.layer.{l}");
                Ok(LayerWeights {
                    query: linear(&format!("{p}.attention.self.query"), h, h)?,
                    key: linear(&format!("{p}.attention.self.key"), h, h)?,
                    value: linear(&format!("{p}.attention.self.value"), h, h)?,
                    attn_out: linear(&format!("{p}.attention.output.dense"), h, h)?,
                    attn_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                    ff_in: linear(&format!("{p}.intermediate.dense"), i, h)?,
                    ff_out: linear(&format!("{p}.output.dense"), h, i)?,
                    ff_norm: norm(&format!("{p}.output.LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        Ok(BertWeights {
            config: config.clone(),
            word: w.matrix("embeddings.word_embeddings.weight", config.vocab_size, h)?,
            position: w.matrix(
                "embeddings.position_embeddings.weight",
                config.max_position_embeddings,
                h,
            )?,
            token_type: w.matrix(
                "embeddings.token_type_embeddings.weight",
                config.type_vocab_size,
                h,
            )?,
            embed_norm: norm("embeddings.LayerNorm")?,
            layers,
        })
    }
}
