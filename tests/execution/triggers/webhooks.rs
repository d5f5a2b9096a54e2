//! Webhook secrets (hashed, encrypted, returned, verified) and a reused idempotency key.

use super::*;

#[test]
fn webhook_secrets_are_hashed_encrypted_returned_and_verified() {
    let f = fixture();
    let created = f
        .store
        .create_trigger(&new_trigger("hook", webhook()))
        .unwrap();
    let secret = created
        .webhook_secret
        .expect("a webhook trigger gets a secret");
    let t = created.trigger;
    assert!(secret.expose().starts_with("whsec_"));
    assert_eq!(format!("{secret:?}"), "WebhookSecret(..)");
    let stored = webhook_trigger_credentials::get(&f.store.reading().unwrap(), A, &t.id)
        .unwrap()
        .unwrap();
    assert_ne!(stored.secret_hash, secret.expose());
    assert!(!stored
        .secret_ciphertext
        .windows(secret.expose().len())
        .any(|w| w == secret.expose().as_bytes()));
    assert_eq!(stored.secret_hash.len(), 64);
    assert_eq!(
        f.store.webhook_secret(A, &t.id).unwrap().expose(),
        secret.expose()
    );
    assert!(f
        .store
        .verify_webhook_secret(A, &t.id, secret.expose())
        .unwrap());
    assert!(!f
        .store
        .verify_webhook_secret(A, &t.id, "whsec_wrong")
        .unwrap());
    assert!(!f
        .store
        .verify_webhook_secret(B, &t.id, secret.expose())
        .unwrap());
    assert!(matches!(
        f.store.webhook_secret(B, &t.id).unwrap_err(),
        Error::NotFound { .. }
    ));
    let rotated = f.store.rotate_webhook_secret(A, &t.id).unwrap();
    assert_ne!(rotated.expose(), secret.expose());
    assert!(!f
        .store
        .verify_webhook_secret(A, &t.id, secret.expose())
        .unwrap());
    assert!(f
        .store
        .verify_webhook_secret(A, &t.id, rotated.expose())
        .unwrap());
    // No longer a webhook: the credential goes; a webhook again: a new one.
    let patch = TriggerPatch {
        source: Some(schedule()),
        ..TriggerPatch::default()
    };
    assert!(f
        .store
        .update_trigger(A, &t.id, &patch)
        .unwrap()
        .webhook_secret
        .is_none());
    assert!(
        webhook_trigger_credentials::get(&f.store.reading().unwrap(), A, &t.id)
            .unwrap()
            .is_none()
    );
    let patch = TriggerPatch {
        source: Some(webhook()),
        ..TriggerPatch::default()
    };
    assert!(f
        .store
        .update_trigger(A, &t.id, &patch)
        .unwrap()
        .webhook_secret
        .is_some());
}

#[test]
fn a_reused_idempotency_key_with_another_body_is_refused() {
    let f = fixture();
    let t = f
        .store
        .create_trigger(&new_trigger("hook", webhook()))
        .unwrap()
        .trigger;
    let first = admitted(
        f.store
            .admit_webhook(
                A,
                &t.id,
                Some("idem-1"),
                b"{\"a\":1}",
                TriggerActivity::default(),
            )
            .unwrap(),
    );
    assert_eq!(first.activity_key, "webhook:idem-1");
    assert!(first.body_digest.as_deref().unwrap().starts_with("sha256:"));
    assert!(matches!(
        f.store
            .admit_webhook(
                A,
                &t.id,
                Some("idem-1"),
                b"{\"a\":1}",
                TriggerActivity::default()
            )
            .unwrap(),
        Admission::Duplicate(Some(_))
    ));
    let err = f
        .store
        .admit_webhook(
            A,
            &t.id,
            Some("idem-1"),
            b"{\"a\":2}",
            TriggerActivity::default(),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Conflict {
                what: "webhook delivery",
                ..
            }
        ),
        "{err:?}"
    );
    // Without a key every delivery is its own firing.
    for _ in 0..2 {
        admitted(
            f.store
                .admit_webhook(A, &t.id, None, b"x", TriggerActivity::default())
                .unwrap(),
        );
    }
    assert_eq!(f.store.firings(A, &t.id).unwrap().len(), 3);
}
