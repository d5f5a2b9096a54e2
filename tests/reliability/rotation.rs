//! `kill -9` at seeded random moments of a key rotation (`seed-agents-db rotate-key`) never
//! leaves a secret readable by neither key: right after each kill every secret and webhook
//! secret decrypts, and calling the rotation again finishes it, retiring the old key.
//!
//! The test prints its counts: kills that landed mid-rotation, before it began, after it ended.

// `kill -9` and the exit status that reports it are Unix.
#![cfg(unix)]

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use seed_agents_store::agents::NewAgent;
use seed_agents_store::keys::RotateOptions;
use seed_agents_store::payload::{AgentDefinition, AgentTriggerSource, WebhookSource};
use seed_agents_store::triggers::NewTrigger;
use seed_agents_store::{Durability, Store};

const ACCOUNT: &str = "acct-rotation";
/// Secrets in the file: with batches of 4 rows, about a hundred writes to land a kill among.
const SECRETS: usize = 400;
const WEBHOOKS: usize = 4;
const KILLS: usize = 16;
/// The signal `Child::kill` sends.
const SIGKILL: i32 = 9;

/// A file holding `SECRETS` secrets and `WEBHOOKS` webhook secrets; returns the webhooks'
/// (trigger, secret) pairs.
fn build(path: &Path) -> Vec<(String, String)> {
    let store = Store::open(path).unwrap();
    store.set_durability(Durability::Normal).unwrap();
    for i in 0..SECRETS {
        store
            .set_secret(ACCOUNT, &format!("s{i}"), format!("v{i}").as_bytes(), None)
            .unwrap();
    }
    let agent = store
        .create_agent(
            ACCOUNT,
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: "/tmp/agent".into(),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap();
    (0..WEBHOOKS)
        .map(|i| {
            let write = store
                .create_trigger(&NewTrigger {
                    id: None,
                    account_id: ACCOUNT.into(),
                    agent_id: agent.id.clone(),
                    name: format!("hook {i}"),
                    enabled: true,
                    source: AgentTriggerSource::Webhook(WebhookSource::default()),
                    prompt: "go".into(),
                    continuation: None,
                })
                .unwrap();
            (
                write.trigger.id,
                write.webhook_secret.unwrap().expose().to_owned(),
            )
        })
        .collect()
}

/// Every secret decrypts to its value; returns how many rows each key holds.
fn check(store: &Store, webhooks: &[(String, String)], ctx: &str) -> Vec<(i64, i64)> {
    for i in 0..SECRETS {
        let plain = store
            .decrypt_secret(ACCOUNT, &format!("s{i}"))
            .unwrap_or_else(|e| panic!("{ctx}: secret s{i}: {e}"));
        assert_eq!(plain.expose(), format!("v{i}").as_bytes(), "{ctx}");
    }
    for (trigger, secret) in webhooks {
        let plain = store
            .webhook_secret(ACCOUNT, trigger)
            .unwrap_or_else(|e| panic!("{ctx}: webhook {trigger}: {e}"));
        assert_eq!(plain.expose(), secret, "{ctx}");
    }
    let conn = store.conn().unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT key_id, count(*) FROM (SELECT key_id FROM secrets \
             UNION ALL SELECT key_id FROM webhook_trigger_credentials) GROUP BY key_id ORDER BY key_id",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

fn cli_rotate(path: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_seed-agents-db"))
        .arg("--db-path")
        .arg(path)
        .args(["rotate-key", "--batch-rows", "4"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn kill_9_during_a_rotation_leaves_every_secret_readable_and_a_second_run_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("template.sqlite");
    let webhooks = build(&template);
    // One uninterrupted rotation through the CLI, for how long one takes.
    let reference = dir.path().join("reference.sqlite");
    std::fs::copy(&template, &reference).unwrap();
    let started = Instant::now();
    let out = cli_rotate(&reference).wait_with_output().unwrap();
    let length = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let total = (SECRETS + WEBHOOKS) as i64;
    assert_eq!(
        check(&Store::open(&reference).unwrap(), &webhooks, "reference"),
        vec![(2, total)]
    );

    let mut rng = StdRng::seed_from_u64(0x726f7461);
    let (mut mid, mut before, mut after) = (0, 0, 0);
    for trial in 0..KILLS {
        let path = dir.path().join(format!("trial{trial}.sqlite"));
        std::fs::copy(&template, &path).unwrap();
        let delay = length.mul_f64(rng.gen_range(0.0..1.1));
        let mut child = cli_rotate(&path);
        std::thread::sleep(delay);
        child.kill().unwrap_or_default();
        let out = child.wait_with_output().unwrap();
        let ctx = format!("trial {trial} (kill after {delay:?} of a {length:?} rotation)");
        assert!(
            out.status.signal() == Some(SIGKILL) || out.status.success(),
            "{ctx}: the CLI failed on its own ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let store = Store::open(&path).unwrap();
        // Right after the kill: every row under a kept key, every secret readable.
        let by_key = check(&store, &webhooks, &ctx);
        assert_eq!(by_key.iter().map(|(_, n)| n).sum::<i64>(), total, "{ctx}");
        match by_key.as_slice() {
            [(1, _)] => before += 1,
            [(2, _)] => after += 1,
            [(1, _), (2, _)] => mid += 1,
            other => panic!("{ctx}: rows by key {other:?}"),
        }
        // Calling it again resumes (or starts, if the kill came first) and finishes.
        let report = store
            .rotate_key(RotateOptions::new().batch_rows(4))
            .unwrap();
        assert!(report.complete, "{ctx}: {report:?}");
        let ended = check(&store, &webhooks, &ctx);
        assert_eq!(ended, vec![(report.key_id, total)], "{ctx}");
        let live: i64 = store
            .conn()
            .unwrap()
            .query_row(
                "SELECT count(*) FROM secret_keys WHERE retired_at IS NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(live, 1, "{ctx}");
    }
    println!(
        "{KILLS} kills during a {length:?} rotation of {total} rows: {mid} mid-rotation, \
         {before} before it began, {after} after its last batch; every secret readable after each"
    );
    assert!(mid > 0, "no kill landed mid-rotation");
}
