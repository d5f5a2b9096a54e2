//! What a statement may contain for its translation to mean on PostgreSQL what it means on
//! SQLite: the allow-list [`super::translate`] checks before it rewrites anything.
//!
//! Invariant: it fails closed. A function, operator, cast or expression form that is not listed
//! here is refused, naming it, so a statement whose translation would evaluate
//! differently never compiles (the query macros) or builds (the generated helpers). What is
//! listed means the same on both once translated, over the values the store keeps: text
//! compares byte by byte on both (its PostgreSQL columns are `COLLATE "C"`); `LIKE` folds ASCII
//! case only and has no escape character unless it says so, on both (the translation makes
//! PostgreSQL's so); `lower`/`upper` fold ASCII letters only, on both; scalar `max`/`min` are
//! NULL when an argument is; `+` and `-` differ only past 64-bit integers, which no stored value
//! reaches. Not listed, since no store statement needs them yet, and refused until a rule for
//! them is written: `*`, `/` and `%` (SQLite answers a division by zero with NULL, PostgreSQL with an
//! error), `||`, window functions and `FILTER`, `GLOB` (which the parser already refuses),
//! `ILIKE`, `REGEXP`, and every other function. A cast to INTEGER, TEXT, BLOB or REAL means the
//! same for a value of the target's own kind (`CAST(count(*) AS INTEGER)`, a parameter); a
//! cast that converts between kinds (text that is not a number to an integer, a blob to text)
//! does not, and is for the statement's author to keep to the SQLite-only paths.

use crate::statement::is_comparison;
use sqlparser::ast::{
    BinaryOperator, CastKind, DataType, Expr, Function, FunctionArguments, InTarget, Statement,
    UnaryOperator, Value, Visit, Visitor,
};
use std::ops::ControlFlow;

/// The functions that mean the same on both backends once translated, with what the
/// translation does to them.
pub(super) const FUNCTIONS: &[(&str, &str)] = &[
    ("count", "as it is"),
    (
        "sum",
        "as it is (PostgreSQL's sum of integers is numeric; the runtime reads it back)",
    ),
    ("coalesce", "as it is"),
    ("ifnull", "COALESCE"),
    ("nullif", "as it is"),
    (
        "length",
        "as it is (characters of text, bytes of a blob, on both)",
    ),
    (
        "max",
        "as it is with one argument; with more, GREATEST, NULL when an argument is",
    ),
    (
        "min",
        "as it is with one argument; with more, LEAST, NULL when an argument is",
    ),
    (
        "lower",
        "translate(..) of the ASCII letters only, as SQLite folds",
    ),
    (
        "upper",
        "translate(..) of the ASCII letters only, as SQLite folds",
    ),
];

/// Refuses `statement` when it holds anything that is not on the allow-list.
///
/// # Errors
/// What it holds and why it is refused.
pub(super) fn check(statement: &Statement) -> Result<(), String> {
    match statement.visit(&mut Portable) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(what) => Err(format!(
            "{what} has no PostgreSQL translation that means what it means in SQLite; the \
             translation allows the functions {}, comparisons, AND, OR, NOT, + and -, [NOT] \
             LIKE, IN, BETWEEN, CASE, EXISTS, IS [NOT] NULL, subqueries and casts to INTEGER, \
             TEXT, BLOB or REAL",
            FUNCTIONS
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

struct Portable;

impl Visitor for Portable {
    type Break = String;

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<String> {
        match allowed(expr) {
            Ok(()) => ControlFlow::Continue(()),
            Err(what) => ControlFlow::Break(what),
        }
    }
}

fn allowed(expr: &Expr) -> Result<(), String> {
    match expr {
        Expr::Identifier(_)
        | Expr::CompoundIdentifier(_)
        | Expr::Value(_)
        | Expr::Nested(_)
        | Expr::Tuple(_)
        | Expr::IsNull(_)
        | Expr::IsNotNull(_)
        | Expr::IsDistinctFrom(..)
        | Expr::IsNotDistinctFrom(..)
        | Expr::In {
            target: InTarget::List(_) | InTarget::Subquery(_),
            ..
        }
        | Expr::Subquery(_)
        | Expr::Exists { .. }
        | Expr::Between { .. }
        | Expr::Case { .. } => Ok(()),
        Expr::BinaryOp { op, .. } => match op {
            op if is_comparison(op) => Ok(()),
            BinaryOperator::And
            | BinaryOperator::Or
            | BinaryOperator::Plus
            | BinaryOperator::Minus => Ok(()),
            other => Err(format!("the operator `{other}`")),
        },
        Expr::UnaryOp { op, .. } => match op {
            UnaryOperator::Not | UnaryOperator::Minus | UnaryOperator::Plus => Ok(()),
            other => Err(format!("the operator `{other}`")),
        },
        Expr::Like { any: false, .. } => Ok(()),
        Expr::Cast {
            kind: CastKind::Cast,
            data_type,
            ..
        } => match data_type {
            DataType::Integer(_)
            | DataType::Int(_)
            | DataType::BigInt(_)
            | DataType::Text
            | DataType::Blob(_)
            | DataType::Real
            | DataType::Double(_) => Ok(()),
            other => Err(format!("a cast to {other}")),
        },
        Expr::Collate { collation, .. } if collation.to_string().eq_ignore_ascii_case("binary") => {
            Ok(())
        }
        Expr::Function(f) => function(f),
        Expr::Substring {
            substring_from,
            substring_for,
            ..
        } => {
            // SQLite counts a start of 0 or below, and a negative length, in its own way.
            let from = substring_from.as_deref().is_some_and(|e| literal(e, 1));
            let length = substring_for.as_deref().is_none_or(|e| literal(e, 0));
            if from && length {
                Ok(())
            } else {
                Err(
                    "substr(..) with a start that is not a positive number, or a length that \
                     is not a number of zero or more"
                        .into(),
                )
            }
        }
        other => Err(format!("`{other}`")),
    }
}

/// Whether `e` is an integer literal of at least `min`.
fn literal(e: &Expr, min: i64) -> bool {
    matches!(e, Expr::Value(v) if matches!(&v.value, Value::Number(n, _)
        if n.parse::<i64>().is_ok_and(|n| n >= min)))
}

fn function(f: &Function) -> Result<(), String> {
    let name = f.name.to_string().to_ascii_lowercase();
    if !FUNCTIONS.iter().any(|(allowed, _)| *allowed == name) {
        return Err(format!("the function `{name}`"));
    }
    if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() {
        return Err(format!("`{name}` as a window or filtered aggregate"));
    }
    if !matches!(f.args, FunctionArguments::List(_) | FunctionArguments::None) {
        return Err(format!("`{name}` with a subquery as its arguments"));
    }
    Ok(())
}
