//! `ACTIVATION_KERNELS_ISA` forces the instruction set. It is read once per process, so the test
//! runs itself again as a child process with the variable set.

use activation_kernels::{Error, Exact, Isa, Session};
use std::process::Command;

const EXPECT: &str = "ACTIVATION_KERNELS_TEST_EXPECT";

fn child(value: &str, expect: &str) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "isa_env::environment_variable_forces_the_isa",
            "--test-threads",
            "1",
        ])
        .env("ACTIVATION_KERNELS_ISA", value)
        .env(EXPECT, expect)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child with {value:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "the child ran the check"
    );
}

#[test]
fn environment_variable_forces_the_isa() {
    match std::env::var(EXPECT).as_deref() {
        // In the child: check what the variable did.
        Ok("error") => {
            let e = Session::<Exact>::try_new().unwrap_err();
            assert!(
                matches!(e, Error::UnknownIsa { .. } | Error::IsaUnavailable { .. }),
                "{e}"
            );
            assert!(Isa::preferred().is_err());
            // The infallible constructor falls back to the detected instruction set.
            assert_eq!(Session::exact().isa(), Isa::detect());
        }
        Ok(name) => {
            assert_eq!(Isa::preferred().unwrap().name(), name);
            assert_eq!(Session::exact().isa().name(), name);
            assert_eq!(Session::fast().isa().name(), name);
            assert_eq!(Session::<Exact>::try_new().unwrap().isa().name(), name);
        }
        // In the parent: one child per case.
        Err(_) => {
            for isa in Isa::available() {
                child(isa.name(), isa.name());
            }
            child(
                "AVX2 ",
                if Isa::Avx2.is_available() {
                    "avx2"
                } else {
                    "error"
                },
            );
            child("avx1024", "error");
            // Empty or blank: unset.
            child("", Isa::detect().name());
            child("  ", Isa::detect().name());
            for isa in Isa::ALL.into_iter().filter(|i| !i.is_available()) {
                child(isa.name(), "error");
            }
        }
    }
}
