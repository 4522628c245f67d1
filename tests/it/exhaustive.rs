//! All 2^32 inputs, every function, both modes, every available instruction set against the
//! scalar path. Long: run by hand with `cargo test --release -- --ignored exhaustive` and record
//! the time in BENCHMARKS.md. `AK_EXHAUSTIVE_FUNCS=exp,tanh` and `AK_EXHAUSTIVE_MODES=exact`
//! (comma-separated names) restrict the run; the test prints what it covered.
//!
//! `AK_EXHAUSTIVE_REFERENCE=DIR` keeps the scalar path's outputs as one 64-bit hash per block
//! of 2^20 inputs, in `DIR/<mode>-<func>.hashes`: a run writes the file where it is missing and
//! otherwise checks every instruction set against it without running the scalar path. Written
//! natively on x86-64, the file halves the run under an emulator (aarch64 under qemu), where
//! the scalar path costs as much as NEON, and it makes the check stronger: NEON against x86's
//! scalar bits. A block whose hash differs runs the local scalar path to name its first
//! differing input. `AK_EXHAUSTIVE_BLOCKS=START..END` runs only those blocks (of 4,096), to split
//! an emulated run over several sittings; a partial run writes no reference.

use crate::common::*;
use activation_kernels::{Func, Isa};
use rayon::prelude::*;
use std::path::PathBuf;

const BLOCK: u64 = 1 << 20;
const BLOCKS: usize = ((1u64 << 32) / BLOCK) as usize;

/// FNV-1a over the output bits, one 32-bit word at a step.
fn block_hash(out: &[f32]) -> u64 {
    out.iter().fold(0xcbf2_9ce4_8422_2325, |h, v| {
        (h ^ u64::from(v.to_bits())).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn block_inputs(b: usize) -> Vec<f32> {
    (b as u64 * BLOCK..(b as u64 + 1) * BLOCK)
        .map(|i| f32::from_bits(i as u32))
        .collect()
}

fn read_hashes(path: &PathBuf) -> Option<Vec<u64>> {
    let bytes = std::fs::read(path).ok()?;
    assert_eq!(
        bytes.len(),
        BLOCKS * 8,
        "{}: not {BLOCKS} hashes",
        path.display()
    );
    Some(
        bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect(),
    )
}

#[test]
#[ignore = "all 2^32 inputs: minutes; run by hand"]
fn exhaustive_every_isa_equals_scalar_on_all_inputs() {
    let start = std::time::Instant::now();
    let only = |var: &str, name: &str| {
        std::env::var(var).map_or(true, |v| v.split(',').any(|s| s.trim() == name))
    };
    let reference_dir = std::env::var_os("AK_EXHAUSTIVE_REFERENCE").map(PathBuf::from);
    let blocks = std::env::var("AK_EXHAUSTIVE_BLOCKS").map_or(0..BLOCKS, |v| {
        let (a, b) = v.split_once("..").expect("AK_EXHAUSTIVE_BLOCKS=START..END");
        let (a, b) = (a.trim().parse().unwrap(), b.trim().parse().unwrap());
        assert!(
            a < b && b <= BLOCKS,
            "AK_EXHAUSTIVE_BLOCKS: {a}..{b} not within 0..{BLOCKS}"
        );
        a..b
    });
    let inputs = if blocks == (0..BLOCKS) {
        "all 2^32 inputs".to_string()
    } else {
        format!("the inputs of blocks {blocks:?} of {BLOCKS}")
    };
    for (mode, map, _) in modes() {
        if !only("AK_EXHAUSTIVE_MODES", mode) {
            continue;
        }
        for func in Func::ALL {
            if !only("AK_EXHAUSTIVE_FUNCS", func.name()) {
                continue;
            }
            let path = reference_dir
                .as_ref()
                .map(|d| d.join(format!("{mode}-{}.hashes", func.name())));
            let reference = path.as_ref().and_then(read_hashes);
            let scalar = |x: &[f32]| {
                let mut want = vec![0f32; x.len()];
                map(func, Isa::Scalar, x, &mut want).unwrap();
                want
            };
            let results: Vec<Result<u64, String>> = blocks
                .clone()
                .into_par_iter()
                .map(|b| {
                    let x = block_inputs(b);
                    let mut got = vec![0f32; x.len()];
                    let Some(reference) = &reference else {
                        let want = scalar(&x);
                        for isa in Isa::available().into_iter().skip(1) {
                            map(func, isa, &x, &mut got).unwrap();
                            if let Some(d) = first_difference(&x, &want, &got) {
                                return Err(format!("{isa}: {d}"));
                            }
                        }
                        return Ok(block_hash(&want));
                    };
                    for isa in Isa::available().into_iter().skip(1) {
                        map(func, isa, &x, &mut got).unwrap();
                        if block_hash(&got) != reference[b] {
                            let local = first_difference(&x, &scalar(&x), &got);
                            return Err(format!(
                                "{isa}: block {b} differs from the reference's scalar bits; \
                                 against the local scalar path: {}",
                                local
                                    .as_deref()
                                    .unwrap_or("equal (the scalar paths differ)")
                            ));
                        }
                    }
                    Ok(reference[b])
                })
                .collect();
            let hashes: Result<Vec<u64>, String> = results.into_iter().collect();
            let hashes = hashes.unwrap_or_else(|e| panic!("{mode} {func}: {e}"));
            let how = match (&path, &reference) {
                (Some(_), Some(_)) => "against the reference hashes",
                (Some(_), None) if hashes.len() < BLOCKS => {
                    "against the scalar path; no reference written for a partial run"
                }
                (Some(p), None) => {
                    let bytes: Vec<u8> = hashes.iter().flat_map(|h| h.to_le_bytes()).collect();
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(p, bytes).unwrap();
                    "against the scalar path; reference hashes written"
                }
                (None, _) => "against the scalar path",
            };
            eprintln!(
                "{mode} {func}: {inputs} agree, {how} ({:.0?} so far)",
                start.elapsed()
            );
        }
    }
}
