//! Encrypted secrets (`secrets`) and the cipher every encrypted column uses.
//!
//! This module owns the only path plaintext takes in and out of the database. Invariants:
//! - a value is encrypted under the current key of [`crate::keys`] and its row names that key
//!   (`key_id`); the first key is created inside the write that stores the first secret, so two
//!   connections racing for it end up sharing one key; reading ([`Store::decrypt_secret`]) never
//!   creates a key;
//! - a stored value is `nonce (12 random bytes) || ciphertext || tag (16 bytes)`, AES-256-GCM,
//!   a fresh nonce per write;
//! - a set is an upsert in one `BEGIN IMMEDIATE` transaction that keeps the row's id and
//!   `created_at`;
//! - plaintext leaves only through [`Store::decrypt_secret`] as a [`SecretPlaintext`], which
//!   zeroizes its buffer on drop and whose `Debug` is redacted; it has no `Display`. Listing and
//!   metadata reads ([`SecretInfo`]) never carry the ciphertext, and no error carries either;
//! - a set or a delete appends its audit event (naming the secret, never its value) in its
//!   transaction; a failed decryption is recorded after it failed ([`crate::audit`]).

use crate::sql::db::Db;
use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes256Gcm, KeyInit, Nonce, Tag};
use rand::RngCore;
use zeroize::Zeroizing;

use crate::keys::{registry, EncryptionKey, Ring};

use crate::accounts;
use crate::audit::Event;
use crate::error::{Error, Result};
use crate::payload::SecretMetadata;
use crate::query;
use crate::schema::secrets;
use crate::values::cbor::Cbor;
use crate::values::check::invalid;
use crate::values::ids;
use crate::Store;

/// The `server_config` key of the original AES-256-GCM key (key 1 of `secret_keys`, kept under
/// this name for as long as the database provider holds it).
pub const KEY_CONFIG_NAME: &str = "secret_encryption_key_v1";
/// The length of the random nonce that starts a stored value.
pub const NONCE_BYTES: usize = 12;
/// The length of the GCM tag that ends a stored value.
pub const TAG_BYTES: usize = 16;
/// The longest secret name, in bytes (after trimming).
pub const MAX_NAME_BYTES: usize = 256;
/// The longest secret value, in bytes.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// Decrypted secret bytes. The buffer is zeroized when dropped; `Debug` prints no content and
/// there is deliberately no `Display`.
pub struct SecretPlaintext(Zeroizing<Vec<u8>>);

impl SecretPlaintext {
    /// The plaintext bytes. Keep the borrow short and do not copy it into unzeroized buffers.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// The plaintext as UTF-8, when it is.
    pub fn expose_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }
}

impl std::fmt::Debug for SecretPlaintext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretPlaintext(<redacted>)")
    }
}

/// A secret's metadata: everything but the value.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretInfo {
    /// The row id (kept across sets).
    pub id: String,
    /// The owning account.
    pub account_id: String,
    /// The name, unique within the account.
    pub name: String,
    /// Free-form metadata stored with the secret.
    pub metadata: Option<Cbor<SecretMetadata>>,
    /// When the secret was first set.
    pub created_at: i64,
    /// When it was last set: when its value was last written.
    pub updated_at: i64,
    /// The key that encrypted the value (`secret_keys.id`).
    pub key_id: i64,
    /// When a key rotation last re-encrypted the value; `None` when none has.
    pub rotated_at: Option<i64>,
}

impl From<secrets::Row> for SecretInfo {
    fn from(row: secrets::Row) -> Self {
        SecretInfo {
            id: row.id,
            account_id: row.account_id,
            name: row.name,
            metadata: row.metadata_cbor,
            created_at: row.created_at,
            updated_at: row.updated_at,
            key_id: row.key_id,
            rotated_at: row.rotated_at,
        }
    }
}

/// Trims and checks a secret name.
///
/// # Errors
/// [`Error::Invalid`] (`name`) for an empty or over-long name.
pub fn secret_name(name: &str) -> Result<&str> {
    crate::values::check::name("name", name, MAX_NAME_BYTES)
}

/// Checks a value's length against [`MAX_VALUE_BYTES`].
fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(invalid(
            "value",
            format!("must be at most {MAX_VALUE_BYTES} bytes"),
        ));
    }
    Ok(())
}

fn cipher(key: &EncryptionKey) -> Aes256Gcm {
    Aes256Gcm::new(key.bytes().into())
}

/// Encrypts `plaintext` under `key`: `nonce || ciphertext || tag`, a fresh random nonce each
/// time.
///
/// # Errors
/// [`Error::Invalid`] (`value`) for a value over [`MAX_VALUE_BYTES`].
///
/// ```
/// use seed_agents_store::{keys::EncryptionKey, secrets};
/// let key = EncryptionKey::generate();
/// let blob = secrets::encrypt(&key, b"hunter2")?;
/// assert_eq!(secrets::decrypt(&key, &blob)?.expose(), b"hunter2");
/// assert!(secrets::decrypt(&EncryptionKey::generate(), &blob).is_err());
/// # Ok::<(), seed_agents_store::Error>(())
/// ```
pub fn encrypt(key: &EncryptionKey, plaintext: &[u8]) -> Result<Vec<u8>> {
    check_value(plaintext)?;
    let mut blob = Zeroizing::new(Vec::with_capacity(
        NONCE_BYTES + plaintext.len() + TAG_BYTES,
    ));
    blob.resize(NONCE_BYTES, 0);
    rand::rngs::OsRng.fill_bytes(&mut blob[..NONCE_BYTES]);
    blob.extend_from_slice(plaintext);
    let (nonce, body) = blob.split_at_mut(NONCE_BYTES);
    let tag = cipher(key)
        .encrypt_in_place_detached(Nonce::from_slice(nonce), b"", body)
        .map_err(|_| invalid("value", "cannot be encrypted"))?;
    blob.extend_from_slice(&tag);
    // The buffer now holds only ciphertext: take it out of the zeroizing wrapper without a copy.
    Ok(std::mem::take(&mut *blob))
}

/// Decrypts a `nonce || ciphertext || tag` blob under `key`.
///
/// # Errors
/// [`Error::SecretTooShort`] for a blob that cannot hold a nonce and a tag,
/// [`Error::SecretTagMismatch`] when the tag does not verify.
pub fn decrypt(key: &EncryptionKey, blob: &[u8]) -> Result<SecretPlaintext> {
    let min = NONCE_BYTES + TAG_BYTES;
    if blob.len() < min {
        return Err(Error::SecretTooShort {
            len: blob.len(),
            min,
        });
    }
    let (nonce, rest) = blob.split_at(NONCE_BYTES);
    let (body, tag) = rest.split_at(rest.len() - TAG_BYTES);
    let mut buffer = SecretPlaintext(Zeroizing::new(body.to_vec()));
    cipher(key)
        .decrypt_in_place_detached(
            Nonce::from_slice(nonce),
            b"",
            &mut buffer.0,
            Tag::from_slice(tag),
        )
        .map_err(|_| Error::SecretTagMismatch)?;
    Ok(buffer)
}

/// A value encrypted for storing: the blob and the key that encrypted it.
pub(crate) struct Sealed {
    /// `nonce || ciphertext || tag`.
    pub(crate) ciphertext: Vec<u8>,
    /// The key's id in `secret_keys`, for the row's `key_id`.
    pub(crate) key_id: i64,
}

/// Encrypts `plaintext` under the current key, creating the first key if there is none (see
/// [`crate::keys`]). Call it inside a write transaction, so that the key it may create commits
/// with the value it encrypts; [`Store::set_secret`] does, and so do the other writers of
/// encrypted columns (MCP header secrets, webhook credentials).
///
/// # Errors
/// [`Error::Invalid`] (`value`) for a value over [`MAX_VALUE_BYTES`]; the key's errors
/// ([`Error::NoSecretKey`], [`Error::KeyNotServed`], the provider's); [`Error::Sqlite`].
pub(crate) fn seal(conn: &Db, ring: &mut Ring<'_>, now: i64, plaintext: &[u8]) -> Result<Sealed> {
    check_value(plaintext)?;
    let (key_id, key) = registry::for_sealing(conn, ring, now)?;
    Ok(Sealed {
        ciphertext: encrypt(&key, plaintext)?,
        key_id,
    })
}

/// Decrypts a stored blob under the key its row names (`key_id`). Never creates a key.
///
/// # Errors
/// As [`decrypt`], and [`Error::NoSecretKey`], [`Error::KeyNotServed`] or the provider's error
/// when the key is not to be had.
pub(crate) fn open(
    conn: &Db,
    ring: &mut Ring<'_>,
    key_id: i64,
    blob: &[u8],
) -> Result<SecretPlaintext> {
    let min = NONCE_BYTES + TAG_BYTES;
    if blob.len() < min {
        return Err(Error::SecretTooShort {
            len: blob.len(),
            min,
        });
    }
    decrypt(&registry::for_row(conn, ring, key_id)?, blob)
}

impl Store {
    /// Sets the secret `name` (trimmed) of `account_id` to `value`: creates it, or replaces the
    /// value and metadata of the existing one, keeping its id and `created_at`. Creates the
    /// server key on first use (see the module doc).
    ///
    /// # Errors
    /// [`Error::Invalid`] (`name`, `value`, `account_id`); the key's errors
    /// ([`Error::NoSecretKey`], [`Error::KeyNotServed`], the provider's); [`Error::Sqlite`].
    pub fn set_secret(
        &self,
        account_id: &str,
        name: &str,
        value: &[u8],
        metadata: Option<&SecretMetadata>,
    ) -> Result<SecretInfo> {
        let name = secret_name(name)?;
        // Checked before the metadata is encoded, so a too long value is refused as such.
        check_value(value)?;
        let metadata = metadata.map(Cbor::encode).transpose()?;
        let mut ring = Ring::fetch(self.key_provider());
        let row = self.write(|tx, now| {
            accounts::touch(tx, account_id, now)?;
            let sealed = seal(tx, &mut ring, now, value)?;
            let row = match secrets::get_by_name(tx, account_id, name)? {
                Some(existing) => {
                    let row = secrets::Row {
                        ciphertext: sealed.ciphertext,
                        key_id: sealed.key_id,
                        metadata_cbor: metadata.clone(),
                        updated_at: now,
                        ..existing
                    };
                    secrets::update(tx, &row)?;
                    row
                }
                None => {
                    let row = secrets::Row {
                        id: ids::new_id(),
                        account_id: account_id.into(),
                        name: name.into(),
                        ciphertext: sealed.ciphertext,
                        metadata_cbor: metadata.clone(),
                        created_at: now,
                        updated_at: now,
                        key_id: sealed.key_id,
                        rotated_at: None,
                    };
                    secrets::insert(tx, &row)?;
                    row
                }
            };
            Event::secret(account_id, "secret.set", name).record(tx, now)?;
            Ok(row)
        })?;
        Ok(row.into())
    }

    /// The metadata of the secret `name` (trimmed) of `account_id`, without its value.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn secret(&self, account_id: &str, name: &str) -> Result<Option<SecretInfo>> {
        Ok(secrets::get_by_name(&self.reading()?, account_id, name.trim())?.map(SecretInfo::from))
    }

    /// The metadata of every secret of `account_id`, by name, without values.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn secrets(&self, account_id: &str) -> Result<Vec<SecretInfo>> {
        Ok(secrets::list_by_account_id(&self.reading()?, account_id)?
            .into_iter()
            .map(SecretInfo::from)
            .collect())
    }

    /// Deletes the secret `name` (trimmed) of `account_id`; returns whether there was one.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn delete_secret(&self, account_id: &str, name: &str) -> Result<bool> {
        self.write(|tx, now| {
            let deleted = query!(
                "DELETE FROM secrets WHERE account_id = ?1 AND name = ?2",
                account_id,
                name.trim()
            )
            .execute(tx)?;
            if deleted > 0 {
                Event::secret(account_id, "secret.delete", name.trim()).record(tx, now)?;
            }
            Ok(deleted > 0)
        })
    }

    /// Decrypts the secret `name` (trimmed) of `account_id`: the one way plaintext leaves the
    /// store. Never creates a key.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`secret`) when there is no such secret; the key's errors
    /// ([`Error::NoSecretKey`], [`Error::KeyNotServed`], the provider's);
    /// [`Error::SecretTooShort`], [`Error::SecretTagMismatch`]; [`Error::Sqlite`].
    pub fn decrypt_secret(&self, account_id: &str, name: &str) -> Result<SecretPlaintext> {
        let name = name.trim();
        let mut ring = Ring::fetch(self.key_provider());
        // The row and the key it names in one snapshot: a rotation committing between the two
        // reads could otherwise retire that key in between.
        let conn = self.snapshot()?;
        let row =
            secrets::get_by_name(&conn, account_id, name)?.ok_or_else(|| Error::NotFound {
                what: "secret",
                id: name.into(),
            })?;
        let opened = open(&conn.db(), &mut ring, row.key_id, &row.ciphertext);
        drop(conn);
        self.audit_decrypt(account_id, || format!("secret {name}"), opened)
    }
}
