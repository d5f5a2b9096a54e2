//! What a statement's syntax tree shows about its parameters and result, which SQLite's
//! description does not: the table column a parameter binds to, where it is compared with a
//! column (`col = ?`, `? < t.col`, `(col) >= ?`, `col [NOT] BETWEEN ? AND ?`,
//! `col [NOT] IN (?, ..)`, `col LIKE ?`, `col GLOB ?`, `col IS ?`, row values
//! `(a, b) < (?, ?)`), assigned to one (`SET col = ?`) or inserted into one
//! (`INSERT INTO t (cols) VALUES (..)` or `SELECT ..`); the type a `CAST(? AS type)` gives it;
//! whether it is tested for NULL; the parameters compared with a column whose type is unknown
//! (a CTE's or a subquery's), which the macros refuse; whether any join is an outer join; and
//! the type of each result column that is a top-level `CAST`.
//!
//! A parameter that is part of a larger expression (`col + ? > 3`, `lower(col) = ?`, `LIMIT ?`)
//! binds to nothing: the expression's type is SQLite's to decide at run time.
//!
//! Invariant: everything here is read from the one parse ([`Parsed`]) by one walk of sqlparser's
//! visitor; nothing indexes into text or tokens, so no statement can make the reading panic.

mod operands;
mod scopes;

use crate::model::Affinity;
use crate::statement::{is_comparison, Parsed};
use crate::Baseline;
use operands::{operand, Operand};
use scopes::{last_part, Resolved, Scopes};
use sqlparser::ast::{
    Assignment, AssignmentTarget, BinaryOperator, Expr, FromTable, JoinOperator, OnConflictAction,
    OnInsert, Query, Select, SelectItem, SetExpr, Statement, TableObject, UpdateTableFromKind,
    Visit, Visitor,
};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

/// A parameter compared with a column of a CTE, subquery or table-valued function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknowable {
    /// The parameter as written (`?2`, `:id`, `?`).
    pub param: String,
    /// The column as written (`tree.id`).
    pub column: String,
    /// The source the column belongs to (`tree`).
    pub source: String,
}

/// What the tree shows, parameters by their 1-based number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Reading {
    pub(super) bindings: BTreeMap<usize, Vec<(String, String)>>,
    pub(super) casts: BTreeMap<usize, Affinity>,
    pub(super) nullable: BTreeSet<usize>,
    pub(super) unknowable: BTreeMap<usize, Unknowable>,
    pub(super) outer_join: bool,
    /// The affinity of each result column that is a top-level `CAST(.. AS type)`; `None` when
    /// the result list has a `*`.
    pub(super) result_casts: Option<Vec<Option<Affinity>>>,
}

/// Reads a statement SQLite has accepted.
pub(super) fn read(baseline: &Baseline, parsed: &Parsed) -> Reading {
    let mut r = Reader {
        parsed,
        scopes: Scopes::new(baseline),
        owned_by_query: Vec::new(),
        insert_sources: Vec::new(),
        out: Reading::default(),
    };
    let _ = parsed.statement.visit(&mut r);
    let mut out = r.out;
    out.result_casts = result_casts(&parsed.statement);
    let Reading {
        bindings,
        casts,
        unknowable,
        ..
    } = &mut out;
    unknowable.retain(|n, _| !bindings.contains_key(n) && !casts.contains_key(n));
    out
}

/// The address of a node, to recognise it again when the visitor reaches it.
fn address<T>(node: &T) -> usize {
    node as *const T as usize
}

struct Reader<'p, 's> {
    parsed: &'p Parsed,
    scopes: Scopes<'s>,
    /// SELECT cores that are a query's whole body: their scope stays open through the query's
    /// ORDER BY and LIMIT, and closes with the query.
    owned_by_query: Vec<usize>,
    /// SELECT cores that feed an INSERT.
    insert_sources: Vec<usize>,
    out: Reading,
}

impl Reader<'_, '_> {
    fn pair(&mut self, a: &Operand<'_>, b: &Operand<'_>) {
        match (a, b) {
            (Operand::Param(v), Operand::Column { qualifier, name })
            | (Operand::Column { qualifier, name }, Operand::Param(v)) => {
                let Some(n) = self.parsed.number(v) else {
                    return;
                };
                self.bind(n, &v.value.to_string(), qualifier.as_deref(), name);
            }
            (Operand::Row(xs), Operand::Row(ys)) if xs.len() == ys.len() => {
                for (x, y) in xs.iter().zip(ys) {
                    self.pair(x, y);
                }
            }
            _ => {}
        }
    }

    fn bind(&mut self, n: usize, param: &str, qualifier: Option<&str>, name: &str) {
        match self.scopes.resolve(qualifier, name) {
            Resolved::Column(table, column) => self.add(n, table, column),
            Resolved::Elsewhere(source) => {
                let column = match qualifier {
                    Some(q) => format!("{q}.{name}"),
                    None => name.to_string(),
                };
                self.out.unknowable.entry(n).or_insert(Unknowable {
                    param: param.to_string(),
                    column,
                    source,
                });
            }
            Resolved::Unknown => {}
        }
    }

    fn add(&mut self, n: usize, table: String, column: String) {
        let columns = self.out.bindings.entry(n).or_default();
        if !columns.contains(&(table.clone(), column.clone())) {
            columns.push((table, column));
        }
    }

    /// A value that is a parameter binds to the column `column` of `table`.
    fn bind_value(&mut self, value: &Expr, table: &str, column: &str) {
        let Operand::Param(v) = operand(value) else {
            return;
        };
        if let (Some(n), Some((t, c))) = (self.parsed.number(v), self.scopes.column(table, column))
        {
            self.add(n, t, c);
        }
    }

    /// `SET col = ?` and `SET (a, b) = (?, ?)` of an UPDATE or an upsert on `table`.
    fn assignments(&mut self, table: Option<&str>, assignments: &[Assignment]) {
        let Some(table) = table else { return };
        for a in assignments {
            match (&a.target, &a.value) {
                (AssignmentTarget::ColumnName(column), value) => {
                    self.bind_value(value, table, &last_part(column));
                }
                (AssignmentTarget::Tuple(columns), Expr::Tuple(values)) => {
                    for (column, value) in columns.iter().zip(values) {
                        self.bind_value(value, table, &last_part(column));
                    }
                }
                _ => {}
            }
        }
    }

    /// `INSERT INTO t (c1, ..) VALUES (p1, ..), ..` or `.. SELECT p1, ..`: a value that is a
    /// parameter binds to the column in its position.
    fn inserted(&mut self, table: &str, columns: &[String], source: &Query) {
        match source.body.as_ref() {
            SetExpr::Values(values) => {
                for row in &values.rows {
                    for (value, column) in row.content.iter().zip(columns) {
                        self.bind_value(value, table, column);
                    }
                }
            }
            SetExpr::Select(select) => {
                for (item, column) in select.projection.iter().zip(columns) {
                    if let SelectItem::UnnamedExpr(value)
                    | SelectItem::ExprWithAlias { expr: value, .. } = item
                    {
                        self.bind_value(value, table, column);
                    }
                }
            }
            _ => {}
        }
    }

    fn joins(&mut self, from: &[sqlparser::ast::TableWithJoins]) {
        let outer = from.iter().flat_map(|t| &t.joins).any(|j| {
            matches!(
                j.join_operator,
                JoinOperator::Left(_)
                    | JoinOperator::LeftOuter(_)
                    | JoinOperator::Right(_)
                    | JoinOperator::RightOuter(_)
                    | JoinOperator::FullOuter(_)
            )
        });
        self.out.outer_join |= outer;
    }
}

impl Visitor for Reader<'_, '_> {
    type Break = ();

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<()> {
        match statement {
            Statement::Insert(insert) => {
                self.scopes.enter(false);
                let TableObject::TableName(name) = &insert.table else {
                    return ControlFlow::Continue(());
                };
                let alias = insert.table_alias.as_ref().map(|a| a.alias.value.clone());
                self.scopes.add_target(name, alias);
                let Some(table) = self.scopes.target(name) else {
                    return ControlFlow::Continue(());
                };
                if let Some(source) = &insert.source {
                    let columns: Vec<String> = insert.columns.iter().map(last_part).collect();
                    self.inserted(&table, &columns, source);
                    if let SetExpr::Select(select) = source.body.as_ref() {
                        self.insert_sources.push(address(select.as_ref()));
                    }
                }
                if let Some(OnInsert::OnConflict(conflict)) = &insert.on {
                    if let OnConflictAction::DoUpdate(update) = &conflict.action {
                        self.assignments(Some(&table), &update.assignments);
                    }
                }
            }
            Statement::Update(update) => {
                self.scopes.enter(false);
                self.scopes.add_from(std::slice::from_ref(&update.table));
                self.joins(std::slice::from_ref(&update.table));
                if let Some(
                    UpdateTableFromKind::BeforeSet(from) | UpdateTableFromKind::AfterSet(from),
                ) = &update.from
                {
                    self.scopes.add_from(from);
                    self.joins(from);
                }
                let target = match &update.table.relation {
                    sqlparser::ast::TableFactor::Table { name, .. } => self.scopes.target(name),
                    _ => None,
                };
                self.assignments(target.as_deref(), &update.assignments);
            }
            Statement::Delete(delete) => {
                self.scopes.enter(false);
                let (FromTable::WithFromKeyword(from) | FromTable::WithoutKeyword(from)) =
                    &delete.from;
                self.scopes.add_from(from);
                self.joins(from);
                if let Some(using) = &delete.using {
                    self.scopes.add_from(using);
                    self.joins(using);
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn post_visit_statement(&mut self, statement: &Statement) -> ControlFlow<()> {
        if matches!(
            statement,
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
        ) {
            self.scopes.leave();
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        let ctes = query
            .with
            .iter()
            .flat_map(|w| &w.cte_tables)
            .map(|c| c.alias.name.value.clone())
            .collect();
        self.scopes.enter_query(ctes);
        if let SetExpr::Select(select) = query.body.as_ref() {
            self.owned_by_query.push(address(select.as_ref()));
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if let SetExpr::Select(select) = query.body.as_ref() {
            if self.owned_by_query.last() == Some(&address(select.as_ref())) {
                self.owned_by_query.pop();
                self.scopes.leave();
            }
        }
        self.scopes.leave_query();
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        let detached = self.insert_sources.contains(&address(select));
        self.scopes.enter(detached);
        self.scopes.add_from(&select.from);
        self.joins(&select.from);
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        // A query's whole body stays open for its ORDER BY; the query closes it.
        if self.owned_by_query.last() != Some(&address(select)) {
            self.scopes.leave();
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        match expr {
            Expr::BinaryOp { left, op, right } if compares(op) => {
                self.pair(&operand(left), &operand(right));
                if matches!(op, BinaryOperator::Is | BinaryOperator::IsNot) {
                    self.nullable(left);
                }
            }
            Expr::IsDistinctFrom(left, right) | Expr::IsNotDistinctFrom(left, right) => {
                self.pair(&operand(left), &operand(right));
                self.nullable(left);
            }
            Expr::IsNull(e) | Expr::IsNotNull(e) => self.nullable(e),
            Expr::Like { expr, pattern, .. } | Expr::ILike { expr, pattern, .. } => {
                self.pair(&operand(expr), &operand(pattern));
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                let left = operand(expr);
                self.pair(&left, &operand(low));
                self.pair(&left, &operand(high));
            }
            Expr::In {
                expr,
                target: sqlparser::ast::InTarget::List(list),
                ..
            } => {
                let left = operand(expr);
                for e in list {
                    self.pair(&left, &operand(e));
                }
            }
            Expr::Cast {
                expr, data_type, ..
            } => {
                if let Operand::Param(v) = operand(expr) {
                    let affinity = Affinity::of(&data_type.to_string());
                    if let (Some(n), false) = (self.parsed.number(v), affinity == Affinity::Numeric)
                    {
                        self.out.casts.entry(n).or_insert(affinity);
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

impl Reader<'_, '_> {
    /// A parameter tested for NULL (`?2 IS NULL OR col = ?2`) may be `None`.
    fn nullable(&mut self, e: &Expr) {
        if let Operand::Param(v) = operand(e) {
            if let Some(n) = self.parsed.number(v) {
                self.out.nullable.insert(n);
            }
        }
    }
}

/// The operators that compare their two sides, so a parameter on one side takes the column's
/// type on the other.
fn compares(op: &BinaryOperator) -> bool {
    is_comparison(op)
        || matches!(
            op,
            BinaryOperator::Is
                | BinaryOperator::IsNot
                | BinaryOperator::Glob
                | BinaryOperator::Match
                | BinaryOperator::Regexp
        )
}

/// The affinity of each top-level `CAST(.. AS type)` column of the statement's result: a
/// SELECT's (a compound's first arm) or a RETURNING clause's; `None` when it has a `*`.
fn result_casts(statement: &Statement) -> Option<Vec<Option<Affinity>>> {
    let items = match statement {
        Statement::Query(query) => result_items(&query.body)?,
        Statement::Insert(i) => i.returning.as_deref()?,
        Statement::Update(u) => u.returning.as_deref()?,
        Statement::Delete(d) => d.returning.as_deref()?,
        _ => return None,
    };
    items
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                Some(match e {
                    Expr::Cast { data_type, .. } => Some(Affinity::of(&data_type.to_string())),
                    _ => None,
                })
            }
            _ => None,
        })
        .collect()
}

fn result_items(body: &SetExpr) -> Option<&[SelectItem]> {
    match body {
        SetExpr::Select(select) => Some(&select.projection),
        SetExpr::SetOperation { left, .. } => result_items(left),
        SetExpr::Query(query) => result_items(&query.body),
        SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) => match s {
            Statement::Insert(i) => i.returning.as_deref(),
            Statement::Update(u) => u.returning.as_deref(),
            Statement::Delete(d) => d.returning.as_deref(),
            _ => None,
        },
        _ => None,
    }
}
