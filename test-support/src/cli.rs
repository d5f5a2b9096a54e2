//! Running the `seed-agents-db` binary in tests: one command, its output as text.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `seed-agents-db` binary Cargo built beside the running test binary: tests live in
/// `target/<profile>/deps/`, binaries one folder up, where `CARGO_BIN_EXE_seed-agents-db`
/// points too (that variable is set only while compiling an integration test, not this crate).
pub fn bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test binary inside target/<profile>/deps")
        .join(format!("seed-agents-db{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: the CLI tests need the `cli` feature",
        bin.display()
    );
    bin
}

/// The binary, to run in `cwd`, with neither `SEED_AGENTS_DB_PATH` nor `SEED_AGENTS_DB_URL`
/// from the test's own environment.
pub fn command(cwd: &Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.current_dir(cwd)
        .env_remove("SEED_AGENTS_DB_PATH")
        .env_remove("SEED_AGENTS_DB_URL");
    cmd
}

/// Runs the binary in `cwd` with `args`, `SEED_AGENTS_DB_PATH` set to `env` (unset when `None`).
pub fn run(cwd: &Path, args: &[&str], env: Option<&str>) -> Output {
    let mut cmd = command(cwd);
    cmd.args(args);
    if let Some(p) = env {
        cmd.env("SEED_AGENTS_DB_PATH", p);
    }
    cmd.output().unwrap()
}

/// The command's stdout.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The command's stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The command's stdout as the one JSON document it must be.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", stdout(o)))
}
