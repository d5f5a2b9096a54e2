//! Secret keys: the registry, rotation (whole, stopped after N batches, resumed), the key
//! providers (database, environment, file, command) and moving the key out of the database.

use std::path::Path;

use proptest::prelude::*;
use seed_agents_store::agents::NewAgent;
use seed_agents_store::keys::{
    CommandKeyProvider, EncryptionKey, EnvKeyProvider, FileKeyProvider, KeyProvider, ProviderKind,
    RotateOptions,
};
use seed_agents_store::payload::{AgentDefinition, AgentTriggerSource, WebhookSource};
use seed_agents_store::schema::{secret_keys, server_config};
use seed_agents_store::triggers::NewTrigger;
use seed_agents_store::{Error, Store};

const A: &str = "acct-keys";

/// Set in a child run of this binary (see [`run_in_child`]).
const CHILD: &str = "SEED_KEYS_TEST_CHILD";

/// Runs the test `test` (its full name, see `support::child_test!`) again in a child process
/// with `vars` set and asserts that it passes:
/// setting a variable in this process needs `unsafe`, which the crate forbids. Returns whether
/// this process is that child (then the caller runs the test's body).
fn run_in_child(test: &str, vars: &[(&str, String)]) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let out = support::rerun(test)
        .env(CHILD, "1")
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "child run of {test}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

/// Every secret of `A` named `s<i>` holds `v<i>`, and every webhook secret reads back.
fn assert_all_decrypt(store: &Store, n: usize, webhooks: &[(String, String)]) {
    for i in 0..n {
        let plain = store
            .decrypt_secret(A, &format!("s{i}"))
            .unwrap_or_else(|e| panic!("secret s{i}: {e}"));
        assert_eq!(plain.expose(), format!("v{i}").as_bytes());
    }
    for (trigger, secret) in webhooks {
        assert_eq!(store.webhook_secret(A, trigger).unwrap().expose(), secret);
    }
}

fn keys(store: &Store) -> Vec<secret_keys::Row> {
    let conn = store.conn().unwrap();
    let mut stmt = conn
        .prepare("SELECT id FROM secret_keys ORDER BY id")
        .unwrap();
    let ids: Vec<i64> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    ids.into_iter()
        .map(|id| secret_keys::get(&conn, id).unwrap().unwrap())
        .collect()
}

fn key_configs(store: &Store) -> Vec<String> {
    let conn = store.conn().unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT key FROM server_config WHERE key LIKE 'secret_encryption_key_%' ORDER BY key",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// `n` secrets and two webhook triggers; returns the webhook (trigger, secret) pairs.
fn fill(store: &Store, n: usize) -> Vec<(String, String)> {
    for i in 0..n {
        store
            .set_secret(A, &format!("s{i}"), format!("v{i}").as_bytes(), None)
            .unwrap();
    }
    let agent = store
        .create_agent(
            A,
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: "/tmp/agent".into(),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap();
    (0..2)
        .map(|i| {
            let write = store
                .create_trigger(&NewTrigger {
                    id: None,
                    account_id: A.into(),
                    agent_id: agent.id.clone(),
                    name: format!("hook {i}"),
                    enabled: true,
                    source: AgentTriggerSource::Webhook(WebhookSource::default()),
                    prompt: "go".into(),
                    continuation: None,
                })
                .unwrap();
            let secret = write.webhook_secret.unwrap().expose().to_owned();
            (write.trigger.id, secret)
        })
        .collect()
}

mod moving;
mod providers;
mod rotation;
use providers::*;
