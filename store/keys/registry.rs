//! The `secret_keys` registry: which key encrypts new values, which key decrypts a row, and
//! registering a new key (with its bytes in `server_config` when the database keeps it).
//!
//! Invariants: the key that encrypts is the newest one not retired; a key id is never reused
//! (the next id is one past the largest, retired keys included); a read only ever looks keys
//! up, and only [`for_sealing`] and [`register`], called inside a write, create one.

use crate::sql::db::Db;

use super::{EncryptionKey, ProviderKind, Ring};
use crate::error::{Error, Result};
use crate::schema::{secret_keys, server_config};
use crate::{query, query_as};

/// The `server_config` key holding the bytes of the database key `id`:
/// `secret_encryption_key_v<id>`, so key 1 is the original `secret_encryption_key_v1`.
pub(crate) fn config_name(id: i64) -> String {
    format!("secret_encryption_key_v{id}")
}

/// The key new values are encrypted with: the newest not retired.
pub(crate) fn current(conn: &Db) -> Result<Option<secret_keys::Row>> {
    let id =
        query!("SELECT CAST(max(id) AS INTEGER) AS id FROM secret_keys WHERE retired_at IS NULL")
            .fetch_one(conn)?
            .id;
    match id {
        Some(id) => Ok(secret_keys::get(conn, id)?),
        None => Ok(None),
    }
}

/// The keys not retired that are older than `id`: those a rotation to `id` still has to empty.
pub(crate) fn older_live(conn: &Db, id: i64) -> Result<Vec<secret_keys::Row>> {
    query_as!(
        secret_keys::Row,
        "SELECT id, provider, fingerprint, created_at, retired_at FROM secret_keys \
         WHERE retired_at IS NULL AND id < ?1 ORDER BY id",
        id
    )
    .fetch_all(conn)
}

/// The bytes of a database key; `None` when `server_config` does not hold them.
fn stored(conn: &Db, id: i64) -> Result<Option<EncryptionKey>> {
    server_config::get(conn, &config_name(id))?
        .map(|row| EncryptionKey::from_slice(&row.value))
        .transpose()
}

/// The bytes of the registered key `row`, from the database or the provider's ring. Never
/// creates a key.
///
/// # Errors
/// [`Error::NoSecretKey`] when the database has no bytes for key 1, [`Error::KeyNotServed`]
/// for any other key nobody serves, the ring's fetch error when it failed.
pub(crate) fn material(
    conn: &Db,
    ring: &mut Ring<'_>,
    row: &secret_keys::Row,
) -> Result<EncryptionKey> {
    let not_served = |provider: String| Error::KeyNotServed {
        id: row.id,
        provider,
        fingerprint: row.fingerprint.clone(),
    };
    if row.provider == ProviderKind::Database {
        return match stored(conn, row.id)? {
            Some(key) => Ok(key),
            None if row.id == 1 => Err(Error::NoSecretKey),
            None => Err(not_served(ProviderKind::Database.as_str().into())),
        };
    }
    let Some(fingerprint) = row.fingerprint.as_deref() else {
        return Err(not_served(ring.provider.describe()));
    };
    match ring.find(fingerprint)? {
        Some(key) => Ok(key.clone()),
        None => Err(not_served(ring.provider.describe())),
    }
}

/// The key that decrypts rows naming `key_id`. Never creates a key.
///
/// # Errors
/// [`Error::NotFound`] (`secret key`) for an unregistered id; as [`material`] otherwise.
pub(crate) fn for_row(conn: &Db, ring: &mut Ring<'_>, key_id: i64) -> Result<EncryptionKey> {
    let row = secret_keys::get(conn, key_id)?.ok_or_else(|| Error::NotFound {
        what: "secret key",
        id: key_id.to_string(),
    })?;
    material(conn, ring, &row)
}

/// The key to encrypt with and its id. Inside a write only: when no key is registered, it
/// creates the first (random for the database provider, the ring's first otherwise); when key 1
/// was registered by migration 0032 for rows written without any key and its bytes were never
/// created, it creates them, as the store always did for the first secret. It records the
/// fingerprint of a key registered without one.
///
/// # Errors
/// As [`material`], [`register`].
pub(crate) fn for_sealing(
    conn: &Db,
    ring: &mut Ring<'_>,
    now: i64,
) -> Result<(i64, EncryptionKey)> {
    let Some(row) = current(conn)? else {
        let key = match ring.provider.kind() {
            ProviderKind::Database => EncryptionKey::generate(),
            _ => ring.first()?.clone(),
        };
        let id = register(conn, ring.provider.kind(), &key, now)?;
        return Ok((id, key));
    };
    let never_created = row.provider == ProviderKind::Database
        && row.fingerprint.is_none()
        && stored(conn, row.id)?.is_none();
    let key = if never_created {
        let key = EncryptionKey::generate();
        query!(
            "INSERT INTO server_config (key, value) VALUES (?1, ?2)",
            config_name(row.id),
            key.bytes().as_slice()
        )
        .execute(conn)?;
        key
    } else {
        material(conn, ring, &row)?
    };
    if row.fingerprint.is_none() {
        query!(
            "UPDATE secret_keys SET fingerprint = ?1 WHERE id = ?2",
            key.fingerprint(),
            row.id
        )
        .execute(conn)?;
    }
    Ok((row.id, key))
}

/// Registers `key` under the next id (one past the largest ever used), its bytes in
/// `server_config` when `kind` is the database. Inside a write only.
///
/// # Errors
/// [`Error::Sqlite`] (a UNIQUE conflict when the key is already registered).
pub(crate) fn register(
    conn: &Db,
    kind: ProviderKind,
    key: &EncryptionKey,
    now: i64,
) -> Result<i64> {
    let id = query!("SELECT CAST(coalesce(max(id), 0) + 1 AS INTEGER) AS id FROM secret_keys")
        .fetch_one(conn)?
        .id
        // coalesce makes it never NULL
        .unwrap_or(1);
    if kind == ProviderKind::Database {
        query!(
            "INSERT INTO server_config (key, value) VALUES (?1, ?2)",
            config_name(id),
            key.bytes().as_slice()
        )
        .execute(conn)?;
    }
    secret_keys::insert(
        conn,
        &secret_keys::Row {
            id,
            provider: kind,
            fingerprint: Some(key.fingerprint()),
            created_at: now,
            retired_at: None,
        },
    )?;
    Ok(id)
}
