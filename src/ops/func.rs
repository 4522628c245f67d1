//! [`Func`], the names of the element-wise functions, and their kernels in each mode.

use std::fmt;
use std::str::FromStr;

use super::Kernel;
use crate::error::Error;
use crate::mode::Mode;

/// An element-wise function of the crate.
///
/// In [`crate::Exact`] every one is the spec's algorithm (SiLU is the crate's `x * sigmoid(x)`).
/// In [`crate::Fast`], every exp, alone or inside an operator (sigmoid, SiLU, GELU tanh,
/// `1 + erf`), is the fast degree-3 exp; `Erf` and `Tanh` are fitted rationals and `GeluErf`
/// the rational GELU; the rest of each algorithm is the accurate one with fused multiply-adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Func {
    /// `e^x`.
    Exp,
    /// `e^x` for `x <= 0` (softmax), flushing subnormal results to `+0`.
    ExpNonPositive,
    /// Natural logarithm.
    Log,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// Hyperbolic tangent.
    Tanh,
    /// Error function.
    Erf,
    /// `1 + erf(x)`, without cancellation for negative `x`.
    OnePlusErf,
    /// GELU, erf form: `0.5 x (1 + erf(x / sqrt 2))`.
    GeluErf,
    /// GELU, tanh form: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
    GeluTanh,
    /// SiLU (swish): `x * sigmoid(x)`.
    Silu,
}

/// Something to do with a kernel type, chosen from a [`Func`] and a mode by `Func::visit`.
pub(crate) trait KernelVisitor {
    /// What the visit returns.
    type Output;
    /// Called with the kernel type of the function.
    fn visit<K: Kernel>(self) -> Self::Output;
}

impl Func {
    /// Every function, in declaration order.
    pub const ALL: [Func; 10] = [
        Func::Exp,
        Func::ExpNonPositive,
        Func::Log,
        Func::Sigmoid,
        Func::Tanh,
        Func::Erf,
        Func::OnePlusErf,
        Func::GeluErf,
        Func::GeluTanh,
        Func::Silu,
    ];

    /// The snake-case name (`"gelu_erf"`), as the test vectors and digests name it.
    pub fn name(self) -> &'static str {
        match self {
            Func::Exp => "exp",
            Func::ExpNonPositive => "exp_nonpositive",
            Func::Log => "log",
            Func::Sigmoid => "sigmoid",
            Func::Tanh => "tanh",
            Func::Erf => "erf",
            Func::OnePlusErf => "one_plus_erf",
            Func::GeluErf => "gelu_erf",
            Func::GeluTanh => "gelu_tanh",
            Func::Silu => "silu",
        }
    }

    /// Calls `v` with the kernel type of this function in mode `M`.
    pub(crate) fn visit<M: Mode, V: KernelVisitor>(self, v: V) -> V::Output {
        use super::{erf, exp, gelu, log, sigmoid, silu, tanh};
        match (self, M::FAST) {
            (Func::Exp | Func::ExpNonPositive, true) => v.visit::<exp::FastExp>(),
            (Func::Exp, false) => v.visit::<exp::Exp<M>>(),
            (Func::ExpNonPositive, false) => v.visit::<exp::ExpNonPositive<M>>(),
            (Func::Log, _) => v.visit::<log::Log<M>>(),
            (Func::Sigmoid, _) => v.visit::<sigmoid::Sigmoid<M>>(),
            (Func::Tanh, true) => v.visit::<tanh::TanhRational>(),
            (Func::Tanh, false) => v.visit::<tanh::Tanh<M>>(),
            (Func::Erf, true) => v.visit::<erf::ErfRational>(),
            (Func::Erf, false) => v.visit::<erf::Erf<M>>(),
            (Func::OnePlusErf, _) => v.visit::<erf::OnePlusErf<M>>(),
            (Func::GeluErf, true) => v.visit::<gelu::GeluRational>(),
            (Func::GeluErf, false) => v.visit::<gelu::GeluErf<M>>(),
            (Func::GeluTanh, _) => v.visit::<gelu::GeluTanh<M>>(),
            (Func::Silu, _) => v.visit::<silu::Silu<M>>(),
        }
    }
}

impl fmt::Display for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Func {
    type Err = Error;
    fn from_str(s: &str) -> Result<Func, Error> {
        Func::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| Error::InvalidArgument(format!("unknown function {s:?}")))
    }
}
