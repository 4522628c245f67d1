//! Sentence embeddings end to end: tokenizer, BERT encoder, mean pooling over each sentence's
//! tokens, L2 normalisation.

use std::path::Path;

use activation_kernels::{Mode, Session};
use ndarray::{Array2, Array3};

use crate::bert::{Bert, Tokens};
use crate::bert_weights::BertWeights;
use crate::config::BertConfig;
use crate::error::ModelError;
use crate::tokenizer::SentenceTokenizer;
use crate::weights::Weights;

/// How a batch runs through the encoder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Batching {
    /// Sentences packed row after row, no padding (the default).
    #[default]
    Varlen,
    /// Every sentence padded to the longest of its batch.
    Padded,
}

/// A sentence-embedding model: `config.json`, `model.safetensors` and `tokenizer.json` of a
/// directory, the weights packed once for a session.
pub struct Embedder<M: Mode> {
    tokenizer: SentenceTokenizer,
    model: Bert<M>,
}

impl<M: Mode> Embedder<M> {
    /// Loads the model directory `dir` and packs its weights for `session`.
    pub fn load(dir: &Path, session: Session<M>) -> Result<Self, ModelError> {
        if dir.exists() && !dir.is_dir() {
            return Err(ModelError::Config(format!(
                "{} is a file, not a model directory (the directory holding config.json, \
                 model.safetensors and tokenizer.json)",
                dir.display()
            )));
        }
        if !dir.is_dir() {
            return Err(ModelError::Config(format!(
                "model directory {} does not exist (fetch it with models/fetch_model.sh)",
                dir.display()
            )));
        }
        let config = BertConfig::from_file(&dir.join("config.json"))?;
        let weights =
            BertWeights::from_weights(&Weights::load(&dir.join("model.safetensors"))?, &config)?;
        let tokenizer = SentenceTokenizer::from_file(&dir.join("tokenizer.json"))?;
        Self::new(tokenizer, Bert::new(session, &weights)?)
    }

    /// A model of a tokenizer and an encoder.
    pub fn new(tokenizer: SentenceTokenizer, model: Bert<M>) -> Result<Self, ModelError> {
        Ok(Embedder { tokenizer, model })
    }

    /// The encoder.
    pub fn model(&self) -> &Bert<M> {
        &self.model
    }

    /// The tokens of each sentence.
    pub fn tokenize(&self, sentences: &[&str]) -> Result<Vec<Tokens>, ModelError> {
        sentences.iter().map(|s| self.tokenizer.encode(s)).collect()
    }

    /// The embeddings of `sentences` (one forward call), `[sentences, hidden]`, unit rows.
    pub fn embed(&self, sentences: &[&str], batching: Batching) -> Result<Array2<f32>, ModelError> {
        let tokens = self.tokenize(sentences)?;
        self.embed_tokens(&tokens, batching)
    }

    /// [`Embedder::embed`] of tokenised sentences.
    pub fn embed_tokens(
        &self,
        batch: &[Tokens],
        batching: Batching,
    ) -> Result<Array2<f32>, ModelError> {
        let s = self.model.session();
        let h = self.model.config().hidden_size;
        if batch.is_empty() {
            return Ok(Array2::zeros((0, h)));
        }
        let mut pooled = match batching {
            Batching::Varlen => {
                let (x, offsets) = self.model.forward_varlen(batch)?;
                s.mean_pool_varlen(&x, &offsets)?
            }
            Batching::Padded => {
                let (x, longest) = self.model.forward_padded(batch)?;
                let x = x
                    .into_shape_with_order((batch.len(), longest, h))
                    .map_err(|e| ModelError::Weights(e.to_string()))?;
                let x: Array3<f32> = x;
                let mask =
                    Array2::from_shape_fn((batch.len(), longest), |(b, t)| t < batch[b].ids.len());
                s.mean_pool_padded(&x, &mask)?
            }
        };
        s.l2_normalize(&mut pooled)?;
        Ok(pooled)
    }
}
