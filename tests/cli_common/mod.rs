//! Running the `seed-agents-db` binary in tests: one command, its output as text.

use std::path::Path;
use std::process::{Command, Output};

/// The binary, to run in `cwd`, with neither `SEED_AGENTS_DB_PATH` nor `SEED_AGENTS_DB_URL`
/// from the test's own environment.
pub fn command(cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_seed-agents-db"));
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
