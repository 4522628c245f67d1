//! Matrix products with tile epilogues: [`Session::matmul`] and [`Session::matmul_batched`].
//!
//! A BLIS-style GEMM: A and B are packed into panels (read through their ndarray strides, so
//! transposed and strided views need no copy by the caller), C is computed tile by tile by a
//! microkernel written once over the lane type ([`crate::lanes::Lanes`]), and a
//! [`TileEpilogue`] runs on each tile of C once it has received all of K, while it is still in
//! cache (see [`crate::epilogue`]).
//!
//! # Bits
//!
//! * **Exact** ([`crate::Exact`]): every element is `c = +0; for k in 0..K { c = c + a[i][k] *
//!   b[k][j] }`, the product rounded and then the sum rounded, `k` increasing. These are the bits
//!   of that plain loop, on every instruction set and for every number of threads. The epilogue
//!   then runs on the finished values.
//! * **Fast** ([`crate::Fast`]): the same order with one fused multiply-add per step,
//!   `c = fma(a[i][k], b[k][j], c)` from `+0`. Every fma is correctly rounded (the hardware's,
//!   or a software one on a CPU without FMA), so these bits too are the same on every
//!   instruction set and thread count; they differ from exact mode's. The error is bounded by
//!   `K * 2^-24 * sum_k |a[i][k] b[k][j]|` (to first order), as for any sequential fp32 sum.
//!
//! The lane width never changes a bit: the microkernel vectorises across the columns of C, one
//! element per lane, and lanes never mix. The blocking does not either: a K block continues
//! from the exact f32 partial sum the previous one stored.
//!
//! # Work split
//!
//! C is cut into tiles (8 microkernel rows by 1024 columns: 48 x 1024 for AVX2); a tile
//! belongs to one thread, which packs its own A block, accumulates the tile in a buffer with
//! contiguous rows, runs the epilogue on that buffer and copies it to C. The tiles depend on
//! the shapes and the instruction set only. A product runs on the calling thread unless its
//! `m * n * k` (summed over a batch) reaches [`GEMM_WORK_PER_ELEMENT`] times the session's
//! parallel threshold.
//!
//! # Memory
//!
//! Packed B for up to 4096 rows of K and a bounded number of columns (at most 2^22 values,
//! 16 MB) per round; a thread keeps its packed A block and tile buffer (about 250 KB for AVX2)
//! and a packed B buffer of up to 4 MB between calls.

mod driver;
mod kernel;
mod pack;

use ndarray::{ArrayRef2, ArrayRef3};

use crate::epilogue::TileEpilogue;
use crate::{Error, Mode, Session};
use driver::{Blocking, Item};

/// A product's `m * n * k` is compared with this many times the session's parallel threshold
/// (which counts elements of element-wise work) to decide whether to split it across threads.
pub const GEMM_WORK_PER_ELEMENT: usize = 64;

impl<M: Mode> Session<M> {
    /// `c = epilogue(a b)`: `a` is `[m, k]`, `b` is `[k, n]`, `c` is `[m, n]`, all of any
    /// strides (transposed and sliced views included). The previous contents of `c` are
    /// ignored.
    ///
    /// The epilogue runs once on every tile of C after the tile has received all of K (with
    /// `k = 0`, on zeros); see [`TileEpilogue`]. In exact mode the product has the bits of the
    /// plain loop `c = +0; for k in 0..K { c = c + a[i][k] * b[k][j] }` on every instruction set
    /// and thread count; in fast mode each step is a fused multiply-add (see [`crate::gemm`]).
    ///
    /// [`Error::ShapeMismatch`] if the shapes do not fit together or the epilogue does not fit
    /// C ([`TileEpilogue::check_shape`]).
    ///
    /// ```
    /// use activation_kernels::{Func, Session};
    /// use activation_kernels::epilogue::{Bias, Identity};
    /// use ndarray::{Array2, array};
    ///
    /// let session = Session::exact();
    /// let x = array![[1.0f32, 2.0, 3.0], [-1.0, 0.5, 0.0]]; // [2, 3]
    /// let w = Array2::from_shape_fn((3, 4), |(i, j)| (i as f32 - j as f32) / 4.0); // [3, 4]
    /// let b = [0.1f32, 0.2, 0.3, 0.4];
    ///
    /// // A dense layer, gelu(x w + b), with the bias and the GELU fused into the product.
    /// let mut y = Array2::zeros((2, 4));
    /// let dense = session.bias_activation(Bias::per_column(&b[..]), Func::GeluErf);
    /// session.matmul(&x, &w, &mut y, &dense)?;
    ///
    /// // The same thing in three passes gives the same bits.
    /// let mut z = Array2::zeros((2, 4));
    /// session.matmul(&x, &w, &mut z, &Identity)?;
    /// z += &ndarray::aview1(&b);
    /// session.gelu(&mut z);
    /// assert_eq!(y, z);
    ///
    /// // Transposed operands are views, not copies.
    /// let mut t = Array2::zeros((4, 2));
    /// session.matmul(&w.t(), &x.t(), &mut t, &Identity)?;
    /// assert_eq!(t.t(), session.matmul_owned(&x, &w)?);
    ///
    /// // Shapes that do not fit are errors.
    /// assert!(session.matmul(&x, &x, &mut y, &Identity).is_err());
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn matmul<E: TileEpilogue + ?Sized>(
        &self,
        a: &ArrayRef2<f32>,
        b: &ArrayRef2<f32>,
        c: &mut ArrayRef2<f32>,
        epilogue: &E,
    ) -> Result<(), Error> {
        let (m, k) = a.dim();
        let n = b.ncols();
        check(
            "matmul: b must be [k, n] for a of shape [m, k]",
            &[k, n],
            b.shape(),
        )?;
        check(
            "matmul: c must be [m, n] for a [m, k], b [k, n]",
            &[m, n],
            c.shape(),
        )?;
        epilogue.check_shape(c.shape())?;
        let items = vec![Item {
            a: a.view(),
            b: b.view(),
            c: c.view_mut(),
        }];
        self.gemm(
            items,
            m.saturating_mul(n).saturating_mul(k),
            k,
            epilogue,
            false,
        )
    }

    /// `a b` as a new C-order array (`[m, k] x [k, n] -> [m, n]`), without an epilogue.
    ///
    /// ```
    /// use activation_kernels::Session;
    /// let a = ndarray::array![[1.0f32, 2.0], [3.0, 4.0]];
    /// let c = Session::fast().matmul_owned(&a, &a)?;
    /// assert_eq!(c, ndarray::array![[7.0, 10.0], [15.0, 22.0]]);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn matmul_owned(
        &self,
        a: &ArrayRef2<f32>,
        b: &ArrayRef2<f32>,
    ) -> Result<ndarray::Array2<f32>, Error> {
        let mut c = ndarray::Array2::zeros((a.nrows(), b.ncols()));
        self.matmul(a, b, &mut c, &crate::epilogue::Identity)?;
        Ok(c)
    }

    /// `c[i] = epilogue(a[i] b[i])` for every batch item `i`: `a` is `[batch, m, k]`, `b` is
    /// `[batch, k, n]`, `c` is `[batch, m, n]`, all of any strides. For one B shared by every
    /// item, pass a broadcast view (`b.broadcast((batch, k, n))`: stride 0 along the batch).
    ///
    /// The epilogue is called through [`TileEpilogue::apply_batched`], with the batch index and
    /// the tile's offsets within its item. The bits of each item are those of
    /// [`Session::matmul`] on it; the tiles of all items are spread over the threads together.
    ///
    /// ```
    /// use activation_kernels::Session;
    /// use activation_kernels::epilogue::{Identity, Residual};
    /// use ndarray::{Array3, array};
    /// let session = Session::exact();
    /// let a = Array3::from_shape_fn((3, 2, 4), |(b, i, k)| (b + i * k) as f32);
    /// let w = array![[1.0f32], [0.0], [0.0], [1.0]]; // one [4, 1] B for every item
    /// let r = Array3::from_elem((3, 2, 1), 0.5f32);
    /// let mut c = Array3::zeros((3, 2, 1));
    /// let b = w.broadcast((3, 4, 1)).unwrap();
    /// session.matmul_batched(&a, &b, &mut c, &Residual::batched(r.view()))?;
    /// assert_eq!(c[[2, 1, 0]], 2.0 + (2.0 + 3.0) + 0.5);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn matmul_batched<E: TileEpilogue + ?Sized>(
        &self,
        a: &ArrayRef3<f32>,
        b: &ArrayRef3<f32>,
        c: &mut ArrayRef3<f32>,
        epilogue: &E,
    ) -> Result<(), Error> {
        let (batch, m, k) = a.dim();
        let n = b.shape()[2];
        check(
            "matmul_batched: b must be [batch, k, n] for a of shape [batch, m, k]",
            &[batch, k, n],
            b.shape(),
        )?;
        check(
            "matmul_batched: c must be [batch, m, n] for a [batch, m, k], b [batch, k, n]",
            &[batch, m, n],
            c.shape(),
        )?;
        epilogue.check_shape(c.shape())?;
        let items = a
            .outer_iter()
            .zip(b.outer_iter())
            .zip(c.outer_iter_mut())
            .map(|((a, b), c)| Item { a, b, c })
            .collect();
        let work = batch.saturating_mul(m).saturating_mul(n).saturating_mul(k);
        self.gemm(items, work, k, epilogue, true)
    }

    fn gemm<E: TileEpilogue + ?Sized>(
        &self,
        items: Vec<Item<'_>>,
        work: usize,
        k: usize,
        epilogue: &E,
        batched: bool,
    ) -> Result<(), Error> {
        let isa = self.isa();
        let blk = Blocking::for_width(isa.width());
        if self.parallel(work / GEMM_WORK_PER_ELEMENT) {
            self.install(|| driver::gemm::<M, E>(isa, blk, true, items, k, epilogue, batched))
        } else {
            driver::gemm::<M, E>(isa, blk, false, items, k, epilogue, batched)
        }
    }
}

/// `Err(ShapeMismatch)` unless `found == expected`.
fn check(what: &'static str, expected: &[usize], found: &[usize]) -> Result<(), Error> {
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

#[cfg(test)]
mod tests;
