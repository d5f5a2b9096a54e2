//! The registry's first key and rotation: whole, and stopped after some batches then resumed.

use super::*;

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
