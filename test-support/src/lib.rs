//! What the store's integration test binaries share, compiled once instead of once per binary.
//!
//! - [`backend`]: the backend a domain test runs on (a SQLite file, or a PostgreSQL database
//!   with `SEED_AGENTS_TEST_BACKEND=postgres`) and raw access to it for arranging rows.
//! - [`postgres`]: a real server and a throwaway database per test.
//! - [`execution`], [`tools`], [`reliability`], [`isolation`], [`gate`]: each family's fixture.
//! - [`old_versions`]: files at an earlier schema version, written without the store.
//! - [`cli`]: running the `seed-agents-db` binary.
//! - [`child_test!`], [`rerun`] and [`results`]: the name under which a test re-runs itself in a
//!   child process, the command that does it, and the `RESULT` lines the child prints.
//!
//! Invariant: nothing here writes through the store's internals: fixtures arrange rows with
//! plain SQL or public operations, so the store is always the thing under test.

pub mod backend;
pub mod cli;
pub mod execution;
pub mod gate;
pub mod isolation;
pub mod old_versions;
pub mod postgres;
pub mod reliability;
pub mod tools;

/// The name libtest gives the test function `name` declared in the calling module, for a test
/// binary that re-runs itself with `--exact <name>`: the module path without the crate's own
/// name, then `name` (`feed::child` in the `handle` binary's `feed` module).
#[macro_export]
macro_rules! child_test {
    ($name:expr) => {
        $crate::test_name(module_path!(), $name)
    };
}

/// The test binary run again for the one test `name` (its full name, see [`child_test!`]), on
/// one thread and with its output shown: a child process of a race, given its part through
/// the environment by the caller.
pub fn rerun(name: &str) -> std::process::Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = std::process::Command::new(exe);
    command.args(["--exact", name, "--nocapture", "--test-threads", "1"]);
    command
}

/// [`child_test!`]'s work: `module` (a `module_path!()`) without its first segment, joined
/// with `name`.
pub fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, inner)) => format!("{inner}::{name}"),
        None => name.to_owned(),
    }
}

/// The `RESULT ` lines of a child's stdout, without the prefix. libtest prints `test name ... `
/// without a newline before the test's own output, so the prefix is searched within a line.
pub fn results(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| {
            l.find("RESULT ")
                .map(|at| l[at + "RESULT ".len()..].to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn test_names_drop_the_crate() {
        assert_eq!(super::test_name("handle::feed", "child"), "feed::child");
        assert_eq!(super::test_name("handle", "child"), "child");
        assert_eq!(
            super::test_name("gate::faults::inner", "x"),
            "faults::inner::x"
        );
    }
}
