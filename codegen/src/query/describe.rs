//! Describing a statement: SQLite prepares it against the schema and reports its parameters and
//! result columns (with the table column each comes from); the token stream shows what SQLite
//! does not: which table column a parameter binds to, which parameters are tested for NULL,
//! whether there is an outer join, and the type of a top-level `CAST`.

use super::Checker;
use crate::model::Affinity;
use crate::sql::{self, Token, TokenKind};
use crate::Baseline;
use std::collections::BTreeMap;

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
    /// 1-based parameter index -> the (table, column) it binds to, where the text shows it.
    pub bindings: BTreeMap<usize, (String, String)>,
    /// The statement has an outer join, so any table column may come back NULL.
    pub outer_join: bool,
    /// Parameters the statement tests for NULL (`?2 IS NULL OR col = ?2`): they may be `None`.
    pub nullable: std::collections::BTreeSet<usize>,
}

impl Checker {
    /// Prepares `sql` against the schema and describes it; `Err` carries SQLite's message.
    pub fn describe(&self, sql_text: &str) -> Result<Described, String> {
        let stmt = self.conn.prepare(sql_text).map_err(|e| match e {
            rusqlite::Error::SqliteFailure(_, Some(m)) => m,
            other => other.to_string(),
        })?;
        let tokens = merge_parameters(
            sql_text,
            sql::tokenize(sql_text)
                .map_err(|e| format!("unterminated {} on line {}", e.what, e.line))?
                .into_iter()
                .filter(|t| t.kind != TokenKind::Comment)
                .collect(),
        );
        let casts = result_casts(&tokens);
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
        let mut param_index = |t: &Token<'_>| -> Option<usize> {
            let text = t.text;
            if let Some(n) = text.strip_prefix('?') {
                if !n.is_empty() {
                    return n.parse().ok();
                }
            }
            stmt.parameter_index(text).ok().flatten()
        };
        let nullable = tokens
            .windows(2)
            .filter(|w| w[1].is_word("IS") && group_params(&w[..1])[0])
            .filter_map(|w| param_index(&w[0]))
            .collect();
        let bindings = self.bindings(&tokens, &mut param_index);
        let outer_join = tokens
            .iter()
            .any(|t| t.is_word("LEFT") || t.is_word("RIGHT") || t.is_word("FULL"));
        Ok(Described {
            params: stmt.parameter_count(),
            columns,
            bindings,
            outer_join,
            nullable,
        })
    }

    /// Which parameters bind to which table columns, as far as the text shows.
    fn bindings(
        &self,
        tokens: &[Token<'_>],
        param_index: &mut dyn FnMut(&Token<'_>) -> Option<usize>,
    ) -> BTreeMap<usize, (String, String)> {
        let params = group_params(tokens);
        let mut sequential = 0usize;
        let mut indexes = Vec::with_capacity(tokens.len());
        for (i, t) in tokens.iter().enumerate() {
            indexes.push(if params[i] {
                if t.text == "?" {
                    sequential += 1;
                    Some(sequential)
                } else {
                    let n = param_index(t);
                    if let Some(n) = n {
                        sequential = sequential.max(n);
                    }
                    n
                }
            } else {
                None
            });
        }
        let tables = self.statement_tables(tokens);
        let resolve = |qualifier: Option<&str>, column: &str| -> Option<(String, String)> {
            let candidates: Vec<&String> = match qualifier {
                Some(q) => tables
                    .iter()
                    .filter(|(alias, _)| alias.eq_ignore_ascii_case(q))
                    .map(|(_, t)| t)
                    .collect(),
                None => tables.iter().map(|(_, t)| t).collect(),
            };
            let mut found: Vec<(String, String)> = candidates
                .into_iter()
                .filter_map(|t| {
                    let table = self.baseline.fresh.tables.get(t)?;
                    let c = table
                        .columns
                        .keys()
                        .find(|c| c.eq_ignore_ascii_case(column))?;
                    Some((t.clone(), c.clone()))
                })
                .collect();
            found.dedup();
            (found.len() == 1).then(|| found.remove(0))
        };
        let mut out = BTreeMap::new();
        let column_before = |i: usize| -> Option<(Option<String>, String)> {
            let c = tokens.get(i.checked_sub(1)?)?;
            if !matches!(c.kind, TokenKind::Word | TokenKind::QuotedIdent) {
                return None;
            }
            let dot = i.checked_sub(2).and_then(|j| tokens.get(j));
            if dot.is_some_and(|d| d.text == ".") {
                let q = tokens.get(i.checked_sub(3)?)?;
                return Some((Some(q.ident()), c.ident()));
            }
            Some((None, c.ident()))
        };
        const OPS: &[&str] = &["=", "==", "!=", "<>", "<", "<=", ">", ">="];
        for (i, idx) in indexes.iter().enumerate() {
            let Some(idx) = *idx else { continue };
            // `col op ?`: the operator may be two tokens (`<=`, `!=`, `==`).
            let mut j = i;
            let mut op = String::new();
            while j > 0 && tokens[j - 1].kind == TokenKind::Punct && op.len() < 2 {
                op.insert_str(0, tokens[j - 1].text);
                j -= 1;
                if OPS.contains(&op.as_str()) {
                    break;
                }
            }
            let word_op = j > 0
                && ["IS", "LIKE", "GLOB"]
                    .iter()
                    .any(|w| tokens[j - 1].is_word(w))
                && {
                    j -= 1;
                    true
                };
            if OPS.contains(&op.as_str()) || word_op {
                if let Some((q, c)) = column_before(j) {
                    if let Some(b) = resolve(q.as_deref(), &c) {
                        out.insert(idx, b);
                        continue;
                    }
                }
            }
            // `? op col`
            if let (Some(o), Some(c)) = (tokens.get(i + 1), tokens.get(i + 2)) {
                if OPS.contains(&o.text)
                    && matches!(c.kind, TokenKind::Word | TokenKind::QuotedIdent)
                {
                    let qualified = tokens.get(i + 3).is_some_and(|d| d.text == ".");
                    let b = if qualified {
                        tokens
                            .get(i + 4)
                            .and_then(|col| resolve(Some(&c.ident()), &col.ident()))
                    } else {
                        resolve(None, &c.ident())
                    };
                    if let Some(b) = b {
                        out.insert(idx, b);
                        continue;
                    }
                }
            }
            // `col IN (?, ?, ...)`
            let mut k = i;
            while k > 0 && (tokens[k - 1].text == "," || indexes[k - 1].is_some()) {
                k -= 1;
            }
            if k >= 2 && tokens[k - 1].text == "(" && tokens[k - 2].is_word("IN") {
                if let Some((q, c)) = column_before(k - 2) {
                    if let Some(b) = resolve(q.as_deref(), &c) {
                        out.insert(idx, b);
                    }
                }
            }
        }
        // INSERT INTO t (c1, c2, ...) VALUES (p1, p2, ...)
        if let Some(into) = tokens.iter().position(|t| t.is_word("INTO")) {
            let table = tokens.get(into + 1).map(Token::ident);
            let open = into + 2;
            if let (Some(table), Some(true)) = (table, tokens.get(open).map(|t| t.text == "(")) {
                let mut cols = Vec::new();
                let mut p = open + 1;
                while p < tokens.len() && tokens[p].text != ")" {
                    if tokens[p].text != "," {
                        cols.push(tokens[p].ident());
                    }
                    p += 1;
                }
                if tokens.get(p + 1).is_some_and(|t| t.is_word("VALUES"))
                    && tokens.get(p + 2).is_some_and(|t| t.text == "(")
                {
                    let mut position = 0;
                    let mut q = p + 3;
                    let mut depth = 0;
                    let mut element_start = true;
                    while q < tokens.len() {
                        match tokens[q].text {
                            "(" => depth += 1,
                            ")" if depth == 0 => break,
                            ")" => depth -= 1,
                            "," if depth == 0 => {
                                position += 1;
                                element_start = true;
                                q += 1;
                                continue;
                            }
                            _ => {}
                        }
                        let whole_element = element_start
                            && tokens
                                .get(q + 1)
                                .is_some_and(|n| n.text == "," || n.text == ")");
                        if let (true, Some(idx), Some(col)) =
                            (whole_element, indexes[q], cols.get(position))
                        {
                            if let Some(b) = resolve_in(&self.baseline, &table, col) {
                                out.entry(idx).or_insert(b);
                            }
                        }
                        element_start = false;
                        q += 1;
                    }
                }
            }
        }
        out
    }

    /// (alias or name, table) of every table the statement names after FROM, JOIN, UPDATE or INTO.
    fn statement_tables(&self, tokens: &[Token<'_>]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, t) in tokens.iter().enumerate() {
            let starts =
                t.is_word("FROM") || t.is_word("JOIN") || t.is_word("UPDATE") || t.is_word("INTO");
            let mut j = i + 1;
            while starts && j < tokens.len() {
                let Some(name) = tokens.get(j) else { break };
                if !matches!(name.kind, TokenKind::Word | TokenKind::QuotedIdent) {
                    break;
                }
                let table = name.ident();
                if !self.baseline.fresh.tables.contains_key(&table) {
                    break;
                }
                out.push((table.clone(), table.clone()));
                let mut k = j + 1;
                if tokens.get(k).is_some_and(|a| a.is_word("AS")) {
                    k += 1;
                }
                if let Some(alias) = tokens.get(k) {
                    let keyword = [
                        "WHERE",
                        "JOIN",
                        "LEFT",
                        "INNER",
                        "CROSS",
                        "ON",
                        "SET",
                        "ORDER",
                        "GROUP",
                        "LIMIT",
                        "INDEXED",
                        "NOT",
                        "USING",
                        "VALUES",
                        "DEFAULT",
                        "SELECT",
                        "RETURNING",
                        "NATURAL",
                        "RIGHT",
                        "FULL",
                        "OUTER",
                        "UNION",
                        "HAVING",
                        "WINDOW",
                    ]
                    .iter()
                    .any(|k| alias.is_word(k));
                    if matches!(alias.kind, TokenKind::Word | TokenKind::QuotedIdent) && !keyword {
                        out.push((alias.ident(), table.clone()));
                        k += 1;
                    }
                }
                // `FROM a, b`
                if tokens.get(k).is_some_and(|c| c.text == ",") && t.is_word("FROM") {
                    j = k + 1;
                } else {
                    break;
                }
            }
        }
        out
    }
}

fn resolve_in(baseline: &Baseline, table: &str, column: &str) -> Option<(String, String)> {
    let t = baseline.fresh.tables.get(table)?;
    let c = t.columns.keys().find(|c| c.eq_ignore_ascii_case(column))?;
    Some((table.to_string(), c.clone()))
}

/// Joins each parameter into one token: `?` with an adjacent number (`?3`), and `:`, `@` or `$`
/// with an adjacent name (`:id`), so a parameter is always a single token.
fn merge_parameters<'a>(src: &'a str, tokens: Vec<Token<'a>>) -> Vec<Token<'a>> {
    let mut out: Vec<Token<'a>> = Vec::with_capacity(tokens.len());
    for t in tokens {
        if let Some(prev) = out.last_mut() {
            let adjacent = prev.offset + prev.text.len() == t.offset;
            let joins = matches!(
                (prev.text, t.kind),
                ("?", TokenKind::Number) | (":" | "@" | "$", TokenKind::Word)
            );
            if adjacent && joins && prev.kind == TokenKind::Punct {
                prev.text = &src[prev.offset..t.offset + t.text.len()];
                continue;
            }
        }
        out.push(t);
    }
    out
}

/// Marks the tokens that are parameters: `?`, `?N`, `:name`, `@name`, `$name` (joined by
/// [`merge_parameters`]).
fn group_params(tokens: &[Token<'_>]) -> Vec<bool> {
    tokens
        .iter()
        .map(|t| {
            t.kind == TokenKind::Punct
                && (t.text == "?"
                    || (t.text.len() > 1
                        && ["?", ":", "@", "$"].iter().any(|p| t.text.starts_with(p))))
        })
        .collect()
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
