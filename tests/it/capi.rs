//! The C interface from C: links `tests/c/capi_test.c`, compiled with the system C compiler
//! under AddressSanitizer and UndefinedBehaviorSanitizer, against the static C library that the
//! example `capi_static` is, and runs it.
//!
//! The library is the one `cargo test` built beside this test, with the same profile and the
//! same artifacts (the tests enable the `capi` feature): the test runs `cargo build --example
//! capi_static` in its own target directory, which finds it fresh (cargo releases its build
//! lock before it runs the tests) or builds it when this test was selected alone.
//!
//! It needs no feature, so a plain `cargo test` runs it. The C compiler is `$CC`, else `cc`;
//! without one the test fails (it does not skip).
//!
//! Cross-built and run under an emulator (`tools/cross-aarch64.sh`), `$CC` is the cross
//! compiler and two more variables say what a test cannot know of itself: `AK_CAPI_TARGET`,
//! the target triple the test was built for (the library is built for it too), and
//! `AK_CAPI_RUNNER`, the command that runs the C program (the emulator and its arguments,
//! separated by spaces).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `cmd`, panicking with `what` if it cannot be started.
fn run(cmd: &mut Command, what: &str) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("{what}: could not run {cmd:?}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The system libraries a Rust static library needs on Linux (what rustc's
/// `--print native-static-libs` reports for x86_64-unknown-linux-gnu).
const NATIVE_LIBS: [&str; 7] = [
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// `libcapi_static.a`, built (or found fresh) in the target directory and profile of this test
/// binary (`<target>/<profile dir>/deps/it-*`).
fn static_lib() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary lives in <target>/<profile>/deps");
    // Cross-built, the profile directory is `<target>/<triple>/<profile>`.
    let triple = std::env::var("AK_CAPI_TARGET").ok();
    let mut target_dir = profile_dir.parent().expect("<target>/<profile>");
    if let Some(triple) = &triple {
        assert_eq!(
            target_dir.file_name().and_then(|n| n.to_str()),
            Some(triple.as_str()),
            "AK_CAPI_TARGET names another target than this test's: {}",
            exe.display()
        );
        target_dir = target_dir.parent().expect("<target>/<triple>/<profile>");
    }
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(name) => name,
        None => panic!("no profile directory in {}", exe.display()),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from(env!("CARGO")));
    let out = run(
        Command::new(cargo)
            .current_dir(manifest_dir)
            .env("CARGO_TARGET_DIR", target_dir)
            .arg("build")
            .arg("--manifest-path")
            .arg(manifest_dir.join("Cargo.toml"))
            .args(["--profile", profile, "--example", "capi_static"])
            .args(triple.iter().flat_map(|t| ["--target", t])),
        "building the C library",
    );
    assert!(
        out.status.success(),
        "cargo build --example capi_static failed:\n{}",
        text(&out.stderr)
    );
    let lib = profile_dir.join("examples").join("libcapi_static.a");
    assert!(
        lib.is_file(),
        "{} was not built:\n{}",
        lib.display(),
        text(&out.stderr)
    );
    lib
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

    let lib = static_lib();

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
            .args(NATIVE_LIBS)
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

    let runner = std::env::var("AK_CAPI_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    let mut c_test = match words.next() {
        Some(emulator) => {
            let mut c = Command::new(emulator);
            c.args(words).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    let out = run(&mut c_test, "running the C test");
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
