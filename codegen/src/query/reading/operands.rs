//! One side of a comparison as the reading sees it: a parameter, a column, a row of them, or
//! anything else (a literal, an expression, a subquery), which binds to nothing.

use sqlparser::ast::{Expr, Value, ValueWithSpan};

/// One side of a comparison.
#[derive(Debug)]
pub(super) enum Operand<'e> {
    /// A parameter.
    Param(&'e ValueWithSpan),
    /// A column reference (`col`, `t.col`, `main.t.col`), names as written without quotes.
    Column {
        qualifier: Option<String>,
        name: String,
    },
    /// A row value `(a, b, ..)`.
    Row(Vec<Operand<'e>>),
    /// A literal, an expression or a subquery.
    Other,
}

/// `e` as an operand. Parentheses and a `COLLATE` do not change what is compared.
pub(super) fn operand(e: &Expr) -> Operand<'_> {
    match e {
        Expr::Value(v) if matches!(v.value, Value::Placeholder(_)) => Operand::Param(v),
        Expr::Identifier(name) => Operand::Column {
            qualifier: None,
            name: name.value.clone(),
        },
        Expr::CompoundIdentifier(parts) => match parts.as_slice() {
            [.., qualifier, name] => Operand::Column {
                qualifier: Some(qualifier.value.clone()),
                name: name.value.clone(),
            },
            _ => Operand::Other,
        },
        Expr::Nested(inner) | Expr::Collate { expr: inner, .. } => operand(inner),
        Expr::Tuple(items) => Operand::Row(items.iter().map(operand).collect()),
        _ => Operand::Other,
    }
}
