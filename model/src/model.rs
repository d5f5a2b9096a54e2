//! The normalized structure of a database: what parity, fingerprints and the gate compare.
//!
//! Column order is deliberately not part of the model (`ALTER TABLE ADD COLUMN` appends, so
//! migrated and fresh databases order columns differently); it is kept only as a display hint
//! that serialization, and so the fingerprint, skips.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Every object of one database this store owns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    /// Tables by name, with their indexes.
    pub tables: BTreeMap<String, Table>,
    /// Triggers by name.
    pub triggers: BTreeMap<String, SqlObject>,
    /// Views by name.
    pub views: BTreeMap<String, SqlObject>,
}

/// One table. Equality ignores `column_order`.
#[derive(Debug, Clone, Default, Eq, Serialize, Deserialize)]
pub struct Table {
    /// The table's name.
    pub name: String,
    /// Declared `WITHOUT ROWID`.
    pub without_rowid: bool,
    /// Declared `STRICT`.
    pub strict: bool,
    /// Columns by name.
    pub columns: BTreeMap<String, Column>,
    /// Primary-key columns in key order (empty for an implicit rowid key).
    pub primary_key: Vec<String>,
    /// Column lists of `UNIQUE` constraints.
    pub uniques: BTreeSet<Vec<String>>,
    /// Explicitly created indexes by name.
    pub indexes: BTreeMap<String, Index>,
    /// Foreign keys.
    pub foreign_keys: BTreeSet<ForeignKey>,
    /// Column names in declaration order: a display hint only, not structure.
    #[serde(skip)]
    pub column_order: Vec<String>,
}

impl PartialEq for Table {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.without_rowid == other.without_rowid
            && self.strict == other.strict
            && self.columns == other.columns
            && self.primary_key == other.primary_key
            && self.uniques == other.uniques
            && self.indexes == other.indexes
            && self.foreign_keys == other.foreign_keys
    }
}

impl Table {
    /// Columns in declaration order.
    pub fn ordered_columns(&self) -> impl Iterator<Item = &Column> {
        self.column_order.iter().filter_map(|c| self.columns.get(c))
    }
}

/// One column.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    /// The column's name.
    pub name: String,
    /// The declared type, upper-cased with single spaces (`TEXT`, `INTEGER`, ...).
    pub decl_type: String,
    /// Declared `NOT NULL` (primary-key columns of a `WITHOUT ROWID` table always are).
    pub not_null: bool,
    /// The default expression as written, if any.
    pub default: Option<String>,
    /// 1-based position in the primary key, 0 when not part of it.
    pub pk: u32,
    /// SQLite's hidden flag (generated and virtual-table hidden columns).
    pub hidden: u32,
}

impl Column {
    /// SQLite's type affinity of the declared type.
    pub fn affinity(&self) -> Affinity {
        Affinity::of(&self.decl_type)
    }

    /// The column as one would declare it, e.g. `title_source TEXT NOT NULL DEFAULT 'system'`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.name, self.decl_type);
        if self.not_null {
            s.push_str(" NOT NULL");
        }
        if let Some(d) = &self.default {
            s.push_str(" DEFAULT ");
            s.push_str(d);
        }
        if self.hidden != 0 {
            s.push_str(&format!(" (hidden {})", self.hidden));
        }
        s
    }
}

/// SQLite's column affinity, derived from the declared type by SQLite's own rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Affinity {
    /// Declared type contains INT.
    Integer,
    /// Contains CHAR, CLOB or TEXT.
    Text,
    /// Contains BLOB, or no type at all.
    Blob,
    /// Contains REAL, FLOA or DOUB.
    Real,
    /// Anything else.
    Numeric,
}

impl Affinity {
    /// The affinity of a declared type (SQLite's rules, section 3.1 of its datatype page).
    pub fn of(decl_type: &str) -> Self {
        let t = decl_type.to_ascii_uppercase();
        if t.contains("INT") {
            Affinity::Integer
        } else if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") {
            Affinity::Text
        } else if t.contains("BLOB") || t.is_empty() {
            Affinity::Blob
        } else if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") {
            Affinity::Real
        } else {
            Affinity::Numeric
        }
    }
}

/// One explicitly created index.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    /// The index's name.
    pub name: String,
    /// The indexed table.
    pub table: String,
    /// `CREATE UNIQUE INDEX`.
    pub unique: bool,
    /// Key columns in index order.
    pub columns: Vec<IndexColumn>,
    /// The normalized `WHERE` predicate of a partial index.
    pub partial: Option<String>,
}

impl Index {
    /// The index as one would declare it, e.g. `runs (status, queue, created_at DESC)`.
    pub fn describe(&self) -> String {
        let cols: Vec<String> = self.columns.iter().map(IndexColumn::describe).collect();
        let mut s = format!(
            "{}{} ({})",
            if self.unique { "UNIQUE " } else { "" },
            self.table,
            cols.join(", ")
        );
        if let Some(p) = &self.partial {
            s.push_str(" WHERE ");
            s.push_str(p);
        }
        s
    }
}

/// One key column of an index.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexColumn {
    /// The column, or `None` for an expression.
    pub name: Option<String>,
    /// Descending order.
    pub desc: bool,
    /// The collation sequence (`BINARY` unless declared).
    pub collation: String,
}

impl IndexColumn {
    /// `name [COLLATE x] [DESC]`.
    pub fn describe(&self) -> String {
        let mut s = self.name.clone().unwrap_or_else(|| "<expression>".into());
        if self.collation != "BINARY" {
            s.push_str(" COLLATE ");
            s.push_str(&self.collation);
        }
        if self.desc {
            s.push_str(" DESC");
        }
        s
    }
}

/// One foreign key.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ForeignKey {
    /// The referencing columns.
    pub columns: Vec<String>,
    /// The referenced table.
    pub table: String,
    /// The referenced columns (resolved to the parent's primary key when left out).
    pub to: Vec<String>,
    /// `ON UPDATE` action.
    pub on_update: String,
    /// `ON DELETE` action.
    pub on_delete: String,
}

impl ForeignKey {
    /// `(a) -> t (id)` plus any non-default actions.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "({}) REFERENCES {} ({})",
            self.columns.join(", "),
            self.table,
            self.to.join(", ")
        );
        if self.on_update != "NO ACTION" {
            s.push_str(&format!(" ON UPDATE {}", self.on_update));
        }
        if self.on_delete != "NO ACTION" {
            s.push_str(&format!(" ON DELETE {}", self.on_delete));
        }
        s
    }
}

/// A trigger or view: compared by its normalized SQL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SqlObject {
    /// The table it belongs to.
    pub table: String,
    /// Its `CREATE` statement, normalized (no comments, single spaces, lower-case words).
    pub sql: String,
}

impl Schema {
    /// The model as canonical JSON: the bytes the fingerprint hashes, embeddable in a binary.
    pub fn to_canonical_json(&self) -> String {
        serde_json::to_string(self).expect("the model serializes: only strings, bools and maps")
    }

    /// Parses [`Schema::to_canonical_json`] output.
    pub fn from_canonical_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// Hex SHA-256 of the canonical JSON: equal exactly when the structures are equal.
    pub fn fingerprint(&self) -> String {
        hex::encode(Sha256::digest(self.to_canonical_json().as_bytes()))
    }

    /// The name of every object: tables, triggers and views (an index goes with its table).
    pub fn names(&self) -> BTreeSet<&str> {
        self.tables
            .keys()
            .chain(self.triggers.keys())
            .chain(self.views.keys())
            .map(String::as_str)
            .collect()
    }

    /// The objects whose names `keep` accepts, each whole (a table with its indexes): how one
    /// file's structure is split between the store and the extensions that share it.
    ///
    /// ```
    /// let conn = rusqlite::Connection::open_in_memory()?;
    /// conn.execute_batch("CREATE TABLE a (x); CREATE TABLE b (y); CREATE INDEX b_y ON b (y)")?;
    /// let all = seed_agents_model::introspect(&conn)?;
    /// let b = all.select(|name| name == "b");
    /// assert_eq!(b.names().into_iter().collect::<Vec<_>>(), ["b"]);
    /// assert_eq!(b.tables["b"].indexes.len(), 1);
    /// # Ok::<(), rusqlite::Error>(())
    /// ```
    pub fn select(&self, keep: impl Fn(&str) -> bool) -> Schema {
        fn only<T: Clone>(
            map: &BTreeMap<String, T>,
            keep: &impl Fn(&str) -> bool,
        ) -> BTreeMap<String, T> {
            map.iter()
                .filter(|(name, _)| keep(name))
                .map(|(name, v)| (name.clone(), v.clone()))
                .collect()
        }
        Schema {
            tables: only(&self.tables, &keep),
            triggers: only(&self.triggers, &keep),
            views: only(&self.views, &keep),
        }
    }
}
