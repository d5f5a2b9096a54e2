//! Compile-fail and compile-pass suites of the checked-SQL macros. The `.stderr` files were made
//! with the toolchain named in `tests/ui/TOOLCHAIN`; another rustc words its diagnostics
//! differently, so on another toolchain the suite is skipped with a printed reason, unless
//! `SEED_UI_TOOLCHAIN_REQUIRED` is set (CI sets it, so a drifted CI toolchain fails instead of
//! skipping). `TRYBUILD=overwrite` regenerates the files after a deliberate toolchain bump.

#[test]
fn ui() {
    let pinned = include_str!("ui/TOOLCHAIN").trim();
    let rustc =
        std::process::Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .arg("--version")
            .output()
            .expect("rustc runs");
    let version = String::from_utf8_lossy(&rustc.stdout);
    if !version.starts_with(&format!("rustc {pinned} ")) {
        let why = format!(
            "the .stderr files were made with rustc {pinned}, this is {}; run `cargo +{pinned} test -p seed-agents-ui-tests`",
            version.trim()
        );
        assert!(
            std::env::var_os("SEED_UI_TOOLCHAIN_REQUIRED").is_none(),
            "SEED_UI_TOOLCHAIN_REQUIRED is set and {why}"
        );
        eprintln!("skipping the compile-fail suite: {why}");
        return;
    }
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
