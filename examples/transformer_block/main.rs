//! One pre-LayerNorm transformer block (GPT-2 small by default) in exact and fast mode: the
//! median time per stage over `--reps` runs after a warm-up, tokens per second, |exact - fast|,
//! the error of each against an f64 run of the same block, and the SHA-256 of the exact output,
//! which is the same on every machine. The weight matrices are packed once per mode, untimed,
//! as a model holds them.
//!
//! ```text
//! cargo run --release --example transformer_block
//! cargo run --release --example transformer_block -- --mode exact --isa sse2 --threads 1
//! cargo run --release --example transformer_block -- --decode --reps 50
//! cargo run --release --example transformer_block -- --help
//! ```

mod block;

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use activation_kernels::{Error, Exact, Fast, Isa, Mode, Session};
use block::{
    Config, Packed, Timings, Weights, abs_diff, decode_step, digest, forward_f64, forward_packed,
    input, prefill,
};
use clap::{Parser, ValueEnum};
use ndarray::{Array2, s};

/// One GPT-2-style transformer block in exact and fast mode, timed per stage.
#[derive(Parser, Debug)]
#[command(name = "transformer_block")]
struct Args {
    /// Model width.
    #[arg(long, default_value_t = Config::GPT2_SMALL.d_model)]
    d_model: usize,
    /// Attention heads (a divisor of --d-model).
    #[arg(long, default_value_t = Config::GPT2_SMALL.heads)]
    heads: usize,
    /// Width of the MLP.
    #[arg(long, default_value_t = Config::GPT2_SMALL.d_ff)]
    d_ff: usize,
    /// Tokens per sequence.
    #[arg(long, default_value_t = Config::GPT2_SMALL.seq)]
    seq: usize,
    /// Sequences.
    #[arg(long, default_value_t = Config::GPT2_SMALL.batch)]
    batch: usize,
    /// Which modes to run.
    #[arg(long, value_enum, default_value_t = Modes::Both)]
    mode: Modes,
    /// Instruction set: scalar, sse2, avx2, avx512 or neon (default: the best available).
    #[arg(long)]
    isa: Option<Isa>,
    /// Threads of the session (default: rayon's global pool).
    #[arg(long)]
    threads: Option<usize>,
    /// Seed of the weights and the input.
    #[arg(long, default_value_t = 2024)]
    seed: u64,
    /// Timed runs after one warm-up; each stage's median is printed.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Time one new token against a KV cache of seq - 1 tokens (batch 1) instead of the
    /// whole sequence. The cache is made once; each run appends to it in place and sets its
    /// length back.
    #[arg(long)]
    decode: bool,
    /// Skip the f64 reference run.
    #[arg(long)]
    no_reference: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Modes {
    Exact,
    Fast,
    Both,
}

impl Args {
    fn config(&self) -> Config {
        Config {
            d_model: self.d_model,
            heads: self.heads,
            d_ff: self.d_ff,
            seq: self.seq,
            batch: self.batch,
        }
    }

    fn check(&self) -> Result<(), String> {
        if self.seq == 0 || self.batch == 0 || self.d_model == 0 || self.d_ff == 0 {
            return Err("--seq, --batch, --d-model and --d-ff must be at least 1".into());
        }
        if self.heads == 0 || !self.d_model.is_multiple_of(self.heads) {
            return Err("--d-model must be a multiple of --heads".into());
        }
        if self.decode && (self.batch != 1 || self.seq < 1) {
            return Err("--decode needs --batch 1 and --seq >= 1".into());
        }
        Ok(())
    }
}

fn session<M: Mode>(a: &Args) -> Result<Session<M>, Error> {
    let mut s = Session::<M>::new();
    if let Some(isa) = a.isa {
        s = s.with_isa(isa)?;
    }
    if let Some(t) = a.threads {
        s = s.with_threads(t)?;
    }
    Ok(s)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A warm-up run (page faults, thread pool start), then `reps` timed ones; prints each
/// stage's median and the median total. Returns the output and the median total.
fn run<M: Mode>(a: &Args, w: &Weights, x: &Array2<f32>) -> Result<(Array2<f32>, Duration), Error> {
    let c = a.config();
    let s = session::<M>(a)?;
    let p = Packed::new(&s, w)?;
    // Decode: the cache of the first seq - 1 tokens, made once (untimed); each run takes the
    // last token against it, appended in place as a decode loop appends step after step, then
    // sets the cache's length back (the next run writes the same key and value there). Not a
    // copy of the cache per run: copying its 1.5 MB between steps, which no decode loop does,
    // left the session's helper threads asleep by the next step's first product, so each
    // step paid a wake-up that ORT's back-to-back calls beside it do not.
    let mut cache = if a.decode {
        Some(prefill(&s, &c, w, &p, x, c.seq - 1)?)
    } else {
        None
    };
    let mut once = |t: &mut Timings| -> Result<Array2<f32>, Error> {
        if let Some(cache) = cache.as_mut() {
            cache.len = c.seq - 1;
            let last = x.slice(s![c.seq - 1.., ..]).to_owned();
            decode_step(&s, &c, w, &p, &last, cache, t)
        } else {
            forward_packed(&s, &c, w, &p, x, t)
        }
    };
    let started = Instant::now();
    once(&mut Timings::default())?;
    progress(M::NAME, "warm-up", 1, 1, started);
    let mut runs = Vec::new();
    let mut y = None;
    for r in 0..a.reps {
        let mut t = Timings::default();
        y = Some(once(&mut t)?);
        runs.push(t);
        progress(
            M::NAME,
            "timed runs",
            r as usize + 1,
            a.reps as usize,
            started,
        );
    }
    let y = y.expect("reps >= 1");
    println!(
        "\n{} mode on {} ({} threads{}), median of {} runs:",
        M::NAME,
        s.isa(),
        a.threads.map_or("pool".to_string(), |t| t.to_string()),
        if a.decode { ", decode" } else { "" },
        a.reps
    );
    for (i, (name, _)) in runs[0].stages.iter().enumerate() {
        let d = median(runs.iter().map(|t| t.stages[i].1).collect());
        println!("  {name:38} {:9.3} ms", d.as_secs_f64() * 1e3);
    }
    let total = median(runs.iter().map(Timings::total).collect());
    let tokens = if a.decode { 1 } else { c.tokens() };
    println!(
        "  {:38} {:9.3} ms   {:.0} tokens/s",
        "total",
        total.as_secs_f64() * 1e3,
        tokens as f64 / total.as_secs_f64()
    );
    Ok((y, total))
}

/// A line on stderr for a long phase (past a few seconds), so that a long run shows it moves.
fn progress(what: &str, phase: &str, done: usize, of: usize, started: Instant) {
    let t = started.elapsed().as_secs_f64();
    if t >= 5.0 {
        eprintln!("  [{what}] {phase}: {done}/{of} after {t:.0} s");
        let _ = std::io::stderr().flush();
    }
}

/// What the run will hold in memory, said up front, and checked: a size that cannot be had is
/// an error now, not an abort after the timed runs.
fn check_memory(a: &Args) -> Result<(), String> {
    let c = a.config();
    let too_big = || "the sizes overflow a usize: choose smaller --seq/--batch/--d-model/--d-ff";
    let weights = c.weight_bytes().ok_or_else(too_big)?;
    let acts = c.activation_bytes().ok_or_else(too_big)?;
    // Each mode holds the weights, their packed copy and its activations; the reference its own.
    let mode = weights.saturating_mul(2).saturating_add(acts);
    let reference = if a.no_reference {
        0
    } else {
        c.reference_bytes().ok_or_else(too_big)?
    };
    let total = weights.saturating_add(mode).saturating_add(reference);
    let gib = |b: usize| b as f64 / f64::from(1u32 << 30);
    println!(
        "memory: about {:.2} GiB (weights {:.2}, per mode {:.2}, f64 reference {:.2})",
        gib(total),
        gib(weights),
        gib(mode),
        gib(reference)
    );
    for (what, bytes) in [
        ("a mode's run", weights.saturating_add(mode)),
        ("the f64 reference", reference),
    ] {
        let mut probe: Vec<u8> = Vec::new();
        if probe.try_reserve_exact(bytes).is_err() {
            return Err(format!(
                "{what} needs about {:.2} GiB, which cannot be allocated here{}",
                gib(bytes),
                if what == "the f64 reference" {
                    " (pass --no-reference)"
                } else {
                    ""
                }
            ));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let a = Args::parse();
    if let Err(e) = a.check() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    println!(
        "transformer block: d_model {}, {} heads, d_ff {}, seq {}, batch {}, seed {}; detected {}",
        a.d_model,
        a.heads,
        a.d_ff,
        a.seq,
        a.batch,
        a.seed,
        Isa::detect()
    );
    if let Err(e) = check_memory(&a) {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    match body(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn body(a: &Args) -> Result<(), Error> {
    let c = a.config();
    let w = Weights::new(&c, a.seed);
    let x = input(&c, a.seed);
    let exact = if a.mode != Modes::Fast {
        Some(run::<Exact>(a, &w, &x)?)
    } else {
        None
    };
    let fast = if a.mode != Modes::Exact {
        Some(run::<Fast>(a, &w, &x)?)
    } else {
        None
    };
    println!();
    if let (Some((e, te)), Some((f, tf))) = (&exact, &fast) {
        let (max, mean) = abs_diff(f, &e.mapv(f64::from));
        println!("|exact - fast|: max {max:.3e}, mean {mean:.3e}");
        println!(
            "exact time / fast time: {:.2}",
            te.as_secs_f64() / tf.as_secs_f64()
        );
    }
    if !a.no_reference {
        let t = Instant::now();
        let r = forward_f64(&c, &w, &x, &mut |done, of| {
            progress("f64 reference", "attention heads", done, of, t)
        });
        let r = if a.decode {
            r.slice(s![c.seq - 1.., ..]).to_owned()
        } else {
            r
        };
        println!("f64 reference ({:.1} s):", t.elapsed().as_secs_f64());
        for (name, y) in [
            ("exact", exact.as_ref().map(|p| &p.0)),
            ("fast", fast.as_ref().map(|p| &p.0)),
        ] {
            if let Some(y) = y {
                let (max, mean) = abs_diff(y, &r);
                println!("  |{name} - f64|: max {max:.3e}, mean {mean:.3e}");
            }
        }
    }
    if let Some((e, _)) = &exact {
        if a.decode {
            println!(
                "\nSHA-256 of the exact output of the new token: {}",
                digest(e)
            );
        } else {
            println!("\nSHA-256 of the exact output: {}", digest(e));
        }
    }
    Ok(())
}
