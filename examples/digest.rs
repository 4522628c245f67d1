//! Prints the detected instruction set, then for every function, in each mode, and every
//! available instruction set, the SHA-256 of its outputs over every 4099th bit pattern
//! (0, 4099, 8198, ... below 2^32; little-endian binary32 in input order).
//!
//! The exact digests are the same on every machine; compare them with the README.
//!
//! ```text
//! cargo run --release --example digest
//! ```

use activation_kernels::{Func, Isa, exact, fast};
use sha2::{Digest, Sha256};

fn sha256_hex(v: &[f32]) -> String {
    let mut h = Sha256::new();
    for x in v {
        h.update(x.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn main() -> Result<(), activation_kernels::Error> {
    let isas = Isa::available();
    println!("detected instruction set: {}", Isa::detect());
    println!(
        "available: {}",
        isas.iter().map(|i| i.name()).collect::<Vec<_>>().join(", ")
    );
    let x: Vec<f32> = (0..=u32::MAX / 4099)
        .map(|k| f32::from_bits(k * 4099))
        .collect();
    let mut y = vec![0f32; x.len()];
    for (mode, map) in [("exact", exact::map as MapFn), ("fast", fast::map as MapFn)] {
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
