//! Where a column name in a statement points. A statement has scopes (the main statement, each
//! subquery, CTE body and compound arm), and each scope names its sources after FROM, JOIN, UPDATE
//! or INTO: tables of schema.sql, or CTEs, subqueries and table-valued functions, whose columns
//! have no type the macros know. A name resolves as SQLite resolves it, in its own scope first,
//! then outward.

use super::tokens::Tokens;
use crate::sql::{Token, TokenKind};
use crate::Baseline;

/// What a column reference points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Resolved {
    /// A column of a table of schema.sql: (table, column) as schema.sql spells them.
    Column(String, String),
    /// A column of a CTE, subquery or table-valued function, named here.
    Elsewhere(String),
    /// Not known: a `rowid`, a result alias, or a shape this reading does not follow.
    Unknown,
}

/// One source a scope names: `name` is how the statement refers to it (its alias, or its own
/// name), `table` the schema.sql table it is, if it is one.
#[derive(Debug)]
struct Source {
    name: String,
    table: Option<String>,
}

/// The scopes of one statement.
pub(super) struct Scopes<'s> {
    baseline: &'s Baseline,
    /// Scope of each token.
    scope_of: Vec<usize>,
    /// Enclosing scope of each scope.
    parent: Vec<Option<usize>>,
    sources: Vec<Vec<Source>>,
}

/// Words that end a source's name where an alias could stand.
const NOT_AN_ALIAS: &[&str] = &[
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
    "INTERSECT",
    "EXCEPT",
    "HAVING",
    "WINDOW",
];

/// A token that can name a table, column or alias.
pub(super) fn is_name(t: &Token<'_>) -> bool {
    matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent)
}

/// True for the `(` that opens a subquery (or a CTE body or `VALUES` list).
pub(super) fn opens_query(tokens: &[Token<'_>], i: usize) -> bool {
    tokens[i].text == "("
        && tokens
            .get(i + 1)
            .is_some_and(|t| t.is_word("SELECT") || t.is_word("WITH") || t.is_word("VALUES"))
}

impl<'s> Scopes<'s> {
    /// Reads the scopes and sources of a statement SQLite has accepted.
    pub(super) fn new(baseline: &'s Baseline, t: &Tokens<'_>) -> Scopes<'s> {
        let tokens = &t.list;
        let mut scopes = Scopes {
            baseline,
            scope_of: Vec::with_capacity(tokens.len()),
            parent: vec![None],
            sources: vec![Vec::new()],
        };
        // One level per open parenthesis: its scope, whether the scope began at this level, and
        // whether an INSERT at this level has named its table (so a SELECT feeding it starts a
        // scope of its own: the target table is not one of the SELECT's sources).
        struct Level {
            scope: usize,
            base: bool,
            insert: bool,
        }
        let mut stack = vec![Level {
            scope: 0,
            base: true,
            insert: false,
        }];
        for (i, tok) in tokens.iter().enumerate() {
            let top = stack
                .last_mut()
                .expect("the statement's level is never popped");
            if top.base
                && (tok.is_word("UNION") || tok.is_word("INTERSECT") || tok.is_word("EXCEPT"))
            {
                top.scope = scopes.open(scopes.parent[top.scope]);
            } else if top.base && tok.is_word("INTO") {
                top.insert = true;
            } else if top.base && top.insert && tok.is_word("SELECT") {
                top.insert = false;
                top.scope = scopes.open(Some(top.scope));
            }
            let scope = top.scope;
            scopes.scope_of.push(scope);
            if tok.text == "(" {
                let level = if opens_query(tokens, i) {
                    Level {
                        scope: scopes.open(Some(scope)),
                        base: true,
                        insert: false,
                    }
                } else {
                    Level {
                        scope,
                        base: false,
                        insert: false,
                    }
                };
                stack.push(level);
            } else if tok.text == ")" && stack.len() > 1 {
                stack.pop();
            }
        }
        let ctes = cte_names(t);
        for (i, tok) in tokens.iter().enumerate() {
            if tok.is_word("FROM")
                || tok.is_word("JOIN")
                || tok.is_word("UPDATE")
                || tok.is_word("INTO")
            {
                scopes.read_sources(t, i, &ctes);
            }
        }
        scopes
    }

    fn open(&mut self, parent: Option<usize>) -> usize {
        self.parent.push(parent);
        self.sources.push(Vec::new());
        self.parent.len() - 1
    }

    fn table(&self, name: &str) -> Option<&'s crate::model::Table> {
        self.baseline
            .fresh
            .tables
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, t)| t)
    }

    /// The sources named after the FROM, JOIN, UPDATE or INTO at `at`: `name [AS] [alias]`,
    /// `(subquery) [AS] alias`, `function(..) [AS] [alias]`, and after FROM a comma-separated list.
    fn read_sources(&mut self, t: &Tokens<'_>, at: usize, ctes: &[String]) {
        let tokens = &t.list;
        let scope = self.scope_of[at];
        let mut j = at + 1;
        if tokens[at].is_word("UPDATE") && tokens.get(j).is_some_and(|w| w.is_word("OR")) {
            j += 2;
        }
        loop {
            let Some(first) = tokens.get(j) else { return };
            let (name, table) = if first.text == "(" {
                let Some(close) = t.partner[j] else { return };
                j = close + 1;
                (None, None)
            } else if is_name(first) {
                // `schema.table`: the table is the last part.
                if tokens.get(j + 1).is_some_and(|d| d.text == ".") {
                    j += 2;
                }
                let Some(n) = tokens.get(j).filter(|n| is_name(n)) else {
                    return;
                };
                let name = n.ident();
                j += 1;
                let table = if !tokens[at].is_word("INTO")
                    && tokens.get(j).is_some_and(|p| p.text == "(")
                {
                    // A table-valued function.
                    j = t.partner[j].map_or(tokens.len(), |c| c + 1);
                    None
                } else if ctes.iter().any(|c| c.eq_ignore_ascii_case(&name)) {
                    None
                } else {
                    self.table(&name).map(|t| t.name.clone())
                };
                if tokens[at].is_word("INTO") {
                    if let Some(target) = &table {
                        // An upsert's `excluded.col` is the row that was to be inserted.
                        self.sources[scope].push(Source {
                            name: "excluded".into(),
                            table: Some(target.clone()),
                        });
                    }
                }
                (Some(name), table)
            } else {
                return;
            };
            if tokens.get(j).is_some_and(|a| a.is_word("AS")) {
                j += 1;
            }
            let alias = tokens
                .get(j)
                .filter(|a| is_name(a) && !NOT_AN_ALIAS.iter().any(|k| a.is_word(k)));
            if let Some(alias) = alias {
                j += 1;
                self.sources[scope].push(Source {
                    name: alias.ident(),
                    table: table.clone(),
                });
            }
            if let Some(name) = name {
                self.sources[scope].push(Source { name, table });
            }
            if tokens[at].is_word("FROM") && tokens.get(j).is_some_and(|c| c.text == ",") {
                j += 1;
            } else {
                return;
            }
        }
    }

    /// `column` of schema.sql's table `table`, both as schema.sql spells them.
    pub(super) fn column(&self, table: &str, column: &str) -> Option<(String, String)> {
        let t = self.table(table)?;
        let c = t.columns.keys().find(|c| c.eq_ignore_ascii_case(column))?;
        Some((t.name.clone(), c.clone()))
    }

    /// What `qualifier.column` (or a bare `column`) at token `at` refers to.
    pub(super) fn resolve(&self, at: usize, qualifier: Option<&str>, column: &str) -> Resolved {
        let has = |table: &str| {
            self.column(table, column)
                .map(|(t, c)| Resolved::Column(t, c))
        };
        let mut scope = Some(self.scope_of[at]);
        // Sources of an inner scope whose columns are unknown: a bare name not found in any
        // table in reach is theirs.
        let mut elsewhere: Option<String> = None;
        while let Some(s) = scope {
            let sources = &self.sources[s];
            match qualifier {
                Some(q) => {
                    if let Some(src) = sources.iter().find(|src| src.name.eq_ignore_ascii_case(q)) {
                        return match &src.table {
                            Some(t) => has(t).unwrap_or(Resolved::Unknown),
                            None => Resolved::Elsewhere(src.name.clone()),
                        };
                    }
                }
                None => {
                    let mut found: Vec<Resolved> = Vec::new();
                    for src in sources {
                        if let Some(r) = src.table.as_deref().and_then(has) {
                            if !found.contains(&r) {
                                found.push(r);
                            }
                        }
                    }
                    match found.len() {
                        // A name that one of this scope's unknown sources may also have, or that
                        // two tables have, is not one this reading can place.
                        1 if elsewhere.is_none() => return found.remove(0),
                        0 => {}
                        _ => return Resolved::Unknown,
                    }
                    if elsewhere.is_none() {
                        let unknown: Vec<&str> = sources
                            .iter()
                            .filter(|src| src.table.is_none())
                            .map(|src| src.name.as_str())
                            .collect();
                        if !unknown.is_empty() {
                            elsewhere = Some(unknown.join("` or `"));
                        }
                    }
                }
            }
            scope = self.parent[s];
        }
        elsewhere.map_or(Resolved::Unknown, Resolved::Elsewhere)
    }
}

/// The names of the statement's CTEs: `name [(cols)] AS [[NOT] MATERIALIZED] (SELECT ..)`.
fn cte_names(t: &Tokens<'_>) -> Vec<String> {
    let tokens = &t.list;
    let mut out = Vec::new();
    for (i, tok) in tokens.iter().enumerate() {
        if !tok.is_word("AS") || i == 0 {
            continue;
        }
        let mut body = i + 1;
        while tokens
            .get(body)
            .is_some_and(|w| w.is_word("NOT") || w.is_word("MATERIALIZED"))
        {
            body += 1;
        }
        if body >= tokens.len() || !opens_query(tokens, body) {
            continue;
        }
        let name = if tokens[i - 1].text == ")" {
            t.partner[i - 1]
                .and_then(|open| open.checked_sub(1))
                .map(|n| &tokens[n])
        } else {
            Some(&tokens[i - 1])
        };
        if let Some(n) = name.filter(|n| is_name(n)) {
            out.push(n.ident());
        }
    }
    out
}
