//! Measured accuracy of `activation-kernels`, the spec's way ("Measured error"): the published
//! table (`ACCURACY.md`), its tests and the `ulp_table` tool all measure through this crate.
//! It is a tool of the repository, not published, and uses only the library's public API
//! ([`activation_kernels::exact::map`], [`activation_kernels::fast::map`], `Func`, `Isa`,
//! `Error`): the f64 references (and their `libm`) stay out of the library's dependencies.
//!
//! * **Error** of a result `got` at `x`: `|got - reference(x)| / spacing`, where the reference
//!   is computed in f64 ([`Reference`]) and the spacing is the fp32 spacing at the correctly
//!   rounded reference ([`spacing`]); 0 where `got` equals the rounded reference
//!   ([`ulp_error`]). The rational fast GELU is measured instead by its absolute error against
//!   the exact kernel ([`Metric`]).
//! * **Sweeps**: "hot" is every fp32 value of a closed range in increasing order (one zero),
//!   "wide" every 67th value of that order from the low end ([`count`], [`ordered`]).
//! * **Rows** ([`rows`]): a function, a mode, a range, a stride, and the bound it must meet.
//!   [`Row::run`] sweeps one on every core (rayon), the kernels running in chunks through
//!   `exact::map` or `fast::map`; the result is the value count, the largest error and the
//!   first `x` in sweep order where it occurs, which do not depend on the thread count or the
//!   instruction set.
//!
//! ```
//! use ak_accuracy::{self as accuracy, Options};
//! let row = accuracy::rows().into_iter().find(|r| r.id() == "exact exp hot").unwrap();
//! assert_eq!(row.count(1), Ok(2_197_815_297));
//! // Every 100003rd value of the stride-1 sweep: 21,978 values.
//! let out = row.run(100_003, &Options::default()).unwrap();
//! assert_eq!(out.count, 21_978);
//! assert!(out.max <= row.bound);
//! ```

#![deny(missing_docs)]

mod reference;
mod sweep;
mod table;

pub use reference::{Reference, abs_diff, spacing, ulp_error};
pub use sweep::{CHUNK, Options, Outcome, count, from_ordered, nth, ordered, sweep};
pub use table::{
    FAST_ERF_BOUND, FAST_SIGMOID_BOUND, FAST_SILU_BOUND, FAST_TANH_BOUND, GELU_ERF_TAIL_BOUNDS,
    GELU_TANH_TAIL_BOUNDS, Metric, RATIONAL_GELU_ABS_BOUND, Row, RowMode, SILU_HOT_BOUND,
    SILU_WIDE_BOUND, Sweep, funcs, markdown_header, rows, thousands,
};
