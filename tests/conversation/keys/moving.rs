//! Moving the key out of the database (to a file, to an environment variable) and the TypeScript
//! server's file.

use super::*;

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
        &support::child_test!(NAME),
        &[
            db.clone(),
            ("SEED_KEYS_TEST_MOVE", wrong),
            ("SEED_KEYS_TEST_RIGHT", "0".into()),
        ],
    );
    run_in_child(
        &support::child_test!(NAME),
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
