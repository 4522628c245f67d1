//! The crate's one error type.

use crate::lanes::Isa;

/// What can go wrong in a call of this crate. Every fallible call returns it; none panics on
/// user input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The instruction set was asked for, but this CPU does not run it.
    #[error("instruction set {isa} is not available on this CPU")]
    IsaUnavailable {
        /// The instruction set asked for.
        isa: Isa,
    },
    /// A name that is not an instruction set (in `ACTIVATION_KERNELS_ISA` or a parse).
    #[error("unknown instruction set {name:?} (expected scalar, sse2, avx2, avx512 or neon)")]
    UnknownIsa {
        /// The name given.
        name: String,
    },
    /// Source and destination slices of different lengths.
    #[error("length mismatch: source has {src} elements, destination {dst}")]
    LengthMismatch {
        /// Source length.
        src: usize,
        /// Destination length.
        dst: usize,
    },
    /// Arrays whose shapes had to match do not.
    #[error("shape mismatch: {what}: expected {expected:?}, found {found:?}")]
    ShapeMismatch {
        /// Which operands.
        what: &'static str,
        /// The shape required.
        expected: Vec<usize>,
        /// The shape given.
        found: Vec<usize>,
    },
    /// An axis index past the array's dimensions.
    #[error("axis {axis} out of range for an array of {ndim} dimensions")]
    AxisOutOfRange {
        /// The axis asked for.
        axis: usize,
        /// The array's number of dimensions.
        ndim: usize,
    },
    /// A parameter outside its domain.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The session's own thread pool could not be built.
    #[error("thread pool: {0}")]
    ThreadPool(String),
}

/// `Err(LengthMismatch)` unless the lengths are equal.
pub(crate) fn same_length(src: usize, dst: usize) -> Result<(), Error> {
    if src == dst {
        Ok(())
    } else {
        Err(Error::LengthMismatch { src, dst })
    }
}

/// `Err(ShapeMismatch)` unless `found == expected`.
pub(crate) fn same_shape(
    what: &'static str,
    expected: &[usize],
    found: &[usize],
) -> Result<(), Error> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::ShapeMismatch {
            what,
            expected: expected.to_vec(),
            found: found.to_vec(),
        })
    }
}
