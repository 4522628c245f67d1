//! The C library as a static archive: the crate's C interface (`src/capi.rs`, declared in
//! `include/activation_kernels.h`) linked into `libcapi_static.a` with the Rust runtime it needs.
//!
//! `cargo test` builds it with the release artifacts of the same run (the tests enable the
//! `capi` feature), and `tests/it/capi.rs` links `tests/c/capi_test.c` against it. To build the
//! C library for your own program, see the `capi` module (`cargo rustc --release --features capi
//! --crate-type staticlib`).

pub use activation_kernels::capi::*;
