//! The gate reads one snapshot: eight processes opening one old database at once, while two
//! more ask for its status, never see a half-migrated state. One migrates; the others see the old
//! version and wait for the migrator's lock, or see the new one. No refusal, 50 rounds.

use seed_agents_store::schema::SCHEMA_VERSION;
use std::process::{Child, Command, Stdio};
use support::gate::at_version;

const ROUNDS: usize = 50;
const OPENERS: usize = 8;
const LOOKERS: usize = 2;
const OLD: u32 = 5;

fn spawn(db: &std::path::Path, cmd: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_seed-agents-db"))
        .arg("--db-path")
        .arg(db)
        .arg(cmd)
        .env_remove("SEED_AGENTS_DB_PATH")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn concurrent_opens_of_an_old_database_never_refuse() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..ROUNDS {
        let db = dir.path().join(format!("round-{round}.sqlite"));
        at_version(&db, OLD);
        let children: Vec<(&str, Child)> = (0..OPENERS + LOOKERS)
            .map(|i| {
                let cmd = if i % 5 == 4 { "status" } else { "open" };
                (cmd, spawn(&db, cmd))
            })
            .collect();
        let mut migrated = 0;
        for (cmd, child) in children {
            let o = child.wait_with_output().unwrap();
            let out = String::from_utf8_lossy(&o.stdout);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(0), "round {round}, {cmd}: {err}");
            if cmd == "open" {
                migrated += usize::from(
                    out.contains(&format!("migrated from version {OLD} to {SCHEMA_VERSION}")),
                );
                assert!(
                    out.contains("outcome: migrated") || out.contains("outcome: current"),
                    "round {round}: {out}"
                );
            } else {
                assert!(
                    out.contains(&format!("claimed version: {OLD}"))
                        || out.contains(&format!("claimed version: {SCHEMA_VERSION}")),
                    "round {round}: {out}"
                );
            }
        }
        assert_eq!(migrated, 1, "round {round}: exactly one process migrates");
    }
}
