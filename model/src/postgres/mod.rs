//! The PostgreSQL side of the model: the portable projection both backends share ([`portable`])
//! and, with the `postgres` feature, the structure read back from a live server's catalogs
//! ([`introspect`]).
//!
//! Invariant: a PostgreSQL database's structure at version N, read back by [`introspect`], is
//! [`portable`] of the model at N, whichever way it was reached; so one fingerprint judges both
//! backends' structure.

#[cfg(feature = "postgres")]
mod catalog;

#[cfg(feature = "postgres")]
pub use catalog::introspect;

use crate::model::{Affinity, Schema};
use crate::sql;

/// The structure both backends can express: what SQLite-only flags say is dropped
/// (`WITHOUT ROWID`, `STRICT`, hidden columns), primary-key columns are `NOT NULL` (PostgreSQL
/// always makes them so), types are reduced to their affinity's name, defaults and partial
/// predicates are in the normal form of [`sql::normalize`], and a non-unique index ends with
/// the primary key's columns, as SQLite's indexes of a keyed table physically do (so an order
/// SQLite reads off an index, ties broken by the key, PostgreSQL reads off it too).
pub fn portable(schema: &Schema) -> Schema {
    let mut out = schema.clone();
    for table in out.tables.values_mut() {
        let key = table.primary_key.clone();
        for index in table.indexes.values_mut().filter(|i| !i.unique) {
            for column in &key {
                if !index
                    .columns
                    .iter()
                    .any(|c| c.name.as_ref() == Some(column))
                {
                    index.columns.push(crate::model::IndexColumn {
                        name: Some(column.clone()),
                        desc: false,
                        collation: "BINARY".into(),
                    });
                }
            }
        }
        table.without_rowid = false;
        table.strict = false;
        for column in table.columns.values_mut() {
            column.hidden = 0;
            column.not_null |= column.pk > 0;
            column.decl_type = affinity_name(column.affinity()).into();
            column.default = column.default.as_deref().map(normal);
        }
        for index in table.indexes.values_mut() {
            index.partial = index.partial.as_deref().map(predicate);
        }
    }
    out
}

/// The type name [`portable`] keeps for an affinity.
pub fn affinity_name(affinity: Affinity) -> &'static str {
    match affinity {
        Affinity::Integer => "INTEGER",
        Affinity::Text => "TEXT",
        Affinity::Blob => "BLOB",
        Affinity::Real => "REAL",
        Affinity::Numeric => "NUMERIC",
    }
}

/// An expression in the normal form (`sql::normalize`), or as written when it does not lex.
pub(crate) fn normal(expr: &str) -> String {
    sql::normalize(expr).unwrap_or_else(|_| expr.to_string())
}

/// A partial index's predicate in one form, whichever backend wrote it: [`normal`], with what
/// PostgreSQL adds when it prints a predicate back undone. The casts on literals go
/// (`'agent'::text`), `x = ANY (ARRAY[a, b])` reads `x IN (a, b)`, and grouping parentheses
/// go. Parentheses of a call or an `IN` list stay. So `kind = 'agent' AND status IN ('a', 'b')`
/// as `schema.sql` writes it and as the catalog returns it compare equal. (Grouping is not
/// compared: two predicates that differ only in it read the same.)
pub(crate) fn predicate(expr: &str) -> String {
    let Ok(tokens) = sql::tokenize(expr) else {
        return expr.to_string();
    };
    let tokens: Vec<_> = tokens
        .into_iter()
        .filter(|t| t.kind != sql::TokenKind::Comment)
        .collect();
    let word = |i: usize, w: &str| {
        tokens.get(i).is_some_and(|t: &sql::Token<'_>| {
            t.kind == sql::TokenKind::Word && t.text.eq_ignore_ascii_case(w)
        })
    };
    let punct = |i: usize, p: &str| {
        tokens
            .get(i)
            .is_some_and(|t| t.kind == sql::TokenKind::Punct && t.text == p)
    };
    let mut out: Vec<String> = Vec::new();
    // Whether each open parenthesis was kept.
    let mut kept = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if punct(i, ":") && punct(i + 1, ":") {
            // A cast: `::` and its type's name (`double precision` is two words).
            i += 3;
            if word(i - 1, "double") && word(i, "precision") {
                i += 1;
            }
            continue;
        }
        let array = tokens.get(i + 3);
        if word(i, "any")
            && out.last().is_some_and(|o| o == "=")
            && punct(i + 1, "(")
            && word(i + 2, "array")
            && array
                .is_some_and(|a| a.kind == sql::TokenKind::QuotedIdent && a.text.starts_with('['))
            && punct(i + 4, ")")
        {
            let list = &array.expect("checked").text;
            out.pop();
            out.push("in".into());
            out.push("(".into());
            out.push(predicate(&list[1..list.len() - 1]));
            out.push(")".into());
            i += 5;
            continue;
        }
        match (t.kind, t.text) {
            (sql::TokenKind::Punct, "(") => {
                // A call's or a list's parentheses follow a name or `IN`; grouping ones do not.
                let keep = out.last().is_some_and(|o| {
                    o.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                        && !matches!(o.as_str(), "and" | "or" | "not")
                });
                kept.push(keep);
                if keep {
                    out.push("(".into());
                }
            }
            (sql::TokenKind::Punct, ")") => {
                if kept.pop().unwrap_or(true) {
                    out.push(")".into());
                }
            }
            (sql::TokenKind::Word, w) => out.push(w.to_ascii_lowercase()),
            (_, text) => out.push(text.to_string()),
        }
        i += 1;
    }
    out.join(" ")
}
