//! The gate on PostgreSQL: decides, without writing, whether the database is empty, at a known
//! version with exactly that version's structure, or to be refused, with the refusals SQLite's
//! gate makes.
//!
//! Invariant: the version and the structure are read in one `REPEATABLE READ, READ ONLY`
//! transaction (one snapshot), so a migration committed by another node is seen whole or not at
//! all, and nothing is ever written.

use super::Database;
use crate::error::{Error, Refusal, Result};
use crate::extension::{self, Extensions, Owner};
use crate::schema;
use postgres::GenericClient;
use seed_agents_model::{postgres as dialect, Schema};

/// What the gate found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No table at all in the connection's schema: install the baseline.
    Fresh,
    /// A verified database at this version (possibly behind the binary).
    At(u32),
}

impl Database {
    /// Judges the database, in one read-only snapshot.
    ///
    /// # Errors
    /// [`Error::PostgresRefused`] when the database is not one this binary can use (its
    /// structure, its version key); [`Error::Postgres`] when the server fails.
    pub fn inspect(&mut self) -> Result<State> {
        self.inspect_with(&Extensions::default())
            .map(|(state, _)| state)
    }

    /// [`Database::inspect`] of a database that may hold the registered `extensions`' tables:
    /// the store's state and each extension's version (`None`: not installed).
    pub(crate) fn inspect_with(
        &mut self,
        extensions: &Extensions,
    ) -> Result<(State, Vec<Option<u32>>)> {
        let name = self.name.clone();
        let mut tx = self
            .client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(|source| fail(&name, source))?;
        let state = judge(&mut tx, &name, extensions);
        // Nothing was written: ending the snapshot cannot lose anything.
        let _ = tx.rollback();
        state
    }
}

impl Database {
    /// The structure read from the catalogs, in the portable model both backends share: what
    /// [`Database::inspect`] compares with a version's fingerprint.
    ///
    /// # Errors
    /// [`Error::Postgres`] when the server fails.
    pub fn structure(&mut self) -> Result<Schema> {
        let name = self.name.clone();
        dialect::introspect(&mut *self.client).map_err(|e| fail(&name, e))
    }
}

/// The gate's reads, inside the caller's transaction (a migration runs them again under its
/// lock).
pub(super) fn judge(
    client: &mut impl GenericClient,
    name: &str,
    extensions: &Extensions,
) -> Result<(State, Vec<Option<u32>>)> {
    let refused = |reason| Error::PostgresRefused {
        database: name.to_string(),
        reason,
    };
    let supported = schema::SCHEMA_VERSION;
    let objects: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')",
            &[],
        )
        .map_err(|e| fail(name, e))?
        .get(0);
    if objects == 0 {
        return Ok((State::Fresh, extensions.iter().map(|_| None).collect()));
    }
    let has_config: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = 'server_config' \
             AND column_name = 'value' AND data_type = 'bytea')",
            &[],
        )
        .map_err(|e| fail(name, e))?
        .get(0);
    if !has_config {
        return Err(refused(Refusal::NoServerConfig { supported }));
    }
    let stored: Vec<String> = client
        .query(
            "SELECT key FROM server_config WHERE substr(key, 1, 10) = 'extension:'",
            &[],
        )
        .map_err(|e| fail(name, e))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut read = |key: &str| -> Result<Option<String>> {
        let row = client
            .query_opt("SELECT value FROM server_config WHERE key = $1", &[&key])
            .map_err(|e| fail(name, e))?;
        Ok(row.map(|r| String::from_utf8_lossy(r.get::<_, &[u8]>(0)).into_owned()))
    };
    let version = crate::values::version::claimed(&mut read)?.map_err(refused)?;
    if version < schema::POSTGRES_BASELINE {
        return Err(refused(Refusal::BeforePostgres {
            found: version,
            baseline: schema::POSTGRES_BASELINE,
        }));
    }
    let versions = extensions.claimed(&stored, &mut read)?.map_err(refused)?;
    let actual = dialect::introspect(client).map_err(|e| fail(name, e))?;
    let mut owners = vec![Owner {
        name: None,
        version,
        expected: expected(version),
        fingerprint: fingerprint(version),
    }];
    for (ext, v) in extensions.iter().zip(&versions) {
        if let Some(v) = *v {
            owners.push(Owner {
                name: Some(ext.name),
                version: v,
                expected: dialect::portable(&ext.model(v)),
                fingerprint: ext
                    .postgres_fingerprints
                    .iter()
                    .find(|(at, _)| *at == v)
                    .map(|(_, f)| *f)
                    .expect("the build embeds a fingerprint for every version of an extension"),
            });
        }
    }
    extension::judge(&actual, &owners, supported).map_err(refused)?;
    Ok((State::At(version), versions))
}

/// The portable structure a PostgreSQL database at `version` has.
pub(super) fn expected(version: u32) -> Schema {
    dialect::portable(&crate::values::version::model(version))
}

/// The fingerprint of [`expected`], as the build computed it.
fn fingerprint(version: u32) -> &'static str {
    schema::POSTGRES_FINGERPRINTS
        .iter()
        .find(|(v, _)| *v == version)
        .map(|(_, f)| *f)
        .expect("the build embeds a fingerprint for every version from the baseline on")
}

pub(super) fn fail(name: &str, source: postgres::Error) -> Error {
    Error::Postgres {
        database: name.to_string(),
        source,
    }
}
