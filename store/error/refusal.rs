//! Why the schema gate refuses a database, and what a person should do about it.
//!
//! Invariant: only a database the gate has judged gets a refusal, each with advice that fits
//! it, and no advice deletes a database that might be fine.

use std::path::Path;

/// Why the schema gate refused a database file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The file is not a SQLite database.
    #[error("it is not a SQLite database ({message})")]
    NotADatabase {
        /// SQLite's message.
        message: String,
    },
    /// There is no `server_config` table: the file predates version tracking.
    #[error("it has no server_config table, so its schema version is unknown (it predates version tracking); this binary is at version {supported}")]
    NoServerConfig {
        /// This binary's version.
        supported: u32,
    },
    /// The legacy `schema_version` key is present.
    #[error("it carries the legacy schema_version key ({value:?}) from before migrations were tracked; this binary is at version {supported}")]
    LegacyVersionKey {
        /// The legacy value, as text.
        value: String,
        /// This binary's version.
        supported: u32,
    },
    /// `schema_migration_version` is missing.
    #[error("server_config has no schema_migration_version key, so its schema version is unknown; this binary is at version {supported}")]
    MissingVersion {
        /// This binary's version.
        supported: u32,
    },
    /// `schema_migration_version` is not a version number.
    #[error("its schema_migration_version {value:?} is not a version number; this binary is at version {supported}")]
    UnparseableVersion {
        /// The stored value, as text.
        value: String,
        /// This binary's version.
        supported: u32,
    },
    /// The file is newer than this binary.
    #[error("it is at schema version {found}, newer than this binary's version {supported}")]
    VersionAhead {
        /// The file's version.
        found: u32,
        /// This binary's version.
        supported: u32,
    },
    /// SQLite finds the file damaged: a corrupt page, an index that disagrees with its table or
    /// a broken foreign key found before a migration, or a file cut short.
    #[error("it is damaged: {detail}")]
    Corrupt {
        /// What was found.
        detail: String,
    },
    /// A PostgreSQL database claims a version from before the PostgreSQL backend existed.
    #[error("it claims schema version {found}, but PostgreSQL databases start at version {baseline}, so no store wrote it")]
    BeforePostgres {
        /// The claimed version.
        found: u32,
        /// The first version a PostgreSQL database can be at.
        baseline: u32,
    },
    /// The structure is not the one of the version the file claims: an object of the store's
    /// differs, or the file holds objects that belong neither to the store nor to a declared
    /// extension (`unowned`, also in the diff).
    #[error("it claims schema version {version} (this binary is at version {supported}), but its structure differs from version {version}:\n{diff}")]
    StructureMismatch {
        /// The claimed version.
        version: u32,
        /// This binary's version.
        supported: u32,
        /// The differences, one object per entry.
        diff: String,
        /// The objects that belong to nobody (empty when only the store's own differ).
        unowned: Vec<String>,
    },
    /// The file holds an extension's tables, and this program does not declare it.
    #[error("it holds the tables of the extension `{name}` (version {version:?}), which this program does not declare, so they cannot be checked or migrated")]
    UndeclaredExtension {
        /// The extension's name, from its version key.
        name: String,
        /// Its stored version, as text.
        version: String,
    },
    /// An extension's version key does not hold a version number.
    #[error("the version of the extension `{name}` ({value:?}) is not a version number")]
    UnparseableExtensionVersion {
        /// The extension.
        name: String,
        /// The stored value, as text.
        value: String,
    },
    /// An extension in the file is newer than this program's declaration of it.
    #[error("its extension `{name}` is at version {found}, newer than this program's version {supported} of it")]
    ExtensionAhead {
        /// The extension.
        name: String,
        /// The file's version of it.
        found: u32,
        /// This program's version of it.
        supported: u32,
    },
    /// An extension's objects are not the structure of the version its key claims.
    #[error("its extension `{name}` claims version {version}, but its structure differs from version {version}:\n{diff}")]
    ExtensionStructureMismatch {
        /// The extension.
        name: String,
        /// The claimed version.
        version: u32,
        /// The differences, one object per entry.
        diff: String,
    },
}

impl Refusal {
    /// What a person should do about a file refused for this reason, naming `path`. Only a file
    /// that is not what this store wrote is ever suggested to be moved aside; no advice deletes a
    /// database that might be fine.
    pub fn advice(&self, path: &Path) -> String {
        let p = path.display();
        match self {
            Refusal::NotADatabase { .. } => format!(
                "Check --db-path and $SEED_AGENTS_DB_PATH for a mistyped path first: {p} is not the database. \
                 If it is the right path and its content is not needed, move it aside (mv {p} {p}.bad) and open again to start fresh."
            ),
            Refusal::NoServerConfig { .. }
            | Refusal::LegacyVersionKey { .. }
            | Refusal::MissingVersion { .. }
            | Refusal::UnparseableVersion { .. }
            | Refusal::BeforePostgres { .. } => format!(
                "Check --db-path for a mistyped path first: this file was not written by a version of the server this binary can upgrade. \
                 To start fresh, move {p} and its -wal/-shm files aside and open again."
            ),
            Refusal::VersionAhead { .. } => {
                "This binary is older than the database: upgrade the binary. The file is fine; do not delete it.".to_string()
            }
            Refusal::Corrupt { .. } => format!(
                "Restore {p} from a backup, or salvage its rows into a new file with `sqlite3 {p} .recover | sqlite3 {p}.recovered` and open that one; `seed-agents-db check` lists what is damaged. The file was left as it was."
            ),
            Refusal::StructureMismatch { unowned, .. } if !unowned.is_empty() => {
                self.extension_advice("The file")
            }
            Refusal::StructureMismatch { .. } => format!(
                "Its tables were changed outside the migrations: restore {p} from a backup, or repair the structure listed above. The file was left as it was."
            ),
            _ => self.extension_advice("The file"),
        }
    }

    /// The advice for the refusals about extensions and objects of no one, which read the same
    /// on both backends (`what` is "The file" or "The database").
    fn extension_advice(&self, what: &str) -> String {
        match self {
            Refusal::StructureMismatch { unowned, .. } => format!(
                "{} belong{} neither to the store nor to a declared extension. If your server added {them} on purpose, declare {them} as an extension (its own schema.sql and migrations; see the README's \"Your own tables\") and open with OpenOptions::extension; otherwise find out what wrote {them}. {what} was left as it was.",
                unowned.join(", "),
                if unowned.len() == 1 { "s" } else { "" },
                them = if unowned.len() == 1 { "it" } else { "them" },
            ),
            Refusal::UndeclaredExtension { name, .. } => format!(
                "Open it from the server that declares the extension `{name}` (OpenOptions::extension), or add that declaration to this program. {what} is fine; do not delete it."
            ),
            Refusal::UnparseableExtensionVersion { name, .. } => format!(
                "Its server_config key {} was written by something other than the store: restore the number it held. {what} was left as it was.",
                crate::extension::version_key(name)
            ),
            Refusal::ExtensionAhead { name, .. } => format!(
                "This program's extension `{name}` is older than the database's: upgrade the crate that declares it. {what} is fine; do not delete it."
            ),
            Refusal::ExtensionStructureMismatch { name, .. } => format!(
                "The tables of the extension `{name}` were changed outside its migrations: restore from a backup, or repair the structure listed above. {what} was left as it was."
            ),
            _ => String::new(),
        }
    }

    /// What a person should do about a PostgreSQL database refused for this reason, naming
    /// `database`. Nothing is ever suggested to be dropped.
    pub fn postgres_advice(&self, database: &str) -> String {
        match self {
            Refusal::NoServerConfig { .. }
            | Refusal::LegacyVersionKey { .. }
            | Refusal::MissingVersion { .. }
            | Refusal::UnparseableVersion { .. }
            | Refusal::BeforePostgres { .. } => format!(
                "Check --db-url and $SEED_AGENTS_DB_URL first: {database} holds tables this store did not write. Point it at an empty database (or one this store created)."
            ),
            Refusal::VersionAhead { .. } => {
                "This binary is older than the database: upgrade the binary. The database is fine.".to_string()
            }
            Refusal::StructureMismatch { unowned, .. } if !unowned.is_empty() => {
                self.extension_advice("The database")
            }
            Refusal::NotADatabase { .. } | Refusal::Corrupt { .. } | Refusal::StructureMismatch { .. } => format!(
                "Its tables were changed outside the migrations: restore {database} from a backup, or repair the structure listed above. Nothing was changed."
            ),
            _ => self.extension_advice("The database"),
        }
    }
}
