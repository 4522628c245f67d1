//! One pre-LayerNorm transformer block (GPT-2 small by default) in exact and fast mode: time per
//! stage, tokens per second, |exact - fast|, the error of each against an f64 run of the same
//! block, and the SHA-256 of the exact output, which is the same on every machine.
//!
//! ```text
//! cargo run --release --example transformer_block
//! cargo run --release --example transformer_block -- --mode exact --isa sse2 --threads 1
//! ```
//!
//! Flags: `--d-model N --heads N --d-ff N --seq N --batch N --mode exact|fast|both --isa NAME
//! --threads N --seed N --no-reference`.

mod block;

use std::process::ExitCode;
use std::time::Instant;

use activation_kernels::{Error, Exact, Fast, Isa, Mode, Session};
use block::{Config, Timings, Weights, abs_diff, digest, forward, forward_f64, input};
use ndarray::Array2;

struct Args {
    config: Config,
    mode: String,
    isa: Option<Isa>,
    threads: Option<usize>,
    seed: u64,
    reference: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        config: Config::GPT2_SMALL,
        mode: "both".into(),
        isa: None,
        threads: None,
        seed: 2024,
        reference: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--no-reference" {
            a.reference = false;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let num = || {
            value
                .parse::<usize>()
                .map_err(|e| format!("{flag} {value}: {e}"))
        };
        match flag.as_str() {
            "--d-model" => a.config.d_model = num()?,
            "--heads" => a.config.heads = num()?,
            "--d-ff" => a.config.d_ff = num()?,
            "--seq" => a.config.seq = num()?,
            "--batch" => a.config.batch = num()?,
            "--threads" => a.threads = Some(num()?),
            "--seed" => a.seed = num()? as u64,
            "--mode" if ["exact", "fast", "both"].contains(&value.as_str()) => a.mode = value,
            "--isa" => a.isa = Some(value.parse().map_err(|e: Error| e.to_string())?),
            _ => return Err(format!("unknown flag or value: {flag} {value}")),
        }
    }
    if a.config.heads == 0 || !a.config.d_model.is_multiple_of(a.config.heads) {
        return Err("--d-model must be a multiple of --heads".into());
    }
    Ok(a)
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

fn run<M: Mode>(a: &Args, w: &Weights, x: &Array2<f32>) -> Result<(Array2<f32>, Timings), Error> {
    let s = session::<M>(a)?;
    // One warm-up run (page faults, thread pool start), then the timed one.
    forward(&s, &a.config, w, x, &mut Timings::default())?;
    let mut t = Timings::default();
    let y = forward(&s, &a.config, w, x, &mut t)?;
    println!(
        "\n{} mode on {} ({} threads):",
        M::NAME,
        s.isa(),
        a.threads.map_or("pool".to_string(), |t| t.to_string())
    );
    for (name, d) in &t.stages {
        println!("  {name:38} {:9.3} ms", d.as_secs_f64() * 1e3);
    }
    let total = t.total().as_secs_f64();
    println!(
        "  {:38} {:9.3} ms   {:.0} tokens/s",
        "total",
        total * 1e3,
        a.config.tokens() as f64 / total
    );
    Ok((y, t))
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match body(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn body(a: &Args) -> Result<(), Error> {
    let c = a.config;
    println!(
        "transformer block: d_model {}, {} heads, d_ff {}, seq {}, batch {}, seed {}; detected {}",
        c.d_model,
        c.heads,
        c.d_ff,
        c.seq,
        c.batch,
        a.seed,
        Isa::detect()
    );
    let w = Weights::new(&c, a.seed);
    let x = input(&c, a.seed);
    let exact = if a.mode != "fast" {
        Some(run::<Exact>(a, &w, &x)?)
    } else {
        None
    };
    let fast = if a.mode != "exact" {
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
            te.total().as_secs_f64() / tf.total().as_secs_f64()
        );
    }
    if a.reference {
        let t = Instant::now();
        let r = forward_f64(&c, &w, &x);
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
        println!("\nSHA-256 of the exact output: {}", digest(e));
    }
    Ok(())
}
