//! Real models on `activation-kernels`' public API: a safetensors loader, a BERT encoder built
//! from `config.json` (MiniLM and BERT-base shapes; post-LN, GELU erf), its tokenizer from
//! `tokenizer.json`, mean pooling and L2 normalisation: sentence embeddings end to end, and
//! the `embed` command line tool.
//!
//! In exact mode an embedding's bits depend only on its sentence: not on the batch it came
//! in, the padding, the batch size, the thread count or the instruction set.
//!
//! ```no_run
//! use activation_kernels::Session;
//! use ak_models::{Batching, Embedder};
//! let model = Embedder::load("models/data/all-MiniLM-L6-v2".as_ref(), Session::exact())?;
//! let e = model.embed(&["A sentence.", "Another one."], Batching::Varlen)?;
//! assert_eq!(e.dim(), (2, 384));
//! # Ok::<(), ak_models::ModelError>(())
//! ```

#![deny(missing_docs)]

pub mod bert;
pub mod bert_weights;
pub mod config;
pub mod embedder;
pub mod error;
pub mod reference;
pub mod tokenizer;
pub mod weights;

pub use bert::{Bert, Tokens};
pub use bert_weights::BertWeights;
pub use config::BertConfig;
pub use embedder::{Batching, Embedder};
pub use error::ModelError;
pub use reference::Reference;
pub use tokenizer::{MAX_TOKENS, SentenceTokenizer};
pub use weights::Weights;
