//! The `ulp_table` tool as a user runs it: its help, its argument errors, and a short run.

use std::process::{Command, Output};

/// Runs `ulp_table` with `args`.
fn ulp_table(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ulp_table"))
        .args(args)
        .output()
        .expect("ulp_table runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_prints_the_usage_and_every_option() {
    let o = ulp_table(&["--help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Usage: ulp_table"), "{out}");
    for opt in [
        "--stride <N>",
        "--only <NAME>",
        "--mode <MODE>",
        "--out <FILE>",
        "--plots <DIR>",
        "--bins <N>",
        "--list",
    ] {
        assert!(out.contains(opt), "{opt} missing from --help:\n{out}");
    }
}

#[test]
fn bad_arguments_are_usage_errors() {
    for (args, says) in [
        (&["--strid", "3"][..], "--strid"),
        (&["--stride", "0"][..], "--stride"),
        (&["--stride", "-1"][..], "-1"),
        (&["--bins", "0"][..], "--bins"),
        (&["--mode", "exactly"][..], "exactly"),
        (&["--only", "gelu"][..], "gelu"),
        (&["--stride"][..], "--stride"),
    ] {
        let o = ulp_table(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains("--help"), "{args:?}: {err}");
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
}

#[test]
fn list_prints_the_selected_rows() {
    let o = ulp_table(&["--list", "--only", "silu", "--mode", "exact"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("exact silu hot"), "{out}");
    assert!(
        lines[0].contains("2,197,815,297 values at stride 1"),
        "{out}"
    );
    assert!(lines[1].starts_with("exact silu wide"), "{out}");
    assert!(lines[1].ends_with("values at stride 67"), "{out}");
}

#[test]
fn a_coarse_run_prints_the_table() {
    let o = ulp_table(&["--stride", "100003", "--only", "gelu_erf,silu"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let (_, table) = out
        .split_once(ak_accuracy::markdown_header())
        .unwrap_or_else(|| panic!("no table header in:\n{out}"));
    let n = ak_accuracy::rows()
        .iter()
        .filter(|r| matches!(r.name(), "gelu_erf" | "silu"))
        .count();
    let table = table.lines().filter(|l| l.starts_with('|')).count();
    assert_eq!(table, n, "{out}");
    assert!(
        out.contains("--stride 100003 --only gelu_erf,silu"),
        "{out}"
    );
}

/// Asserts that `o` is an argument error that says each of `says`, given before any row ran.
fn assert_refused_up_front(o: &Output, says: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for s in says {
        assert!(err.contains(s), "{s:?} not in: {err}");
    }
    assert!(stdout(o).is_empty(), "{}", stdout(o));
    assert!(!err.contains(" values "), "a row ran first: {err}");
}

/// `--stride` multiplies the wide rows' stride 67: a multiplier whose product overflows is
/// refused before anything runs, naming it, instead of wrapping around.
#[test]
fn a_stride_whose_product_overflows_is_refused_naming_it() {
    let big = (u64::MAX / 67 + 1).to_string();
    for list in [true, false] {
        let mut args = vec!["--stride", big.as_str(), "--only", "exp", "--mode", "exact"];
        if list {
            args.push("--list");
        }
        assert_refused_up_front(&ulp_table(&args), &["--stride", &big]);
    }
    // The largest multiplier that fits runs: every row has one value.
    let fits = (u64::MAX / 67).to_string();
    let o = ulp_table(&[
        "--stride", &fits, "--only", "exp", "--mode", "exact", "--list",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.lines().all(|l| l.contains(" 1 values at stride ")),
        "{out}"
    );
    let stride_wide = (u64::MAX / 67 * 67).to_string();
    assert!(out.contains(&format!("at stride {stride_wide}")), "{out}");
}

/// An `--out` file or `--plots` folder that cannot be written is refused before the run (which
/// takes minutes at stride 1), naming the path.
#[test]
fn an_output_path_that_cannot_be_written_is_refused_naming_it() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ulp_table_cli");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, "kept").unwrap();
    let missing = dir.join("no-such-folder").join("table.md");
    for (flag, path) in [
        ("--out", missing.clone()),
        ("--out", dir.clone()),
        ("--out", file.join("table.md")),
        ("--plots", file.join("svg")),
        ("--plots", file.clone()),
    ] {
        let p = path.to_str().unwrap();
        let o = ulp_table(&["--stride", "100003", "--only", "silu", flag, p]);
        assert_refused_up_front(&o, &[flag, p]);
    }
    assert!(!missing.parent().unwrap().exists());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");
    // A writable --out gets the table.
    let out = dir.join("table.md");
    let _ = std::fs::remove_file(&out);
    let o = ulp_table(&[
        "--stride",
        "100003",
        "--only",
        "silu",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(
        written.contains(ak_accuracy::markdown_header()),
        "{written}"
    );
}

/// `exp_nonpositive` and `one_plus_erf` are functions of the crate, but parts of others that no
/// row measures: `--only` says so and lists the names it takes, instead of an empty table.
#[test]
fn only_a_function_without_rows_says_why_and_lists_the_names() {
    for name in ["exp_nonpositive", "one_plus_erf"] {
        let o = ulp_table(&["--only", &format!("silu,{name}"), "--list"]);
        assert_refused_up_front(&o, &["--only", name, "no row"]);
        let err = stderr(&o);
        let names: Vec<&str> = ak_accuracy::funcs().iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), 8);
        assert!(err.contains(&names.join(", ")), "{err}");
    }
}
