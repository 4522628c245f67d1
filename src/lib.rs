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
