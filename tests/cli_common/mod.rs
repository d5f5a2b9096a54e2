//! Running the `seed-agents-db` binary in tests: one command, its output as text.

use std::path::Path;
use std::process::{Command, Output};

/// Runs the binary in `cwd` with `args`, `SEED_AGENTS_DB_PATH` set to `env` (unset when `None`).
pub fn run(cwd: &Path, args: &[&str], env: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_seed-agents-db"));
    cmd.current_dir(cwd)
        .args(args)
        .env_remove("SEED_AGENTS_DB_PATH");
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
