//! Prints the detected instruction set, then for every function, in each mode, and every
//! available instruction set, the SHA-256 of its outputs over every 4099th bit pattern
//! (0, 4099, 8198, ... below 2^32; little-endian binary32 in input order).
//!
//! The exact digests are the same on every machine; compare them with the README.
//!
//! ```text
//! cargo run --release --example digest                       # every mode and ISA
//! cargo run --release --example digest -- --isa avx512 --mode exact
//! ```

use activation_kernels::{Func, Isa, exact, fast};
use clap::{Parser, ValueEnum};
use sha2::{Digest, Sha256};

/// SHA-256 of every function's outputs over every 4099th bit pattern, per mode and ISA.
#[derive(Parser)]
struct Args {
    /// Only these instruction sets (comma-separated: scalar, sse2, avx2, avx512, neon); default:
    /// every one this CPU runs.
    #[arg(long, value_delimiter = ',')]
    isa: Vec<Isa>,
    /// Only this mode.
    #[arg(long, value_enum, default_value_t = Modes::Both)]
    mode: Modes,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Modes {
    Exact,
    Fast,
    Both,
}

fn sha256_hex(v: &[f32]) -> String {
    let mut h = Sha256::new();
    for x in v {
        h.update(x.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn main() -> Result<(), activation_kernels::Error> {
    let args = Args::parse();
    let isas = if args.isa.is_empty() {
        Isa::available()
    } else {
        args.isa
            .iter()
            .map(|i| i.checked())
            .collect::<Result<_, _>>()?
    };
    println!("detected instruction set: {}", Isa::detect());
    println!(
        "available: {}",
        isas.iter().map(|i| i.name()).collect::<Vec<_>>().join(", ")
    );
    let x: Vec<f32> = (0..=u32::MAX / 4099)
        .map(|k| f32::from_bits(k * 4099))
        .collect();
    let mut y = vec![0f32; x.len()];
    let modes = [
        (Modes::Exact, "exact", exact::map as MapFn),
        (Modes::Fast, "fast", fast::map as MapFn),
    ];
    for (_, mode, map) in modes
        .into_iter()
        .filter(|(m, ..)| args.mode == Modes::Both || *m == args.mode)
    {
        println!(
            "\n{mode} mode, {} inputs (every 4099th bit pattern):",
            x.len()
        );
        for func in Func::ALL {
            let mut line = format!("{mode:5} {:16}", func.name());
            let mut first: Option<String> = None;
            for &isa in &isas {
                map(func, isa, &x, &mut y)?;
                let d = sha256_hex(&y);
                match &first {
                    None => {
                        line.push(' ');
                        line.push_str(&d);
                        first = Some(d);
                    }
                    Some(f) if *f == d => line.push_str(&format!("  {isa}:same")),
                    Some(_) => line.push_str(&format!("  {isa}:DIFFERS {d}")),
                }
            }
            println!("{line}");
        }
    }
    Ok(())
}

type MapFn = fn(Func, Isa, &[f32], &mut [f32]) -> Result<(), activation_kernels::Error>;
