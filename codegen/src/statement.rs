//! The one parse of a statement SQLite has accepted: sqlparser's syntax tree in SQLite's dialect,
//! and the number SQLite gives each parameter in it. The query macros read parameters, scopes
//! and result casts from this tree (`query::reading`) and translate the same tree to
//! PostgreSQL (`postgres::translate`), so the text is parsed once per statement.
//!
//! Invariant: parameters are numbered by their place in the text, as SQLite numbers them, not
//! by the order a visitor happens to meet them.

use sqlparser::ast::{BinaryOperator, Statement, Value, ValueWithSpan, Visit, Visitor};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;
use std::collections::BTreeMap;
use std::ops::ControlFlow;

/// A statement parsed once, with the number of each of its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The syntax tree.
    pub statement: Statement,
    numbers: BTreeMap<(u64, u64), usize>,
}

impl Parsed {
    /// Parses `sql`, which must be exactly one statement.
    ///
    /// # Errors
    /// The parser's message (with its line and column), or how many statements the text holds.
    pub fn new(sql: &str) -> Result<Parsed, String> {
        let mut statements =
            Parser::parse_sql(&SQLiteDialect {}, sql).map_err(|e| e.to_string())?;
        if statements.len() != 1 {
            return Err(format!(
                "a query is one statement, and this text holds {}",
                statements.len()
            ));
        }
        let statement = statements.remove(0);
        let numbers = numbers(&statement);
        Ok(Parsed { statement, numbers })
    }

    /// The 1-based number SQLite gives the parameter `value` (`None` for any other value, or a
    /// value that is not from this statement's text).
    pub fn number(&self, value: &ValueWithSpan) -> Option<usize> {
        if !matches!(value.value, Value::Placeholder(_)) {
            return None;
        }
        let start = value.span.start;
        self.numbers.get(&(start.line, start.column)).copied()
    }
}

/// The six operators that compare two values by equality or order (`=`, `<>`, `<`, `<=`, `>`,
/// `>=`): the reading binds a parameter across them, the translation takes them for conditions
/// and lets them through.
pub(crate) fn is_comparison(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
    )
}

/// Each parameter's number by its place in the text. SQLite gives `?NNN` the number NNN, `?` one
/// past the largest so far, and a name (`:id`, `@id`, `$id`) one past the largest when it first
/// appears, the same number after.
fn numbers(statement: &Statement) -> BTreeMap<(u64, u64), usize> {
    struct Collect(Vec<((u64, u64), String)>);
    impl Visitor for Collect {
        type Break = ();
        fn pre_visit_value(&mut self, value: &ValueWithSpan) -> ControlFlow<()> {
            if let Value::Placeholder(p) = &value.value {
                let start = value.span.start;
                self.0.push(((start.line, start.column), p.clone()));
            }
            ControlFlow::Continue(())
        }
    }
    let mut found = Collect(Vec::new());
    let _ = statement.visit(&mut found);
    let mut found = found.0;
    found.sort();
    // A parameter without a place in the text (line 0) cannot be ordered: none is numbered.
    if found.iter().any(|((line, _), _)| *line == 0) {
        return BTreeMap::new();
    }
    let mut largest = 0usize;
    let mut named: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (place, text) in found {
        let n = match text.strip_prefix('?') {
            Some("") => largest + 1,
            Some(digits) => match digits.parse() {
                Ok(n) => n,
                Err(_) => continue,
            },
            None => *named.entry(text).or_insert(largest + 1),
        };
        largest = largest.max(n);
        out.insert(place, n);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(sql: &str) -> Vec<(String, usize)> {
        struct Each<'p>(&'p Parsed, Vec<(String, usize)>);
        impl Visitor for Each<'_> {
            type Break = ();
            fn pre_visit_value(&mut self, value: &ValueWithSpan) -> ControlFlow<()> {
                if let (Value::Placeholder(p), Some(n)) = (&value.value, self.0.number(value)) {
                    self.1.push((p.clone(), n));
                }
                ControlFlow::Continue(())
            }
        }
        let parsed = Parsed::new(sql).unwrap();
        let mut each = Each(&parsed, Vec::new());
        let _ = parsed.statement.visit(&mut each);
        each.1.sort_by_key(|(_, n)| *n);
        each.1
    }

    #[test]
    fn parameters_are_numbered_in_text_order_as_sqlite_numbers_them() {
        assert_eq!(
            numbered("SELECT ?, :a, ?5, ?, :a FROM t LIMIT ?"),
            [
                ("?".to_string(), 1),
                (":a".to_string(), 2),
                (":a".to_string(), 2),
                ("?5".to_string(), 5),
                ("?".to_string(), 6),
                ("?".to_string(), 7),
            ]
        );
        // An UPDATE's SET comes before its WHERE in the text, whatever the tree's field order.
        assert_eq!(
            numbered("UPDATE t SET a = ? WHERE b = ? RETURNING ?"),
            [("?".into(), 1), ("?".into(), 2), ("?".into(), 3)]
        );
    }

    #[test]
    fn more_than_one_statement_is_refused() {
        let e = Parsed::new("SELECT 1; SELECT 2").unwrap_err();
        assert!(e.contains("holds 2"), "{e}");
        assert!(Parsed::new("SELECT FROM WHERE").is_err());
    }
}
