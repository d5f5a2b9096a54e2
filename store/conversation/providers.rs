//! Model providers (`model_providers`): an account's provider configurations.
//!
//! Invariant: `(account_id, name)` is unique. Create and rename check it and write in one
//! `BEGIN IMMEDIATE` transaction (with the account touched in the same transaction), so a
//! duplicate is a typed [`Error::Conflict`] rather than a constraint failure; the unique index
//! still backs it up. The provider `type` column always equals `config_cbor.type`. Every change
//! appends its audit event in its own transaction, naming the provider, never its configuration;
//! naming another account's provider is recorded as a refused access.

use crate::accounts;
use crate::audit::Event;
use crate::error::{Error, Result};
use crate::payload::ModelProviderConfig;
use crate::schema::audit_events::Kind;
use crate::schema::model_providers::{self, Row};
use crate::values::cbor::Cbor;
use crate::values::ids;
use crate::Store;

/// The longest provider name accepted, in bytes.
pub const MAX_PROVIDER_NAME_BYTES: usize = 256;

/// Trims and checks a provider name.
fn provider_name(name: &str) -> Result<&str> {
    crate::values::check::name("name", name, MAX_PROVIDER_NAME_BYTES)
}

/// Checks the configuration's type (it is also the `type` column).
fn provider_type(config: &ModelProviderConfig) -> Result<()> {
    crate::values::check::non_empty("config.provider_type", &config.provider_type)
}

/// The audit event of a change to `row`.
fn event<'a>(row: &'a Row, action: &'static str) -> Event<'a> {
    Event::done(
        &row.account_id,
        Kind::Provider,
        action,
        format!("model provider {}", row.id),
    )
    .detail(format!("name {:?}, type {:?}", row.name, row.r#type))
}

fn duplicate(name: &str) -> Error {
    Error::Conflict {
        what: "model provider",
        key: name.into(),
        reason: "the account already has a provider with this name".into(),
    }
}

impl Store {
    /// Creates a provider named `name` (trimmed) in `account_id`.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`name`, `config.provider_type`, `account_id`); [`Error::Conflict`]
    /// when the account already has a provider with that name; [`Error::Sqlite`] or
    /// [`Error::Cbor`] otherwise.
    pub fn create_provider(
        &self,
        account_id: &str,
        name: &str,
        config: &ModelProviderConfig,
    ) -> Result<Row> {
        let name = provider_name(name)?;
        provider_type(config)?;
        self.write(|tx, now| {
            accounts::touch(tx, account_id, now)?;
            if model_providers::get_by_name(tx, account_id, name)?.is_some() {
                return Err(duplicate(name));
            }
            let row = Row {
                id: ids::new_id(),
                account_id: account_id.into(),
                name: name.into(),
                r#type: config.provider_type.clone(),
                config_cbor: Cbor::encode(config)?,
                created_at: now,
                updated_at: now,
            };
            model_providers::insert(tx, &row)?;
            event(&row, "provider.create").record(tx, now)?;
            Ok(row)
        })
    }

    /// Replaces a provider's configuration, and renames it when `name` is given.
    ///
    /// # Errors
    /// [`Error::NotFound`] when the account has no provider `id`; [`Error::Conflict`] when the
    /// new name is taken by another provider; as [`Store::create_provider`] otherwise.
    pub fn update_provider(
        &self,
        account_id: &str,
        id: &str,
        name: Option<&str>,
        config: &ModelProviderConfig,
    ) -> Result<Row> {
        let name = name.map(provider_name).transpose()?;
        provider_type(config)?;
        let updated = self.write(|tx, now| {
            let mut row =
                model_providers::get(tx, account_id, id)?.ok_or_else(|| Error::NotFound {
                    what: "model provider",
                    id: id.into(),
                })?;
            if let Some(name) = name {
                if name != row.name {
                    if model_providers::get_by_name(tx, account_id, name)?.is_some() {
                        return Err(duplicate(name));
                    }
                    row.name = name.into();
                }
            }
            accounts::touch(tx, account_id, now)?;
            row.r#type = config.provider_type.clone();
            row.config_cbor = Cbor::encode(config)?;
            row.updated_at = now;
            model_providers::update(tx, &row)?;
            event(&row, "provider.update").record(tx, now)?;
            Ok(row)
        });
        self.audit_refused(account_id, updated)
    }

    /// The provider `id` of `account_id`.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn provider(&self, account_id: &str, id: &str) -> Result<Option<Row>> {
        model_providers::get(&self.reading()?, account_id, id)
    }

    /// The provider named `name` (trimmed) of `account_id`.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn provider_by_name(&self, account_id: &str, name: &str) -> Result<Option<Row>> {
        model_providers::get_by_name(&self.reading()?, account_id, name.trim())
    }

    /// The providers of `account_id`, by name.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn providers(&self, account_id: &str) -> Result<Vec<Row>> {
        model_providers::list_by_account_id(&self.reading()?, account_id)
    }

    /// Deletes a provider; returns whether there was one. Secrets its `secretRefs` name are
    /// left alone (they belong to the account, not the provider).
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn delete_provider(&self, account_id: &str, id: &str) -> Result<bool> {
        let deleted = self.write(|tx, now| {
            let Some(row) = model_providers::get(tx, account_id, id)? else {
                return Ok(false);
            };
            model_providers::delete(tx, account_id, id)?;
            event(&row, "provider.delete").record(tx, now)?;
            Ok(true)
        })?;
        if !deleted {
            self.audit_foreign(account_id, "model provider", id)?;
        }
        Ok(deleted)
    }
}
