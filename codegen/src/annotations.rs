//! Doc comments and annotations of schema.sql.
//!
//! A comment block directly above a table, column or index documents it; a comment at the end of a
//! line documents what that line declares. Comment lines starting with `@` are annotations that
//! type a column beyond SQLite affinity: `@enum(a, b)` (TEXT), `@bool` and `@timestamp` (INTEGER),
//! `@cbor(Type)` (BLOB). Invariant: an annotation is accepted only on a column whose affinity fits
//! it, and every `*_cbor` column carries `@cbor`; anything else is an error naming the line.

use crate::error::{Error, Result};
use crate::model::{Affinity, Schema};
use crate::sql::{self, Token, TokenKind};
use std::collections::BTreeMap;
use std::path::Path;

/// The annotations every column may carry, as written in error messages.
pub const VOCABULARY: &str = "@enum(a, b, ...), @bool, @timestamp, @cbor(Type)";

/// Docs and column types of every table in schema.sql.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Annotations {
    /// Tables by name.
    pub tables: BTreeMap<String, TableDoc>,
}

impl Annotations {
    /// The doc of `table.column`, if any.
    pub fn column(&self, table: &str, column: &str) -> Option<&ColumnDoc> {
        self.tables.get(table)?.columns.get(column)
    }
}

/// One table's doc comment, its columns' and its indexes'.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableDoc {
    /// The comment above `CREATE TABLE`.
    pub doc: String,
    /// 1-based line of `CREATE TABLE`.
    pub line: usize,
    /// Columns by name.
    pub columns: BTreeMap<String, ColumnDoc>,
    /// Index docs by index name.
    pub indexes: BTreeMap<String, IndexDoc>,
}

/// One index's doc comment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexDoc {
    /// The comment text.
    pub doc: String,
    /// 1-based line of `CREATE INDEX`.
    pub line: usize,
}

/// One column's doc comment and annotation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ColumnDoc {
    /// The comment text (annotation lines removed).
    pub doc: String,
    /// 1-based line of the column's declaration.
    pub line: usize,
    /// The annotated type, if any.
    pub kind: Option<ColumnKind>,
}

/// What an annotation says a column holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnKind {
    /// One of a closed set of TEXT values.
    Enum(Vec<String>),
    /// 0 or 1.
    Bool,
    /// Epoch milliseconds.
    Timestamp,
    /// Canonical DAG-CBOR of the named payload type.
    Cbor(String),
}

impl ColumnKind {
    /// The annotation as written, e.g. `@cbor(RunPlan)`.
    pub fn describe(&self) -> String {
        match self {
            ColumnKind::Enum(v) => format!("@enum({})", v.join(", ")),
            ColumnKind::Bool => "@bool".into(),
            ColumnKind::Timestamp => "@timestamp".into(),
            ColumnKind::Cbor(t) => format!("@cbor({t})"),
        }
    }
}

/// A comment line with its 1-based line number.
struct Line<'a> {
    text: &'a str,
    line: usize,
}

/// What a comment block attaches to.
#[derive(Clone)]
enum Target {
    Table(String),
    Column(String, String),
    Constraint(String),
    Index(String, String),
    /// A statement whose target is not known yet.
    Pending,
    /// Any other statement.
    Other,
}

struct Parser<'p> {
    path: &'p Path,
    schema: &'p Schema,
    out: Annotations,
}

/// Parses the docs and annotations of `sql_text` (the file at `path`) against `schema`, the
/// structure SQLite built from it.
///
/// # Errors
/// An unknown, malformed, misplaced or duplicate annotation, or a `*_cbor` column without
/// `@cbor`, as [`Error::Annotation`] naming the line.
pub fn parse(path: &Path, sql_text: &str, schema: &Schema) -> Result<Annotations> {
    let tokens = sql::tokenize(sql_text).map_err(|e| Error::Lex {
        path: path.to_path_buf(),
        line: e.line,
        what: e.what,
    })?;
    let mut p = Parser {
        path,
        schema,
        out: Annotations::default(),
    };
    p.walk(&tokens)?;
    p.check_cbor_columns()?;
    Ok(p.out)
}

impl Parser<'_> {
    fn err(&self, line: usize, message: String) -> Error {
        Error::Annotation {
            path: self.path.to_path_buf(),
            line,
            message,
        }
    }

    fn walk(&mut self, tokens: &[Token<'_>]) -> Result<()> {
        let mut pending: Vec<&Token<'_>> = Vec::new();
        let mut stmt: Vec<&Token<'_>> = Vec::new();
        let mut stmt_target: Option<Target> = None;
        let mut element: Option<Target> = None;
        let mut depth = 0usize;
        let mut expect_element = false;
        let mut deferred: Vec<&Token<'_>> = Vec::new();
        for tok in tokens {
            if tok.kind == TokenKind::Comment {
                if tok.trailing {
                    let target = element.clone().or_else(|| stmt_target.clone());
                    self.attach(target, &[tok])?;
                } else {
                    if let Some(last) = pending.last() {
                        if end_line(last) + 1 < tok.line {
                            self.attach(None, &pending)?;
                            pending.clear();
                        }
                    }
                    pending.push(tok);
                }
                continue;
            }
            let adjacent = pending.last().is_some_and(|c| end_line(c) + 1 >= tok.line);
            let block: Vec<&Token<'_>> = if adjacent {
                pending.clone()
            } else {
                Vec::new()
            };
            if !adjacent {
                self.attach(None, &pending)?;
            }
            pending.clear();

            if stmt.is_empty() {
                stmt_target = None;
                element = None;
                depth = 0;
            }
            stmt.push(tok);
            if stmt.len() == 1 {
                // The statement's target is known a few tokens later; remember the block.
                stmt_target = Some(Target::Pending);
                deferred = block;
                if tok.text == ";" {
                    stmt.clear();
                }
                continue;
            }
            if matches!(stmt_target, Some(Target::Pending)) {
                if let Some(t) = statement_target(&stmt) {
                    let taken = std::mem::take(&mut deferred);
                    self.attach(Some(t.clone()), &taken)?;
                    stmt_target = Some(t);
                    let line = stmt[0].line;
                    match &stmt_target {
                        Some(Target::Table(name)) => {
                            self.out.tables.entry(name.clone()).or_default().line = line;
                        }
                        Some(Target::Index(table, index)) => {
                            let t = self.out.tables.entry(table.clone()).or_default();
                            t.indexes.entry(index.clone()).or_default().line = line;
                        }
                        _ => {}
                    }
                }
            }
            match tok.text {
                "(" => {
                    depth += 1;
                    if depth == 1 && matches!(stmt_target, Some(Target::Table(_))) {
                        expect_element = true;
                        if !block.is_empty() {
                            self.attach(stmt_target.clone(), &block)?;
                        }
                        continue;
                    }
                }
                ")" => depth = depth.saturating_sub(1),
                "," if depth == 1 => {
                    expect_element = matches!(stmt_target, Some(Target::Table(_)));
                    if !block.is_empty() {
                        self.attach(element.clone(), &block)?;
                    }
                    continue;
                }
                ";" if depth == 0 => {
                    stmt.clear();
                    let taken = std::mem::take(&mut deferred);
                    self.attach(None, &taken)?;
                    continue;
                }
                _ => {}
            }
            if expect_element {
                expect_element = false;
                let Some(Target::Table(table)) = &stmt_target else {
                    continue;
                };
                let target = if ["CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN"]
                    .iter()
                    .any(|k| tok.is_word(k))
                {
                    Target::Constraint(table.clone())
                } else {
                    let column = self.column_name(table, &tok.ident());
                    let doc = self
                        .out
                        .tables
                        .entry(table.clone())
                        .or_default()
                        .columns
                        .entry(column.clone())
                        .or_default();
                    doc.line = tok.line;
                    Target::Column(table.clone(), column)
                };
                element = Some(target.clone());
                self.attach(Some(target), &block)?;
            } else if !block.is_empty() {
                self.attach(element.clone().or_else(|| stmt_target.clone()), &block)?;
            }
        }
        let taken = std::mem::take(&mut deferred);
        self.attach(None, &taken)?;
        self.attach(None, &pending)
    }

    fn column_name(&self, table: &str, written: &str) -> String {
        self.schema
            .tables
            .get(table)
            .and_then(|t| {
                t.columns
                    .keys()
                    .find(|c| c.eq_ignore_ascii_case(written))
                    .cloned()
            })
            .unwrap_or_else(|| written.to_string())
    }

    /// Attaches comment tokens to `target`; `None` means the comments document nothing.
    fn attach(&mut self, target: Option<Target>, comments: &[&Token<'_>]) -> Result<()> {
        if comments.is_empty() {
            return Ok(());
        }
        let lines: Vec<Line<'_>> = comments.iter().flat_map(|c| comment_lines(c)).collect();
        let (annots, docs): (Vec<&Line<'_>>, Vec<&Line<'_>>) =
            lines.iter().partition(|l| l.text.starts_with('@'));
        let doc = docs
            .iter()
            .map(|l| l.text)
            .collect::<Vec<_>>()
            .join(" ")
            .trim()
            .to_string();
        let misplaced = |what: &str, a: &Line<'_>| {
            self.err(
                a.line,
                format!(
                    "`{}` is misplaced: annotations type a column and must stand directly above it (or at the end of its line), not {what}",
                    a.text
                ),
            )
        };
        match target {
            Some(Target::Column(table, column)) => {
                for a in &annots {
                    let kind = self.parse_annotation(a)?;
                    self.check_fits(&table, &column, &kind, a.line)?;
                    let doc = self
                        .out
                        .tables
                        .entry(table.clone())
                        .or_default()
                        .columns
                        .entry(column.clone())
                        .or_default();
                    if let Some(prev) = &doc.kind {
                        let message = format!(
                            "column {table}.{column} already has `{}`; a column takes one annotation",
                            prev.describe()
                        );
                        return Err(self.err(a.line, message));
                    }
                    doc.kind = Some(kind);
                }
                let entry = self
                    .out
                    .tables
                    .entry(table)
                    .or_default()
                    .columns
                    .entry(column)
                    .or_default();
                append(&mut entry.doc, &doc);
            }
            Some(Target::Table(table)) => {
                if let Some(a) = annots.first() {
                    return Err(misplaced(&format!("above table {table}"), a));
                }
                append(&mut self.out.tables.entry(table).or_default().doc, &doc);
            }
            Some(Target::Index(table, index)) => {
                if let Some(a) = annots.first() {
                    return Err(misplaced(&format!("on index {index}"), a));
                }
                let t = self.out.tables.entry(table).or_default();
                append(&mut t.indexes.entry(index).or_default().doc, &doc);
            }
            Some(Target::Constraint(table)) => {
                if let Some(a) = annots.first() {
                    return Err(misplaced(&format!("on a constraint of table {table}"), a));
                }
            }
            Some(Target::Other | Target::Pending) | None => {
                if let Some(a) = annots.first() {
                    return Err(misplaced("on a comment that documents no column", a));
                }
            }
        }
        Ok(())
    }

    fn parse_annotation(&self, a: &Line<'_>) -> Result<ColumnKind> {
        let text = a.text.trim();
        let (name, arg) = match text.find('(') {
            Some(i) => {
                let Some(inner) = text[i + 1..].strip_suffix(')') else {
                    return Err(self.err(a.line, format!("`{text}` is missing its closing `)`")));
                };
                (&text[1..i], Some(inner.trim()))
            }
            None => (&text[1..], None),
        };
        let kind = match (name.trim(), arg) {
            ("bool", None) => ColumnKind::Bool,
            ("timestamp", None) => ColumnKind::Timestamp,
            ("enum", Some(list)) => {
                let values: Vec<String> = list.split(',').map(|v| v.trim().to_string()).collect();
                if let Some(bad) = values.iter().find(|v| {
                    v.is_empty()
                        || !v
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                }) {
                    return Err(self.err(
                        a.line,
                        format!("`{text}`: enum value `{bad}` must be non-empty letters, digits, `_` or `-`"),
                    ));
                }
                let mut seen = std::collections::BTreeSet::new();
                if let Some(dup) = values.iter().find(|v| !seen.insert(v.as_str())) {
                    return Err(self.err(a.line, format!("`{text}` lists `{dup}` twice")));
                }
                ColumnKind::Enum(values)
            }
            ("cbor", Some(ty)) => {
                let ok = ty
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && ty.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !ok {
                    return Err(self.err(
                        a.line,
                        format!(
                            "`{text}`: the payload type must be a Rust type name such as `RunPlan`"
                        ),
                    ));
                }
                ColumnKind::Cbor(ty.to_string())
            }
            ("bool" | "timestamp", Some(_)) => {
                return Err(self.err(a.line, format!("`{text}` takes no arguments")))
            }
            ("enum" | "cbor", None) => {
                return Err(self.err(a.line, format!("`{text}` needs an argument: {VOCABULARY}")))
            }
            _ => {
                return Err(self.err(
                    a.line,
                    format!("unknown annotation `{text}`; the known ones are {VOCABULARY}"),
                ))
            }
        };
        Ok(kind)
    }

    fn check_fits(&self, table: &str, column: &str, kind: &ColumnKind, line: usize) -> Result<()> {
        let Some(col) = self
            .schema
            .tables
            .get(table)
            .and_then(|t| t.columns.get(column))
        else {
            return Err(self.err(
                line,
                format!("no column {table}.{column} for this annotation"),
            ));
        };
        let want = match kind {
            ColumnKind::Enum(_) => Affinity::Text,
            ColumnKind::Bool | ColumnKind::Timestamp => Affinity::Integer,
            ColumnKind::Cbor(_) => Affinity::Blob,
        };
        if col.affinity() != want {
            return Err(self.err(
                line,
                format!(
                    "`{}` is misplaced on {table}.{column}: it fits a {} column, and this one is declared {}",
                    kind.describe(),
                    match want {
                        Affinity::Text => "TEXT",
                        Affinity::Integer => "INTEGER",
                        _ => "BLOB",
                    },
                    col.decl_type
                ),
            ));
        }
        Ok(())
    }

    fn check_cbor_columns(&self) -> Result<()> {
        for (tname, table) in &self.schema.tables {
            for cname in table.columns.keys() {
                if !cname.ends_with("_cbor") {
                    continue;
                }
                let doc = self.out.column(tname, cname);
                if !matches!(doc.and_then(|d| d.kind.as_ref()), Some(ColumnKind::Cbor(_))) {
                    return Err(self.err(
                        doc.map_or(0, |d| d.line),
                        format!("column {tname}.{cname} holds CBOR but has no `@cbor(Type)` annotation naming its payload type"),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn append(doc: &mut String, more: &str) {
    if more.is_empty() {
        return;
    }
    if !doc.is_empty() {
        doc.push(' ');
    }
    doc.push_str(more);
}

/// The line a comment ends on.
fn end_line(t: &Token<'_>) -> usize {
    t.line + t.text.matches('\n').count()
}

fn comment_lines<'a>(t: &'a Token<'a>) -> Vec<Line<'a>> {
    if t.text.starts_with("--") {
        return vec![Line {
            text: t.comment_text(),
            line: t.line,
        }];
    }
    t.text
        .trim_start_matches("/*")
        .trim_end_matches("*/")
        .lines()
        .enumerate()
        .map(|(i, l)| Line {
            text: l.trim().trim_start_matches('*').trim(),
            line: t.line + i,
        })
        .filter(|l| !l.text.is_empty())
        .collect()
}

/// The table or index a statement creates, once enough tokens are known.
fn statement_target(stmt: &[&Token<'_>]) -> Option<Target> {
    if !stmt[0].is_word("CREATE") {
        return Some(Target::Other);
    }
    let mut i = 1;
    while i < stmt.len()
        && ["TEMP", "TEMPORARY", "UNIQUE", "VIRTUAL"]
            .iter()
            .any(|k| stmt[i].is_word(k))
    {
        i += 1;
    }
    let kind = stmt.get(i)?;
    let mut j = i + 1;
    if stmt.get(j).is_some_and(|t| t.is_word("IF")) {
        j += 3;
    }
    let name = stmt.get(j)?;
    if kind.is_word("TABLE") {
        return Some(Target::Table(name.ident()));
    }
    if kind.is_word("INDEX") {
        // CREATE INDEX name ON table
        let on = stmt.get(j + 1)?;
        let table = stmt.get(j + 2)?;
        return Some(if on.is_word("ON") {
            Target::Index(table.ident(), name.ident())
        } else {
            Target::Other
        });
    }
    Some(Target::Other)
}
