//! Key rotation: a new key, every encrypted value re-encrypted under it in bounded batches, the
//! old keys retired.
//!
//! Invariants: each batch is one write that re-encrypts at most `batch_rows` rows, changing each
//! row's ciphertext, `key_id` and `rotated_at` together, so a crash anywhere leaves every row
//! under a key that is still kept; a rotation is resumed by starting it again (the first write
//! finds older keys not yet retired and continues towards the newest instead of making another);
//! old keys are retired, and a database key's bytes deleted (with `secure_delete` on), in the
//! write that finds no row under them.

use crate::sql::db::Db;

use super::registry::{self, config_name};
use super::{EncryptionKey, ProviderKind, Ring};
use crate::audit::{Event, STORE_ACTOR};
use crate::error::{Error, Result};
use crate::schema::audit_events::Kind;
use crate::secrets::{decrypt, encrypt};
use crate::{query, Store};

/// Rows re-encrypted per batch (per write) by default.
pub const DEFAULT_ROTATION_BATCH: usize = 200;

/// The encrypted columns, by table: every one a rotation re-encrypts.
const TABLES: [&str; 2] = ["secrets", "webhook_trigger_credentials"];

/// How [`Store::rotate_key`] runs.
///
/// ```
/// use seed_agents_store::{keys::RotateOptions, Store};
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path().join("agents.sqlite"))?;
/// store.set_secret("acct", "token", b"v", None)?;
/// let report = store.rotate_key(RotateOptions::new().batch_rows(50))?;
/// assert!(report.complete);
/// assert_eq!(report.retired, vec![1]);
/// assert_eq!(store.secret("acct", "token")?.unwrap().key_id, report.key_id);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub struct RotateOptions {
    batch_rows: usize,
    max_batches: Option<usize>,
    progress: Box<dyn FnMut(&RotationProgress) + Send>,
}

impl Default for RotateOptions {
    fn default() -> Self {
        RotateOptions::new()
    }
}

impl std::fmt::Debug for RotateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RotateOptions")
            .field("batch_rows", &self.batch_rows)
            .field("max_batches", &self.max_batches)
            .finish_non_exhaustive()
    }
}

impl RotateOptions {
    /// [`DEFAULT_ROTATION_BATCH`] rows per batch, as many batches as it takes, no observer.
    pub fn new() -> Self {
        RotateOptions {
            batch_rows: DEFAULT_ROTATION_BATCH,
            max_batches: None,
            progress: Box::new(|_| {}),
        }
    }

    /// Rows re-encrypted per write (at least 1): the bound on how long each batch holds the
    /// write lock.
    pub fn batch_rows(mut self, rows: usize) -> Self {
        self.batch_rows = rows.max(1);
        self
    }

    /// Stops after `batches` batches, leaving the rotation in progress (the report says
    /// `complete: false`); calling [`Store::rotate_key`] again continues it.
    pub fn max_batches(mut self, batches: usize) -> Self {
        self.max_batches = Some(batches);
        self
    }

    /// Called after each batch.
    pub fn on_progress(mut self, observer: impl FnMut(&RotationProgress) + Send + 'static) -> Self {
        self.progress = Box::new(observer);
        self
    }
}

/// Where a rotation is, after a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RotationProgress {
    /// The key rows are re-encrypted under.
    pub key_id: i64,
    /// The table of the batch.
    pub table: &'static str,
    /// Rows this call has re-encrypted so far, all tables.
    pub rotated: u64,
    /// Rows still under older keys, all tables.
    pub remaining: u64,
}

/// What [`Store::rotate_key`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RotationReport {
    /// The key everything is (being) re-encrypted under.
    pub key_id: i64,
    /// Whether this call created the key (`false`: it continued an unfinished rotation).
    pub started: bool,
    /// Rows re-encrypted by this call, per table.
    pub rotated: Vec<(&'static str, u64)>,
    /// Batches (writes) this call ran.
    pub batches: u64,
    /// Rows still under older keys (0 when complete).
    pub remaining: u64,
    /// Keys retired by this call.
    pub retired: Vec<i64>,
    /// Whether no row is under an older key and every older key is retired.
    pub complete: bool,
}

/// Rows of every encrypted table still under a key older than `key_id`.
fn remaining(conn: &Db, key_id: i64) -> Result<u64> {
    let n = query!(
        "SELECT CAST((SELECT count(*) FROM secrets WHERE key_id < ?1) \
         + (SELECT count(*) FROM webhook_trigger_credentials WHERE key_id < ?1) AS INTEGER) AS n",
        key_id
    )
    .fetch_one(conn)?
    .n;
    Ok(u64::try_from(n.unwrap_or(0)).unwrap_or(0))
}

/// Starts a rotation, or finds the one in progress: the key rows go to, and whether it is new.
fn begin(conn: &Db, ring: &mut Ring<'_>, now: i64) -> Result<(i64, bool)> {
    if let Some(current) = registry::current(conn)? {
        if !registry::older_live(conn, current.id)?.is_empty() {
            return Ok((current.id, false));
        }
    }
    let key = match ring.provider.kind() {
        ProviderKind::Database => EncryptionKey::generate(),
        _ => {
            let key = ring.first()?.clone();
            let fingerprint = key.fingerprint();
            if crate::schema::secret_keys::get_by_fingerprint(conn, &fingerprint)?.is_some() {
                return Err(Error::NoNewKey {
                    provider: ring.provider.describe(),
                });
            }
            key
        }
    };
    let id = registry::register(conn, ring.provider.kind(), &key, now)?;
    Event::done(
        STORE_ACTOR,
        Kind::Secret,
        "key.create",
        format!("secret key {id}"),
    )
    .detail(format!(
        "a rotation's new key, held by {}",
        ring.provider.kind().as_str()
    ))
    .record(conn, now)?;
    Ok((id, true))
}

/// Re-encrypts up to `rows` rows of `table` under key `key_id`; returns how many.
fn batch(
    conn: &Db,
    ring: &mut Ring<'_>,
    table: &str,
    key_id: i64,
    rows: usize,
    now: i64,
) -> Result<u64> {
    let target = registry::for_row(conn, ring, key_id)?;
    let limit = i64::try_from(rows).unwrap_or(i64::MAX);
    // (row key, old key, blob) of the rows to move, whatever the table.
    let pending: Vec<(String, i64, Vec<u8>)> = if table == "secrets" {
        query!(
            "SELECT id, key_id, ciphertext FROM secrets INDEXED BY secrets_by_key_id \
             WHERE key_id < ?1 ORDER BY key_id LIMIT ?2",
            key_id,
            limit
        )
        .fetch_all(conn)?
        .into_iter()
        .map(|r| (r.id, r.key_id, r.ciphertext))
        .collect()
    } else {
        query!(
            "SELECT trigger_id, key_id, secret_ciphertext FROM webhook_trigger_credentials \
             INDEXED BY webhook_trigger_credentials_by_key_id \
             WHERE key_id < ?1 ORDER BY key_id LIMIT ?2",
            key_id,
            limit
        )
        .fetch_all(conn)?
        .into_iter()
        .map(|r| (r.trigger_id, r.key_id, r.secret_ciphertext))
        .collect()
    };
    let mut old: Option<(i64, EncryptionKey)> = None;
    for (id, from, blob) in &pending {
        let key = match &old {
            Some((k, key)) if k == from => key.clone(),
            _ => {
                let key = registry::for_row(conn, ring, *from)?;
                old = Some((*from, key.clone()));
                key
            }
        };
        let sealed = encrypt(&target, decrypt(&key, blob)?.expose())?;
        if table == "secrets" {
            query!(
                "UPDATE secrets SET ciphertext = ?1, key_id = ?2, rotated_at = ?3 WHERE id = ?4",
                sealed,
                key_id,
                now,
                id
            )
            .execute(conn)?;
        } else {
            query!(
                "UPDATE webhook_trigger_credentials SET secret_ciphertext = ?1, key_id = ?2, \
                 rotated_at = ?3 WHERE trigger_id = ?4",
                sealed,
                key_id,
                now,
                id
            )
            .execute(conn)?;
        }
    }
    Ok(pending.len() as u64)
}

/// Retires the keys older than `key_id` once no row is under them, deleting a database key's
/// bytes; returns the retired ids, or `None` while rows remain.
fn retire(conn: &Db, key_id: i64, now: i64) -> Result<Option<Vec<i64>>> {
    if remaining(conn, key_id)? > 0 {
        return Ok(None);
    }
    let mut retired = Vec::new();
    for key in registry::older_live(conn, key_id)? {
        query!(
            "UPDATE secret_keys SET retired_at = ?1 WHERE id = ?2",
            now,
            key.id
        )
        .execute(conn)?;
        if key.provider == ProviderKind::Database {
            query!(
                "DELETE FROM server_config WHERE key = ?1",
                config_name(key.id)
            )
            .execute(conn)?;
        }
        Event::done(
            STORE_ACTOR,
            Kind::Secret,
            "key.retire",
            format!("secret key {}", key.id),
        )
        .detail(format!("no value is under it since key {key_id}"))
        .record(conn, now)?;
        retired.push(key.id);
    }
    Ok(Some(retired))
}

impl Store {
    /// Rotates the secret encryption key: creates a new key (random in the database with the
    /// database provider; the first key of the provider's ring otherwise, which must not be
    /// registered yet), re-encrypts every encrypted value (secrets, MCP header secrets, webhook
    /// credentials) under it in batches of one write each, then retires the old keys, deleting
    /// their bytes when the database held them. New values are encrypted under the new key from
    /// the first write on.
    ///
    /// Resuming is calling it again: after a crash, or after [`RotateOptions::max_batches`],
    /// the next call finds the unfinished rotation and continues it (`started: false`). Every
    /// row stays readable throughout, each under the key it names. With a provider outside the
    /// database, keep the old key in the ring (after the new one) until the report says it is
    /// retired.
    ///
    /// # Errors
    /// [`Error::NoNewKey`] when an external provider's first key is already registered; the
    /// key errors of a row whose key is not to be had ([`Error::NoSecretKey`],
    /// [`Error::KeyNotServed`], the provider's); [`Error::SecretTagMismatch`] for a row that does
    /// not decrypt (the batch is rolled back, nothing is lost); [`Error::Sqlite`].
    pub fn rotate_key(&self, mut options: RotateOptions) -> Result<RotationReport> {
        let mut ring = Ring::fetch(self.key_provider());
        let (key_id, started) = self.write(|tx, now| begin(tx, &mut ring, now))?;
        let mut report = RotationReport {
            key_id,
            started,
            rotated: TABLES.iter().map(|t| (*t, 0)).collect(),
            batches: 0,
            remaining: 0,
            retired: Vec::new(),
            complete: false,
        };
        let mut total = 0;
        for (i, table) in TABLES.iter().enumerate() {
            loop {
                if options
                    .max_batches
                    .is_some_and(|max| report.batches >= max as u64)
                {
                    report.remaining = remaining(&self.reading()?.db(), key_id)?;
                    return Ok(report);
                }
                let (moved, left) = self.write(|tx, now| {
                    let moved = batch(tx, &mut ring, table, key_id, options.batch_rows, now)?;
                    Ok((moved, remaining(tx, key_id)?))
                })?;
                if moved == 0 {
                    break;
                }
                report.batches += 1;
                report.rotated[i].1 += moved;
                total += moved;
                (options.progress)(&RotationProgress {
                    key_id,
                    table,
                    rotated: total,
                    remaining: left,
                });
            }
        }
        let retired = self.with_secure_delete(|| self.write(|tx, now| retire(tx, key_id, now)))?;
        match retired {
            Some(ids) => {
                report.retired = ids;
                report.complete = true;
            }
            // Rows a concurrent call of an older rotation moved back cannot exist (new values go
            // under the newest key); this is a second rotation started meanwhile: call again.
            None => report.remaining = remaining(&self.reading()?.db(), key_id)?,
        }
        Ok(report)
    }
}
