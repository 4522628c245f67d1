//! The C interface from C: builds the crate as a static library with the `capi` feature (a
//! nested `cargo rustc`, in its own target directory so it never waits on the build lock of the
//! `cargo test` that runs this), compiles `tests/c/capi_test.c` against it with the system C
//! compiler under AddressSanitizer and UndefinedBehaviorSanitizer, and runs it.
//!
//! It needs no feature, so a plain `cargo test` runs it. The C compiler is `$CC`, else `cc`;
//! without one the test fails (it does not skip).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::extensive;

/// The nested build: by default the dev profile without debug info (a fraction of the
/// release build's time); with `AK_EXTENSIVE=1` the release build users link.
fn profile_args() -> Vec<&'static str> {
    if extensive() {
        vec!["--release"]
    } else {
        vec!["--config", "profile.dev.debug=false"]
    }
}

/// Runs `cmd`, panicking with `what` if it cannot be started.
fn run(cmd: &mut Command, what: &str) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("{what}: could not run {cmd:?}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Builds `libactivation_kernels.a` with `--features capi`; returns its path and the system
/// libraries it needs (rustc's `native-static-libs` note).
fn build_static_lib(work: &Path) -> (PathBuf, Vec<String>) {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target_dir = work.join("target");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from(env!("CARGO")));
    let out = run(
        Command::new(cargo)
            .current_dir(manifest_dir)
            .env("CARGO_TARGET_DIR", &target_dir)
            .arg("rustc")
            .arg("--manifest-path")
            .arg(manifest_dir.join("Cargo.toml"))
            .args(profile_args())
            .args(["--lib", "--features", "capi"])
            .args(["--crate-type", "staticlib"])
            .args(["--", "--print", "native-static-libs"]),
        "building the C library",
    );
    let stderr = text(&out.stderr);
    assert!(
        out.status.success(),
        "cargo rustc --features capi --crate-type staticlib failed:\n{stderr}"
    );
    let lib = target_dir
        .join(if extensive() { "release" } else { "debug" })
        .join("libactivation_kernels.a");
    assert!(lib.is_file(), "{} was not built:\n{stderr}", lib.display());
    // rustc prints the note when it compiles the crate; cargo replays it when the build is
    // fresh. If it is missing, the usual Unix list.
    let native: Vec<String> = stderr
        .lines()
        .find_map(|l| l.split_once("native-static-libs:").map(|(_, libs)| libs))
        .map(|libs| libs.split_whitespace().map(str::to_string).collect())
        .unwrap_or_else(|| {
            ["-lpthread", "-ldl", "-lm", "-lc"]
                .map(str::to_string)
                .to_vec()
        });
    (lib, native)
}

#[test]
fn c_test_program_passes_under_address_and_undefined_sanitizers() {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("capi");
    std::fs::create_dir_all(&work).unwrap();

    let cc = std::env::var_os("CC").unwrap_or_else(|| OsString::from("cc"));
    let probe = Command::new(&cc).arg("--version").output();
    assert!(
        probe.as_ref().is_ok_and(|o| o.status.success()),
        "no C compiler: {cc:?} could not be run ({probe:?}). This test compiles \
         tests/c/capi_test.c with the system C compiler: install gcc or clang, or set CC."
    );

    let (lib, native) = build_static_lib(&work);

    let exe = work.join("capi_test");
    let out = run(
        Command::new(&cc)
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-O1"])
            .args(["-fno-omit-frame-pointer", "-ffp-contract=off"])
            .args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
            .arg("-I")
            .arg(manifest_dir.join("include"))
            .arg(manifest_dir.join("tests").join("c").join("capi_test.c"))
            .arg(&lib)
            .args(&native)
            .arg("-lm")
            .arg("-o")
            .arg(&exe),
        "compiling tests/c/capi_test.c",
    );
    assert!(
        out.status.success(),
        "compiling tests/c/capi_test.c failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );

    let out = run(&mut Command::new(&exe), "running the C test");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "the C test failed ({}):\n{stdout}{stderr}",
        out.status
    );
    assert!(
        stdout.contains("capi_test: all") && stdout.contains("checks passed"),
        "unexpected output of the C test:\n{stdout}{stderr}"
    );
    assert!(
        !stderr.contains("runtime error") && !stderr.contains("Sanitizer"),
        "sanitizer reports:\n{stderr}"
    );
}
