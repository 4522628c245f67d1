//! The `embed` command line: JSON Lines in input order with the library's bits, the last two
//! stderr lines (`sentences/s`, `SHA-256` of the little-endian f32 embeddings), the same SHA-256
//! on every ISA, thread count and batch size, and clear errors.

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use activation_kernels::{Isa, Session};
use ak_models::{Batching, Embedder};
use common::*;
use sha2::{Digest, Sha256};

fn embed(args: &[&str], stdin: Option<&str>) -> Output {
    embed_with_isa_env(args, stdin, None)
}

/// [`embed`] with `ACTIVATION_KERNELS_ISA` set to `isa_env` (removed for `None`).
fn embed_with_isa_env(args: &[&str], stdin: Option<&str>, isa_env: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_embed"));
    command.args(args);
    match isa_env {
        Some(v) => command.env("ACTIVATION_KERNELS_ISA", v),
        None => command.env_remove("ACTIVATION_KERNELS_ISA"),
    };
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // A run that fails on its arguments exits without reading stdin: a broken pipe here is
    // not the test's concern, the exit status and stderr are.
    let _ = input.write_all(stdin.unwrap_or("").as_bytes());
    drop(input);
    child.wait_with_output().unwrap()
}

/// The last two stderr lines: the rate and the hash.
fn tail(out: &Output) -> (f64, String) {
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines.len() >= 2, "{err}");
    let rate = lines[lines.len() - 2]
        .strip_prefix("sentences/s: ")
        .unwrap_or_else(|| panic!("{err}"))
        .parse()
        .unwrap();
    let hash = lines[lines.len() - 1]
        .strip_prefix("SHA-256: ")
        .unwrap_or_else(|| panic!("{err}"));
    (rate, hash.to_string())
}

#[test]
fn embed_writes_json_lines_and_the_sha256_of_the_library_bits() {
    let dir = tiny_model_dir("cli");
    let owned = sentences();
    let text = owned.join("\n") + "\n";
    let input = dir.join("input.txt");
    std::fs::write(&input, &text).unwrap();
    let model_dir = dir.to_str().unwrap();
    let out = embed(&["--model", model_dir, input.to_str().unwrap()], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The library's embeddings, each sentence alone.
    let model = Embedder::load(&dir, Session::exact()).unwrap();
    let mut hash = Sha256::new();
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), owned.len());
    for (line, s) in lines.iter().zip(&owned) {
        let got: Vec<f32> = serde_json::from_str(line).unwrap();
        let want = model.embed(&[s], Batching::Varlen).unwrap();
        assert_eq!(got.len(), HIDDEN);
        let want: Vec<f32> = want.row(0).to_vec();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        for v in &want {
            hash.update(v.to_le_bytes());
        }
    }
    let (rate, sha) = tail(&out);
    assert!(rate > 0.0);
    assert_eq!(sha, format!("{:x}", hash.finalize()));
    // Stdin and --output give the same; so does every ISA, thread count and batch size.
    let file = dir.join("out.jsonl");
    for isa in Isa::available() {
        for threads in ["1", "2"] {
            for batch in ["1", "7", "32"] {
                let args = [
                    "--model",
                    model_dir,
                    "--isa",
                    isa.name(),
                    "--threads",
                    threads,
                    "--batch-size",
                    batch,
                    "--output",
                    file.to_str().unwrap(),
                ];
                let o = embed(&args, Some(&text));
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                assert_eq!(tail(&o).1, sha, "{isa} {threads} {batch}");
                assert_eq!(std::fs::read_to_string(&file).unwrap(), stdout);
            }
        }
    }
    // An explicit --isa wins over a bad ACTIVATION_KERNELS_ISA; without it, that is an error.
    let args = ["--model", model_dir, "--isa", "scalar"];
    let o = embed_with_isa_env(&args, Some(&text), Some("bogus"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(tail(&o).1, sha);
    let o = embed_with_isa_env(&["--model", model_dir], Some(&text), Some("bogus"));
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("bogus"));
    // Fast mode runs and prints the same two lines.
    let o = embed(&["--model", model_dir, "--mode", "fast"], Some(&text));
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8(o.stdout.clone()).unwrap().lines().count(),
        owned.len()
    );
    assert_eq!(tail(&o).1.len(), 64);
}

#[test]
fn embed_reports_bad_arguments_a_missing_model_and_an_empty_input() {
    let dir = tiny_model_dir("cli-errors");
    let model_dir = dir.to_str().unwrap();
    let fails = |args: &[&str], stdin: &str, says: &str| {
        let o = embed(args, Some(stdin));
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(o.stdout.is_empty());
    };
    fails(&["--model", "no/such/dir"], "a\n", "does not exist");
    let config = dir.join("config.json");
    fails(&["--model", config.to_str().unwrap()], "a\n", "is a file");
    fails(&["--model", model_dir], "", "empty");
    fails(&["--model", model_dir, "--mode", "slow"], "a\n", "slow");
    fails(&["--model", model_dir, "--batch-size", "0"], "a\n", "0");
    fails(&["--model", model_dir, "--threads", "0"], "a\n", "0");
    fails(&["--model", model_dir, "--isa", "mmx"], "a\n", "mmx");
    fails(
        &["--model", model_dir, "no/such/input.txt"],
        "",
        "no/such/input.txt",
    );
    fails(&[model_dir], "a\n", "--model");
}
