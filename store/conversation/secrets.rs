//! Encrypted secrets (`secrets`) and the server key (`server_config.secret_encryption_key_v1`).
//!
//! This module owns the only path plaintext takes in and out of the database. Invariants:
//! - the server key is 32 random bytes created at most once: [`seal`] runs `INSERT OR IGNORE`
//!   then reads the key back inside the caller's write transaction, so two connections racing
//!   for the first secret end up sharing one key; reading ([`open`], [`Store::decrypt_secret`])
//!   never creates a key;
//! - a stored value is `nonce (12 random bytes) || ciphertext || tag (16 bytes)`, AES-256-GCM,
//!   a fresh nonce per write;
//! - a set is an upsert in one `BEGIN IMMEDIATE` transaction that keeps the row's id and
//!   `created_at`;
//! - plaintext leaves only through [`Store::decrypt_secret`] as a [`SecretPlaintext`], which
//!   zeroizes its buffer on drop and whose `Debug` is redacted; it has no `Display`. Listing and
//!   metadata reads ([`SecretInfo`]) never carry the ciphertext, and no error carries either;
//! - a set or a delete appends its audit event (naming the secret, never its value) in its
//!   transaction; a failed decryption is recorded after it failed ([`crate::audit`]).

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes256Gcm, KeyInit, Nonce, Tag};
use rand::RngCore;
use rusqlite::Connection;
use zeroize::Zeroizing;

use crate::accounts;
use crate::audit::Event;
use crate::cbor::Cbor;
use crate::check::invalid;
use crate::error::{Error, Result};
use crate::ids;
use crate::payload::SecretMetadata;
use crate::query;
use crate::schema::{secrets, server_config};
use crate::Store;

/// The `server_config` key of the AES-256-GCM key.
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
    /// When it was last set.
    pub updated_at: i64,
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
        }
    }
}

/// Trims and checks a secret name.
///
/// # Errors
/// [`Error::Invalid`] (`name`) for an empty or over-long name.
pub fn secret_name(name: &str) -> Result<&str> {
    crate::check::name("name", name, MAX_NAME_BYTES)
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

/// Reads the server key; `None` when there is none.
fn read_key(conn: &Connection) -> Result<Option<Zeroizing<Vec<u8>>>> {
    let Some(row) = server_config::get(conn, KEY_CONFIG_NAME)? else {
        return Ok(None);
    };
    let key = Zeroizing::new(row.value);
    if key.len() != 32 {
        return Err(Error::SecretKeyMalformed { len: key.len() });
    }
    Ok(Some(key))
}

/// The server key, created (32 bytes from the OS generator) when missing. `INSERT OR IGNORE` then
/// a read: whoever inserts first wins and everyone reads the winner's key. Call it inside a write
/// transaction.
fn ensure_key(conn: &Connection) -> Result<Zeroizing<Vec<u8>>> {
    if let Some(key) = read_key(conn)? {
        return Ok(key);
    }
    let mut fresh = Zeroizing::new(vec![0u8; 32]);
    rand::rngs::OsRng.fill_bytes(&mut fresh);
    query!(
        "INSERT OR IGNORE INTO server_config (key, value) VALUES (?1, ?2)",
        KEY_CONFIG_NAME,
        fresh.as_slice()
    )
    .execute(conn)?;
    read_key(conn)?.ok_or(Error::NoSecretKey)
}

fn cipher(key: &[u8]) -> Result<Aes256Gcm> {
    Aes256Gcm::new_from_slice(key).map_err(|_| Error::SecretKeyMalformed { len: key.len() })
}

/// Encrypts `plaintext` under the server key (creating the key if this database has none) and
/// returns `nonce || ciphertext || tag`. Call it inside a write transaction, so that the key it
/// may create commits with the value it encrypts; [`Store::set_secret`] does, and so can other
/// writers of encrypted columns (webhook credentials).
///
/// # Errors
/// [`Error::SecretKeyMalformed`] for a stored key that is not 32 bytes; [`Error::Invalid`]
/// (`value`) for a value over [`MAX_VALUE_BYTES`]; [`Error::Sqlite`] otherwise.
pub fn seal(conn: &Connection, plaintext: &[u8]) -> Result<Vec<u8>> {
    check_value(plaintext)?;
    let key = ensure_key(conn)?;
    let cipher = cipher(&key)?;
    let mut blob = Zeroizing::new(Vec::with_capacity(
        NONCE_BYTES + plaintext.len() + TAG_BYTES,
    ));
    blob.resize(NONCE_BYTES, 0);
    rand::rngs::OsRng.fill_bytes(&mut blob[..NONCE_BYTES]);
    blob.extend_from_slice(plaintext);
    let (nonce, body) = blob.split_at_mut(NONCE_BYTES);
    let tag = cipher
        .encrypt_in_place_detached(Nonce::from_slice(nonce), b"", body)
        .map_err(|_| invalid("value", "cannot be encrypted"))?;
    blob.extend_from_slice(&tag);
    // The buffer now holds only ciphertext: take it out of the zeroizing wrapper without a copy.
    Ok(std::mem::take(&mut *blob))
}

/// Decrypts a stored `nonce || ciphertext || tag` blob under the server key. Never creates a key.
///
/// # Errors
/// [`Error::SecretTooShort`] for a blob that cannot hold a nonce and a tag,
/// [`Error::NoSecretKey`] when the database has no key, [`Error::SecretKeyMalformed`] for a key
/// that is not 32 bytes, [`Error::SecretTagMismatch`] when the tag does not verify,
/// [`Error::Sqlite`] otherwise.
pub fn open(conn: &Connection, blob: &[u8]) -> Result<SecretPlaintext> {
    let min = NONCE_BYTES + TAG_BYTES;
    if blob.len() < min {
        return Err(Error::SecretTooShort {
            len: blob.len(),
            min,
        });
    }
    let key = read_key(conn)?.ok_or(Error::NoSecretKey)?;
    let cipher = cipher(&key)?;
    let (nonce, rest) = blob.split_at(NONCE_BYTES);
    let (body, tag) = rest.split_at(rest.len() - TAG_BYTES);
    let mut buffer = SecretPlaintext(Zeroizing::new(body.to_vec()));
    cipher
        .decrypt_in_place_detached(
            Nonce::from_slice(nonce),
            b"",
            &mut buffer.0,
            Tag::from_slice(tag),
        )
        .map_err(|_| Error::SecretTagMismatch)?;
    Ok(buffer)
}

impl Store {
    /// Sets the secret `name` (trimmed) of `account_id` to `value`: creates it, or replaces the
    /// value and metadata of the existing one, keeping its id and `created_at`. Creates the
    /// server key on first use (see the module doc).
    ///
    /// # Errors
    /// [`Error::Invalid`] (`name`, `value`, `account_id`); as [`seal`] otherwise.
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
        let row = self.write(|tx, now| {
            accounts::touch(tx, account_id, now)?;
            let ciphertext = seal(tx, value)?;
            let row = match secrets::get_by_name(tx, account_id, name)? {
                Some(existing) => {
                    let row = secrets::Row {
                        ciphertext,
                        metadata_cbor: metadata,
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
                        ciphertext,
                        metadata_cbor: metadata,
                        created_at: now,
                        updated_at: now,
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
        Ok(secrets::get_by_name(&self.conn()?, account_id, name.trim())?.map(SecretInfo::from))
    }

    /// The metadata of every secret of `account_id`, by name, without values.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn secrets(&self, account_id: &str) -> Result<Vec<SecretInfo>> {
        Ok(secrets::list_by_account_id(&self.conn()?, account_id)?
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
    /// [`Error::NotFound`] (`secret`) when there is no such secret; as [`open`] otherwise.
    pub fn decrypt_secret(&self, account_id: &str, name: &str) -> Result<SecretPlaintext> {
        let name = name.trim();
        let row = secrets::get_by_name(&self.conn()?, account_id, name)?.ok_or_else(|| {
            Error::NotFound {
                what: "secret",
                id: name.into(),
            }
        })?;
        let opened = open(&*self.conn()?, &row.ciphertext);
        self.audit_decrypt(account_id, || format!("secret {name}"), opened)
    }
}
