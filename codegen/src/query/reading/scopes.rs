//! Where a column name in a statement points. Each SELECT core (a compound's arms each have
//! their own) and each INSERT, UPDATE or DELETE is a scope, and names its sources: tables of
//! schema.sql, or CTEs, subqueries and table-valued functions, whose columns have no type the
//! macros know. A name resolves as SQLite resolves it: in its own scope first, then outward.
//!
//! Invariant: a name that could be more than one column, or a column of a source of unknown
//! type, never resolves to a schema.sql column.

use crate::model::Table;
use crate::Baseline;
use sqlparser::ast::{ObjectName, TableAlias, TableFactor, TableWithJoins};

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

#[derive(Debug)]
struct Scope {
    parent: Option<usize>,
    sources: Vec<Source>,
}

/// The scopes of one statement, as a visitor enters and leaves them.
pub(super) struct Scopes<'s> {
    baseline: &'s Baseline,
    all: Vec<Scope>,
    /// The scopes entered and not yet left, innermost last.
    open: Vec<usize>,
    /// The CTE names of each query entered and not yet left.
    ctes: Vec<Vec<String>>,
}

impl<'s> Scopes<'s> {
    pub(super) fn new(baseline: &'s Baseline) -> Scopes<'s> {
        Scopes {
            baseline,
            all: Vec::new(),
            open: Vec::new(),
            ctes: Vec::new(),
        }
    }

    /// Enters a scope whose parent is the innermost open one, or (`detached`) that one's
    /// parent: the SELECT feeding an INSERT does not see the INSERT's target.
    pub(super) fn enter(&mut self, detached: bool) {
        let mut parent = self.open.last().copied();
        if detached {
            parent = parent.and_then(|p| self.all[p].parent);
        }
        self.all.push(Scope {
            parent,
            sources: Vec::new(),
        });
        self.open.push(self.all.len() - 1);
    }

    pub(super) fn leave(&mut self) {
        self.open.pop();
    }

    /// Enters a query's `WITH`: its CTE names shadow tables until [`Scopes::leave_query`].
    pub(super) fn enter_query(&mut self, ctes: Vec<String>) {
        self.ctes.push(ctes);
    }

    pub(super) fn leave_query(&mut self) {
        self.ctes.pop();
    }

    fn is_cte(&self, name: &str) -> bool {
        self.ctes
            .iter()
            .flatten()
            .any(|c| c.eq_ignore_ascii_case(name))
    }

    fn table(&self, name: &str) -> Option<&'s Table> {
        self.baseline
            .fresh
            .tables
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, t)| t)
    }

    fn add(&mut self, name: String, table: Option<String>) {
        if let Some(&scope) = self.open.last() {
            self.all[scope].sources.push(Source { name, table });
        }
    }

    /// Adds the sources of a FROM list (or an UPDATE's table, or a DELETE's).
    pub(super) fn add_from(&mut self, from: &[TableWithJoins]) {
        for t in from {
            self.add_factor(&t.relation);
            for join in &t.joins {
                self.add_factor(&join.relation);
            }
        }
    }

    fn add_factor(&mut self, factor: &TableFactor) {
        match factor {
            TableFactor::Table {
                name, alias, args, ..
            } => {
                let own = last_part(name);
                let table = if args.is_some() || self.is_cte(&own) {
                    None
                } else {
                    self.table(&own).map(|t| t.name.clone())
                };
                self.add(alias_or(alias, own), table);
            }
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => match alias {
                Some(a) => self.add(a.name.value.clone(), None),
                None => self.add_from(std::slice::from_ref(table_with_joins)),
            },
            TableFactor::Derived { alias, .. } => {
                self.add(alias_or(alias, "(subquery)".into()), None);
            }
            other => {
                let alias = match other {
                    TableFactor::Function { alias, .. }
                    | TableFactor::TableFunction { alias, .. }
                    | TableFactor::UNNEST { alias, .. } => alias.as_ref(),
                    _ => None,
                };
                let name = alias.map_or_else(|| other.to_string(), |a| a.name.value.clone());
                self.add(name, None);
            }
        }
    }

    /// Adds an INSERT's target, under its alias if it has one, and as `excluded` (in an
    /// upsert, the row that was to be inserted).
    pub(super) fn add_target(&mut self, name: &ObjectName, alias: Option<String>) {
        let own = last_part(name);
        let table = self.table(&own).map(|t| t.name.clone());
        if let Some(t) = &table {
            self.add("excluded".into(), Some(t.clone()));
        }
        self.add(alias.unwrap_or(own), table);
    }

    /// `column` of schema.sql's table `table`, both as schema.sql spells them.
    pub(super) fn column(&self, table: &str, column: &str) -> Option<(String, String)> {
        let t = self.table(table)?;
        let c = t.columns.keys().find(|c| c.eq_ignore_ascii_case(column))?;
        Some((t.name.clone(), c.clone()))
    }

    /// The schema.sql table an INSERT, UPDATE or DELETE names (`None` for anything else).
    pub(super) fn target(&self, name: &ObjectName) -> Option<String> {
        self.table(&last_part(name)).map(|t| t.name.clone())
    }

    /// What `qualifier.column` (or a bare `column`) refers to in the innermost open scope.
    pub(super) fn resolve(&self, qualifier: Option<&str>, column: &str) -> Resolved {
        let has = |table: &str| {
            self.column(table, column)
                .map(|(t, c)| Resolved::Column(t, c))
        };
        let mut scope = self.open.last().copied();
        // Sources of an inner scope whose columns are unknown: a bare name not found in any
        // table in reach is theirs.
        let mut elsewhere: Option<String> = None;
        while let Some(s) = scope {
            let sources = &self.all[s].sources;
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
            scope = self.all[s].parent;
        }
        elsewhere.map_or(Resolved::Unknown, Resolved::Elsewhere)
    }
}

/// The last part of a dotted name (`main.t` is `t`), as written without its quotes.
pub(super) fn last_part(name: &ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map_or_else(|| name.to_string(), |i| i.value.clone())
}

fn alias_or(alias: &Option<TableAlias>, own: String) -> String {
    alias.as_ref().map_or(own, |a| a.name.value.clone())
}
