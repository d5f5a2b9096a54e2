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

/// Runs the test `test` again in a child process with `vars` set and asserts that it passes:
/// setting a variable in this process needs `unsafe`, which the crate forbids. Returns whether
/// this process is that child (then the caller runs the test's body).
fn run_in_child(test: &str, vars: &[(&str, String)]) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &support::test_name(module_path!(), test),
            "--nocapture",
            "--test-threads",
            "1",
        ])
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

#[test]
fn the_first_secret_registers_key_1_in_the_database_and_rows_name_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("k.sqlite")).unwrap();
    assert!(keys(&store).is_empty());
    let info = store.set_secret(A, "s0", b"v0", None).unwrap();
    assert_eq!((info.key_id, info.rotated_at), (1, None));
    let registered = keys(&store);
    assert_eq!(registered.len(), 1);
    assert_eq!(registered[0].provider, ProviderKind::Database);
    // The fingerprint is that of the stored key, never the key itself.
    let bytes = server_config::get(&store.conn().unwrap(), "secret_encryption_key_v1")
        .unwrap()
        .unwrap()
        .value;
    let key = EncryptionKey::from_bytes(bytes.clone().try_into().unwrap());
    assert_eq!(
        registered[0].fingerprint.as_deref(),
        Some(&*key.fingerprint())
    );
    assert!(!key.fingerprint().contains(&hex::encode(&bytes[..8])));
    assert_eq!(
        format!("{key:?}"),
        format!("EncryptionKey({})", key.fingerprint())
    );
}

#[test]
fn a_rotation_re_encrypts_every_column_then_retires_and_deletes_the_old_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("k.sqlite")).unwrap();
    let webhooks = fill(&store, 7);
    let before = store.secret(A, "s3").unwrap().unwrap();
    let mut seen = Vec::new();
    let progress = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = progress.clone();
    let report = store
        .rotate_key(
            RotateOptions::new()
                .batch_rows(3)
                .on_progress(move |p| sink.lock().unwrap().push(p.remaining)),
        )
        .unwrap();
    seen.extend(progress.lock().unwrap().iter().copied());
    assert!(report.started && report.complete);
    assert_eq!(report.key_id, 2);
    assert_eq!(
        report.rotated,
        vec![("secrets", 7), ("webhook_trigger_credentials", 2)]
    );
    assert_eq!(report.batches, 4); // 3 + 3 + 1 secrets, 2 webhooks
    assert_eq!(seen, vec![6, 3, 2, 0]);
    assert_eq!(report.retired, vec![1]);
    assert_all_decrypt(&store, 7, &webhooks);
    // The value's write time stays; the rotation time is recorded.
    let after = store.secret(A, "s3").unwrap().unwrap();
    assert_eq!((after.updated_at, after.key_id), (before.updated_at, 2));
    assert!(after.rotated_at.is_some());
    // Key 1 is retired and its bytes are gone; key 2's are the only ones left.
    let registered = keys(&store);
    assert!(registered[0].retired_at.is_some() && registered[1].retired_at.is_none());
    assert_eq!(key_configs(&store), vec!["secret_encryption_key_v2"]);
    // A second rotation starts anew, to key 3.
    let again = store.rotate_key(RotateOptions::new()).unwrap();
    assert_eq!(
        (again.key_id, again.started, again.retired),
        (3, true, vec![2])
    );
    assert_all_decrypt(&store, 7, &webhooks);
}

#[test]
fn a_rotation_stopped_after_some_batches_keeps_everything_readable_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("k.sqlite")).unwrap();
    let webhooks = fill(&store, 10);
    let first = store
        .rotate_key(RotateOptions::new().batch_rows(4).max_batches(1))
        .unwrap();
    assert!(first.started && !first.complete);
    assert_eq!((first.remaining, first.retired.len()), (8, 0));
    // Mid-rotation: rows under both keys, both keys kept, new values under the new key.
    assert_all_decrypt(&store, 10, &webhooks);
    assert_eq!(key_configs(&store).len(), 2);
    let info = store.set_secret(A, "s0", b"v0", None).unwrap();
    assert_eq!(info.key_id, 2);
    let resumed = store
        .rotate_key(RotateOptions::new().batch_rows(4))
        .unwrap();
    assert!(!resumed.started && resumed.complete);
    assert_eq!(resumed.key_id, 2);
    assert_eq!(resumed.retired, vec![1]);
    assert_all_decrypt(&store, 10, &webhooks);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Stopped after any number of batches, any number of times, with writes in between: every
    /// secret decrypts at every stop, and the last call completes.
    #[test]
    fn rotation_stopped_anywhere_resumes_and_every_secret_decrypts(
        n in 1usize..30,
        batch in 1usize..8,
        stops in proptest::collection::vec(0usize..5, 0..6),
        writes in proptest::collection::vec(0usize..30, 0..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("k.sqlite")).unwrap();
        store.set_durability(seed_agents_store::Durability::Normal).unwrap();
        let webhooks = fill(&store, n);
        // A stop past the last batch completes the rotation; the next call starts another.
        let (mut key, mut in_progress) = (1, false);
        for (i, stop) in stops.iter().enumerate() {
            let report = store
                .rotate_key(RotateOptions::new().batch_rows(batch).max_batches(*stop))
                .unwrap();
            prop_assert_eq!(report.started, !in_progress);
            if report.started {
                key += 1;
            }
            prop_assert_eq!(report.key_id, key);
            in_progress = !report.complete;
            if let Some(w) = writes.get(i).filter(|w| **w < n) {
                let info = store.set_secret(A, &format!("s{w}"), format!("v{w}").as_bytes(), None).unwrap();
                prop_assert_eq!(info.key_id, key);
            }
            assert_all_decrypt(&store, n, &webhooks);
        }
        let last = store.rotate_key(RotateOptions::new().batch_rows(batch)).unwrap();
        prop_assert!(last.complete);
        let key = if in_progress { key } else { key + 1 };
        prop_assert_eq!(last.key_id, key);
        assert_all_decrypt(&store, n, &webhooks);
        prop_assert_eq!(key_configs(&store), vec![format!("secret_encryption_key_v{key}")]);
        let live: Vec<i64> = keys(&store).iter().filter(|k| k.retired_at.is_none()).map(|k| k.id).collect();
        prop_assert_eq!(live, vec![key]);
    }
}

/// Writes `keys` (hex, whitespace-separated) to `path` with `mode`.
fn key_file(path: &Path, keys: &[&EncryptionKey], mode: u32) {
    let text: Vec<String> = keys.iter().map(|k| k.to_hex().to_string()).collect();
    std::fs::write(path, text.join("\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// A provider's keys serve the store: the first secret registers the ring's first key under the
/// provider's kind, the database holds no key bytes, and reads find the key by fingerprint.
fn provider_round_trip(
    dir: &Path,
    provider: impl KeyProvider + Clone + 'static,
    key: &EncryptionKey,
) {
    let path = dir.join("p.sqlite");
    let store = Store::options()
        .key_provider(provider.clone())
        .open(&path)
        .unwrap();
    let kind = provider.kind();
    store.set_secret(A, "s0", b"v0", None).unwrap();
    let registered = keys(&store);
    assert_eq!(registered.len(), 1);
    assert_eq!(registered[0].provider, kind);
    assert_eq!(
        registered[0].fingerprint.as_deref(),
        Some(&*key.fingerprint())
    );
    assert!(
        key_configs(&store).is_empty(),
        "no key bytes in the database"
    );
    drop(store);
    let store = Store::options().key_provider(provider).open(&path).unwrap();
    assert_eq!(store.decrypt_secret(A, "s0").unwrap().expose(), b"v0");
    // Without the provider the key is not to be had, and reading creates none.
    let store = Store::open(&path).unwrap();
    assert!(matches!(
        store.decrypt_secret(A, "s0"),
        Err(Error::KeyNotServed { id: 1, .. })
    ));
    assert_eq!(keys(&store).len(), 1);
    assert!(key_configs(&store).is_empty());
}

#[test]
fn the_environment_provider_serves_the_key_and_names_a_missing_variable() {
    let vars = [
        (
            "SEED_KEYS_TEST_ENV",
            EncryptionKey::generate().to_hex().to_string(),
        ),
        ("SEED_KEYS_TEST_BAD", "abc".to_string()),
    ];
    if !run_in_child(
        "the_environment_provider_serves_the_key_and_names_a_missing_variable",
        &vars,
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let provider = EnvKeyProvider::new("SEED_KEYS_TEST_ENV");
    let key = provider.keys().unwrap().remove(0);
    provider_round_trip(dir.path(), provider, &key);
    let unset = EnvKeyProvider::new("SEED_KEYS_TEST_UNSET");
    assert!(
        matches!(unset.keys(), Err(Error::KeyEnvUnset { name }) if name == "SEED_KEYS_TEST_UNSET")
    );
    let err = EnvKeyProvider::new("SEED_KEYS_TEST_BAD")
        .keys()
        .unwrap_err();
    assert!(
        matches!(&err, Error::KeyMalformed { provider, .. } if provider == "env:SEED_KEYS_TEST_BAD")
    );
    assert!(!err.to_string().contains("abc"), "{err}");
    // Reading with an unreachable provider creates no key either.
    let fresh = Store::options()
        .key_provider(unset)
        .open(dir.path().join("f.sqlite"))
        .unwrap();
    assert!(matches!(
        fresh.decrypt_secret(A, "x"),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        fresh.set_secret(A, "x", b"v", None),
        Err(Error::KeyEnvUnset { .. })
    ));
    assert!(keys(&fresh).is_empty() && key_configs(&fresh).is_empty());
}

#[test]
fn the_file_provider_serves_the_key_and_refuses_a_file_others_can_read() {
    let dir = tempfile::tempdir().unwrap();
    let key = EncryptionKey::generate();
    let file = dir.path().join("secret.key");
    key_file(&file, &[&key], 0o600);
    provider_round_trip(dir.path(), FileKeyProvider::new(&file), &key);
    #[cfg(unix)]
    for mode in [0o640, 0o604, 0o620] {
        key_file(&file, &[&key], mode);
        match FileKeyProvider::new(&file).keys() {
            Err(Error::KeyFileExposed { path, mode: m }) => {
                assert_eq!((path, m), (file.clone(), mode))
            }
            other => panic!("mode {mode:o}: {other:?}"),
        }
    }
    let missing = FileKeyProvider::new(dir.path().join("nope.key"));
    assert!(matches!(
        missing.keys(),
        Err(Error::KeyFileUnreadable { .. })
    ));
}

#[cfg(unix)]
#[test]
fn the_command_provider_runs_a_program_without_a_shell_and_types_its_failures() {
    let dir = tempfile::tempdir().unwrap();
    let key = EncryptionKey::generate();
    let file = dir.path().join("printed.key");
    key_file(&file, &[&key], 0o600);
    // `cat <file>`: a program and an argument, as a keychain helper would be run.
    let cat = CommandKeyProvider::new("cat", [file.to_string_lossy().into_owned()]);
    provider_round_trip(dir.path(), cat, &key);
    // An argument is never interpreted by a shell.
    let marker = dir.path().join("injected");
    let sneaky = CommandKeyProvider::new("echo", [format!("x; touch {}", marker.display())]);
    assert!(matches!(sneaky.keys(), Err(Error::KeyMalformed { .. })));
    assert!(!marker.exists());
    match CommandKeyProvider::new("false", Vec::<String>::new()).keys() {
        Err(Error::KeyCommandFailed { command, status }) => {
            assert_eq!(command, "false");
            assert!(status.contains('1'), "{status}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        CommandKeyProvider::new("/no/such/program", ["a"]).keys(),
        Err(Error::KeyCommandSpawn { command, .. }) if command == "/no/such/program a"
    ));
}

#[test]
fn an_external_provider_rotates_to_the_first_key_of_its_ring_and_needs_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.sqlite");
    let file = dir.path().join("ring.key");
    let (old, new) = (EncryptionKey::generate(), EncryptionKey::generate());
    key_file(&file, &[&old], 0o600);
    let store = Store::options()
        .key_provider(FileKeyProvider::new(&file))
        .open(&path)
        .unwrap();
    let webhooks = fill(&store, 5);
    assert!(matches!(
        store.rotate_key(RotateOptions::new()),
        Err(Error::NoNewKey { .. })
    ));
    // The new key first, the old one kept after it until the rotation retires it.
    key_file(&file, &[&new, &old], 0o600);
    let report = store
        .rotate_key(RotateOptions::new().batch_rows(2))
        .unwrap();
    assert!(report.complete);
    assert_eq!((report.key_id, report.retired.clone()), (2, vec![1]));
    key_file(&file, &[&new], 0o600);
    assert_all_decrypt(&store, 5, &webhooks);
}

#[test]
fn rotating_from_the_database_to_a_file_leaves_no_key_in_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.sqlite");
    let webhooks = fill(&Store::open(&path).unwrap(), 4);
    let file = dir.path().join("ring.key");
    key_file(&file, &[&EncryptionKey::generate()], 0o600);
    let store = Store::options()
        .key_provider(FileKeyProvider::new(&file))
        .open(&path)
        .unwrap();
    let report = store.rotate_key(RotateOptions::new()).unwrap();
    assert!(report.complete);
    assert!(key_configs(&store).is_empty());
    assert_eq!(keys(&store)[1].provider, ProviderKind::File);
    assert_all_decrypt(&store, 4, &webhooks);
}

/// Whether `needle` occurs anywhere in the database's files.
fn bytes_in_files(db: &Path, needle: &[u8]) -> Vec<String> {
    ["", "-wal", "-journal"]
        .iter()
        .filter_map(|suffix| {
            let file = format!("{}{suffix}", db.display());
            let bytes = std::fs::read(&file).ok()?;
            bytes
                .windows(needle.len())
                .any(|w| w == needle)
                .then_some(file)
        })
        .collect()
}

#[test]
fn moving_the_key_to_a_file_removes_its_bytes_from_the_database_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.sqlite");
    let store = Store::open(&path).unwrap();
    let webhooks = fill(&store, 20);
    // Several writes of the page holding the key, so older copies of it lie in the file.
    for i in 0..20 {
        store
            .set_secret(A, &format!("s{i}"), format!("v{i}").as_bytes(), None)
            .unwrap();
    }
    let key = server_config::get(&store.conn().unwrap(), "secret_encryption_key_v1")
        .unwrap()
        .unwrap()
        .value;
    drop(store);
    let store = Store::open(&path).unwrap();
    assert!(
        !bytes_in_files(&path, &key).is_empty(),
        "the key is in the file before"
    );
    let file = dir.path().join("moved.key");
    let report = store.move_key_out(&FileKeyProvider::new(&file)).unwrap();
    assert!(report.stored_by_target && report.log_truncated);
    assert_eq!(report.key_id, 1);
    assert_eq!(bytes_in_files(&path, &key), Vec::<String>::new());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    assert!(key_configs(&store).is_empty());
    assert_eq!(keys(&store)[0].provider, ProviderKind::File);
    drop(store);
    assert_eq!(bytes_in_files(&path, &key), Vec::<String>::new());
    let store = Store::options()
        .key_provider(FileKeyProvider::new(&file))
        .open(&path)
        .unwrap();
    assert_all_decrypt(&store, 20, &webhooks);
}

/// The webhook secrets of `A`, read back: each must decrypt.
fn webhooks_of(store: &Store) -> Vec<(String, String)> {
    let conn = store.conn().unwrap();
    let mut stmt = conn
        .prepare("SELECT trigger_id FROM webhook_trigger_credentials ORDER BY trigger_id")
        .unwrap();
    let ids: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    ids.into_iter()
        .map(|id| {
            let secret = store.webhook_secret(A, &id).unwrap().expose().to_owned();
            (id, secret)
        })
        .collect()
}

#[test]
fn moving_the_key_to_an_environment_variable_needs_it_set_to_the_same_key() {
    const NAME: &str = "moving_the_key_to_an_environment_variable_needs_it_set_to_the_same_key";
    let target = EnvKeyProvider::new("SEED_KEYS_TEST_MOVE");
    if std::env::var_os(CHILD).is_some() {
        // The child: the variable is set, to the right key or not (SEED_KEYS_TEST_RIGHT).
        let path = std::path::PathBuf::from(std::env::var("SEED_KEYS_TEST_DB").unwrap());
        let right = std::env::var("SEED_KEYS_TEST_RIGHT").unwrap() == "1";
        let store = Store::open(&path).unwrap();
        if !right {
            assert!(matches!(
                store.move_key_out(&target),
                Err(Error::KeyNotServed { id: 1, .. })
            ));
            // Nothing moved: the key is still in the database.
            assert_eq!(key_configs(&store), vec!["secret_encryption_key_v1"]);
            return;
        }
        let key = server_config::get(&store.conn().unwrap(), "secret_encryption_key_v1")
            .unwrap()
            .unwrap()
            .value;
        let webhooks = webhooks_of(&store);
        store.move_key_out(&target).unwrap();
        assert_eq!(bytes_in_files(&path, &key), Vec::<String>::new());
        let store = Store::options().key_provider(target).open(&path).unwrap();
        assert_all_decrypt(&store, 3, &webhooks);
        // Refusals: the database as a target, a key already out.
        assert!(matches!(
            store.move_key_out(&seed_agents_store::keys::DatabaseKeyProvider),
            Err(Error::KeyMoveRefused { .. })
        ));
        assert!(matches!(
            store.move_key_out(&FileKeyProvider::new(path.with_extension("key"))),
            Err(Error::KeyMoveRefused { .. })
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.sqlite");
    let store = Store::open(&path).unwrap();
    fill(&store, 3);
    assert!(matches!(
        store.move_key_out(&target),
        Err(Error::KeyEnvUnset { .. })
    ));
    let key = server_config::get(&store.conn().unwrap(), "secret_encryption_key_v1")
        .unwrap()
        .unwrap()
        .value;
    drop(store);
    let db = ("SEED_KEYS_TEST_DB", path.display().to_string());
    let wrong = EncryptionKey::generate().to_hex().to_string();
    run_in_child(
        NAME,
        &[
            db.clone(),
            ("SEED_KEYS_TEST_MOVE", wrong),
            ("SEED_KEYS_TEST_RIGHT", "0".into()),
        ],
    );
    run_in_child(
        NAME,
        &[
            db,
            ("SEED_KEYS_TEST_MOVE", hex::encode(&key)),
            ("SEED_KEYS_TEST_RIGHT", "1".into()),
        ],
    );
    // A rotation in progress is refused too (a database key again, after a rotation).
    let store = Store::open(dir.path().join("r.sqlite")).unwrap();
    fill(&store, 3);
    store
        .rotate_key(RotateOptions::new().batch_rows(1).max_batches(1))
        .unwrap();
    assert!(matches!(
        store.move_key_out(&FileKeyProvider::new(dir.path().join("r.key"))),
        Err(Error::KeyMoveRefused { .. })
    ));
    assert!(!dir.path().join("r.key").exists());
}

#[test]
fn the_typescript_file_upgrades_and_its_secret_reads_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ts.sqlite");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/ts-server-v11.sqlite"
        ),
        &path,
    )
    .unwrap();
    let store = Store::open(&path).unwrap();
    // Its one secret was written under a key the file does not hold: as before, decrypting it
    // is NoSecretKey and creates no key.
    let secret = {
        let conn = store.conn().unwrap();
        conn.query_row("SELECT account_id, name, key_id FROM secrets", [], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .unwrap()
    };
    assert_eq!(secret.2, 1);
    assert!(matches!(
        store.decrypt_secret(&secret.0, &secret.1),
        Err(Error::NoSecretKey)
    ));
    assert!(key_configs(&store).is_empty());
    // The first set creates key 1's bytes under their original name, as before.
    store.set_secret(&secret.0, "new", b"value", None).unwrap();
    assert_eq!(key_configs(&store), vec!["secret_encryption_key_v1"]);
    assert_eq!(
        store.decrypt_secret(&secret.0, "new").unwrap().expose(),
        b"value"
    );
    assert!(keys(&store)[0].fingerprint.is_some());
}
