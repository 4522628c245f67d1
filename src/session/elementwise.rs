//! The element-wise operators of a session, each in three forms: in place, `_into` a
//! destination of the same shape, and `_owned` returning a new array.

use ndarray::{Array, ArrayRef, Dimension};

use super::Session;
use super::traverse::{Grain, Operands, Piece, no_extra};
use crate::error::same_shape;
use crate::{Element, Error, Func, Mode};

impl<M: Mode> Session<M> {
    /// Applies `func` in place to an array or view of any layout and dimension.
    pub fn apply<T: Element, D: Dimension>(&self, func: Func, a: &mut ArrayRef<T, D>) {
        let operands = Operands::in_place(a.view_mut().into_dyn());
        self.traverse(operands, Grain::Elements, no_extra(), |p| {
            self.func_piece(func, p)
        });
    }

    /// `dst = func(src)`; [`Error::ShapeMismatch`] unless the shapes are equal.
    pub fn apply_into<T: Element, D: Dimension>(
        &self,
        func: Func,
        src: &ArrayRef<T, D>,
        dst: &mut ArrayRef<T, D>,
    ) -> Result<(), Error> {
        same_shape("source and destination", src.shape(), dst.shape())?;
        let operands = Operands::into(src.view().into_dyn(), dst.view_mut().into_dyn());
        self.traverse(operands, Grain::Elements, no_extra(), |p| {
            self.func_piece(func, p)
        });
        Ok(())
    }

    /// The slice kernel of `func` on one piece of a traversal.
    fn func_piece(&self, func: Func, p: Piece<'_, ()>) {
        match p.io.src {
            Some(src) => self.kernel_into(func, src, p.io.dst),
            None => self.kernel_in_place(func, p.io.dst),
        }
    }

    /// `func(src)` as a new array (in Fortran order if `src` is, else in C order).
    ///
    /// [`Error::InvalidArgument`] if the copy cannot be allocated (a huge broadcast view, say):
    /// an impossible size is an error, never an abort.
    ///
    /// ```
    /// use activation_kernels::{Func, Session, exact};
    /// let x = ndarray::array![0.5f32, -1.5];
    /// let y = Session::exact().apply_owned(Func::Tanh, &x)?;
    /// assert_eq!(y[1].to_bits(), exact::tanh(-1.5).to_bits());
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn apply_owned<T: Element, D: Dimension>(
        &self,
        func: Func,
        src: &ArrayRef<T, D>,
    ) -> Result<Array<T, D>, Error> {
        let mut out = super::owned::try_to_owned(src, "element-wise output")?;
        self.apply(func, &mut out);
        Ok(out)
    }
}

macro_rules! operators {
    ($($func:ident, $into:ident, $owned:ident, $f:expr, $scalar:ident, $what:literal;)*) => {
        impl<M: Mode> Session<M> {$(
            #[doc = concat!("Applies ", $what, " in place, to an array or view of any layout.")]
            ///
            /// ```
            /// use activation_kernels::{Session, exact};
            /// let mut x = ndarray::array![[0.5f32, 1.5], [2.5, 3.5]];
            #[doc = concat!("Session::exact().", stringify!($func), "(&mut x);")]
            #[doc = concat!("assert_eq!(x[[1, 0]].to_bits(), exact::", stringify!($scalar), "(2.5).to_bits());")]
            /// ```
            pub fn $func<T: Element, D: Dimension>(&self, a: &mut ArrayRef<T, D>) {
                self.apply($f, a)
            }
            #[doc = concat!("`dst = ", stringify!($func), "(src)`: ", $what, ". Shapes must match.")]
            pub fn $into<T: Element, D: Dimension>(
                &self,
                src: &ArrayRef<T, D>,
                dst: &mut ArrayRef<T, D>,
            ) -> Result<(), Error> {
                self.apply_into($f, src, dst)
            }
            #[doc = concat!("`", stringify!($func), "(src)` as a new array: ", $what, ".")]
            ///
            /// [`Error::InvalidArgument`] if the copy cannot be allocated; see
            /// [`Session::apply_owned`].
            pub fn $owned<T: Element, D: Dimension>(
                &self,
                src: &ArrayRef<T, D>,
            ) -> Result<Array<T, D>, Error> {
                self.apply_owned($f, src)
            }
        )*}
    };
}

operators! {
    gelu, gelu_into, gelu_owned, Func::GeluErf, gelu_erf,
        "GELU, erf form (exact: the spec's bits; fast: the rational form)";
    gelu_tanh, gelu_tanh_into, gelu_tanh_owned, Func::GeluTanh, gelu_tanh, "GELU, tanh form";
    sigmoid, sigmoid_into, sigmoid_owned, Func::Sigmoid, sigmoid, "the logistic sigmoid";
    tanh, tanh_into, tanh_owned, Func::Tanh, tanh, "the hyperbolic tangent";
    silu, silu_into, silu_owned, Func::Silu, silu, "SiLU, `x * sigmoid(x)`";
    exp, exp_into, exp_owned, Func::Exp, exp, "`e^x` (fast: the degree-3 fast exp, its input clamped to `[-87.3, 88.3]`, so `exp(+inf)` is about `2.2e38`, not `+inf`)";
    log, log_into, log_owned, Func::Log, log, "the natural logarithm";
    erf, erf_into, erf_owned, Func::Erf, erf, "the error function";
}
