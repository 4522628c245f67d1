//! Weights packed once: [`PackedMatrix`], a right-hand side `B` already in the driver's panel
//! layout, and [`Rhs`], what `Session::matmul_into` accepts as `B` (views and packed matrices).

use ndarray::{ArrayBase, ArrayRef2, ArrayView2, Data, Ix2, s};

use super::blocking::{KB, narrow_panel_width, panel_width};
use super::pack::{line_aligned, line_offset, pack_panels, panel_buffer};
use crate::error::Error;
use crate::lanes::Isa;

/// A `[k, n]` right-hand side packed once for the GEMM of one instruction set, to be multiplied
/// many times (the weights of a layer).
///
/// The values are stored in the driver's B layout for the instruction set's microkernel: for
/// each K super-block of up to 4096 rows, panels of `nr` columns (16 for AVX2), each `k`-major.
/// A product with it skips the B packing of every call; its bits are those of the same product
/// with the unpacked view, in both modes (packing only copies values; the sum is still
/// sequential in `k` from `+0`).
///
/// A packed matrix belongs to the instruction set it was packed for ([`PackedMatrix::isa`]): a
/// session on another instruction set returns [`Error::InvalidArgument`] rather than reading
/// the panels with the wrong width. Pack it with [`crate::Session::pack`] (the session's
/// instruction set) or [`PackedMatrix::new`].
///
/// ```
/// use activation_kernels::{PackedMatrix, Session};
/// use activation_kernels::epilogue::Identity;
/// use ndarray::Array2;
///
/// let session = Session::exact();
/// let w = Array2::from_shape_fn((5, 3), |(i, j)| i as f32 - 0.5 * j as f32); // [k, n]
/// let packed: PackedMatrix = session.pack(&w)?; // once
/// let x = Array2::from_shape_fn((2, 5), |(i, k)| (i + k) as f32 / 8.0); // [m, k]
/// let mut y = Array2::zeros((2, 3));
/// session.matmul_into(&x, &packed, &mut y, &Identity)?; // many times
/// assert_eq!(y, session.matmul_owned(&x, &w, &Identity)?); // the same bits
/// assert_eq!(packed.dim(), (5, 3));
/// # Ok::<(), activation_kernels::Error>(())
/// ```
pub struct PackedMatrix {
    k: usize,
    n: usize,
    isa: Isa,
    nr: usize,
    /// The panels, from `data[at]`, the first value that starts a cache line (see
    /// [`super::pack::line_aligned`]); `len` values.
    data: Vec<f32>,
    at: usize,
    len: usize,
}

impl std::fmt::Debug for PackedMatrix {
    /// The shape, the instruction set and panel width it was packed for, and how many values
    /// its panels hold: not the values, nor the allocation's alignment padding.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackedMatrix")
            .field("k", &self.k)
            .field("n", &self.n)
            .field("isa", &self.isa)
            .field("nr", &self.nr)
            .field("packed_values", &self.len)
            .finish()
    }
}

impl Clone for PackedMatrix {
    /// A copy whose panels start on a cache line of its own allocation (on huge pages as the
    /// original's).
    fn clone(&self) -> PackedMatrix {
        let mut data = Vec::new();
        let at = {
            let dst = line_aligned(&mut data, self.len);
            dst.copy_from_slice(self.values());
            line_offset(&data)
        };
        PackedMatrix { data, at, ..*self }
    }
}

impl PackedMatrix {
    /// Packs `b` (`[k, n]`, any strides) for the GEMM of `isa`. Packing runs no
    /// instruction-set code, so `isa` need not be available here.
    ///
    /// [`Error::InvalidArgument`] if the packed size overflows or cannot be allocated.
    pub fn new(isa: Isa, b: &ArrayRef2<f32>) -> Result<PackedMatrix, Error> {
        PackedMatrix::with_panels(isa, b, panel_width(isa))
    }

    /// Packs `b` in the panels the GEMM of `isa` packs a view into when the view is narrow
    /// (32 columns on AVX-512, [`narrow_panel_width`]; elsewhere those of [`PackedMatrix::new`]):
    /// for operands whose column windows ([`PackedMatrix::columns`]) are narrow products, as
    /// attention's keys are.
    pub(crate) fn new_narrow(isa: Isa, b: &ArrayRef2<f32>) -> Result<PackedMatrix, Error> {
        PackedMatrix::with_panels(isa, b, narrow_panel_width(isa))
    }

    /// Packs `b` in panels of `nr` columns (a multiple of `isa`'s lane width).
    pub(super) fn with_panels(
        isa: Isa,
        b: &ArrayRef2<f32>,
        nr: usize,
    ) -> Result<PackedMatrix, Error> {
        let (k, n) = b.dim();
        let too_large = |why: String| {
            Error::InvalidArgument(format!("PackedMatrix of [{k}, {n}]: too large ({why})"))
        };
        let len = n
            .checked_next_multiple_of(nr)
            .and_then(|padded| k.checked_mul(padded))
            .ok_or_else(|| too_large("more values than a usize counts".into()))?;
        // Fallible: a size past what `Vec` can hold, or one that memory cannot give, is an
        // error and not a panic or an abort.
        let (mut data, at) = panel_buffer(len).map_err(|e| too_large(e.to_string()))?;
        let values = &mut data[at..at + len];
        let mut done = 0;
        for k0 in (0..k).step_by(KB) {
            let depth = KB.min(k - k0);
            let src = b.slice(s![k0..k0 + depth, ..]).reversed_axes();
            done += pack_panels(src, nr, &mut values[done..]);
        }
        debug_assert_eq!(done, len);
        Ok(PackedMatrix {
            k,
            n,
            isa,
            nr,
            data,
            at,
            len,
        })
    }

    /// `(k, n)`: the shape of the matrix that was packed.
    pub fn dim(&self) -> (usize, usize) {
        (self.k, self.n)
    }

    /// The instruction set it was packed for.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Columns per panel.
    pub(crate) fn panel_width(&self) -> usize {
        self.nr
    }

    /// `Ok` if the GEMM of `isa` can read these panels.
    pub(crate) fn check_isa(&self, isa: Isa) -> Result<(), Error> {
        if isa == self.isa {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "PackedMatrix was packed for {} and this session runs {isa}: pack it with \
                 this session (Session::pack)",
                self.isa
            )))
        }
    }

    /// Every packed value.
    fn values(&self) -> &[f32] {
        &self.data[self.at..self.at + self.len]
    }

    /// Columns `cols` of the matrix as a right-hand side, without copying: `cols.start` a
    /// multiple of the panel width, `cols.end` at most `n`.
    pub(crate) fn columns(&self, cols: std::ops::Range<usize>) -> PackedColumns<'_> {
        debug_assert!(cols.start.is_multiple_of(self.nr) && cols.start <= cols.end);
        debug_assert!(cols.end <= self.n);
        PackedColumns {
            matrix: self,
            col0: cols.start,
            n: cols.end - cols.start,
        }
    }

    /// The packed panels of columns `col0..` (`col0` a multiple of the panel width) for the
    /// super-block starting at row `k0` (a multiple of the super-block depth).
    fn panels(&self, k0: usize, col0: usize) -> &[f32] {
        debug_assert!(k0.is_multiple_of(KB) && col0.is_multiple_of(self.nr));
        let n_pad = self.n.next_multiple_of(self.nr);
        let depth = KB.min(self.k - k0);
        let start = k0 * n_pad + col0 * depth;
        &self.values()[start..k0 * n_pad + depth * n_pad]
    }
}

/// Consecutive columns of a [`PackedMatrix`] (all of them, or a window starting on a panel):
/// what the driver reads of a packed right-hand side.
#[derive(Clone, Copy, Debug)]
pub struct PackedColumns<'a> {
    matrix: &'a PackedMatrix,
    col0: usize,
    n: usize,
}

impl<'a> PackedColumns<'a> {
    /// `(k, n)` of the window.
    pub(crate) fn dim(&self) -> (usize, usize) {
        (self.matrix.k, self.n)
    }

    /// Columns per panel.
    pub(crate) fn panel_width(&self) -> usize {
        self.matrix.panel_width()
    }

    /// `Ok` if the GEMM of `isa` can read these panels.
    pub(crate) fn check_isa(&self, isa: Isa) -> Result<(), Error> {
        self.matrix.check_isa(isa)
    }

    /// The packed panels of the window's columns `col0..` (`col0` a multiple of the panel
    /// width) for the super-block starting at row `k0` (a multiple of the super-block depth).
    pub(crate) fn panels(&self, k0: usize, col0: usize) -> &'a [f32] {
        self.matrix.panels(k0, self.col0 + col0)
    }
}

/// A right-hand side `B` as the GEMM driver sees it.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// Any view, packed on every call.
    View(ArrayView2<'a, f32>),
    /// Packed once.
    Packed(PackedColumns<'a>),
}

impl Operand<'_> {
    /// `(k, n)`.
    pub(crate) fn dim(&self) -> (usize, usize) {
        match self {
            Operand::View(v) => v.dim(),
            Operand::Packed(p) => p.dim(),
        }
    }
}

mod sealed {
    /// Only this crate's types are right-hand sides.
    pub trait Sealed {
        /// The operand as the driver reads it.
        fn operand(&self) -> super::Operand<'_>;
    }
}

/// A right-hand side of [`crate::Session::matmul_into`]: any 2-D `f32` array or view, or a
/// [`PackedMatrix`].
pub trait Rhs: sealed::Sealed {}

impl sealed::Sealed for ArrayRef2<f32> {
    fn operand(&self) -> Operand<'_> {
        Operand::View(self.view())
    }
}
impl Rhs for ArrayRef2<f32> {}

impl<S: Data<Elem = f32>> sealed::Sealed for ArrayBase<S, Ix2> {
    fn operand(&self) -> Operand<'_> {
        Operand::View(self.view())
    }
}
impl<S: Data<Elem = f32>> Rhs for ArrayBase<S, Ix2> {}

impl sealed::Sealed for PackedMatrix {
    fn operand(&self) -> Operand<'_> {
        Operand::Packed(self.columns(0..self.n))
    }
}
impl Rhs for PackedMatrix {}

/// The operand of any right-hand side (for the session).
pub(crate) fn operand<B: Rhs + ?Sized>(b: &B) -> Operand<'_> {
    sealed::Sealed::operand(b)
}
