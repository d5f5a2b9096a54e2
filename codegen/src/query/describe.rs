//! Describing a statement: SQLite prepares it against the schema and reports its parameters and
//! result columns (with the table column each comes from); the token stream shows what SQLite
//! does not: what the parameters bind to (read by `bindings`), whether there is an outer join,
//! and the type of a top-level `CAST`.

use super::bindings::{self, Unknowable};
use super::tokens::Tokens;
use super::Checker;
use crate::model::Affinity;
use crate::sql::Token;
use std::collections::{BTreeMap, BTreeSet};

/// One result column of a described statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultColumn {
    /// The column's name in the result (its alias, or SQLite's name for it).
    pub name: String,
    /// The table column it comes straight from, if any.
    pub origin: Option<(String, String)>,
    /// The affinity of a top-level `CAST(.. AS type)`, for an expression column.
    pub cast: Option<Affinity>,
}

/// What SQLite says about a statement, plus what the text shows about its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// Number of parameters (the largest `?N`).
    pub params: usize,
    /// The result columns, in order.
    pub columns: Vec<ResultColumn>,
    /// 1-based parameter index -> the (table, column)s it binds to, where the text shows them.
    pub bindings: BTreeMap<usize, Vec<(String, String)>>,
    /// 1-based parameter index -> the type a `CAST(? AS type)` gives it.
    pub casts: BTreeMap<usize, Affinity>,
    /// The statement has an outer join, so any table column may come back NULL.
    pub outer_join: bool,
    /// Parameters the statement tests for NULL (`?2 IS NULL OR col = ?2`): they may be `None`.
    pub nullable: BTreeSet<usize>,
    /// Parameters compared with a column whose type is unknown, and bound or cast nowhere.
    pub unknowable: BTreeMap<usize, Unknowable>,
}

impl Checker {
    /// Prepares `sql` against the schema and describes it; `Err` carries SQLite's message.
    pub fn describe(&self, sql_text: &str) -> Result<Described, String> {
        let stmt = self.conn.prepare(sql_text).map_err(|e| match e {
            rusqlite::Error::SqliteFailure(_, Some(m)) => m,
            other => other.to_string(),
        })?;
        let tokens = Tokens::read(sql_text, |name| stmt.parameter_index(name).ok().flatten())?;
        let casts = result_casts(&tokens.list);
        let columns: Vec<ResultColumn> = stmt
            .columns_with_metadata()
            .enumerate()
            .map(|(i, m)| ResultColumn {
                name: m.name().to_string(),
                origin: match (m.table_name(), m.origin_name()) {
                    (Some(t), Some(c)) => Some((t.to_string(), c.to_string())),
                    _ => None,
                },
                cast: casts
                    .as_ref()
                    .filter(|c| c.len() == stmt.column_count())
                    .and_then(|c| c[i]),
            })
            .collect();
        let outer_join = tokens
            .list
            .iter()
            .any(|t| t.is_word("LEFT") || t.is_word("RIGHT") || t.is_word("FULL"));
        let p = bindings::read(&self.baseline, &tokens);
        Ok(Described {
            params: stmt.parameter_count(),
            columns,
            bindings: p.bindings,
            casts: p.casts,
            outer_join,
            nullable: p.nullable,
            unknowable: p.unknowable,
        })
    }
}

/// The affinity of each top-level `CAST(.. AS type)` result column of a plain SELECT (or a
/// RETURNING clause); `None` when the list cannot be split reliably.
fn result_casts(tokens: &[Token<'_>]) -> Option<Vec<Option<Affinity>>> {
    // The result list is the first SELECT or RETURNING at the top level (a CTE's own SELECT sits
    // inside parentheses).
    let mut level = 0i32;
    let start = tokens.iter().position(|t| {
        match t.text {
            "(" => level += 1,
            ")" => level -= 1,
            _ => {}
        }
        level == 0 && (t.is_word("SELECT") || t.is_word("RETURNING"))
    })?;
    let mut items: Vec<Vec<&Token<'_>>> = vec![Vec::new()];
    let mut depth = 0i32;
    for t in &tokens[start + 1..] {
        match t.text {
            "(" => depth += 1,
            ")" => depth -= 1,
            "," if depth == 0 => {
                items.push(Vec::new());
                continue;
            }
            _ => {}
        }
        if depth == 0
            && (t.is_word("FROM")
                || t.is_word("WHERE")
                || t.is_word("ORDER")
                || t.is_word("LIMIT")
                || t.is_word("GROUP"))
        {
            break;
        }
        if depth < 0 {
            return None;
        }
        items.last_mut().expect("starts with one item").push(t);
    }
    if items.iter().any(|i| {
        i.first().is_some_and(|t| t.text == "*") || i.iter().any(|t| t.text == "*" && i.len() == 3)
    }) {
        return None;
    }
    Some(
        items
            .iter()
            .map(|item| {
                let first = item.first()?;
                if !first.is_word("CAST") || item.get(1)?.text != "(" {
                    return None;
                }
                // CAST ( expr AS type ) [[AS] alias]
                let mut depth = 0;
                for (k, t) in item.iter().enumerate().skip(1) {
                    match t.text {
                        "(" => depth += 1,
                        ")" => {
                            depth -= 1;
                            if depth == 0 {
                                let ty: Vec<&str> = item[..k]
                                    .iter()
                                    .rev()
                                    .take_while(|t| !t.is_word("AS"))
                                    .map(|t| t.text)
                                    .collect();
                                let ty: Vec<&str> = ty.into_iter().rev().collect();
                                return Some(Affinity::of(&ty.join(" ")));
                            }
                        }
                        _ => {}
                    }
                }
                None
            })
            .collect(),
    )
}
