//! The accuracy table: the spec's "Measured error" method for every function in both modes,
//! written as Markdown, with a plot of the error over x per function.
//!
//! ```text
//! cargo run --release -p ak-accuracy --bin ulp_table -- --out table.md --plots docs/accuracy
//! cargo run --release -p ak-accuracy --bin ulp_table -- --stride 101 --only gelu_erf,silu
//! ```
//!
//! `--help` lists the options.

use std::collections::BTreeMap;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use activation_kernels::{Func, Isa};
use ak_accuracy::{self as accuracy, Metric, Options, Outcome, Row, RowMode, Sweep};
use clap::builder::RangedU64ValueParser;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, ValueEnum, value_parser};
use indicatif::{ProgressBar, ProgressStyle};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

/// Rows with more values than this get a progress bar.
const LONG_ROW: u64 = 10_000_000;

/// The accuracy table: the spec's "Measured error" method for every function of
/// activation-kernels in both modes, printed as Markdown, with a plot of the error over x per
/// function.
///
/// Every row runs on every core; rows of more than ten million values show a progress bar on a
/// terminal. The maxima and their x do not depend on the thread count or the instruction set.
#[derive(Parser, Debug)]
#[command(name = "ulp_table")]
struct Args {
    /// Visit every N-th value of each row's sweep. 1 is the published table: every value of the
    /// hot ranges and every 67th of the wide ones (N multiplies the row's stride, so the wide
    /// rows run at 67 N).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = value_parser!(u64).range(1..))]
    stride: u64,
    /// Only the rows of these functions (exp, log, tanh, erf, sigmoid, gelu_erf, gelu_tanh,
    /// silu); a comma-separated list, and the option may be repeated.
    #[arg(long, value_name = "NAME", value_delimiter = ',', value_parser = measured_func)]
    only: Vec<Func>,
    /// Only the rows of one mode.
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Write the Markdown table (with the machine, date and run time) to FILE.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Write one SVG per function to DIR (the largest error per bin of x).
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// Bins of x per plot.
    #[arg(long, value_name = "N", default_value_t = 400, value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    bins: usize,
    /// Print the rows and their value counts; evaluate nothing.
    #[arg(long)]
    list: bool,
}

/// A name `--only` takes: a function of the crate that a row of the table measures.
fn measured_func(name: &str) -> Result<Func, String> {
    let funcs = accuracy::funcs();
    let names = funcs
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ");
    match name.parse::<Func>() {
        Ok(f) if funcs.contains(&f) => Ok(f),
        Ok(_) => Err(format!(
            "no row of the table measures it (a part of other functions, it has no reference \
             of its own); the functions with rows: {names}"
        )),
        Err(_) => Err(format!(
            "no such function; the functions with rows: {names}"
        )),
    }
}

/// The modes `--mode` takes.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum ModeArg {
    /// Exact mode: the spec's bits.
    Exact,
    /// Fast mode: fused multiply-adds, the fast exp, the rational GELU.
    Fast,
}

impl From<ModeArg> for RowMode {
    fn from(m: ModeArg) -> RowMode {
        match m {
            ModeArg::Exact => RowMode::Exact,
            ModeArg::Fast => RowMode::Fast,
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let rows = check(&args).unwrap_or_else(|e| e.exit());
    match run(&args, &rows) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ulp_table: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Checks what clap cannot check alone, the stride against the rows `--only` and `--mode`
/// select and the output paths, and returns those rows: a usage error (exit status 2) before
/// anything runs, rather than a failure after the whole run (minutes at stride 1).
fn check(args: &Args) -> Result<Vec<Row>, clap::Error> {
    let mode = args.mode.map(RowMode::from);
    let rows: Vec<Row> = accuracy::rows()
        .into_iter()
        .filter(|r| args.only.is_empty() || args.only.contains(&r.func))
        .filter(|r| mode.is_none_or(|m| m == r.mode))
        .collect();
    let invalid = |message: String| Args::command().error(ErrorKind::ValueValidation, message);
    if let Some(r) = rows.iter().find(|r| r.stride_at(args.stride).is_err()) {
        let most = rows
            .iter()
            .map(|r| u64::MAX / r.stride)
            .min()
            .unwrap_or(u64::MAX);
        return Err(invalid(format!(
            "invalid value '{}' for '--stride <N>': times the stride {} of row {:?} it \
             overflows u64; the largest --stride the selected rows take is {most}",
            args.stride,
            r.stride,
            r.id()
        )));
    }
    if let Some(path) = &args.out {
        check_writable(path).map_err(|e| {
            invalid(format!(
                "invalid value '{}' for '--out <FILE>': cannot write it: {e}",
                path.display()
            ))
        })?;
    }
    if let Some(dir) = &args.plots {
        std::fs::create_dir_all(dir).map_err(|e| {
            let why = if dir.exists() {
                "it is not a folder".to_string()
            } else {
                format!("cannot make the folder: {e}")
            };
            invalid(format!(
                "invalid value '{}' for '--plots <DIR>': {why}",
                dir.display()
            ))
        })?;
    }
    Ok(rows)
}

/// Whether the file `path` can be written, leaving it as it was: opened for appending, and
/// removed again if this made it.
fn check_writable(path: &Path) -> std::io::Result<()> {
    let existed = std::fs::symlink_metadata(path).is_ok();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?;
    if !existed {
        std::fs::remove_file(path)?;
    }
    Ok(())
}

fn run(args: &Args, rows: &[Row]) -> Result<(), Box<dyn Error>> {
    if args.list {
        for r in rows {
            println!(
                "{:40} {:>16} values at stride {}",
                r.id(),
                accuracy::thousands(r.count(args.stride)?),
                r.stride_at(args.stride)?
            );
        }
        return Ok(());
    }

    let isa = Isa::detect();
    let threads = rayon::current_num_threads();
    let machine = format!(
        "{}, {} threads, instruction set {}",
        cpu_name(),
        threads,
        isa
    );
    eprintln!("{machine}; {} rows at stride x{}", rows.len(), args.stride);
    let started = Instant::now();
    let mut lines = Vec::new();
    let mut results: Vec<(Row, Outcome)> = Vec::new();
    for row in rows {
        let t = Instant::now();
        let n = row.count(args.stride)?;
        let bar = if n > LONG_ROW {
            let pb = ProgressBar::new(n);
            pb.set_style(ProgressStyle::with_template(
                "{msg:34} [{bar:40}] {percent:>3}% {elapsed_precise} eta {eta}",
            )?);
            pb.set_message(row.id());
            Some(pb)
        } else {
            None
        };
        let progress = |k: u64| {
            if let Some(pb) = &bar {
                pb.inc(k);
            }
        };
        let opts = Options {
            isa,
            bins: args.bins,
            progress: Some(&progress),
        };
        let out = row.run(args.stride, &opts)?;
        if let Some(pb) = &bar {
            pb.finish_and_clear();
        }
        let over = if out.max > row.bound {
            "  ABOVE THE BOUND"
        } else {
            ""
        };
        eprintln!(
            "{:40} {:>16} values  max {} {} at {:?}  ({:.1} s){over}",
            row.id(),
            accuracy::thousands(out.count),
            row.metric.format(out.max),
            row.metric.unit(),
            out.at,
            t.elapsed().as_secs_f64()
        );
        lines.push(row.markdown(&out));
        results.push((*row, out));
    }
    let elapsed = started.elapsed().as_secs_f64();

    let mut md = String::new();
    md.push_str(&format!(
        "Measured {} on {machine}; run time {}.\n\
         Command: `cargo run --release -p ak-accuracy --bin ulp_table -- {}`\n\n",
        utc_date(),
        duration(elapsed),
        command_line(),
    ));
    md.push_str(accuracy::markdown_header());
    md.push('\n');
    for l in &lines {
        md.push_str(l);
        md.push('\n');
    }
    print!("\n{md}");
    if let Some(path) = &args.out {
        std::fs::write(path, &md).map_err(|e| format!("--out {}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(dir) = &args.plots {
        plot_all(dir, &results).map_err(|e| format!("--plots {}: {e}", dir.display()))?;
    }
    let above: Vec<String> = results
        .iter()
        .filter(|(r, o)| o.max > r.bound)
        .map(|(r, _)| r.id())
        .collect();
    if !above.is_empty() {
        eprintln!("rows above their bound: {}", above.join("; "));
    }
    Ok(())
}

/// The arguments this run was given, for the Markdown header.
fn command_line() -> String {
    std::env::args().skip(1).collect::<Vec<_>>().join(" ")
}

/// The CPU's model name (Linux), else the architecture.
fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Today's date in UTC, `YYYY-MM-DD` (civil date from the Unix day count).
fn utc_date() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn duration(secs: f64) -> String {
    let s = secs.round() as u64;
    if s >= 60 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{secs:.1} s")
    }
}

/// One curve: a label and the (x, error) corners of a step line over the bins.
struct Curve {
    label: String,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

/// The step line of a row's bins: each bin's maximum held over the bin's width.
fn step_points(row: &Row, out: &Outcome, floor: f64) -> Vec<(f64, f64)> {
    let (lo, hi) = (f64::from(row.lo), f64::from(row.hi));
    let n = out.bins.len();
    let mut pts = Vec::with_capacity(2 * n);
    for (i, &m) in out.bins.iter().enumerate() {
        if m == f64::NEG_INFINITY {
            continue;
        }
        let a = lo + (hi - lo) * i as f64 / n as f64;
        let b = lo + (hi - lo) * (i + 1) as f64 / n as f64;
        let v = m.max(floor);
        pts.push((a, v));
        pts.push((b, v));
    }
    pts
}

/// One SVG per function: the hot and tail rows of each mode (the wide rows overlap them), and
/// one for the rational GELU against the exact kernel.
fn plot_all(dir: &Path, results: &[(Row, Outcome)]) -> Result<(), Box<dyn Error>> {
    let mut by_func: BTreeMap<Func, Vec<&(Row, Outcome)>> = BTreeMap::new();
    for r in results {
        if matches!(r.0.metric, Metric::Ulp(_)) && r.0.sweep != Sweep::Wide {
            by_func.entry(r.0.func).or_default().push(r);
        }
    }
    for (func, rs) in by_func {
        let has_tail = rs.iter().any(|(r, _)| r.sweep == Sweep::Tail);
        // The GELU tails reach hundreds of ulps: a log scale keeps the hot range readable.
        let floor = if has_tail { 1e-2 } else { 0.0 };
        let mut curves = Vec::new();
        for (mode, color) in [(RowMode::Exact, BLUE), (RowMode::Fast, RED)] {
            let mut points = Vec::new();
            let mut mode_rows: Vec<_> = rs.iter().filter(|(r, _)| r.mode == mode).collect();
            mode_rows.sort_by(|a, b| a.0.lo.total_cmp(&b.0.lo));
            for (r, o) in mode_rows {
                points.extend(step_points(r, o, floor));
            }
            if !points.is_empty() {
                curves.push(Curve {
                    label: format!("{mode}"),
                    color,
                    points,
                });
            }
        }
        let path = dir.join(format!("{func}.svg"));
        let modes: Vec<&str> = curves.iter().map(|c| c.label.as_str()).collect();
        let mut title = format!(
            "{func}: largest error per bin of x, {} mode{}",
            modes.join(" and "),
            if modes.len() > 1 { "s" } else { "" }
        );
        if func == Func::GeluErf {
            title.push_str(" (fast: gelu_erf_rational.svg)");
        }
        if has_tail {
            let ymax = y_max(&curves) * 2.0;
            let y = (floor..ymax).log_scale();
            plot(&path, &title, "ulp (log scale)", y, &curves, &|v| {
                format!("{v}")
            })?;
        } else {
            let ymax = y_max(&curves) * 1.1;
            plot(&path, &title, "ulp", 0.0..ymax, &curves, &|v| {
                format!("{v:.1}")
            })?;
        }
        eprintln!("wrote {}", path.display());
    }
    if let Some((row, out)) = results.iter().find(|(r, _)| r.metric == Metric::AbsVsExact) {
        let curves = [Curve {
            label: "|rational - exact|".into(),
            color: RED,
            points: step_points(row, out, 0.0),
        }];
        let path = dir.join("gelu_erf_rational.svg");
        let ymax = y_max(&curves) * 1.1;
        plot(
            &path,
            "gelu_erf, fast (rational): largest |fast - exact| per bin of x",
            "absolute error",
            0.0..ymax,
            &curves,
            &|v| format!("{v:.1e}"),
        )?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn y_max(curves: &[Curve]) -> f64 {
    let m = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    if m > 0.0 { m } else { 1.0 }
}

fn plot<Y>(
    path: &Path,
    title: &str,
    y_desc: &str,
    y: Y,
    curves: &[Curve],
    y_label: &dyn Fn(&f64) -> String,
) -> Result<(), Box<dyn Error>>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let (xlo, xhi) = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(xlo..xhi, y)?;
    chart
        .configure_mesh()
        .x_desc("x")
        .y_desc(y_desc)
        .y_label_formatter(y_label)
        .light_line_style(WHITE)
        .draw()?;
    for c in curves {
        let color = c.color;
        let pts = c.points.iter().map(|&(x, v)| (x, v.min(f64::MAX)));
        chart
            .draw_series(LineSeries::new(pts, color.mix(0.75).stroke_width(1)))?
            .label(c.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
