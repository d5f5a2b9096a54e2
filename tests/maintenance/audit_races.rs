//! Several processes on one file: each account's audit chain stays gapless and verifiable while
//! they all append, and a key rotation racing other processes' secret writes leaves every
//! secret readable under the key its row names.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use seed_agents_store::keys::RotateOptions;
use seed_agents_store::Store;

const ROLE: &str = "AUDIT_RACE_ROLE";
const DB: &str = "AUDIT_RACE_DB";
const INDEX: &str = "AUDIT_RACE_INDEX";
const PROCESSES: usize = 4;
const SECRETS: usize = 40;

fn ready_file(db: &Path, index: usize) -> PathBuf {
    db.with_extension(format!("ready{index}"))
}

fn go_file(db: &Path) -> PathBuf {
    db.with_extension("go")
}

/// Runs one child per role on `db`, starting them together, and waits for all to succeed.
fn race(db: &Path, roles: &[&str]) {
    let children: Vec<_> = roles
        .iter()
        .enumerate()
        .map(|(i, role)| {
            support::rerun(&support::child_test!("race_child"))
                .env(ROLE, role)
                .env(DB, db)
                .env(INDEX, i.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while (0..roles.len()).any(|i| !ready_file(db, i).exists()) {
        assert!(Instant::now() < deadline, "children did not get ready");
        std::thread::sleep(Duration::from_millis(2));
    }
    std::fs::write(go_file(db), b"go").unwrap();
    for (role, child) in roles.iter().zip(children) {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "child {role} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The child side: does nothing unless started by `race`.
#[test]
fn race_child() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let path = PathBuf::from(std::env::var(DB).unwrap());
    let index: usize = std::env::var(INDEX).unwrap().parse().unwrap();
    let store = Store::open(&path).unwrap();
    std::fs::write(ready_file(&path, index), b"ready").unwrap();
    while !go_file(&path).exists() {
        std::thread::sleep(Duration::from_micros(200));
    }
    match role.as_str() {
        "writer" => {
            let account = format!("acct-{index}");
            for i in 0..SECRETS {
                let name = format!("s{i}");
                store
                    .set_secret(&account, &name, format!("{account}/{i}").as_bytes(), None)
                    .unwrap();
                if i % 4 == 0 {
                    assert!(store.delete_secret(&account, &name).unwrap());
                }
            }
        }
        "rotator" => {
            let report = store
                .rotate_key(RotateOptions::new().batch_rows(2))
                .unwrap();
            println!("rotated to key {}: {report:?}", report.key_id);
        }
        other => panic!("unknown role {other}"),
    }
}

/// What each writer leaves: the secrets it set and did not delete.
fn kept() -> impl Iterator<Item = usize> {
    (0..SECRETS).filter(|i| i % 4 != 0)
}

#[test]
fn processes_appending_at_once_leave_gapless_chains_that_verify() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.sqlite");
    drop(Store::open(&db).unwrap());
    race(&db, &["writer"; PROCESSES]);
    let store = Store::open(&db).unwrap();
    let report = store.verify_audit_log().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    // One event per set and per delete, from every process, none lost and none doubled.
    let per_process = SECRETS + SECRETS / 4;
    assert_eq!(report.rows, (PROCESSES * per_process) as u64);
    assert_eq!(report.head_seq, (PROCESSES * per_process) as i64);
    // One chain per process's account, each 1, 2, 3, ... without a gap.
    assert_eq!(report.chains, PROCESSES as u64);
    let conn = store.conn().unwrap();
    for index in 0..PROCESSES {
        let seqs: Vec<i64> = conn
            .prepare("SELECT seq FROM audit_events WHERE chain = ?1 ORDER BY seq")
            .unwrap()
            .query_map([format!("acct-{index}")], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(seqs, (1..=per_process as i64).collect::<Vec<_>>());
    }
}

#[test]
fn a_rotation_racing_secret_writes_in_other_processes_leaves_every_secret_readable() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("keys.sqlite");
    {
        // Secrets under key 1 for the rotation to move while the writers add more.
        let store = Store::open(&db).unwrap();
        for i in 0..SECRETS {
            store
                .set_secret("acct-old", &format!("s{i}"), b"old", None)
                .unwrap();
        }
    }
    let mut roles = vec!["writer"; PROCESSES - 1];
    roles.push("rotator");
    race(&db, &roles);
    let store = Store::open(&db).unwrap();
    // A second call finishes whatever the racing writes left under an older key, if anything.
    let report = store.rotate_key(RotateOptions::new()).unwrap();
    assert!(report.complete, "{report:?}");
    for i in 0..SECRETS {
        let plain = store.decrypt_secret("acct-old", &format!("s{i}")).unwrap();
        assert_eq!(plain.expose(), b"old");
    }
    for index in 0..PROCESSES - 1 {
        let account = format!("acct-{index}");
        for i in kept() {
            let plain = store.decrypt_secret(&account, &format!("s{i}")).unwrap();
            assert_eq!(plain.expose_str(), Some(format!("{account}/{i}").as_str()));
        }
    }
    // Exactly one key is left in use, and the audit chain recorded it all.
    let live: i64 = store
        .conn()
        .unwrap()
        .query_row(
            "SELECT count(*) FROM secret_keys WHERE retired_at IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(live, 1);
    assert!(store.verify_audit_log().unwrap().is_intact());
}
