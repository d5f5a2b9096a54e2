//! Rewrites a statement the store checked in SQLite into the PostgreSQL statement with the same
//! meaning, at compile time (the query macros) and build time (the generated helpers), so the
//! runtime never parses SQL.
//!
//! Invariant: the rewrite changes only what the two dialects spell or evaluate differently,
//! and the result must parse as PostgreSQL with exactly the parameters the SQLite statement has
//! ([`translate`] fails otherwise). It fails closed: a statement holding a function, operator or
//! form whose translation would not mean what it means in SQLite is refused (`allowed`, the
//! allow-list, checked first). What it rewrites:
//! - parameters: `?N` is `$N` (a bare `?` or a name is numbered as SQLite numbers it);
//! - `INDEXED BY` and `NOT INDEXED` are dropped (they only steer SQLite's planner);
//! - booleans: SQLite's comparisons are integers, PostgreSQL's are `boolean`. A boolean where an
//!   integer is wanted (a selected value, an operand of arithmetic or a comparison, a function
//!   argument, a `CASE` result, an assigned or inserted value) becomes `0`/`1`
//!   (`CAST(CAST(e AS INT) AS BIGINT)`), and an integer where a condition is wanted (`WHERE`,
//!   `ON`, `HAVING`, `CASE WHEN`, operands of `AND`, `OR`, `NOT`) becomes `(e) <> 0`;
//! - types: `CAST(e AS INTEGER)` is `BIGINT`, `BLOB` is `BYTEA`, `REAL` is `DOUBLE PRECISION`;
//! - functions: scalar `max(a, b, ..)`/`min(..)` are `GREATEST`/`LEAST` (under a `CASE` that is
//!   NULL when an argument is: SQLite's are, PostgreSQL's skip NULLs), `ifnull` is `COALESCE`,
//!   `lower`/`upper` fold the ASCII letters only (`translate(e, 'AB..Z', 'ab..z')`), as SQLite's;
//! - `LIKE`: SQLite's folds ASCII case and has no escape character unless given one;
//!   PostgreSQL's is case-sensitive and escapes with `\`. Both sides are folded as `lower` is,
//!   and an `ESCAPE` clause is given (`ESCAPE ''`, none, unless the statement has its own);
//! - `INSERT OR IGNORE` is `INSERT .. ON CONFLICT DO NOTHING`;
//! - `ORDER BY` keeps SQLite's NULL order (first when ascending, last when descending) for a
//!   key that may be NULL; a column the schema declares NOT NULL everywhere keeps PostgreSQL's
//!   default, so an index still serves the order;
//! - `LIMIT ?` keeps SQLite's "a negative limit is no limit" (`LIMIT NULLIF($n, -1)`);
//! - a subquery in `FROM` without an alias gets one (PostgreSQL requires it);
//! - `COLLATE BINARY` is `COLLATE "C"` (byte order; a text parameter has the database's
//!   collation otherwise, which a recursive query over text columns refuses to mix).

use crate::model::Table;
use crate::statement::{is_comparison, Parsed};
use functions::{ascii_case, call, function};
use sqlparser::ast::{
    BinaryOperator, CastKind, DataType, Expr, Ident, InTarget, JoinConstraint, JoinOperator,
    LimitClause, ObjectName, ObjectNamePart, OnConflict, OnConflictAction, OnInsert, OrderByKind,
    OrderBySort, Query, Select, SelectItem, SetExpr, SqliteOnConflict, Statement, TableAlias,
    TableFactor, UnaryOperator, Update, Value, ValueWithSpan, VisitMut, VisitorMut,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use std::collections::BTreeSet;
use std::ops::ControlFlow;

/// The names of the columns that are NOT NULL (or in a primary key) in every table of `tables`
/// that has a column of that name: what [`translate`] may order by without a NULLS clause.
pub fn non_null_columns<'a>(tables: impl IntoIterator<Item = &'a Table>) -> BTreeSet<String> {
    let mut nullable = BTreeSet::new();
    let mut all = BTreeSet::new();
    for table in tables {
        for column in table.columns.values() {
            all.insert(column.name.clone());
            if !column.not_null && column.pk == 0 {
                nullable.insert(column.name.clone());
            }
        }
    }
    all.difference(&nullable).cloned().collect()
}

/// The PostgreSQL statement with the meaning of the SQLite statement `sql`, which has `params`
/// parameters; `non_null` names the columns no row holds NULL in (see [`non_null_columns`]).
///
/// # Errors
/// Why it has no PostgreSQL rendering: SQLite's text does not parse as one statement, the
/// result does not parse as PostgreSQL, or its parameters are not `$1..=$params`.
pub fn translate(sql: &str, params: usize, non_null: &BTreeSet<String>) -> Result<String, String> {
    let parsed = Parsed::new(sql)
        .map_err(|e| format!("the SQLite statement does not parse for translation: {e}"))?;
    translate_parsed(&parsed, params, non_null)
}

/// [`translate`] of a statement already parsed (the query macros parse each statement once).
pub(crate) fn translate_parsed(
    parsed: &Parsed,
    params: usize,
    non_null: &BTreeSet<String>,
) -> Result<String, String> {
    let mut statement = parsed.statement.clone();
    allowed::check(&statement)?;
    let mut rewrite = Rewrite {
        parsed,
        non_null,
        aliases: 0,
    };
    let _ = statement.visit(&mut rewrite);
    let out = statement.to_string();
    let reparsed = Parser::parse_sql(&PostgreSqlDialect {}, &out)
        .map_err(|e| format!("PostgreSQL would not parse the translation ({e}): {out}"))?;
    let mut seen = BTreeSet::new();
    for mut s in reparsed {
        let _ = s.visit(&mut Placeholders(&mut seen));
    }
    let expected: BTreeSet<usize> = (1..=params).collect();
    if seen != expected {
        return Err(format!(
            "the translation has parameters {seen:?} where the statement has {params}: {out}"
        ));
    }
    Ok(out)
}

/// Collects the numbers of `$n` parameters.
struct Placeholders<'a>(&'a mut BTreeSet<usize>);

impl VisitorMut for Placeholders<'_> {
    type Break = ();

    fn post_visit_value(&mut self, value: &mut ValueWithSpan) -> ControlFlow<()> {
        if let Value::Placeholder(p) = &value.value {
            if let Some(n) = p.strip_prefix('$').and_then(|n| n.parse().ok()) {
                self.0.insert(n);
            }
        }
        ControlFlow::Continue(())
    }
}

struct Rewrite<'a> {
    /// The statement as parsed, which numbers its parameters.
    parsed: &'a Parsed,
    /// Columns no row holds NULL in.
    non_null: &'a BTreeSet<String>,
    /// Aliases given to derived tables so far.
    aliases: usize,
}

impl VisitorMut for Rewrite<'_> {
    type Break = ();

    fn post_visit_value(&mut self, value: &mut ValueWithSpan) -> ControlFlow<()> {
        // A parameter without a number keeps SQLite's spelling, which PostgreSQL does not
        // parse: the translation then fails its own check instead of numbering by guess.
        if let Some(n) = self.parsed.number(value) {
            value.value = Value::Placeholder(format!("${n}"));
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::BinaryOp { left, op, right } => {
                if matches!(op, BinaryOperator::And | BinaryOperator::Or) {
                    condition(left);
                    condition(right);
                } else {
                    integer(left);
                    integer(right);
                }
            }
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr: inner,
            } => condition(inner),
            Expr::UnaryOp { expr: inner, .. } => integer(inner),
            Expr::Cast {
                expr: inner,
                data_type,
                ..
            } => cast(inner, data_type),
            Expr::Function(f) => {
                // Arguments are values: a condition passed to a function is an integer.
                if let sqlparser::ast::FunctionArguments::List(list) = &mut f.args {
                    for arg in &mut list.args {
                        if let sqlparser::ast::FunctionArg::Unnamed(
                            sqlparser::ast::FunctionArgExpr::Expr(e),
                        ) = arg
                        {
                            integer(e);
                        }
                    }
                }
                if let Some(exact) = function(f) {
                    *expr = exact;
                }
            }
            Expr::Like {
                expr: inner,
                pattern,
                escape_char,
                ..
            } => {
                for side in [inner, pattern] {
                    let value = std::mem::replace(&mut **side, Expr::value(Value::Null));
                    **side = ascii_case(value, true);
                }
                if escape_char.is_none() {
                    *escape_char = Some(Box::new(Expr::value(Value::SingleQuotedString(
                        String::new(),
                    ))));
                }
            }
            // SQLite's byte order is PostgreSQL's "C" collation.
            Expr::Collate { collation, .. }
                if collation.to_string().eq_ignore_ascii_case("binary") =>
            {
                *collation = ObjectName(vec![ObjectNamePart::Identifier(Ident::with_quote(
                    '"', "C",
                ))]);
            }
            Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                if let Some(operand) = operand {
                    integer(operand);
                }
                for when in conditions.iter_mut() {
                    if operand.is_some() {
                        integer(&mut when.condition);
                    } else {
                        condition(&mut when.condition);
                    }
                    integer(&mut when.result);
                }
                if let Some(e) = else_result {
                    integer(e);
                }
            }
            Expr::In {
                expr: inner,
                target: InTarget::List(list),
                ..
            } => {
                integer(inner);
                for e in list.iter_mut() {
                    integer(e);
                }
            }
            Expr::Between {
                expr: inner,
                low,
                high,
                ..
            } => {
                integer(inner);
                integer(low);
                integer(high);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        set_expr(&mut query.body);
        if let Some(order_by) = &mut query.order_by {
            if let OrderByKind::Expressions(items) = &mut order_by.kind {
                for item in items {
                    let column = match &item.expr {
                        Expr::Identifier(c) => Some(&c.value),
                        Expr::CompoundIdentifier(parts) => parts.last().map(|c| &c.value),
                        _ => None,
                    };
                    let never_null = column.is_some_and(|c| self.non_null.contains(c));
                    if item.options.nulls_first.is_none() && !never_null {
                        // SQLite sorts NULL as the smallest value.
                        item.options.nulls_first =
                            Some(item.options.sort != Some(OrderBySort::Desc));
                    }
                }
            }
        }
        if let Some(LimitClause::LimitOffset {
            limit: Some(limit), ..
        }) = &mut query.limit_clause
        {
            if is_placeholder(limit) {
                let bound = std::mem::replace(limit, Expr::value(Value::Null));
                *limit = call("NULLIF", vec![bound, Expr::value(number("-1"))]);
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        // `INDEXED BY` and `NOT INDEXED` only steer SQLite's planner; PostgreSQL knows neither.
        if let TableFactor::Table {
            index_directives, ..
        } = factor
        {
            index_directives.clear();
        }
        if let TableFactor::Derived {
            alias: alias @ None,
            ..
        } = factor
        {
            self.aliases += 1;
            *alias = Some(TableAlias {
                explicit: true,
                name: Ident::new(format!("derived_{}", self.aliases)),
                columns: Vec::new(),
                at: None,
            });
        }
        ControlFlow::Continue(())
    }

    fn post_visit_statement(&mut self, statement: &mut Statement) -> ControlFlow<()> {
        match statement {
            Statement::Insert(insert) => {
                if insert.or == Some(SqliteOnConflict::Ignore) {
                    insert.or = None;
                    insert.on = Some(OnInsert::OnConflict(OnConflict {
                        conflict_target: None,
                        action: OnConflictAction::DoNothing,
                    }));
                }
                let target = match &insert.table {
                    sqlparser::ast::TableObject::TableName(name) => insert
                        .table_alias
                        .as_ref()
                        .map(|a| a.alias.clone())
                        .or_else(|| name.0.last().and_then(|p| p.as_ident().cloned())),
                    _ => None,
                };
                if let Some(OnInsert::OnConflict(OnConflict {
                    action: OnConflictAction::DoUpdate(update),
                    ..
                })) = &mut insert.on
                {
                    for a in &mut update.assignments {
                        integer(&mut a.value);
                        qualify(&mut a.value, target.as_ref());
                    }
                    if let Some(selection) = &mut update.selection {
                        condition(selection);
                        qualify(selection, target.as_ref());
                    }
                }
            }
            Statement::Update(Update {
                assignments,
                selection,
                ..
            }) => {
                for a in assignments.iter_mut() {
                    integer(&mut a.value);
                }
                if let Some(selection) = selection {
                    condition(selection);
                }
            }
            Statement::Delete(delete) => {
                if let Some(selection) = &mut delete.selection {
                    condition(selection);
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// Qualifies bare column names with the upsert's target table: in `DO UPDATE`, SQLite reads
/// them as the existing row's, and PostgreSQL calls them ambiguous (`excluded` has them too).
fn qualify(e: &mut Expr, target: Option<&Ident>) {
    let Some(target) = target else {
        return;
    };
    let _ = sqlparser::ast::visit_expressions_mut(e, |e| {
        if let Expr::Identifier(column) = e {
            *e = Expr::CompoundIdentifier(vec![target.clone(), column.clone()]);
        }
        ControlFlow::<()>::Continue(())
    });
}

/// The conditions and values of a query body.
fn set_expr(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => self_select(select),
        SetExpr::SetOperation { left, right, .. } => {
            set_expr(left);
            set_expr(right);
        }
        SetExpr::Values(values) => {
            for row in &mut values.rows {
                for e in &mut row.content {
                    integer(e);
                }
            }
        }
        _ => {}
    }
}

fn self_select(select: &mut Select) {
    for item in &mut select.projection {
        match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => integer(e),
            _ => {}
        }
    }
    if let Some(e) = &mut select.selection {
        condition(e);
    }
    if let Some(e) = &mut select.having {
        condition(e);
    }
    for table in &mut select.from {
        for join in &mut table.joins {
            let constraint = match &mut join.join_operator {
                JoinOperator::Join(c)
                | JoinOperator::Inner(c)
                | JoinOperator::Left(c)
                | JoinOperator::LeftOuter(c)
                | JoinOperator::Right(c)
                | JoinOperator::RightOuter(c)
                | JoinOperator::FullOuter(c)
                | JoinOperator::CrossJoin(c) => c,
                _ => continue,
            };
            if let JoinConstraint::On(e) = constraint {
                condition(e);
            }
        }
    }
}

/// Whether `e` is a condition (`boolean` on PostgreSQL) by its shape.
fn is_boolean(e: &Expr) -> bool {
    match e {
        Expr::IsNull(_)
        | Expr::IsNotNull(_)
        | Expr::IsTrue(_)
        | Expr::IsNotTrue(_)
        | Expr::IsFalse(_)
        | Expr::IsNotFalse(_)
        | Expr::IsDistinctFrom(..)
        | Expr::IsNotDistinctFrom(..)
        | Expr::Exists { .. }
        | Expr::In {
            target: InTarget::List(_) | InTarget::Subquery(_),
            ..
        }
        | Expr::Between { .. }
        | Expr::Like { .. }
        | Expr::ILike { .. } => true,
        Expr::BinaryOp { op, .. } => {
            is_comparison(op) || matches!(op, BinaryOperator::And | BinaryOperator::Or)
        }
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            ..
        } => true,
        Expr::Nested(inner) => is_boolean(inner),
        Expr::Value(v) => matches!(v.value, Value::Boolean(_)),
        _ => false,
    }
}

/// `e` where a condition is wanted: an integer becomes `(e) <> 0`.
fn condition(e: &mut Expr) {
    if !is_boolean(e) {
        let value = std::mem::replace(e, Expr::value(Value::Null));
        *e = Expr::BinaryOp {
            left: Box::new(Expr::Nested(Box::new(value))),
            op: BinaryOperator::NotEq,
            right: Box::new(Expr::value(number("0"))),
        };
    }
}

/// `e` where a value is wanted: a condition becomes `0`/`1` (NULL stays NULL).
fn integer(e: &mut Expr) {
    if is_boolean(e) {
        let value = std::mem::replace(e, Expr::value(Value::Null));
        *e = cast_to(cast_to(value, DataType::Int(None)), DataType::BigInt(None));
    }
}

fn cast_to(e: Expr, data_type: DataType) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(e),
        data_type,
        format: None,
    }
}

/// SQLite's type names as PostgreSQL's, a condition cast to an integer through `int`.
fn cast(inner: &mut Expr, data_type: &mut DataType) {
    match data_type {
        DataType::Integer(_) | DataType::Int(_) | DataType::BigInt(_) => {
            *data_type = DataType::BigInt(None);
            if is_boolean(inner) {
                let value = std::mem::replace(inner, Expr::value(Value::Null));
                *inner = cast_to(value, DataType::Int(None));
            }
        }
        DataType::Blob(_) => *data_type = DataType::Bytea,
        DataType::Real | DataType::Double(_) => *data_type = DataType::DoublePrecision,
        _ => {}
    }
}

fn is_placeholder(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if matches!(v.value, Value::Placeholder(_)))
}

fn number(n: &str) -> Value {
    Value::Number(n.into(), false)
}

mod allowed;
mod functions;
#[cfg(test)]
mod tests;
