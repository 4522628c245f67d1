//! The BERT configuration (`config.json` of a Hugging Face BERT checkpoint).

use std::path::Path;

use serde::Deserialize;

use crate::error::{ModelError, io_error};

/// The fields of `config.json` the encoder needs (others are ignored).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct BertConfig {
    /// Width of the token rows.
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer (`hidden_size` is a multiple).
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// The feed-forward activation: `gelu` (erf form) is the one supported.
    #[serde(default = "default_act")]
    pub hidden_act: String,
    /// The LayerNorm epsilon.
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f32,
    /// Rows of the position table: the longest sequence the model takes.
    pub max_position_embeddings: usize,
    /// Rows of the token-type table.
    #[serde(default = "default_types")]
    pub type_vocab_size: usize,
    /// Rows of the word table.
    pub vocab_size: usize,
}

fn default_act() -> String {
    "gelu".into()
}
fn default_eps() -> f32 {
    1e-12
}
fn default_types() -> usize {
    2
}

impl BertConfig {
    /// Reads and checks `config.json`.
    pub fn from_file(path: &Path) -> Result<BertConfig, ModelError> {
        let text = std::fs::read_to_string(path).map_err(io_error(path))?;
        Self::from_json(&text)
    }

    /// Parses and checks a configuration.
    pub fn from_json(text: &str) -> Result<BertConfig, ModelError> {
        let c: BertConfig =
            serde_json::from_str(text).map_err(|e| ModelError::Config(e.to_string()))?;
        c.check()?;
        Ok(c)
    }

    fn check(&self) -> Result<(), ModelError> {
        let bad = |why: String| Err(ModelError::Config(why));
        if self.hidden_size == 0
            || self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads)
        {
            return bad(format!(
                "hidden_size {} is not a positive multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if self.hidden_act != "gelu" {
            return bad(format!(
                "hidden_act {:?}: only \"gelu\" (the erf form) is supported",
                self.hidden_act
            ));
        }
        if !(self.layer_norm_eps >= 0.0 && self.layer_norm_eps.is_finite()) {
            return bad(format!(
                "layer_norm_eps {} is not finite and >= 0",
                self.layer_norm_eps
            ));
        }
        if self.max_position_embeddings == 0 || self.vocab_size == 0 || self.type_vocab_size == 0 {
            return bad("empty embedding tables".into());
        }
        Ok(())
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }
}
