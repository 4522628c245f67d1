//! Matrix products with tile epilogues: the session's face of the GEMM (`crate::gemm`) and
//! of the epilogues that run in its mode.
//!
//! A product runs on the calling thread unless its work ([`product_work`]: its multiply-adds
//! over [`GEMM_WORK_PER_ELEMENT`], or the values it reads and writes once, whichever is more)
//! reaches the session's parallel threshold; its tiles (or, for one row of A, its chunks of
//! columns) are then spread over the session's threads. Products have no in-place form: C
//! never aliases A or B.

use ndarray::{Array2, Array3, ArrayRef2, ArrayRef3, Ix2, Ix3};

use super::Session;
use crate::epilogue::{Activation, Bias, BiasActivation, TileEpilogue};
use crate::error::same_shape;
use crate::gemm::{Gemm, Item, Operand, PackedMatrix, Rhs, operand};
use crate::work_queue::Spread;
use crate::{Error, Func, Mode};

/// Multiply-adds that count as one element of element-wise work against the session's
/// parallel threshold ([`work_of`]).
const GEMM_WORK_PER_ELEMENT: usize = 64;

/// What work of `madds` multiply-adds over `values` values (read and written once) counts as
/// against the session's parallel threshold, which counts elements of element-wise work: the
/// multiply-adds over [`GEMM_WORK_PER_ELEMENT`], or the values, whichever is more. A product
/// (or attention) of many rows is compute; one of few rows, a decode step's above all, streams
/// its weights (or cache) once with few multiply-adds per value: the memory work of an
/// element-wise pass over as many values, which splits over threads as such a pass does. One
/// row against `768 x 3072` weights counts 36,864 by its multiply-adds, 2,363,136 by its
/// values; counted by multiply-adds alone, a decode step ran on one thread at any thread count.
pub(super) fn work_of(madds: usize, values: usize) -> usize {
    (madds / GEMM_WORK_PER_ELEMENT).max(values)
}

/// The [`work_of`] a product of `batch` items of `[m, k] x [k, n]`.
/// `n`, once `b` (`[k, n]`) is checked against `a` (`[m, k]`).
fn check_product(a: &ArrayRef2<f32>, b: Operand<'_>) -> Result<usize, Error> {
    let ((_, k), (bk, n)) = (a.dim(), b.dim());
    same_shape(
        "matmul: b must be [k, n] for a of shape [m, k]",
        &[k, n],
        &[bk, n],
    )?;
    Ok(n)
}

/// `n`, once `b` (`[batch, k, n]`) is checked against `a` (`[batch, m, k]`).
fn check_batched_product(a: &ArrayRef3<f32>, b: &ArrayRef3<f32>) -> Result<usize, Error> {
    let ((batch, _, k), n) = (a.dim(), b.shape()[2]);
    same_shape(
        "matmul_batched: b must be [batch, k, n] for a of shape [batch, m, k]",
        &[batch, k, n],
        b.shape(),
    )?;
    Ok(n)
}

fn product_work(batch: usize, m: usize, n: usize, k: usize) -> usize {
    let madds = batch.saturating_mul(m).saturating_mul(n).saturating_mul(k);
    let values = m
        .saturating_mul(k)
        .saturating_add(k.saturating_mul(n))
        .saturating_add(m.saturating_mul(n))
        .saturating_mul(batch);
    work_of(madds, values)
}

impl<M: Mode> Session<M> {
    /// `c = epilogue(a b)`: `a` is `[m, k]`, `b` is `[k, n]`, `c` is `[m, n]`, all of any
    /// strides (transposed and sliced views included); `b` may also be a [`PackedMatrix`]
    /// (weights packed once, [`Session::pack`]). The previous contents of `c` are ignored.
    ///
    /// The epilogue runs once on every tile of C after the tile has received all of K (with
    /// `k = 0`, on zeros); see [`TileEpilogue`]. In exact mode the product has the bits of the
    /// plain loop `c = +0; for k in 0..K { c = c + a[i][k] * b[k][j] }` on every instruction set
    /// and thread count; in fast mode each step is a fused multiply-add, from `+0`, in
    /// increasing `k` (correctly rounded everywhere, so also the same on every instruction set
    /// and thread count).
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
    /// session.matmul_into(&x, &w, &mut y, &dense)?;
    ///
    /// // The same thing in three passes gives the same bits.
    /// let mut z = Array2::zeros((2, 4));
    /// session.matmul_into(&x, &w, &mut z, &Identity)?;
    /// z += &ndarray::aview1(&b);
    /// session.gelu(&mut z);
    /// assert_eq!(y, z);
    ///
    /// // Transposed operands are views, not copies.
    /// let mut t = Array2::zeros((4, 2));
    /// session.matmul_into(&w.t(), &x.t(), &mut t, &Identity)?;
    /// assert_eq!(t.t(), session.matmul_owned(&x, &w, &Identity)?);
    ///
    /// // Shapes that do not fit are errors.
    /// assert!(session.matmul_into(&x, &x, &mut y, &Identity).is_err());
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn matmul_into<B: Rhs + ?Sized, E: TileEpilogue + ?Sized>(
        &self,
        a: &ArrayRef2<f32>,
        b: &B,
        c: &mut ArrayRef2<f32>,
        epilogue: &E,
    ) -> Result<(), Error> {
        self.matmul_operand_into(a, operand(b), c, &epilogue)
    }

    /// [`Session::matmul_into`] with the right-hand side as the driver reads it (a window of a
    /// packed matrix, for attention's keys).
    pub(crate) fn matmul_operand_into<'a>(
        &'a self,
        a: &'a ArrayRef2<f32>,
        b: Operand<'a>,
        c: &'a mut ArrayRef2<f32>,
        epilogue: &'a dyn TileEpilogue,
    ) -> Result<(), Error> {
        let (m, k) = a.dim();
        let n = check_product(a, b)?;
        same_shape(
            "matmul: c must be [m, n] for a [m, k], b [k, n]",
            &[m, n],
            c.shape(),
        )?;
        epilogue.check_shape(c.shape())?;
        let items = vec![Item {
            a: a.view(),
            b,
            c: c.view_mut(),
        }];
        self.gemm(items, product_work(1, m, n, k), k, epilogue, false)
    }

    /// `b` (`[k, n]`, any strides) packed once for this session's instruction set, to be
    /// passed as the right-hand side of many products ([`Session::matmul_into`]): the weights of
    /// a layer. The products have the same bits as with `b` itself (in fast mode, a NaN's
    /// payload aside). See [`PackedMatrix`].
    pub fn pack(&self, b: &ArrayRef2<f32>) -> Result<PackedMatrix, Error> {
        PackedMatrix::new(self.isa.isa(), b)
    }

    /// `epilogue(a b)` as a new C-order array (`[m, k] x [k, n] -> [m, n]`); see
    /// [`Session::matmul_into`].
    ///
    /// ```
    /// use activation_kernels::Session;
    /// use activation_kernels::epilogue::Identity;
    /// let a = ndarray::array![[1.0f32, 2.0], [3.0, 4.0]];
    /// let c = Session::fast().matmul_owned(&a, &a, &Identity)?;
    /// assert_eq!(c, ndarray::array![[7.0, 10.0], [15.0, 22.0]]);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn matmul_owned<B: Rhs + ?Sized, E: TileEpilogue + ?Sized>(
        &self,
        a: &ArrayRef2<f32>,
        b: &B,
        epilogue: &E,
    ) -> Result<Array2<f32>, Error> {
        // The shapes first: a mismatch is its error, whatever the size of the output.
        let n = check_product(a, operand(b))?;
        epilogue.check_shape(&[a.nrows(), n])?;
        let mut c = super::owned::try_zeros(Ix2(a.nrows(), n), "matmul output")?;
        self.matmul_into(a, b, &mut c, epilogue)?;
        Ok(c)
    }

    /// `c[i] = epilogue(a[i] b[i])` for every batch item `i`: `a` is `[batch, m, k]`, `b` is
    /// `[batch, k, n]`, `c` is `[batch, m, n]`, all of any strides. For one B shared by every
    /// item, pass a broadcast view (`b.broadcast((batch, k, n))`: stride 0 along the batch).
    ///
    /// The epilogue is called through [`TileEpilogue::apply_batched`], with the batch index and
    /// the tile's offsets within its item. The bits of each item are those of
    /// [`Session::matmul_into`] on it; the tiles of all items are spread over the threads together.
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
    /// session.matmul_batched_into(&a, &b, &mut c, &Residual::batched(r.view()))?;
    /// assert_eq!(c[[2, 1, 0]], 2.0 + (2.0 + 3.0) + 0.5);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn matmul_batched_into<E: TileEpilogue + ?Sized>(
        &self,
        a: &ArrayRef3<f32>,
        b: &ArrayRef3<f32>,
        c: &mut ArrayRef3<f32>,
        epilogue: &E,
    ) -> Result<(), Error> {
        let (batch, m, k) = a.dim();
        let n = check_batched_product(a, b)?;
        same_shape(
            "matmul_batched: c must be [batch, m, n] for a [batch, m, k], b [batch, k, n]",
            &[batch, m, n],
            c.shape(),
        )?;
        epilogue.check_shape(c.shape())?;
        let items = a
            .outer_iter()
            .zip(b.outer_iter())
            .zip(c.outer_iter_mut())
            .map(|((a, b), c)| Item {
                a,
                b: Operand::View(b),
                c,
            })
            .collect();
        self.gemm(items, product_work(batch, m, n, k), k, &epilogue, true)
    }

    /// `c[i] = epilogue(a[i] b[i])` as a new C-order `[batch, m, n]` array; see
    /// [`Session::matmul_batched_into`].
    pub fn matmul_batched_owned<E: TileEpilogue + ?Sized>(
        &self,
        a: &ArrayRef3<f32>,
        b: &ArrayRef3<f32>,
        epilogue: &E,
    ) -> Result<Array3<f32>, Error> {
        // The shapes first: a mismatch is its error, whatever the size of the output.
        let (batch, m, _) = a.dim();
        let n = check_batched_product(a, b)?;
        epilogue.check_shape(&[batch, m, n])?;
        let mut c = super::owned::try_zeros(Ix3(batch, m, n), "matmul_batched output")?;
        self.matmul_batched_into(a, b, &mut c, epilogue)?;
        Ok(c)
    }

    /// The epilogue that applies `func` in this session's mode on its instruction set: the same
    /// bits as [`Session::apply`] on the finished matrix.
    ///
    /// ```
    /// use activation_kernels::{Func, Session};
    /// use activation_kernels::epilogue::TileEpilogue;
    /// let session = Session::exact();
    /// let mut tile = ndarray::array![[-1.0f32, 0.5], [2.0, 3.0]];
    /// let mut whole = tile.clone();
    /// session.activation(Func::GeluErf).apply(&mut tile, 0, 0);
    /// session.gelu(&mut whole);
    /// assert_eq!(tile, whole);
    /// ```
    pub fn activation(&self, func: Func) -> Activation<M> {
        Activation::on(func, self.isa)
    }

    /// The fused epilogue `func(C + bias)` (see [`BiasActivation`]) in this session's mode.
    pub fn bias_activation<'a>(&self, bias: Bias<'a>, func: Func) -> BiasActivation<'a, M> {
        BiasActivation::new(bias, self.activation(func))
    }

    fn gemm<'a>(
        &'a self,
        items: Vec<Item<'a>>,
        work: usize,
        k: usize,
        epilogue: &'a dyn TileEpilogue,
        batched: bool,
    ) -> Result<(), Error> {
        let parallel = self.parallel(work) && self.region_threads() > 1;
        Gemm {
            spread: parallel.then_some(self as Spread<'_>),
            items,
            k,
            epilogue,
            batched,
        }
        .dispatch::<M>(self.isa)
    }
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::product_work;
    use crate::{Fast, Session};

    /// A decode step's products (one row of A against the block's weights) reach the default
    /// parallel threshold by the weights they stream; tiny products do not; the block's
    /// prefill products count by their multiply-adds, as before.
    pub fn a_gemv_over_large_weights_is_parallel_work_and_a_small_one_is_not() {
        let line = Session::<Fast>::DEFAULT_PARALLEL_THRESHOLD;
        for (k, n) in [(768, 2304), (768, 768), (768, 3072), (3072, 768)] {
            assert!(product_work(1, 1, n, k) >= line, "1 x {k} x {n}");
            assert_eq!(
                product_work(1, 256, n, k),
                256 * n * k / 64,
                "256 x {k} x {n}"
            );
        }
        assert!(product_work(1, 1, 64, 64) < line);
        assert!(
            product_work(12, 1, 255, 64) >= line,
            "a decode step's scores, 12 heads"
        );
        assert!(product_work(2, 1, 64, 64) < line);
        // No overflow on absurd sizes.
        assert_eq!(product_work(usize::MAX, 2, 2, 2), usize::MAX);
    }
}
