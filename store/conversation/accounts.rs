//! Accounts and their delegated signers (`accounts`, `account_authorizations`).
//!
//! This module owns the lazy account row and the authorized-signer check. Its invariant: an
//! account-owned row is never written without its `accounts` row, because every writer in this
//! crate calls [`touch`] in the same transaction as the row it writes (the foreign keys would
//! refuse the row otherwise). Signer grants are single-statement upserts.

use crate::sql::db::Db;

use crate::error::{Error, Result};
use crate::query;
use crate::schema::account_authorizations::{self, Role};
use crate::values::check::invalid;
use crate::values::ids::check_id;
use crate::Store;

/// Creates the account row if it is missing, otherwise moves its `updated_at` to `now` (never
/// backwards). One statement, so it joins whatever transaction `conn` is in; every
/// account-owned write in this crate calls it first.
///
/// # Errors
/// [`Error::Invalid`] (field `account_id`) for an empty, padded or over-long id;
/// [`Error::Sqlite`] otherwise.
pub fn touch(conn: &Db, account_id: &str, now: i64) -> Result<()> {
    check_id("account_id", account_id)?;
    query!(
        "INSERT INTO accounts (id, created_at, updated_at) VALUES (?1, ?2, ?2) \
         ON CONFLICT (id) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at)",
        account_id,
        now
    )
    .execute(conn)?;
    Ok(())
}

/// The capability blob that proves a delegation, and its CID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capability {
    /// The capability blob as the envelope carried it.
    pub blob: String,
    /// The CID of the blob.
    pub cid: String,
}

impl Store {
    /// Creates the account row, or touches it (see [`touch`]).
    ///
    /// # Errors
    /// As [`touch`].
    pub fn touch_account(&self, account_id: &str) -> Result<()> {
        self.write(|tx, now| touch(tx, account_id, now))
    }

    /// Records `signer_id` as an authorized signer of `account_id` with `role`, replacing the
    /// role and capability of an existing grant (its `created_at` is kept). An AGENT grant is
    /// what a verified capability delegation writes; `capability` carries its proof.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad `account_id` or `signer_id`, or a capability with an empty
    /// blob or CID (`capability.blob`, `capability.cid`); [`Error::Sqlite`] otherwise.
    pub fn authorize_signer(
        &self,
        account_id: &str,
        signer_id: &str,
        role: Role,
        capability: Option<&Capability>,
    ) -> Result<account_authorizations::Row> {
        check_id("signer_id", signer_id)?;
        if let Some(c) = capability {
            if c.blob.is_empty() {
                return Err(invalid("capability.blob", "must not be empty"));
            }
            check_id("capability.cid", &c.cid)?;
        }
        self.write(|tx, now| {
            touch(tx, account_id, now)?;
            query!(
                "INSERT INTO account_authorizations \
                 (account_id, signer_id, role, capability, capability_cid, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (account_id, signer_id) DO UPDATE SET role = excluded.role, \
                 capability = excluded.capability, capability_cid = excluded.capability_cid",
                account_id,
                signer_id,
                role,
                capability.map(|c| c.blob.as_str()),
                capability.map(|c| c.cid.as_str()),
                now
            )
            .execute(tx)?;
            account_authorizations::get(tx, account_id, signer_id)?.ok_or_else(|| Error::NotFound {
                what: "signer",
                id: signer_id.into(),
            })
        })
    }

    /// Removes a delegated signer; returns whether there was one.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn revoke_signer(&self, account_id: &str, signer_id: &str) -> Result<bool> {
        self.write(|tx, _| Ok(account_authorizations::delete(tx, account_id, signer_id)? > 0))
    }

    /// The delegated signers of an account, by signer id.
    ///
    /// # Errors
    /// [`Error::Sqlite`], or a stored role outside OWNER/AGENT.
    pub fn signers(&self, account_id: &str) -> Result<Vec<account_authorizations::Row>> {
        account_authorizations::list_by_account_id(&self.reading()?, account_id)
    }

    /// Whether `signer_id` may act for `account_id`: the account's own key always may, any other
    /// signer only with a grant (OWNER or AGENT) in `account_authorizations`.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn is_authorized_signer(&self, account_id: &str, signer_id: &str) -> Result<bool> {
        if account_id.is_empty() || signer_id.is_empty() {
            return Ok(false);
        }
        if account_id == signer_id {
            return Ok(true);
        }
        Ok(account_authorizations::get(&self.reading()?, account_id, signer_id)?.is_some())
    }
}
