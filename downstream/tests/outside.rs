//! A server crate outside the workspace (`tests/outside/`, copied out and built by cargo as a
//! user's crate is): its own table with a migration, declared in its `build.rs`, its checked
//! `query!` over that table and a store table, its file opened again after a restart (a second
//! process), a store write through its write path refused, and a file of the previous store
//! and extension releases migrated with its rows, on SQLite and (when a server is configured)
//! PostgreSQL; and a `schema.sql` that drifts from its migrations fails its build naming the
//! column.

mod common;

use common::{on_both, previous_releases};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, &target).unwrap();
        }
    }
}

/// The crate, written afresh under the test's own directory (kept between runs, with its own
/// target directory, so a second run rebuilds only what changed).
fn write_crate(root: &Path) -> PathBuf {
    let krate = root.join("crate");
    let _ = fs::remove_dir_all(&krate);
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/outside"),
        &krate,
    );
    let workspace = fs::canonicalize(WORKSPACE).unwrap();
    let path = |p: &str| workspace.join(p).display().to_string();
    fs::write(
        krate.join("Cargo.toml"),
        format!(
            r#"[package]
name = "outside-server"
version = "0.1.0"
edition = "2021"
publish = false

# A workspace of its own: this crate is a user's, not one of the store's.
[workspace]

[features]
postgres = ["seed-agents-store/postgres"]

[dependencies]
seed-agents-store = {{ path = "{store}" }}

[build-dependencies]
seed-agents-codegen = {{ path = "{codegen}" }}
seed-agents-schema = {{ path = "{schema}" }}
"#,
            store = path(""),
            codegen = path("codegen"),
            schema = path("schema"),
        ),
    )
    .unwrap();
    // The versions the store is tested with, so the build needs nothing new from the registry.
    fs::copy(workspace.join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    krate
}

fn build(krate: &Path, target: &Path) -> Output {
    Command::new(env!("CARGO"))
        .args(["build", "--offline", "--features", "postgres"])
        .current_dir(krate)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .unwrap()
}

fn run(binary: &Path, args: &[&str]) -> String {
    let out = Command::new(binary).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_crate_outside_the_workspace_builds_opens_and_fails_on_drift() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("outside-crate");
    let target = root.join("target");
    let krate = write_crate(&root);
    let out = build(&krate, &target);
    assert!(
        out.status.success(),
        "the crate does not build:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let binary = target.join("debug/outside-server");

    on_both("outside_crate", |location| {
        let location = location.to_str().unwrap();
        run(&binary, &[location, "add", "acct", "h1", "laptop"]);
        // A second process: the file (or database) opens again with its table intact.
        assert_eq!(run(&binary, &[location, "list", "acct"]), "h1 laptop\n");
        run(&binary, &[location, "add", "acct", "h0", "phone"]);
        assert_eq!(
            run(&binary, &[location, "list", "acct"]),
            "h0 phone\nh1 laptop\n"
        );
        assert_eq!(run(&binary, &[location, "sneak"]), "invalid\n");
        assert_eq!(
            run(&binary, &[location, "list", "acct"]),
            "h0 phone\nh1 laptop\n",
            "the refused write left the store's accounts as they were"
        );
    });

    // The store one version back and the extension at its genesis, with a token: the newest
    // store release (which adds a migration) and the extension's next release open it.
    let extension =
        seed_agents_codegen::extension::load("tokens", krate.join("db"), seed_agents_schema::DIR)
            .unwrap();
    let postgres = seed_agents_codegen::postgres::plan(&extension).unwrap();
    on_both("outside_upgrade", |location| {
        previous_releases(
            location,
            "tokens",
            &extension.migrations[0].sql,
            &postgres.steps[0].script(),
        );
        for sql in [
            "INSERT INTO accounts (id, created_at, updated_at) VALUES ('acct', 1, 1)",
            "INSERT INTO api_tokens (hash, account_id) VALUES ('h9', 'acct')",
        ] {
            support::backend::exec(location, sql, &[]);
        }
        let at = location.to_str().unwrap();
        assert_eq!(run(&binary, &[at, "list", "acct"]), "h9 \n");
        let key = seed_agents_store::extension_version_key("tokens");
        assert_eq!(common::key(location, &key), "1");
        run(&binary, &[at, "add", "acct", "h8", "tablet"]);
        assert_eq!(run(&binary, &[at, "list", "acct"]), "h8 tablet\nh9 \n");
    });

    let schema = krate.join("db/schema.sql");
    let text = fs::read_to_string(&schema).unwrap();
    fs::write(
        &schema,
        text.replace(
            "    label TEXT\n",
            "    label TEXT,\n    -- Its scope.\n    scope TEXT\n",
        ),
    )
    .unwrap();
    let out = build(&krate, &target);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a drifted schema.sql builds");
    for part in [
        "table api_tokens, column scope",
        "no migration adds this column",
        "0001_token_labels.sql",
    ] {
        assert!(
            stderr.contains(part),
            "the build's error lacks {part:?}:\n{stderr}"
        );
    }
}
