//! The rows of the accuracy table: what is measured, over which range, against what bound.

use std::fmt;

use crate::reference::{Reference, abs_diff, ulp_error};
use crate::sweep::{Options, Outcome, count, sweep};
use activation_kernels::{Error, Func, Isa, exact, fast};

/// The mode a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RowMode {
    /// [`activation_kernels::exact::map`]: the spec's bits.
    Exact,
    /// [`activation_kernels::fast::map`]: fused multiply-adds, the fast exp, the rational GELU.
    Fast,
}

impl RowMode {
    /// `"exact"` or `"fast"`.
    pub fn name(self) -> &'static str {
        match self {
            RowMode::Exact => "exact",
            RowMode::Fast => "fast",
        }
    }
}

impl fmt::Display for RowMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a row compares the kernel's output with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Error in fp32 ulps against an f64 reference ([`crate::ulp_error`]).
    Ulp(Reference),
    /// Absolute error `|got - exact|` against the exact kernel of the same function.
    AbsVsExact,
    /// `|got - exact| / max(1, |x|)` against the exact kernel of the same function.
    ScaledVsExact,
}

impl Metric {
    /// The unit the table prints: `"ulp"`, `"abs"` or `"scaled"`.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Ulp(_) => "ulp",
            Metric::AbsVsExact => "abs",
            Metric::ScaledVsExact => "scaled",
        }
    }

    /// An error printed the way the table prints it: `1.047` ulp, `9.537e-7` absolute.
    pub fn format(self, value: f64) -> String {
        match self {
            Metric::Ulp(_) => format!("{value:.3}"),
            Metric::AbsVsExact | Metric::ScaledVsExact => format!("{value:.3e}"),
        }
    }

    /// A bound printed the way the table prints it, with its own digits: `1.2`, `13`, `2.4e-7`,
    /// and a power of two as one: `2^-20`.
    pub fn format_bound(self, value: f64) -> String {
        match self {
            Metric::Ulp(_) => format!("{value}"),
            Metric::AbsVsExact | Metric::ScaledVsExact => {
                let e = value.log2();
                if value > 0.0 && e == e.round() {
                    format!("2^{e}")
                } else {
                    format!("{value:e}")
                }
            }
        }
    }
}

/// The kind of sweep of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sweep {
    /// Every fp32 value of the range where the function is used most.
    Hot,
    /// Every 67th fp32 value of a range that reaches the overflow and underflow thresholds.
    Wide,
    /// Every fp32 value of a stretch of the negative tail of GELU.
    Tail,
    /// Every fp32 value of the range of the rational GELU's published bound.
    Dense,
}

impl Sweep {
    /// `"hot"`, `"wide"`, `"tail"` or `"dense"`.
    pub fn name(self) -> &'static str {
        match self {
            Sweep::Hot => "hot",
            Sweep::Wide => "wide",
            Sweep::Tail => "tail",
            Sweep::Dense => "dense",
        }
    }
}

/// One row of the table: a kernel, a range, a stride, a metric and the bound it must meet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    /// The function.
    pub func: Func,
    /// The mode.
    pub mode: RowMode,
    /// The kind of sweep.
    pub sweep: Sweep,
    /// Low end of the closed range.
    pub lo: f32,
    /// High end of the closed range.
    pub hi: f32,
    /// The stride of the published table (1 or 67).
    pub stride: u64,
    /// What the output is compared with.
    pub metric: Metric,
    /// The largest error allowed, in the metric's unit.
    pub bound: f64,
    /// Where the bound comes from: `"spec"`, or `"measured"` for a bound this crate pins from
    /// its own stride-1 measurement, rounded up to the next 0.1 ulp: SiLU, which the spec does
    /// not have, and the negative tails of GELU, which the spec's bounds do not cover.
    pub bound_source: &'static str,
}

impl Row {
    /// The function's name, as `--only` selects it (`"gelu_erf"`).
    pub fn name(&self) -> &'static str {
        self.func.name()
    }

    /// A unique, readable key: `"exact exp hot"`, `"fast gelu_erf dense abs"`,
    /// `"exact gelu_tanh tail [-12, -6]"`.
    pub fn id(&self) -> String {
        let mut id = format!("{} {} {}", self.mode, self.func, self.sweep.name());
        if self.sweep == Sweep::Tail {
            id.push_str(&format!(" {}", self.range()));
        }
        if !matches!(self.metric, Metric::Ulp(_)) {
            id.push(' ');
            id.push_str(self.metric.unit());
        }
        id
    }

    /// The range as the table prints it: `[-16, 16]`, `[0, FLT_MAX]`.
    pub fn range(&self) -> String {
        let end = |v: f32| {
            if v == f32::MAX {
                "FLT_MAX".to_string()
            } else {
                v.to_string()
            }
        };
        format!("[{}, {}]", end(self.lo), end(self.hi))
    }

    /// The row's stride times `stride_multiplier`: the stride of a sweep at that multiplier.
    /// An [`Error::InvalidArgument`] naming the multiplier where the product overflows.
    pub fn stride_at(&self, stride_multiplier: u64) -> Result<u64, Error> {
        self.stride.checked_mul(stride_multiplier).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "stride multiplier {stride_multiplier} times the stride {} of row {:?} \
                 overflows u64 (the largest multiplier it takes is {})",
                self.stride,
                self.id(),
                u64::MAX / self.stride
            ))
        })
    }

    /// The number of values at `stride_multiplier` times the row's stride; an error where that
    /// stride overflows or is 0 ([`Row::stride_at`], [`count`]).
    pub fn count(&self, stride_multiplier: u64) -> Result<u64, Error> {
        count(self.lo, self.hi, self.stride_at(stride_multiplier)?)
    }

    /// Runs the row's kernel on `xs` into `ys` on `isa`.
    pub fn eval(&self, isa: Isa, xs: &[f32], ys: &mut [f32]) -> Result<(), Error> {
        match self.mode {
            RowMode::Exact => exact::map(self.func, isa, xs, ys),
            RowMode::Fast => fast::map(self.func, isa, xs, ys),
        }
    }

    /// Writes the error of each `xs[i]` into `errs[i]` (equal lengths).
    pub fn errors(&self, isa: Isa, xs: &[f32], errs: &mut [f64]) -> Result<(), Error> {
        if xs.len() != errs.len() {
            return Err(Error::LengthMismatch {
                src: xs.len(),
                dst: errs.len(),
            });
        }
        let mut ys = vec![0f32; xs.len()];
        self.eval(isa, xs, &mut ys)?;
        match self.metric {
            Metric::Ulp(r) => {
                for ((e, &x), &y) in errs.iter_mut().zip(xs).zip(&ys) {
                    *e = ulp_error(y, r.eval(f64::from(x)));
                }
            }
            Metric::AbsVsExact | Metric::ScaledVsExact => {
                let mut want = vec![0f32; xs.len()];
                exact::map(self.func, isa, xs, &mut want)?;
                let scaled = self.metric == Metric::ScaledVsExact;
                for (((e, &x), &y), &w) in errs.iter_mut().zip(xs).zip(&ys).zip(&want) {
                    let d = abs_diff(y, w);
                    *e = if scaled {
                        d / f64::from(x.abs()).max(1.0)
                    } else {
                        d
                    };
                }
            }
        }
        Ok(())
    }

    /// The error at one `x`.
    pub fn error_at(&self, isa: Isa, x: f32) -> Result<f64, Error> {
        let mut e = [0.0];
        self.errors(isa, &[x], &mut e)?;
        Ok(e[0])
    }

    /// Sweeps the row at `stride_multiplier` times its stride (1: the published table) on
    /// every core; the errors of [`Row::count`], and those of the kernels.
    pub fn run(&self, stride_multiplier: u64, opts: &Options<'_>) -> Result<Outcome, Error> {
        let isa = opts.isa;
        sweep(
            self.lo,
            self.hi,
            self.stride_at(stride_multiplier)?,
            opts,
            |xs, errs| self.errors(isa, xs, errs),
        )
    }

    /// The row as a line of the Markdown table of [`markdown_header`], with the outcome of
    /// one of its runs.
    pub fn markdown(&self, out: &Outcome) -> String {
        format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | `{:?}` (`0x{:08X}`) | {} | {} |",
            self.func,
            self.mode,
            self.sweep.name(),
            self.range(),
            out.stride,
            thousands(out.count),
            self.metric.unit(),
            self.metric.format(out.max),
            out.at,
            out.at.to_bits(),
            self.metric.format_bound(self.bound),
            self.bound_source,
        )
    }
}

/// The functions the table has rows for, each once, in the table's order. The others of
/// `Func::ALL` (`exp_nonpositive`, `one_plus_erf`) are parts of these, with no reference of
/// their own.
pub fn funcs() -> Vec<Func> {
    let mut funcs = Vec::new();
    for r in rows() {
        if !funcs.contains(&r.func) {
            funcs.push(r.func);
        }
    }
    funcs
}

/// The header of the Markdown table [`Row::markdown`] writes the lines of.
pub fn markdown_header() -> &'static str {
    "| function | mode | sweep | range | stride | values | unit | max error | at x | bound | bound from |\n\
     | --- | --- | --- | --- | ---: | ---: | --- | ---: | --- | ---: | --- |"
}

/// `n` with a comma every three digits: `2,197,815,297`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The bound this crate pins for SiLU, both modes, over the hot range `[-16, 16]`: the spec
/// has no SiLU, so this is the crate's own stride-1 measurement (3.284 ulp exact at
/// `x = -3.2084396`, 3.193 fast) rounded up to the next 0.1 ulp.
pub const SILU_HOT_BOUND: f64 = 3.3;
/// The bound this crate pins for SiLU, both modes, over the wide range `[-110, 90]`, measured
/// the same way (51.999 ulp at `x = -103.97178`). Larger than the hot bound because
/// `sigmoid(x)` is subnormal below `x = -87.3`: its rounding there, up to half the smallest
/// subnormal, is multiplied by `|x|`.
pub const SILU_WIDE_BOUND: f64 = 52.0;
/// The bounds this crate pins for the erf form of GELU on the negative tails `[-6, -3]` and
/// `[-12, -6]`: the stride-1 maxima (46.145 ulp at `x = -5.962`, 179.769 at
/// `x = -11.988144`) rounded up to the next 0.1 ulp. The spec's 13 ulp holds from -3 on; below,
/// the error grows like `x^2` (the conditioning of GELU there), about 1.3 `x^2` ulp.
pub const GELU_ERF_TAIL_BOUNDS: [f64; 2] = [46.2, 179.8];
/// The bounds this crate pins for the tanh form of GELU, both modes, on the negative tails
/// `[-6, -3]` and `[-12, -6]`: the stride-1 maxima over both modes (61.997 ulp exact at
/// `x = -5.8887057`, 218.405 exact at `x = -9.859064`) rounded up to the next 0.1 ulp. The
/// spec's 18 ulp holds from -3 on; below, the relative rounding errors of `u` are multiplied
/// by `|2u|`, about `0.07 |x|^3`.
pub const GELU_TANH_TAIL_BOUNDS: [f64; 2] = [62.0, 218.5];

/// The bound of the rational fast GELU's absolute error against the exact kernel: `2^-20`,
/// the spec's "9.5e-7" read as the power of two it rounds (`9.537e-7`). The fast and exact
/// results are floats of the same binade, so their difference is a multiple of the output's
/// ulp: in `[4, 8)`, `2^-21`, and a literal 9.5e-7 would allow one ulp there, which a rational
/// erf with the spec's own "about six units in the last place of erf near 1" cannot give.
/// `tests/it/fast_kernels.rs` pins the same figure.
pub const RATIONAL_GELU_ABS_BOUND: f64 = 9.536_743_164_062_5e-7;

/// The bounds this crate pins for fast mode's own forms (issue 14: the fast exp inside every
/// operator, a rational erf): the maximum of a sweep of every 7th value of the hot row (314
/// million values; ACCURACY.md), rounded up to the next 0.1 ulp, one bound for the hot and the
/// wide row of a function. tanh (the rational, measured at *every* value of its hot row):
/// 5.503 ulp at `x = -5.348655`, the f32 evaluation of `c P/Q` near 1.
pub const FAST_TANH_BOUND: f64 = 5.6;
/// erf: 5.755 ulp at `x = -3.8047323`, the rational's f32 evaluation (two Horner chains, a
/// product, a division) near 1.
pub const FAST_ERF_BOUND: f64 = 5.8;
/// sigmoid, `1/(1 + e^-x)` (every value of the hot row): 3.397 ulp at `x = -1.9463525`, the
/// fast exp's 2.3 ulp carried through `1 + E` and the division.
pub const FAST_SIGMOID_BOUND: f64 = 3.4;
/// SiLU, `x/(1 + e^-x)` (every value of the hot row): 3.462 ulp at `x = -5.9389734`.
pub const FAST_SILU_BOUND: f64 = 3.5;
/// The negative tails of GELU, `[-6, -3]` and `[-12, -6]`.
pub const TAILS: ((f32, f32), (f32, f32)) = ((-6.0, -3.0), (-12.0, -6.0));
/// Fast mode's far tail of the tanh form of GELU stops at `-9.9`, and its wide sigmoid and SiLU
/// rows at `-87`, like the fast exp's: the fast exp flushes to `+0` below `-87.3` (a result
/// under `2^-126`), where an error in ulps of a subnormal says nothing; fast GELU tanh gives
/// `-0` where `2u < -87.3`, the same limit. At `x = -9.9`, `2u` is `-85.0`.
pub const FAST_GELU_TANH_FAR_TAIL: (f32, f32) = (-9.9, -6.0);

/// The rows of fast mode: the fast exp alone and inside every operator, the fused log, the
/// rational erf.
fn fast_specs() -> Vec<RowSpec> {
    use Sweep::{Hot, Tail, Wide};
    const SPEC: &str = "spec";
    const MEASURED: &str = "measured";
    vec![
        (Func::Exp, Hot, (-16.0, 16.0), 2.3, SPEC),
        (Func::Exp, Wide, (-87.0, 88.0), 2.3, SPEC),
        (Func::Log, Hot, (0.0625, 16.0), 2.1, SPEC),
        (Func::Log, Wide, (0.0, f32::MAX), 2.1, SPEC),
        (Func::Tanh, Hot, (-10.0, 10.0), FAST_TANH_BOUND, MEASURED),
        (Func::Tanh, Wide, (-50.0, 50.0), FAST_TANH_BOUND, MEASURED),
        (Func::Erf, Hot, (-6.0, 6.0), FAST_ERF_BOUND, MEASURED),
        (Func::Erf, Wide, (-10.0, 10.0), FAST_ERF_BOUND, MEASURED),
        (
            Func::Sigmoid,
            Hot,
            (-16.0, 16.0),
            FAST_SIGMOID_BOUND,
            MEASURED,
        ),
        (
            Func::Sigmoid,
            Wide,
            (-87.0, 90.0),
            FAST_SIGMOID_BOUND,
            MEASURED,
        ),
        (Func::GeluTanh, Hot, (-3.0, 10.0), 18.0, SPEC),
        (
            Func::GeluTanh,
            Tail,
            TAILS.0,
            GELU_TANH_TAIL_BOUNDS[0],
            MEASURED,
        ),
        (
            Func::GeluTanh,
            Tail,
            FAST_GELU_TANH_FAR_TAIL,
            GELU_TANH_TAIL_BOUNDS[1],
            MEASURED,
        ),
        (Func::Silu, Hot, (-16.0, 16.0), FAST_SILU_BOUND, MEASURED),
        (Func::Silu, Wide, (-87.0, 90.0), FAST_SILU_BOUND, MEASURED),
    ]
}

/// A row of one mode: function, sweep, range, bound, where the bound comes from.
type RowSpec = (Func, Sweep, (f32, f32), f64, &'static str);

/// Every row of the published table, in its order: exact mode, then fast mode, by function.
pub fn rows() -> Vec<Row> {
    use Sweep::{Dense, Hot, Tail, Wide};
    const SPEC: &str = "spec";
    const MEASURED: &str = "measured";
    let (tail_a, tail_b) = TAILS;
    let mut rows = Vec::new();
    for mode in [RowMode::Exact, RowMode::Fast] {
        let fast = mode == RowMode::Fast;
        let specs: Vec<RowSpec> = if fast {
            fast_specs()
        } else {
            vec![
                (Func::Exp, Hot, (-16.0, 16.0), 1.2, SPEC),
                (Func::Exp, Wide, (-110.0, 90.0), 1.2, SPEC),
                (Func::Log, Hot, (0.0625, 16.0), 2.1, SPEC),
                (Func::Log, Wide, (0.0, f32::MAX), 2.1, SPEC),
                (Func::Tanh, Hot, (-10.0, 10.0), 1.5, SPEC),
                (Func::Tanh, Wide, (-50.0, 50.0), 1.5, SPEC),
                (Func::Erf, Hot, (-6.0, 6.0), 3.0, SPEC),
                (Func::Erf, Wide, (-10.0, 10.0), 3.0, SPEC),
                (Func::Sigmoid, Hot, (-16.0, 16.0), 2.5, SPEC),
                (Func::Sigmoid, Wide, (-110.0, 90.0), 2.5, SPEC),
                // Fast mode's erf GELU is the rational one, measured against this kernel below.
                (Func::GeluErf, Hot, (-3.0, 10.0), 13.0, SPEC),
                (
                    Func::GeluErf,
                    Tail,
                    tail_a,
                    GELU_ERF_TAIL_BOUNDS[0],
                    MEASURED,
                ),
                (
                    Func::GeluErf,
                    Tail,
                    tail_b,
                    GELU_ERF_TAIL_BOUNDS[1],
                    MEASURED,
                ),
                (Func::GeluTanh, Hot, (-3.0, 10.0), 18.0, SPEC),
                (
                    Func::GeluTanh,
                    Tail,
                    tail_a,
                    GELU_TANH_TAIL_BOUNDS[0],
                    MEASURED,
                ),
                (
                    Func::GeluTanh,
                    Tail,
                    tail_b,
                    GELU_TANH_TAIL_BOUNDS[1],
                    MEASURED,
                ),
                (Func::Silu, Hot, (-16.0, 16.0), SILU_HOT_BOUND, MEASURED),
                (Func::Silu, Wide, (-110.0, 90.0), SILU_WIDE_BOUND, MEASURED),
            ]
        };
        rows.extend(
            specs
                .into_iter()
                .map(|(func, sweep, (lo, hi), bound, bound_source)| Row {
                    func,
                    mode,
                    sweep,
                    lo,
                    hi,
                    stride: if sweep == Wide { 67 } else { 1 },
                    metric: Metric::Ulp(
                        Reference::of(func).expect("every row's function has a reference"),
                    ),
                    bound,
                    bound_source,
                }),
        );
    }
    for (metric, bound) in [
        (Metric::AbsVsExact, RATIONAL_GELU_ABS_BOUND),
        (Metric::ScaledVsExact, 2.4e-7),
    ] {
        rows.push(Row {
            func: Func::GeluErf,
            mode: RowMode::Fast,
            sweep: Dense,
            lo: -14.0,
            hi: 14.0,
            stride: 1,
            metric,
            bound,
            bound_source: SPEC,
        });
    }
    rows
}
