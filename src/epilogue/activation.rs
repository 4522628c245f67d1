//! [`Activation`] (an element-wise operator of the crate, in a mode) and the fused
//! [`BiasActivation`].
//!
//! Both dispatch once per tile to the instruction set's trampoline and run the operator's slice
//! kernel row by row, so the bits are those of
//! [`Session::apply`](crate::Session::apply) on the finished matrix: the same kernel on the same lanes, and every
//! element independent of its neighbours and of where a register boundary falls.

use std::marker::PhantomData;

use ndarray::{ArrayRef2, Axis};

use super::{Bias, TileEpilogue};
use crate::error::Error;
use crate::lanes::{ExactFpEnv, Isa, LaneOp, Lanes, Mode, Supported, compiled_once_per_mode};
use crate::ops::func::{Func, KernelVisitor, map_slice_in_place};
use crate::ops::{Kernel, SrcDst};
use crate::row_buffer::with_row_mut;

/// Applies an element-wise function of the crate to every element, in mode `M` on one
/// instruction set: exactly what [`Session::apply`](crate::Session::apply) does to the finished
/// matrix, with the same bits, but on each tile while it is in cache.
///
/// Build it with [`Session::activation`](crate::Session::activation) (the session's mode and
/// instruction set) or [`Activation::new`].
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
#[derive(Clone, Copy, Debug)]
pub struct Activation<M: Mode> {
    func: Func,
    isa: Supported,
    mode: PhantomData<M>,
}

impl<M: Mode> Activation<M> {
    /// `func` in mode `M` on `isa`; [`Error::IsaUnavailable`] if this CPU lacks `isa`.
    pub fn new(func: Func, isa: Isa) -> Result<Self, Error> {
        Ok(Activation::on(func, isa.supported()?))
    }

    /// `func` in mode `M` on an instruction set this CPU runs.
    pub(crate) fn on(func: Func, isa: Supported) -> Self {
        Activation {
            func,
            isa,
            mode: PhantomData,
        }
    }

    /// The function.
    pub fn func(&self) -> Func {
        self.func
    }

    /// The instruction set it runs on.
    pub fn isa(&self) -> Isa {
        self.isa.isa()
    }

    /// Runs the kernel over `tile`, optionally adding `bias` to each row first, in one dispatch.
    fn run(&self, tile: &mut ArrayRef2<f32>, bias: Option<(&Bias<'_>, usize, usize)>) {
        let func = self.func;
        ActivationTile { func, tile, bias }.dispatch::<M>(self.isa)
    }
}

impl<M: Mode> TileEpilogue for Activation<M> {
    fn apply(&self, tile: &mut ArrayRef2<f32>, _row: usize, _col: usize) {
        self.run(tile, None);
    }
}

/// A bias, then an activation: `act(C[i, j] + b[j])` (or `b[i]`), the epilogue of a dense
/// layer, fused row by row: each row of the tile gets its bias and its activation while it is in
/// L1. The bits are those of [`Bias`] followed by [`Activation`].
///
/// ```
/// use activation_kernels::{Func, Session};
/// use activation_kernels::epilogue::{Bias, BiasActivation, TileEpilogue};
/// let session = Session::fast();
/// let b = [0.5f32, -0.5];
/// let fused = BiasActivation::new(Bias::per_column(&b[..]), session.activation(Func::Silu));
/// let mut tile = ndarray::array![[1.0f32, 2.0]];
/// let mut separate = tile.clone();
/// fused.apply(&mut tile, 0, 0);
/// Bias::per_column(&b[..]).apply(&mut separate, 0, 0);
/// session.silu(&mut separate);
/// assert_eq!(tile, separate);
/// ```
#[derive(Clone, Debug)]
pub struct BiasActivation<'a, M: Mode> {
    bias: Bias<'a>,
    activation: Activation<M>,
}

impl<'a, M: Mode> BiasActivation<'a, M> {
    /// `activation(C + bias)`.
    pub fn new(bias: Bias<'a>, activation: Activation<M>) -> Self {
        BiasActivation { bias, activation }
    }
}

impl<M: Mode> TileEpilogue for BiasActivation<'_, M> {
    fn apply(&self, tile: &mut ArrayRef2<f32>, row: usize, col: usize) {
        self.activation.run(tile, Some((&self.bias, row, col)));
    }

    fn check_shape(&self, c_shape: &[usize]) -> Result<(), Error> {
        self.bias.check_shape(c_shape)
    }
}

/// The kernel of `func` over every row of `tile` (after the bias, if any), in one dispatch.
struct ActivationTile<'a> {
    func: Func,
    tile: &'a mut ArrayRef2<f32>,
    bias: Option<(&'a Bias<'a>, usize, usize)>,
}

compiled_once_per_mode!(ActivationTile<'_> -> (), by run);

impl ActivationTile<'_> {
    /// The tile's contiguous lanes through the [`ActivationRows`] of the function's kernel in
    /// mode `M`; strided lanes one by one through a row buffer.
    fn run<M: Mode>(self, isa: Supported) {
        let ActivationTile { func, tile, bias } = self;
        // With a bias, row by row (the bias is per row or per column); without, along the axis
        // of smallest stride: rows of a C-order tile, columns of an F-order one.
        let axis = if bias.is_some()
            || tile.strides()[1].unsigned_abs() <= tile.strides()[0].unsigned_abs()
        {
            Axis(1)
        } else {
            Axis(0)
        };
        let lanes: Option<Vec<&mut [f32]>> = if bias.is_none()
            && let Some(all) = tile.as_slice_memory_order_mut()
        {
            Some(vec![all])
        } else if tile.len_of(axis) <= 1 || tile.stride_of(axis) == 1 {
            tile.lanes_mut(axis)
                .into_iter()
                .map(|lane| lane.into_slice())
                .collect()
        } else {
            None
        };
        match lanes {
            // Contiguous lanes (every tile of this crate's GEMM): one dispatch for the tile.
            Some(lanes) => func.visit::<M, _>(DispatchRows { isa, lanes, bias }),
            // Strided lanes (a tile a user's GEMM passes): each through a row buffer and the
            // slice kernel, one dispatch per lane, outside this one's kernels; the bias in the
            // exact floating-point environment in exact mode.
            None => {
                let _env = ExactFpEnv::enter_if(!M::FAST);
                for (i, lane) in tile.lanes_mut(axis).into_iter().enumerate() {
                    with_row_mut(lane, |data| {
                        if let Some((bias, row0, col0)) = bias {
                            bias.add_row(data, i, row0, col0);
                        }
                        map_slice_in_place::<M>(func, isa, data);
                    });
                }
            }
        }
    }
}

/// Dispatches the [`ActivationRows`] of the kernel a [`Func`] names.
struct DispatchRows<'a> {
    isa: Supported,
    lanes: Vec<&'a mut [f32]>,
    bias: Option<(&'a Bias<'a>, usize, usize)>,
}

impl KernelVisitor for DispatchRows<'_> {
    type Output = ();
    fn visit<K: Kernel>(self) {
        let (lanes, bias, kernel) = (self.lanes, self.bias, PhantomData::<K>);
        self.isa.dispatch::<K::Mode, _>(ActivationRows {
            lanes,
            bias,
            kernel,
        })
    }
}

/// The kernel `K` over contiguous lanes of a tile (the rows, after the bias, if any).
struct ActivationRows<'a, K> {
    lanes: Vec<&'a mut [f32]>,
    bias: Option<(&'a Bias<'a>, usize, usize)>,
    kernel: PhantomData<K>,
}

impl<K: Kernel> LaneOp for ActivationRows<'_, K> {
    type Output = ();
    #[inline(always)]
    fn run<L: Lanes, M: Mode>(self, l: L) {
        for (i, data) in self.lanes.into_iter().enumerate() {
            if let Some((bias, row0, col0)) = self.bias {
                bias.add_row(data, i, row0, col0);
            }
            K::map(l, SrcDst::in_place(data));
        }
    }
}
