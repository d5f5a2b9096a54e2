//! The secrets a server owns: the values of its secret headers, stored encrypted in `secrets`
//! as `mcp-<server>-<header>`.
//!
//! Invariant: a server owns exactly the secrets its `secretRefs` name by that convention
//! (compared without case); references to other secrets are never written or deleted here.
//! Each write or delete appends its `secret.*` audit event (the name, never the value) in the
//! caller's transaction.

use crate::sql::db::Db;

use crate::audit::Event;
use crate::error::Result;
use crate::keys::Ring;
use crate::payload::{Ipld, McpServerConfig, OpenMap, SecretMetadata};
use crate::query;
use crate::schema::secrets;
use crate::values::cbor::Cbor;
use crate::values::ids;

/// The name of the secret that holds the value of `header` for the server `server`.
pub fn owned_secret_name(server: &str, header: &str) -> String {
    format!("mcp-{server}-{}", header.to_ascii_lowercase())
}

/// The owned secrets of a config: the references that follow the `mcp-<name>-<header>`
/// convention.
pub(super) fn owned_secrets(name: &str, config: &McpServerConfig) -> Vec<String> {
    // Header names are case-insensitive, and another implementation may have kept the header's
    // case in the secret's name (`mcp-docs-Authorization`): ownership is decided without case.
    config
        .secret_refs
        .iter()
        .flatten()
        .filter(|(header, secret)| secret.eq_ignore_ascii_case(&owned_secret_name(name, header)))
        .map(|(_, secret)| secret.clone())
        .collect()
}

/// Writes the secret `name` (an upsert keeping id and `created_at`), encrypted with the
/// secrets module's [`seal`](crate::secrets::seal), inside the caller's transaction.
#[allow(clippy::too_many_arguments)] // the transaction's, the key's and the secret's parts
pub(super) fn put_secret(
    conn: &Db,
    ring: &mut Ring<'_>,
    now: i64,
    account_id: &str,
    server: &str,
    header: &str,
    name: &str,
    value: &str,
) -> Result<()> {
    let sealed = crate::secrets::seal(conn, ring, now, value.as_bytes())?;
    let mut metadata = OpenMap::new();
    metadata.insert("mcpServer".into(), Ipld::String(server.into()));
    metadata.insert("header".into(), Ipld::String(header.into()));
    let metadata_cbor = Some(Cbor::encode(&SecretMetadata(metadata))?);
    match secrets::get_by_name(conn, account_id, name)? {
        Some(existing) => {
            secrets::update(
                conn,
                &secrets::Row {
                    ciphertext: sealed.ciphertext,
                    key_id: sealed.key_id,
                    metadata_cbor,
                    updated_at: now,
                    ..existing
                },
            )?;
        }
        None => secrets::insert(
            conn,
            &secrets::Row {
                id: ids::new_id(),
                account_id: account_id.into(),
                name: name.into(),
                ciphertext: sealed.ciphertext,
                metadata_cbor,
                created_at: now,
                updated_at: now,
                key_id: sealed.key_id,
                rotated_at: None,
            },
        )?,
    }
    Event::secret(account_id, "secret.set", name)
        .detail(format!("owned by MCP server {server:?}, header {header:?}"))
        .record(conn, now)
}

/// Deletes the secret `name`; returns how many rows went (0 or 1).
pub(super) fn delete_secret(conn: &Db, now: i64, account_id: &str, name: &str) -> Result<usize> {
    let deleted = query!(
        "DELETE FROM secrets WHERE account_id = ?1 AND name = ?2",
        account_id,
        name
    )
    .execute(conn)?;
    if deleted > 0 {
        Event::secret(account_id, "secret.delete", name)
            .detail("owned by an MCP server")
            .record(conn, now)?;
    }
    Ok(deleted)
}
