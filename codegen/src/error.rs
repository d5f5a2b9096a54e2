//! The one error type of the codegen crate: every variant names the file, line or object a person
//! has to look at.

use std::path::{Path, PathBuf};

/// Why the schema sources could not be checked or turned into code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A source file could not be read or an output written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file name in `migrations/` does not follow `NNNN_slug.sql`.
    #[error("{}: migration files are named NNNN_slug.sql (four digits, an underscore, a slug of [a-z0-9_])", path.display())]
    BadMigrationName {
        /// The offending file.
        path: PathBuf,
    },
    /// Migration numbers are not 0, 1, 2, ... without gaps or repeats.
    #[error("migrations/: {message}")]
    Numbering {
        /// What is wrong, naming the files.
        message: String,
    },
    /// SQLite rejected a statement of schema.sql or a migration.
    #[error("{}:{line}: SQLite rejected this statement: {message}\n    {statement}", path.display())]
    Sql {
        /// The file holding the statement.
        path: PathBuf,
        /// 1-based line where the statement starts.
        line: usize,
        /// The statement as written.
        statement: String,
        /// SQLite's message.
        message: String,
    },
    /// A literal or comment is not closed.
    #[error("{}:{line}: unterminated {what}", path.display())]
    Lex {
        /// The file.
        path: PathBuf,
        /// 1-based line where the token starts.
        line: usize,
        /// What was left open.
        what: &'static str,
    },
    /// A migration is newer than the lock: it can still change until it is locked. A warning in
    /// the build, not a failure, so a migration can be written iteratively.
    #[error("{}: {migration}.sql is not locked yet. Once it is final, run `cargo run -p seed-agents-codegen --features cli -- lock schema` and commit migrations.lock", path.display())]
    NotLocked {
        /// The lock file.
        path: PathBuf,
        /// The first migration the lock does not cover (its file stem).
        migration: String,
    },
    /// `migrations.lock` disagrees with the migrations on disk.
    #[error("{}: {message}", path.display())]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// What disagrees, naming the migration and what to do.
        message: String,
    },
    /// schema.sql and genesis + migrations describe different structures.
    #[error("schema.sql and migrations/ disagree: a fresh install and a migrated database would differ.\n{report}")]
    Drift {
        /// One line per difference, each naming the object, both sides and the migration that
        /// last touched it.
        report: String,
    },
    /// An annotation or doc comment in schema.sql is unknown, malformed or misplaced.
    #[error("{}:{line}: {message}", path.display())]
    Annotation {
        /// schema.sql.
        path: PathBuf,
        /// 1-based line of the annotation.
        line: usize,
        /// What is wrong and what to do.
        message: String,
    },
    /// schema.sql leaves tables, columns or indexes without a doc comment, and the build is strict
    /// about it (see [`coverage::strict_from_env`](crate::coverage::strict_from_env)).
    #[error("schema.sql: {count} undocumented table(s), column(s) or index(es), and {why} makes that an error; write a comment directly above each (or at the end of its line):\n{report}")]
    Undocumented {
        /// How many objects lack one.
        count: usize,
        /// What made the build strict (the variable and its value).
        why: String,
        /// One `schema.sql:LINE: what` line per object.
        report: String,
    },
    /// An environment variable the build reads holds a value it does not understand.
    #[error("environment variable {name}={value:?} is not understood: expected {expected}")]
    Env {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it may hold.
        expected: &'static str,
    },
    /// SQLite failed while introspecting a replayed database.
    #[error("introspecting {what}: {source}")]
    Introspect {
        /// Which database (schema.sql, or migrations at version N).
        what: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The PostgreSQL side of the schema cannot be rendered or derived.
    #[error("PostgreSQL: {message}")]
    Postgres {
        /// What PostgreSQL cannot express, or which dialect file to write.
        message: String,
    },
    /// An extension schema is not one the store can share a file with: a bad name, or a
    /// statement that touches a store object.
    #[error("extension {name}: {message}")]
    Extension {
        /// The extension's name.
        name: String,
        /// What is wrong, naming the file, line and statement.
        message: String,
    },
    /// Generated Rust did not parse: a bug in the emitter.
    #[error("generated Rust does not parse ({message}); this is a codegen bug")]
    Emit {
        /// The parser's message.
        message: String,
    },
}

/// Reads a source file, naming it in the error.
pub(crate) fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
