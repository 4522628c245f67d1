//! `embed`: sentence embeddings of a text file, one sentence per line, as JSON Lines.
//!
//! ```text
//! embed --model DIR [--mode exact|fast] [--threads N] [--batch-size B] [--isa ISA]
//!       [--output FILE] [FILE]
//! ```
//!
//! Reads FILE (or stdin), writes one JSON array of floats per input line, in input order, to
//! stdout (or `--output`). On stderr: progress for long inputs, then as the last two lines
//! `sentences/s: X` (the encoding time after the model is loaded and its weights packed,
//! tokenisation included) and `SHA-256: HEX` (every embedding as little-endian `f32` bytes, in
//! input order).

use std::io::{BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use activation_kernels::{Exact, Fast, Isa, Mode, Session};
use ak_models::{Batching, Embedder};
use clap::{Parser, ValueEnum};
use sha2::{Digest, Sha256};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ModeArg {
    Exact,
    Fast,
}

/// Sentence embeddings (mean pooling, L2-normalised) of one sentence per line, as JSON Lines.
#[derive(Parser, Debug)]
#[command(name = "embed")]
struct Args {
    /// The model directory: config.json, model.safetensors, tokenizer.json.
    #[arg(long)]
    model: PathBuf,
    /// exact: the same bits on every machine; fast: fused multiply-adds.
    #[arg(long, value_enum, default_value = "exact")]
    mode: ModeArg,
    /// Threads (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    threads: Option<u32>,
    /// Sentences per forward call.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    batch_size: u32,
    /// Instruction set: scalar, sse2, avx2 or avx512 (default: the widest this CPU runs).
    #[arg(long)]
    isa: Option<Isa>,
    /// Write the embeddings here instead of stdout.
    #[arg(long)]
    output: Option<PathBuf>,
    /// The input file (default: stdin).
    file: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.mode {
        ModeArg::Exact => run::<Exact>(&args),
        ModeArg::Fast => run::<Fast>(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("embed: {e}");
            ExitCode::FAILURE
        }
    }
}

type Failure = Box<dyn std::error::Error>;

fn read_input(file: Option<&PathBuf>) -> Result<String, Failure> {
    let mut bytes = Vec::new();
    match file {
        Some(p) => {
            bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        None => {
            std::io::stdin().read_to_end(&mut bytes)?;
        }
    }
    String::from_utf8(bytes).map_err(|e| format!("the input is not UTF-8: {e}").into())
}

fn run<M: Mode>(args: &Args) -> Result<(), Failure> {
    // An explicit --isa wins over ACTIVATION_KERNELS_ISA (which is then not read at all).
    let mut session = match args.isa {
        Some(isa) => Session::<M>::on_isa(isa)?,
        None => Session::<M>::try_new()?,
    };
    if let Some(t) = args.threads {
        session = session.with_threads(t as usize)?;
    }
    let text = read_input(args.file.as_ref())?;
    let sentences: Vec<&str> = text.lines().collect();
    if sentences.is_empty() {
        return Err("the input is empty: expected one sentence per line".into());
    }
    let model = Embedder::load(&args.model, session)?;
    let mut out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(BufWriter::new(
            std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(std::io::stdout().lock())),
    };
    let mut hash = Sha256::new();
    let mut encoding = Duration::ZERO;
    let mut last_report = Instant::now();
    let total = sentences.len();
    for (i, batch) in sentences.chunks(args.batch_size as usize).enumerate() {
        let start = Instant::now();
        let e = model.embed(batch, Batching::Varlen)?;
        encoding += start.elapsed();
        for row in e.rows() {
            for v in row {
                hash.update(v.to_le_bytes());
            }
            serde_json::to_writer(&mut out, &row.to_vec())?;
            out.write_all(b"\n")?;
        }
        let done = (i * args.batch_size as usize + batch.len()).min(total);
        if last_report.elapsed() >= Duration::from_secs(2) && done < total {
            eprintln!("{done}/{total} sentences");
            last_report = Instant::now();
        }
    }
    out.flush()?;
    let rate = total as f64 / encoding.as_secs_f64().max(1e-9);
    eprintln!("sentences/s: {rate:.1}");
    eprintln!("SHA-256: {:x}", hash.finalize());
    Ok(())
}
