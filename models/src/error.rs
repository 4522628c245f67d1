//! The one error type of `ak-models`.

use std::path::PathBuf;

/// What can go wrong loading or running a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `config.json` is not a BERT configuration this crate runs.
    #[error("config: {0}")]
    Config(String),
    /// The weights file is not valid safetensors, or lacks a tensor, or has one of the wrong
    /// shape or type.
    #[error("weights: {0}")]
    Weights(String),
    /// The tokenizer could not be loaded or failed on an input.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// A kernel call of `activation-kernels` failed.
    #[error(transparent)]
    Kernel(#[from] activation_kernels::Error),
}

/// `Err(Io)` with the path.
pub(crate) fn io_error(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> ModelError + '_ {
    move |source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    }
}
