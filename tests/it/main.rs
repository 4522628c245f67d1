//! The integration tests, in one binary: one link and one instantiation of every generic
//! kernel instead of one per file, which keeps `cargo test --release` short.
//!
//! Long runs stay cheap by default and grow with `AK_EXTENSIVE=1` (see [`common::extensive`]);
//! the all-inputs sweep is `#[ignore]`d and run by hand.

mod common;

mod attention;
mod attention_visibility;
mod canonical_nan;
mod capi;
mod cross_isa;
mod decode;
mod embeddings;
mod epilogue;
mod exact_golden;
mod exact_properties;
mod exhaustive;
mod fast_kernels;
mod fp_environment;
mod gemm;
mod gemv;
mod isa_env;
mod layer_norm;
mod limits;
mod packed;
mod properties;
mod session_elementwise;
mod softmax;
mod taylor_catalogue;
mod thread_exit;
mod transformer_block;
mod unit;
