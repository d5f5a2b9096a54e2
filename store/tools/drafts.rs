//! Hypermedia write drafts (`agent_drafts`): created, edited and listed per account (by account,
//! by agent, by status: the table's three indexes), published once, deleted.
//!
//! Invariants, each kept in one `BEGIN IMMEDIATE` transaction: a draft's agent and signing
//! identity belong to the draft's account when they are set; a draft moves from `draft` to
//! `published` once, stamping `published_at`, `published_id` and `published_version` together,
//! and is not edited afterwards (a retried publish with the same id and version returns the
//! published row; another is a conflict).

use crate::sql::db::Db;

use crate::error::{Error, Result};
use crate::payload::{DraftContent, DraftMetadata};
use crate::schema::{agent_drafts, agents, secrets};
use crate::values::cbor::Cbor;
use crate::values::check::{invalid, non_empty, non_empty_when_given};
use crate::values::ids;
use crate::{accounts, Store};

pub use crate::schema::agent_drafts::{Row, Status};

/// The longest `content_format`, in bytes.
pub const MAX_FORMAT_BYTES: usize = 64;
/// The longest title, in bytes.
pub const MAX_TITLE_BYTES: usize = 1024;

/// The editable fields of a draft (everything but its id, account, agent, status and
/// publication).
#[derive(Debug, Clone, PartialEq)]
pub struct DraftFields {
    /// The account secret holding the signing identity the draft publishes with.
    pub signer_secret_name: Option<String>,
    /// The title.
    pub title: Option<String>,
    /// The encoding of `content` (for example `markdown`).
    pub content_format: String,
    /// The content.
    pub content: DraftContent,
    /// Free-form metadata.
    pub metadata: Option<DraftMetadata>,
    /// The document the draft edits (`hm://…`), when it edits one.
    pub edit_target: Option<String>,
    /// Where a new document will be placed (`hm://…`).
    pub location_target: Option<String>,
    /// The path name of a new document.
    pub path_name: Option<String>,
    /// The visibility it publishes with.
    pub visibility: Option<String>,
}

fn draft_not_found(id: &str) -> Error {
    Error::NotFound {
        what: "draft",
        id: id.into(),
    }
}

/// Checks the fields (formats and lengths, and that the signing identity is a secret of the
/// account) and encodes the payloads.
#[allow(clippy::type_complexity)]
fn checked(
    conn: &Db,
    account_id: &str,
    fields: &DraftFields,
) -> Result<(Cbor<DraftContent>, Option<Cbor<DraftMetadata>>)> {
    let format = &fields.content_format;
    non_empty("content_format", format)?;
    if format.len() > MAX_FORMAT_BYTES {
        return Err(invalid(
            "content_format",
            format!(
                "is {} bytes, more than the {MAX_FORMAT_BYTES} allowed",
                format.len()
            ),
        ));
    }
    if let Some(title) = &fields.title {
        if title.len() > MAX_TITLE_BYTES {
            return Err(invalid(
                "title",
                format!(
                    "is {} bytes, more than the {MAX_TITLE_BYTES} allowed",
                    title.len()
                ),
            ));
        }
    }
    non_empty_when_given("edit_target", fields.edit_target.as_deref())?;
    non_empty_when_given("location_target", fields.location_target.as_deref())?;
    non_empty_when_given("path_name", fields.path_name.as_deref())?;
    non_empty_when_given("visibility", fields.visibility.as_deref())?;
    if let Some(signer) = &fields.signer_secret_name {
        if secrets::get_by_name(conn, account_id, signer)?.is_none() {
            return Err(Error::NotFound {
                what: "secret",
                id: signer.clone(),
            });
        }
    }
    Ok((
        Cbor::encode(&fields.content)?,
        fields.metadata.as_ref().map(Cbor::encode).transpose()?,
    ))
}

impl Store {
    /// Creates a draft (status `draft`) in `account_id`, for the agent `agent_id` when given.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the field (`content_format`, `title`, `edit_target`,
    /// `location_target`, `path_name`, `visibility`, `account_id`); [`Error::NotFound`] (`agent`,
    /// `secret`) when the agent or the signing identity is not in the account;
    /// [`Error::Sqlite`] otherwise.
    pub fn create_draft(
        &self,
        account_id: &str,
        agent_id: Option<&str>,
        fields: &DraftFields,
    ) -> Result<Row> {
        self.write(|tx, now| {
            let (content_cbor, metadata_cbor) = checked(tx, account_id, fields)?;
            if let Some(agent) = agent_id {
                agents::get(tx, account_id, agent)?.ok_or_else(|| Error::NotFound {
                    what: "agent",
                    id: agent.into(),
                })?;
            }
            accounts::touch(tx, account_id, now)?;
            let row = Row {
                id: ids::new_id(),
                account_id: account_id.into(),
                agent_id: agent_id.map(str::to_owned),
                signer_secret_name: fields.signer_secret_name.clone(),
                title: fields.title.clone(),
                content_format: fields.content_format.clone(),
                content_cbor,
                metadata_cbor,
                edit_target: fields.edit_target.clone(),
                location_target: fields.location_target.clone(),
                path_name: fields.path_name.clone(),
                visibility: fields.visibility.clone(),
                status: Status::Draft,
                created_at: now,
                updated_at: now,
                published_at: None,
                published_id: None,
                published_version: None,
            };
            agent_drafts::insert(tx, &row)?;
            Ok(row)
        })
    }

    /// Replaces the editable fields of the draft `id`.
    ///
    /// # Errors
    /// As [`Store::create_draft`]; [`Error::NotFound`] (`draft`); [`Error::Conflict`] (`draft`)
    /// when it is already published.
    pub fn update_draft(&self, account_id: &str, id: &str, fields: &DraftFields) -> Result<Row> {
        self.write(|tx, now| {
            let existing =
                agent_drafts::get(tx, account_id, id)?.ok_or_else(|| draft_not_found(id))?;
            if existing.status == Status::Published {
                return Err(Error::Conflict {
                    what: "draft",
                    key: id.into(),
                    reason: "it is published and can no longer be edited".into(),
                });
            }
            let (content_cbor, metadata_cbor) = checked(tx, account_id, fields)?;
            let row = Row {
                signer_secret_name: fields.signer_secret_name.clone(),
                title: fields.title.clone(),
                content_format: fields.content_format.clone(),
                content_cbor,
                metadata_cbor,
                edit_target: fields.edit_target.clone(),
                location_target: fields.location_target.clone(),
                path_name: fields.path_name.clone(),
                visibility: fields.visibility.clone(),
                updated_at: now,
                ..existing
            };
            agent_drafts::update(tx, &row)?;
            Ok(row)
        })
    }

    /// Marks the draft `id` published as `published_id` at `published_version`, now. A retry
    /// with the same id and version returns the published row unchanged.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`published_id`, `published_version`) for an empty value;
    /// [`Error::NotFound`] (`draft`); [`Error::Conflict`] (`draft`) when it was published as
    /// something else; [`Error::Sqlite`] otherwise.
    pub fn publish_draft(
        &self,
        account_id: &str,
        id: &str,
        published_id: &str,
        published_version: &str,
    ) -> Result<Row> {
        non_empty("published_id", published_id)?;
        non_empty("published_version", published_version)?;
        self.write(|tx, now| {
            let existing =
                agent_drafts::get(tx, account_id, id)?.ok_or_else(|| draft_not_found(id))?;
            if existing.status == Status::Published {
                return if existing.published_id.as_deref() == Some(published_id)
                    && existing.published_version.as_deref() == Some(published_version)
                {
                    Ok(existing)
                } else {
                    Err(Error::Conflict {
                        what: "draft",
                        key: id.into(),
                        reason: "it was already published as another id or version".into(),
                    })
                };
            }
            let row = Row {
                status: Status::Published,
                published_at: Some(now),
                published_id: Some(published_id.into()),
                published_version: Some(published_version.into()),
                updated_at: now,
                ..existing
            };
            agent_drafts::update(tx, &row)?;
            Ok(row)
        })
    }

    /// The draft `id` of `account_id`.
    ///
    /// # Errors
    /// [`Error::Sqlite`], or a stored status outside the enum.
    pub fn draft(&self, account_id: &str, id: &str) -> Result<Option<Row>> {
        agent_drafts::get(&self.reading()?, account_id, id)
    }

    /// The drafts of `account_id`, most recently updated first.
    ///
    /// # Errors
    /// As [`Store::draft`].
    pub fn drafts(&self, account_id: &str) -> Result<Vec<Row>> {
        agent_drafts::list_by_account_id(&self.reading()?, account_id)
    }

    /// The drafts of the agent `agent_id`, most recently updated first.
    ///
    /// # Errors
    /// As [`Store::draft`].
    pub fn agent_drafts(&self, account_id: &str, agent_id: &str) -> Result<Vec<Row>> {
        agent_drafts::list_by_agent_id(&self.reading()?, account_id, agent_id)
    }

    /// The drafts of `account_id` with `status`, by id.
    ///
    /// # Errors
    /// As [`Store::draft`].
    pub fn drafts_by_status(&self, account_id: &str, status: Status) -> Result<Vec<Row>> {
        agent_drafts::list_by_status(&self.reading()?, account_id, status)
    }

    /// Deletes the draft `id`; returns whether there was one.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn delete_draft(&self, account_id: &str, id: &str) -> Result<bool> {
        self.write(|tx, _| Ok(agent_drafts::delete(tx, account_id, id)? > 0))
    }
}
