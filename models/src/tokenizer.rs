//! The tokenizer of a model, from its `tokenizer.json` (crate `tokenizers`, pure Rust), set up
//! as sentence-transformers runs BERT encoders: truncation at [`MAX_TOKENS`] and no padding
//! (`tokenizer.json` files often fix both at 128; padding, where it is wanted, is the model's
//! business: to the longest sentence of a batch).

use std::path::Path;

use tokenizers::{Tokenizer, TruncationParams};

use crate::bert::Tokens;
use crate::error::ModelError;

/// The most tokens of a sentence, special tokens included (sentence-transformers'
/// `max_seq_length` of the MiniLM models).
pub const MAX_TOKENS: usize = 256;

/// A tokenizer that truncates at [`MAX_TOKENS`] and never pads.
pub struct SentenceTokenizer {
    inner: Tokenizer,
}

impl SentenceTokenizer {
    /// Loads `tokenizer.json`, overriding its truncation and padding.
    pub fn from_file(path: &Path) -> Result<Self, ModelError> {
        if !path.is_file() {
            return Err(ModelError::Tokenizer(format!(
                "{} is not a file",
                path.display()
            )));
        }
        let inner = Tokenizer::from_file(path)
            .map_err(|e| ModelError::Tokenizer(format!("{}: {e}", path.display())))?;
        Self::new(inner)
    }

    fn new(mut inner: Tokenizer) -> Result<Self, ModelError> {
        inner
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        inner.with_padding(None);
        Ok(SentenceTokenizer { inner })
    }

    /// The tokens of one sentence, with the special tokens (`[CLS] ... [SEP]`).
    pub fn encode(&self, sentence: &str) -> Result<Tokens, ModelError> {
        let e = self
            .inner
            .encode(sentence, true)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        Ok(Tokens {
            ids: e.get_ids().to_vec(),
            type_ids: e.get_type_ids().to_vec(),
        })
    }
}
