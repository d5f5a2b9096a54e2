//! Compile-fail and compile-pass suites of the checked-SQL macros. The `.stderr` files were made
//! with the toolchain named in `tests/ui/TOOLCHAIN`; another rustc words its diagnostics
//! differently, so this test insists on that one (`cargo +<version> test --test ui`), and
//! `TRYBUILD=overwrite` regenerates the files after a deliberate toolchain bump.

#[test]
fn ui() {
    let pinned = include_str!("ui/TOOLCHAIN").trim();
    let rustc =
        std::process::Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .arg("--version")
            .output()
            .expect("rustc runs");
    let version = String::from_utf8_lossy(&rustc.stdout);
    assert!(
        version.starts_with(&format!("rustc {pinned} ")),
        "the .stderr files were made with rustc {pinned}, this is {version}; run `cargo +{pinned} test --test ui`"
    );
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
