//! Describing a statement: SQLite prepares it against the schema and reports its parameters and
//! result columns (with the table column each comes from); the token stream shows what SQLite
//! does not: what the parameters bind to (read by `bindings`), whether there is an outer join,
//! and the type of a top-level `CAST`.

use super::bindings::{self, Unknowable};
use super::Checker;
use crate::model::Affinity;
use crate::sql::{self, Token, TokenKind};
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

/// A statement's tokens without comments, each parameter and each operator one token, with what
/// the readings of the text share: the partner of each parenthesis and the 1-based index of each
/// parameter.
pub(super) struct Tokens<'a> {
    pub(super) list: Vec<Token<'a>>,
    pub(super) partner: Vec<Option<usize>>,
    pub(super) param: Vec<Option<usize>>,
}

impl Checker {
    /// Prepares `sql` against the schema and describes it; `Err` carries SQLite's message.
    pub fn describe(&self, sql_text: &str) -> Result<Described, String> {
        let stmt = self.conn.prepare(sql_text).map_err(|e| match e {
            rusqlite::Error::SqliteFailure(_, Some(m)) => m,
            other => other.to_string(),
        })?;
        let list = merge_tokens(
            sql_text,
            sql::tokenize(sql_text)
                .map_err(|e| format!("unterminated {} on line {}", e.what, e.line))?
                .into_iter()
                .filter(|t| t.kind != TokenKind::Comment)
                .collect(),
        );
        let casts = result_casts(&list);
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
        // `?` takes the number after the largest before it, `?N` its own, a name SQLite's.
        let mut sequential = 0usize;
        let param = list
            .iter()
            .map(|t| {
                if !is_param(t) {
                    return None;
                }
                let n = match t.text.strip_prefix('?') {
                    Some("") => Some(sequential + 1),
                    Some(n) => n.parse().ok(),
                    None => stmt.parameter_index(t.text).ok().flatten(),
                };
                if let Some(n) = n {
                    sequential = sequential.max(n);
                }
                n
            })
            .collect();
        let tokens = Tokens {
            partner: partners(&list),
            param,
            list,
        };
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

/// The partner of each parenthesis (`None` for other tokens, and for an unbalanced one).
fn partners(tokens: &[Token<'_>]) -> Vec<Option<usize>> {
    let mut out = vec![None; tokens.len()];
    let mut open = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        match t.text {
            "(" => open.push(i),
            ")" => {
                if let Some(o) = open.pop() {
                    out[o] = Some(i);
                    out[i] = Some(o);
                }
            }
            _ => {}
        }
    }
    out
}

/// Operators of more than one character.
const OPERATORS: &[&str] = &["<=", ">=", "<>", "!=", "==", "||", "<<", ">>", "->", "->>"];

/// Joins each parameter into one token: `?` with an adjacent number (`?3`), and `:`, `@` or `$`
/// with an adjacent name (`:id`); and each operator (`<=`, `||`, ..).
fn merge_tokens<'a>(src: &'a str, tokens: Vec<Token<'a>>) -> Vec<Token<'a>> {
    let mut out: Vec<Token<'a>> = Vec::with_capacity(tokens.len());
    for t in tokens {
        if let Some(prev) = out.last_mut() {
            let adjacent = prev.offset + prev.text.len() == t.offset;
            let joined = &src[prev.offset..t.offset + t.text.len()];
            let joins = matches!(
                (prev.text, t.kind),
                ("?", TokenKind::Number) | (":" | "@" | "$", TokenKind::Word)
            ) || (t.kind == TokenKind::Punct && OPERATORS.contains(&joined));
            if adjacent && joins && prev.kind == TokenKind::Punct {
                prev.text = joined;
                continue;
            }
        }
        out.push(t);
    }
    out
}

/// True for a parameter: `?`, `?N`, `:name`, `@name`, `$name` (joined by [`merge_tokens`]).
fn is_param(t: &Token<'_>) -> bool {
    t.kind == TokenKind::Punct
        && (t.text == "?"
            || (t.text.len() > 1 && ["?", ":", "@", "$"].iter().any(|p| t.text.starts_with(p))))
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
