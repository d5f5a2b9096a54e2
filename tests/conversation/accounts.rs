//! Accounts and signers, model providers and encrypted secrets.

use std::sync::{Arc, Barrier};

use seed_agents_store::payload::*;
use seed_agents_store::schema::{account_authorizations::Role, accounts, secrets as secret_rows};
use seed_agents_store::secrets::{self, SecretPlaintext, KEY_CONFIG_NAME};
use seed_agents_store::{Error, ErrorKind, Store};
use support::backend::open;

const A: &str = "acct-a";
const B: &str = "acct-b";
const T: i64 = 1_764_000_000_000;

fn key_count(store: &Store) -> i64 {
    seed_agents_store::query!(
        "SELECT CAST(count(*) AS INTEGER) AS \"n!\" FROM server_config WHERE key = ?1",
        KEY_CONFIG_NAME
    )
    .fetch_one(&store.reading().unwrap())
    .unwrap()
    .n
}

// ---------------------------------------------------------------------------------------------
// Accounts and signers

#[test]
fn accounts_are_created_lazily_and_touched_by_account_owned_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = open(dir.path());
    assert!(accounts::get(&store.reading().unwrap(), A)
        .unwrap()
        .is_none());
    store
        .create_provider(A, "p", &ModelProviderConfig::new("openai"))
        .unwrap();
    let row = accounts::get(&store.reading().unwrap(), A)
        .unwrap()
        .unwrap();
    assert_eq!((row.created_at, row.updated_at), (T, T));
    clock.set(T + 50);
    store.set_secret(A, "k", b"v", None).unwrap();
    let row = accounts::get(&store.reading().unwrap(), A)
        .unwrap()
        .unwrap();
    assert_eq!((row.created_at, row.updated_at), (T, T + 50));
    // A clock that goes backwards never moves updated_at back.
    clock.set(T + 10);
    store.touch_account(A).unwrap();
    assert_eq!(
        accounts::get(&store.reading().unwrap(), A)
            .unwrap()
            .unwrap()
            .updated_at,
        T + 50
    );
    for bad in ["", " padded", &"x".repeat(257)] {
        assert!(matches!(
            store.touch_account(bad),
            Err(Error::Invalid {
                field: "account_id",
                ..
            })
        ));
    }
}

#[test]
fn signers_are_authorized_by_grant_or_by_being_the_account() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    assert!(store.is_authorized_signer(A, A).unwrap());
    assert!(!store.is_authorized_signer(A, "device-1").unwrap());
    let cap = seed_agents_store::accounts::Capability {
        blob: "capability-blob".into(),
        cid: "bafy-cap".into(),
    };
    let row = store
        .authorize_signer(A, "device-1", Role::Agent, Some(&cap))
        .unwrap();
    assert_eq!(row.role, Role::Agent);
    assert_eq!(row.capability_cid.as_deref(), Some("bafy-cap"));
    store
        .authorize_signer(A, "owner-key", Role::Owner, None)
        .unwrap();
    assert!(store.is_authorized_signer(A, "device-1").unwrap());
    assert!(store.is_authorized_signer(A, "owner-key").unwrap());
    // Grants are per account.
    assert!(!store.is_authorized_signer(B, "device-1").unwrap());
    // Re-authorizing replaces role and capability, keeping created_at.
    let again = store
        .authorize_signer(A, "device-1", Role::Owner, None)
        .unwrap();
    assert_eq!((again.role, again.capability), (Role::Owner, None));
    assert_eq!(store.signers(A).unwrap().len(), 2);
    assert!(store.revoke_signer(A, "device-1").unwrap());
    assert!(!store.is_authorized_signer(A, "device-1").unwrap());
    assert!(matches!(
        store.authorize_signer(A, "", Role::Agent, None),
        Err(Error::Invalid {
            field: "signer_id",
            ..
        })
    ));
}

// ---------------------------------------------------------------------------------------------
// Model providers

#[test]
fn providers_are_created_listed_updated_and_deleted_per_account() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = open(dir.path());
    let mut config = ModelProviderConfig::new("openai");
    config.base_url = Some("https://api.example".into());
    config.extra.insert("future".into(), Ipld::Bool(true));
    let p = store.create_provider(A, "  main  ", &config).unwrap();
    assert_eq!((p.name.as_str(), p.r#type.as_str()), ("main", "openai"));
    assert_eq!(p.config_cbor.decode().unwrap(), config);
    assert_eq!(store.provider_by_name(A, "main").unwrap().unwrap().id, p.id);
    assert!(store.provider(B, &p.id).unwrap().is_none());

    clock.set(T + 1);
    let updated = store
        .update_provider(
            A,
            &p.id,
            Some("renamed"),
            &ModelProviderConfig::new("anthropic"),
        )
        .unwrap();
    assert_eq!(
        (
            updated.name.as_str(),
            updated.r#type.as_str(),
            updated.created_at,
            updated.updated_at
        ),
        ("renamed", "anthropic", T, T + 1)
    );
    assert_eq!(store.providers(A).unwrap().len(), 1);
    assert!(store.delete_provider(A, &p.id).unwrap());
    assert!(store.providers(A).unwrap().is_empty());
    assert!(matches!(
        store.update_provider(A, &p.id, None, &config),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn a_duplicate_provider_name_is_a_typed_conflict_scoped_per_account() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let config = ModelProviderConfig::new("openai");
    store.create_provider(A, "main", &config).unwrap();
    let other = store.create_provider(A, "other", &config).unwrap();
    assert!(matches!(
        store.create_provider(A, "main", &config),
        Err(Error::Conflict {
            what: "model provider",
            ..
        })
    ));
    assert!(matches!(
        store.update_provider(A, &other.id, Some("main"), &config),
        Err(Error::Conflict { .. })
    ));
    // Another account may use the name.
    store.create_provider(B, "main", &config).unwrap();
    assert!(matches!(
        store.create_provider(A, "  ", &config),
        Err(Error::Invalid { field: "name", .. })
    ));
    assert!(matches!(
        store.create_provider(A, "x", &ModelProviderConfig::new("")),
        Err(Error::Invalid {
            field: "config.provider_type",
            ..
        })
    ));
}

// ---------------------------------------------------------------------------------------------
// Secrets

#[test]
fn a_secret_round_trips_and_its_ciphertext_is_nonce_body_tag_without_the_plaintext() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let plaintext = b"sk-live-0123456789abcdef-very-secret";
    let info = store
        .set_secret(A, " openai-key ", plaintext, None)
        .unwrap();
    assert_eq!(info.name, "openai-key");
    let row = secret_rows::get_by_name(&store.reading().unwrap(), A, "openai-key")
        .unwrap()
        .unwrap();
    assert_eq!(row.ciphertext.len(), 12 + plaintext.len() + 16);
    assert!(
        !row.ciphertext
            .windows(plaintext.len())
            .any(|w| w == plaintext),
        "ciphertext contains the plaintext"
    );
    assert!(!row.ciphertext.windows(8).any(|w| w == b"sk-live-"));
    let value = store.decrypt_secret(A, "openai-key").unwrap();
    assert_eq!(value.expose(), plaintext);
    assert_eq!(
        value.expose_str(),
        Some("sk-live-0123456789abcdef-very-secret")
    );
    // Two writes of the same value use fresh nonces.
    store.set_secret(A, "again", plaintext, None).unwrap();
    let again = secret_rows::get_by_name(&store.reading().unwrap(), A, "again")
        .unwrap()
        .unwrap();
    assert_ne!(again.ciphertext[..12], row.ciphertext[..12]);
}

#[test]
fn plaintext_never_shows_in_debug_lists_or_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let info = store.set_secret(A, "k", b"hunter2-secret", None).unwrap();
    let plain: SecretPlaintext = store.decrypt_secret(A, "k").unwrap();
    let shown = format!(
        "{plain:?} {info:?} {:?} {:?}",
        store.secrets(A).unwrap(),
        store.secret(A, "k").unwrap()
    );
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("redacted"));
}

#[test]
fn setting_a_secret_again_keeps_its_id_and_created_at() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = open(dir.path());
    let mut meta = SecretMetadata::default();
    meta.insert("kind".into(), Ipld::String("api-key".into()));
    let first = store.set_secret(A, "k", b"one", Some(&meta)).unwrap();
    clock.set(T + 9);
    let second = store.set_secret(A, "k", b"two", None).unwrap();
    assert_eq!((second.id, second.created_at), (first.id, T));
    assert_eq!(second.updated_at, T + 9);
    assert_eq!(second.metadata, None);
    assert_eq!(first.metadata.unwrap().decode().unwrap(), meta);
    assert_eq!(store.decrypt_secret(A, "k").unwrap().expose(), b"two");
    assert_eq!(store.secrets(A).unwrap().len(), 1);
    // Per account.
    assert!(matches!(
        store.decrypt_secret(B, "k"),
        Err(Error::NotFound { what: "secret", .. })
    ));
    assert!(store.delete_secret(A, " k ").unwrap());
    assert!(store.secret(A, "k").unwrap().is_none());
}

#[test]
fn secret_names_and_values_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    assert!(matches!(
        store.set_secret(A, "   ", b"v", None),
        Err(Error::Invalid { field: "name", .. })
    ));
    assert!(matches!(
        store.set_secret(A, &"n".repeat(257), b"v", None),
        Err(Error::Invalid { field: "name", .. })
    ));
    store.set_secret(A, &"n".repeat(256), b"v", None).unwrap();
    store
        .set_secret(A, "big", &vec![7u8; 64 * 1024], None)
        .unwrap();
    assert!(matches!(
        store.set_secret(A, "bigger", &vec![7u8; 64 * 1024 + 1], None),
        Err(Error::Invalid { field: "value", .. })
    ));
}

#[test]
fn short_blobs_failed_tags_and_a_missing_key_are_distinct_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    // No key yet: decrypting a missing secret is NotFound, and creates no key.
    assert!(matches!(
        store.decrypt_secret(A, "k"),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(key_count(&store), 0);
    store.set_secret(A, "k", b"value", None).unwrap();
    let key = seed_agents_store::keys::EncryptionKey::from_bytes(
        seed_agents_store::schema::server_config::get(&store.reading().unwrap(), KEY_CONFIG_NAME)
            .unwrap()
            .unwrap()
            .value
            .try_into()
            .unwrap(),
    );
    for len in [0, 5, 12] {
        assert!(matches!(
            secrets::decrypt(&key, &vec![1u8; len]),
            Err(Error::SecretTooShort { .. })
        ));
    }
    // A flipped bit anywhere fails the tag.
    let mut blob = secret_rows::get_by_name(&store.reading().unwrap(), A, "k")
        .unwrap()
        .unwrap()
        .ciphertext;
    assert_eq!(secrets::decrypt(&key, &blob).unwrap().expose(), b"value");
    let last = blob.len() - 1;
    blob[last] ^= 1;
    let mismatch = secrets::decrypt(&key, &blob).unwrap_err();
    assert!(matches!(mismatch, Error::SecretTagMismatch), "{mismatch}");
    // What is stored, or the key it was written under, is at fault: not the request.
    assert_eq!(mismatch.kind(), ErrorKind::Corrupt);
    // Removing the key makes stored secrets undecryptable, and decrypting does not recreate it.
    // (A plain connection: the store's own is read-only and never deletes the key.)
    support::backend::exec(
        store.path(),
        "DELETE FROM server_config WHERE key = ?1",
        &[&KEY_CONFIG_NAME],
    );
    let no_key = store.decrypt_secret(A, "k").unwrap_err();
    assert!(matches!(no_key, Error::NoSecretKey), "{no_key}");
    // A missing key is the server's state, like a key provider that cannot serve it.
    assert_eq!(no_key.kind(), ErrorKind::Storage);
    assert_eq!(key_count(&store), 0);
    // Errors never print a value.
    let err = store.decrypt_secret(A, "k").unwrap_err().to_string();
    assert!(!err.contains("value"), "{err}");
}

#[test]
fn two_connections_racing_for_the_first_key_create_one() {
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let path = support::backend::location(dir.path(), "db.sqlite");
        drop(Store::open(&path).unwrap());
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = [A, B]
            .into_iter()
            .map(|account| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let store = Store::open(&path).unwrap();
                    barrier.wait();
                    store
                        .set_secret(account, "k", account.as_bytes(), None)
                        .unwrap();
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(key_count(&store), 1);
        // Later writes read the key back; they never replace it.
        let key = |store: &Store| -> Vec<u8> {
            seed_agents_store::schema::server_config::get(
                &store.reading().unwrap(),
                KEY_CONFIG_NAME,
            )
            .unwrap()
            .unwrap()
            .value
        };
        let before = key(&store);
        store.set_secret(A, "k2", b"more", None).unwrap();
        let after = key(&store);
        assert_eq!((before.len(), &before), (32, &after));
        // Both secrets decrypt under the one key.
        for account in [A, B] {
            assert_eq!(
                store.decrypt_secret(account, "k").unwrap().expose(),
                account.as_bytes()
            );
        }
    }
}

/// `Store::conn()` is SQLite's own connection: on PostgreSQL it is `Unsupported`, the calling
/// code's mistake (`Internal`), never the client's (`Invalid`); `reading()` works on both.
#[test]
fn conn_on_another_backend_blames_the_code_and_reading_works_on_both() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _clock) = open(dir.path());
    store.touch_account(A).unwrap();
    assert!(accounts::get(&store.reading().unwrap(), A)
        .unwrap()
        .is_some());
    let conn = store.conn();
    match &conn {
        Ok(conn) => {
            assert!(!support::backend::postgres());
            assert!(accounts::get(conn, A).unwrap().is_some());
        }
        Err(e) => {
            assert!(support::backend::postgres(), "{e}");
            assert!(matches!(e, Error::Unsupported { .. }), "{e}");
            assert_eq!(e.kind(), ErrorKind::Internal, "{e}");
        }
    }
}
