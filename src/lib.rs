//! Tensor activation operators in two modes.
//!
//! * **Exact** ([`Exact`]): every output bit is fixed by the crate's spec of the fp32
//!   transcendentals. Scalar code, SSE2, AVX2 and AVX-512, one thread or many: the same bits.
//! * **Fast** ([`Fast`]): fused multiply-adds, a degree-3 exp and a rational GELU.
//!
//! ```
//! use activation_kernels::{exact, Func, Isa};
//! let x = [-1.0f32, 0.0, 0.5, 3.0];
//! let mut y = [0.0f32; 4];
//! exact::map(Func::GeluErf, Isa::detect(), &x, &mut y).unwrap();
//! assert_eq!(y[1], 0.0);
//! assert_eq!(y[3].to_bits(), exact::gelu_erf(3.0).to_bits());
//! ```
#![deny(missing_docs)]

// The layers, bottom up: each group imports only itself and the groups above it.
//
// Known to every layer: the lane types, the modes, instruction-set detection and dispatch
// (`lanes::LaneOp`); the element types; the error (which names an `Isa`, and which detection
// returns: the one pair that knows each other).
mod element;
mod error;
mod lanes;
// The kernels over lanes: rows and slices of f32, no tensors. Their entry points (and the
// GEMM's) are compiled once per mode in this crate (`lanes::compiled_once_per_mode!`), not
// again in every crate that calls a mode-generic operator.
mod ops;
// One row of a tensor brought to an f32 kernel.
mod row_buffer;
mod work_queue;
// The GEMM and the tile epilogues it calls.
pub mod epilogue;
mod gemm;
// The session: every operator on ndarray tensors.
mod session;
// Single values and slices, and the C interface.
#[cfg(feature = "capi")]
pub mod capi;
pub mod exact;
pub mod fast;

/// The unit tests of the library's private items, run by the integration test binary
/// (`tests/it/unit.rs`), so that `cargo test` compiles the library once (`[lib] test = false`).
/// Behind the feature `unit-tests`, which only the crate's dev-dependency on itself turns on;
/// not part of the API.
#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod unit_tests {
    #[cfg(feature = "capi")]
    pub use crate::capi::tests as capi;
    pub use crate::gemm::gemv::tests as gemm_gemv;
    pub use crate::gemm::pack::tests as gemm_pack;
    pub use crate::gemm::ragged::tests as gemm_ragged;
    pub use crate::gemm::tests as gemm;
    pub use crate::lanes::core_kind::tests as lanes_core_kind;
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub use crate::lanes::fpenv::tests as lanes_fpenv;
    pub use crate::lanes::pair::tests as lanes_pair;
    pub use crate::lanes::tests as lanes;
    pub use crate::lanes::transpose::tests as lanes_transpose;
    pub use crate::ops::erf::tests as ops_erf;
    pub use crate::ops::exp::taylor::tests as ops_exp_taylor;
    pub use crate::ops::exp::tests as ops_exp;
    pub use crate::ops::func::tests as ops_func;
    pub use crate::ops::gelu::tests as ops_gelu;
    pub use crate::ops::log::tests as ops_log;
    pub use crate::ops::nan::tests as ops_nan;
    pub use crate::ops::pooling::tests as ops_pooling;
    pub use crate::ops::reduce::tests as ops_reduce;
    pub use crate::ops::sigmoid::tests as ops_sigmoid;
    pub use crate::ops::silu::tests as ops_silu;
    pub use crate::ops::softmax::online::tests as ops_softmax_online;
    pub use crate::ops::softmax::scores::tests as ops_softmax_scores;
    pub use crate::ops::softmax::tests as ops_softmax;
    pub use crate::ops::tanh::tests as ops_tanh;
    pub use crate::row_buffer::tests as row_buffer;
    pub use crate::session::attention::tests as session_attention;
    pub use crate::session::matmul::tests as session_matmul;
    pub use crate::session::owned::tests as session_owned;
    pub use crate::session::team::tests as session_team;
    pub use crate::session::tests as session;
    pub use crate::session::thread_room::tests as session_thread_room;
    pub use crate::session::traverse::tests as session_traverse;
}

pub use element::Element;
pub use error::Error;
pub use gemm::{PackedMatrix, Rhs};
pub use lanes::Isa;
pub use lanes::{Exact, Fast, Mode};
pub use ops::exp::taylor;
pub use ops::func::Func;
pub use ops::softmax::MaskedRow;
pub use session::{AttentionOptions, Lookup, Mask, Session};

/// The README's examples, run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
