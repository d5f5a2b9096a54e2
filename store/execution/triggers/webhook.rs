//! Webhook credentials (`webhook_trigger_credentials`): one secret per webhook trigger, created
//! with the trigger.
//!
//! Invariant: the secret is stored twice and never in plaintext: `secret_hash` (SHA-256, hex),
//! which deliveries are verified against in constant time, and `secret_ciphertext`, sealed with
//! the current key (see [`crate::keys`]) so editors can read it back. Both are written in the
//! transaction that creates (or converts) the trigger.

use crate::sql::db::Db;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::keys::Ring;
use crate::payload::TriggerActivity;
use crate::schema::{agent_triggers, webhook_trigger_credentials};
use crate::triggers::checks::{check_mutable, load_trigger};
use crate::triggers::firings::{Admission, FiringKey, FiringRequest};
use crate::values::check::invalid;
use crate::{query, Store};

/// A webhook secret in plaintext. Zeroized on drop; `Debug` prints no content.
pub struct WebhookSecret(Zeroizing<String>);

impl WebhookSecret {
    /// The secret, for the editor who asked for it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(..)")
    }
}

/// The stored hash of a secret: SHA-256, lowercase hex.
fn secret_hash(secret: &[u8]) -> String {
    hex::encode(Sha256::digest(secret))
}

/// The digest recorded for a webhook body: `sha256:` and the hex SHA-256.
pub fn body_digest(body: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(body)))
}

/// Creates the credential of `trigger` inside the caller's transaction: 32 random bytes as
/// `whsec_` + hex, hashed and sealed.
pub(crate) fn create_credential(
    conn: &Db,
    ring: &mut Ring<'_>,
    trigger: &agent_triggers::Row,
    now: i64,
) -> Result<WebhookSecret> {
    let mut bytes = Zeroizing::new([0u8; 32]);
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, bytes.as_mut());
    let secret = Zeroizing::new(format!("whsec_{}", hex::encode(bytes.as_ref())));
    let sealed = crate::secrets::seal(conn, ring, now, secret.as_bytes())?;
    webhook_trigger_credentials::insert(
        conn,
        &webhook_trigger_credentials::Row {
            trigger_id: trigger.id.clone(),
            account_id: trigger.account_id.clone(),
            secret_hash: secret_hash(secret.as_bytes()),
            secret_ciphertext: sealed.ciphertext,
            created_at: now,
            updated_at: now,
            key_id: sealed.key_id,
            rotated_at: None,
        },
    )?;
    Ok(WebhookSecret(secret))
}

/// The credential, or [`Error::NotFound`].
fn credential(
    conn: &Db,
    account_id: &str,
    trigger_id: &str,
) -> Result<webhook_trigger_credentials::Row> {
    webhook_trigger_credentials::get(conn, account_id, trigger_id)?.ok_or_else(|| Error::NotFound {
        what: "webhook credential",
        id: trigger_id.to_owned(),
    })
}

impl Store {
    /// The webhook secret of a trigger, decrypted for an editor.
    ///
    /// # Errors
    /// [`Error::NotFound`] when the trigger has no credential, the secrets module's errors when
    /// the ciphertext does not open under the server key.
    pub fn webhook_secret(&self, account_id: &str, trigger_id: &str) -> Result<WebhookSecret> {
        let mut ring = Ring::fetch(self.key_provider());
        // The credential and the key it names in one snapshot (see `Store::decrypt_secret`).
        let conn = self.snapshot()?;
        let row = credential(&conn.db(), account_id, trigger_id)?;
        let opened =
            crate::secrets::open(&conn.db(), &mut ring, row.key_id, &row.secret_ciphertext);
        drop(conn);
        let target = || format!("webhook credential {trigger_id}");
        let plain = self.audit_decrypt(account_id, target, opened)?;
        let text = plain
            .expose_str()
            .ok_or_else(|| invalid("secret_ciphertext", "does not decrypt to text"))?;
        Ok(WebhookSecret(Zeroizing::new(text.to_owned())))
    }

    /// Whether `presented` is the trigger's webhook secret, compared in constant time (hash
    /// against hash). A trigger without a credential verifies nothing.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn verify_webhook_secret(
        &self,
        account_id: &str,
        trigger_id: &str,
        presented: &str,
    ) -> Result<bool> {
        let Some(row) = webhook_trigger_credentials::get(&self.reading()?, account_id, trigger_id)?
        else {
            return Ok(false);
        };
        let presented = secret_hash(presented.as_bytes());
        Ok(bool::from(
            presented.as_bytes().ct_eq(row.secret_hash.as_bytes()),
        ))
    }

    /// Admits a webhook delivery: key `webhook:<Idempotency-Key>` (a random key when the sender
    /// sent none), the body's digest recorded. A reused key with the same body is a duplicate;
    /// with a different body it is refused.
    ///
    /// # Errors
    /// [`Error::Conflict`] for a reused Idempotency-Key with a different body, and as
    /// [`Store::admit_firing`].
    pub fn admit_webhook(
        &self,
        account_id: &str,
        trigger_id: &str,
        idempotency_key: Option<&str>,
        body: &[u8],
        activity: TriggerActivity,
    ) -> Result<Admission> {
        let request = FiringRequest {
            account_id: account_id.to_owned(),
            trigger_id: trigger_id.to_owned(),
            key: FiringKey::Webhook {
                idempotency_key: idempotency_key.map(str::to_owned),
            },
            activity,
            body_digest: Some(body_digest(body)),
            matched: None,
        };
        self.admit_firing(&request)
    }

    /// Replaces a webhook trigger's secret (hash and ciphertext) and returns the new one.
    ///
    /// # Errors
    /// [`Error::NotFound`] when the trigger has no credential.
    pub fn rotate_webhook_secret(
        &self,
        account_id: &str,
        trigger_id: &str,
    ) -> Result<WebhookSecret> {
        let mut ring = Ring::fetch(self.key_provider());
        self.write(|tx, now| {
            let old = credential(tx, account_id, trigger_id)?;
            let trigger = load_trigger(tx, account_id, trigger_id)?;
            check_mutable(&trigger)?;
            webhook_trigger_credentials::delete(tx, account_id, trigger_id)?;
            let secret = create_credential(tx, &mut ring, &trigger, now)?;
            query!(
                "UPDATE webhook_trigger_credentials SET created_at = ?3 WHERE account_id = ?1 AND trigger_id = ?2",
                account_id,
                trigger_id,
                old.created_at
            )
            .execute(tx)?;
            Ok(secret)
        })
    }
}
