//! The key providers: environment, file and command, and an external provider's ring.

use super::*;

/// Writes `keys` (hex, whitespace-separated) to `path` with `mode`.
pub(super) fn key_file(path: &Path, keys: &[&EncryptionKey], mode: u32) {
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
pub(super) fn provider_round_trip(
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
pub(super) fn the_environment_provider_serves_the_key_and_names_a_missing_variable() {
    let vars = [
        (
            "SEED_KEYS_TEST_ENV",
            EncryptionKey::generate().to_hex().to_string(),
        ),
        ("SEED_KEYS_TEST_BAD", "abc".to_string()),
    ];
    if !run_in_child(
        &support::child_test!(
            "the_environment_provider_serves_the_key_and_names_a_missing_variable"
        ),
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
pub(super) fn the_file_provider_serves_the_key_and_refuses_a_file_others_can_read() {
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
pub(super) fn the_command_provider_runs_a_program_without_a_shell_and_types_its_failures() {
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
pub(super) fn an_external_provider_rotates_to_the_first_key_of_its_ring_and_needs_a_new_one() {
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
