//! Float ranges in increasing order, and the parallel sweep over them.

use rayon::prelude::*;

use activation_kernels::{Error, Isa};

/// The position of `x` in the increasing order of the fp32 values: `0` for both zeros,
/// `k` for the `k`-th float above zero, `-k` for the `k`-th below. Consecutive floats have
/// consecutive positions. `x` must not be NaN (NaN is not in any range).
///
/// ```
/// use ak_accuracy::{ordered, from_ordered};
/// assert_eq!(ordered(0.0), 0);
/// assert_eq!(ordered(-0.0), 0);
/// assert_eq!(ordered(f32::from_bits(1)), 1);
/// assert_eq!(ordered(-1.0), -ordered(1.0));
/// assert_eq!(from_ordered(ordered(2.5)), 2.5);
/// ```
pub fn ordered(x: f32) -> i64 {
    let b = x.to_bits();
    let m = i64::from(b & 0x7FFF_FFFF);
    if b >> 31 == 1 { -m } else { m }
}

/// The float at position `k` of [`ordered`] (`+0` at 0).
pub fn from_ordered(k: i64) -> f32 {
    let m = k.unsigned_abs() as u32;
    if k < 0 {
        f32::from_bits(0x8000_0000 | m)
    } else {
        f32::from_bits(m)
    }
}

/// The position of `+inf` in [`ordered`], the last float; `-inf` is at its negative.
const LAST: i64 = 0x7F80_0000;

/// How many values a sweep of `[lo, hi]` at `stride` visits: every fp32 value of the closed
/// range in increasing order, one zero, then every `stride`-th of them from `lo` on.
///
/// A NaN bound, an empty range (`lo > hi`) or a stride of 0 is an
/// [`Error::InvalidArgument`] that names the range and the stride.
///
/// ```
/// use ak_accuracy::count;
/// assert_eq!(count(-16.0, 16.0, 1), Ok(2_197_815_297));
/// assert_eq!(count(1.0, 2.0, 1), Ok((1 << 23) + 1));
/// assert_eq!(count(1.0, 2.0, 2), Ok((1 << 22) + 1));
/// assert!(count(2.0, 1.0, 1).is_err());
/// ```
pub fn count(lo: f32, hi: f32, stride: u64) -> Result<u64, Error> {
    let invalid = |why: &str| {
        Error::InvalidArgument(format!("sweep of [{lo}, {hi}] at stride {stride}: {why}"))
    };
    if lo.is_nan() || hi.is_nan() {
        return Err(invalid("a bound is NaN"));
    }
    if lo > hi {
        return Err(invalid("the range is empty"));
    }
    // Both positions are within +-LAST, so the difference fits.
    let last = (ordered(hi) - ordered(lo)) as u64;
    last.checked_div(stride)
        .map(|k| k + 1)
        .ok_or_else(|| invalid("the stride is 0"))
}

/// The `i`-th value of the sweep of `[lo, ..]` at `stride`: the float `i * stride` positions
/// of [`ordered`] above `lo`.
///
/// An [`Error::InvalidArgument`] where `lo` is NaN, or `i * stride` overflows, or there is no
/// float that far above `lo` (past `+inf`).
///
/// ```
/// use ak_accuracy::nth;
/// assert_eq!(nth(1.0, 2, 3), Ok(f32::from_bits(1.0f32.to_bits() + 6)));
/// assert!(nth(1.0, u64::MAX, 3).is_err());
/// ```
pub fn nth(lo: f32, stride: u64, i: u64) -> Result<f32, Error> {
    let k = i
        .checked_mul(stride)
        .and_then(|d| i64::try_from(d).ok())
        .and_then(|d| ordered(lo).checked_add(d))
        .filter(|k| !lo.is_nan() && *k <= LAST);
    k.map(from_ordered).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "value {i} of the sweep from {lo} at stride {stride}: no float that far"
        ))
    })
}

/// [`nth`] for an `i` below [`count`] of a valid range, which cannot fail: `i * stride` is at
/// most the range's length in positions.
fn nth_within(lo: f32, stride: u64, i: u64) -> f32 {
    from_ordered(ordered(lo) + (i * stride) as i64)
}

/// How a sweep runs: the instruction set of the kernels, the bins of the error profile, and
/// who hears of the progress.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// The instruction set the kernels run on. Every instruction set gives the same bits (in
    /// fast mode on one machine), so only the speed depends on it. Default: [`Isa::detect`].
    pub isa: Isa,
    /// The number of equal-width bins of `x` over the range for [`Outcome::bins`] (0: none).
    pub bins: usize,
    /// Called from the worker threads with the number of values just finished.
    pub progress: Option<&'a (dyn Fn(u64) + Sync)>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            isa: Isa::detect(),
            bins: 0,
            progress: None,
        }
    }
}

impl std::fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("isa", &self.isa)
            .field("bins", &self.bins)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// The result of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// How many values were evaluated.
    pub count: u64,
    /// The stride of the sweep: every `stride`-th fp32 value of the range.
    pub stride: u64,
    /// The largest error (0 if every value was exact; `+inf` for a NaN error).
    pub max: f64,
    /// The `x` where [`Outcome::max`] occurs, the first in sweep order on ties.
    pub at: f32,
    /// The sweep index of [`Outcome::at`].
    pub at_index: u64,
    /// The largest error in each of [`Options::bins`] equal-width bins of `x` over the range,
    /// `f64::NEG_INFINITY` for a bin no value fell in.
    pub bins: Vec<f64>,
}

/// Values per chunk: the unit of work of a thread and of a kernel call.
pub const CHUNK: usize = 1 << 15;

struct Acc {
    max: f64,
    at_index: u64,
    bins: Vec<f64>,
    xs: Vec<f32>,
    errs: Vec<f64>,
    failed: Option<Error>,
}

impl Acc {
    fn new(bins: usize) -> Acc {
        Acc {
            max: -1.0,
            at_index: u64::MAX,
            bins: vec![f64::NEG_INFINITY; bins],
            xs: Vec::with_capacity(CHUNK),
            errs: Vec::with_capacity(CHUNK),
            failed: None,
        }
    }

    /// Takes `(err, index)` if it is larger, or as large and earlier in the sweep.
    fn offer(&mut self, err: f64, index: u64) {
        if err > self.max || (err == self.max && index < self.at_index) {
            self.max = err;
            self.at_index = index;
        }
    }

    fn merge(mut self, other: Acc) -> Acc {
        self.offer(other.max, other.at_index);
        for (a, b) in self.bins.iter_mut().zip(&other.bins) {
            *a = a.max(*b);
        }
        if self.failed.is_none() {
            self.failed = other.failed;
        }
        self
    }
}

/// Sweeps `[lo, hi]` at `stride` on every core: fills chunks of consecutive sweep values,
/// lets `errors(xs, errs)` write the error of each, and keeps the largest, its `x` (the first
/// in sweep order on ties, whatever the thread count) and the largest per bin.
///
/// A NaN error counts as `+inf`. The first error `errors` returns ends the sweep with it.
///
/// ```
/// use ak_accuracy::{sweep, Options};
/// // |x - 1|, largest at both ends of [0.5, 1.5]: the first in sweep order is 0.5.
/// let out = sweep(0.5, 1.5, 1, &Options::default(), |xs, errs| {
///     for (x, e) in xs.iter().zip(errs.iter_mut()) {
///         *e = f64::from(*x - 1.0).abs();
///     }
///     Ok(())
/// })
/// .unwrap();
/// assert_eq!(out.count, (1 << 23) + (1 << 22) + 1);
/// assert_eq!((out.max, out.at, out.at_index), (0.5, 0.5, 0));
/// ```
pub fn sweep<F>(
    lo: f32,
    hi: f32,
    stride: u64,
    opts: &Options<'_>,
    errors: F,
) -> Result<Outcome, Error>
where
    F: Fn(&[f32], &mut [f64]) -> Result<(), Error> + Sync,
{
    let n = count(lo, hi, stride)?;
    let chunks = n.div_ceil(CHUNK as u64);
    let nbins = opts.bins;
    let (flo, width) = (f64::from(lo), f64::from(hi) - f64::from(lo));
    let acc = (0..chunks)
        .into_par_iter()
        .fold(
            || Acc::new(nbins),
            |mut acc, c| {
                if acc.failed.is_some() {
                    return acc;
                }
                let first = c * CHUNK as u64;
                let len = (n - first).min(CHUNK as u64) as usize;
                acc.xs.clear();
                acc.xs
                    .extend((0..len as u64).map(|i| nth_within(lo, stride, first + i)));
                acc.errs.clear();
                acc.errs.resize(len, 0.0);
                if let Err(e) = errors(&acc.xs, &mut acc.errs) {
                    acc.failed = Some(e);
                    return acc;
                }
                // The chunk's own maximum first (strict `>`: the earliest wins), then one offer.
                let (mut cmax, mut cat) = (-1.0f64, 0usize);
                for i in 0..len {
                    let e = acc.errs[i];
                    let e = if e.is_nan() { f64::INFINITY } else { e };
                    if e > cmax {
                        cmax = e;
                        cat = i;
                    }
                    if nbins > 0 {
                        let pos = (f64::from(acc.xs[i]) - flo) / width * nbins as f64;
                        let b = if pos.is_finite() && pos > 0.0 {
                            (pos as usize).min(nbins - 1)
                        } else {
                            0
                        };
                        acc.bins[b] = acc.bins[b].max(e);
                    }
                }
                acc.offer(cmax, first + cat as u64);
                if let Some(p) = opts.progress {
                    p(len as u64);
                }
                acc
            },
        )
        .reduce(|| Acc::new(nbins), Acc::merge);
    if let Some(e) = acc.failed {
        return Err(e);
    }
    Ok(Outcome {
        count: n,
        stride,
        max: acc.max,
        at: nth_within(lo, stride, acc.at_index),
        at_index: acc.at_index,
        bins: acc.bins,
    })
}
