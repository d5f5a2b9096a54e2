//! What a statement's text shows about its parameters, so the macros can check each argument's
//! Rust type: the table column a parameter binds to, where it is compared with a column
//! (`col = ?`, `? < t.col`, `(col) >= ?`, `col [NOT] BETWEEN ? AND ?`, `col [NOT] IN (?, ..)`,
//! `col [NOT] LIKE ?`, `col IS ?`, row values `(a, b) < (?, ?)`), assigned to one (`SET col = ?`)
//! or inserted into one (`INSERT INTO t (cols) VALUES (..)` or `SELECT ..`); the type a
//! `CAST(? AS type)` gives it; whether it is tested for NULL; and the parameters compared with a
//! column whose type is unknown (a CTE's or a subquery's), which the macros refuse.
//!
//! A parameter that is part of a larger expression (`col + ? > 3`, `lower(col) = ?`, `LIMIT ?`)
//! binds to nothing: the expression's type is SQLite's to decide at run time.

use super::scopes::{is_name, opens_query, Resolved, Scopes};
use super::tokens::Tokens;
use crate::model::Affinity;
use crate::sql::TokenKind;
use crate::Baseline;
use std::collections::{BTreeMap, BTreeSet};

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

/// What the text shows about the parameters, by 1-based parameter index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Parameters {
    pub(super) bindings: BTreeMap<usize, Vec<(String, String)>>,
    pub(super) casts: BTreeMap<usize, Affinity>,
    pub(super) nullable: BTreeSet<usize>,
    pub(super) unknowable: BTreeMap<usize, Unknowable>,
}

/// One side of a comparison.
#[derive(Debug, Clone)]
enum Operand {
    /// A parameter, by token index.
    Param(usize),
    /// A column reference (`col`, `t.col`, `(col)`): its first token, qualifier and name.
    Column {
        at: usize,
        qualifier: Option<String>,
        name: String,
    },
    /// A row value `(a, b, ..)`.
    Row(Vec<Operand>),
    /// A literal, an expression or a subquery.
    Other,
}

const COMPARISONS: &[&str] = &["=", "==", "!=", "<>", "<", "<=", ">", ">="];
const PATTERN_MATCHES: &[&str] = &["LIKE", "GLOB", "MATCH", "REGEXP"];
/// Words after which an operand starts: it is not the tail of a larger expression.
const BEFORE_OPERAND: &[&str] = &[
    "WHERE",
    "AND",
    "OR",
    "NOT",
    "ON",
    "WHEN",
    "THEN",
    "ELSE",
    "HAVING",
    "SET",
    "SELECT",
    "DISTINCT",
    "RETURNING",
];
/// Words before which an operand ends: it is not the head of a larger expression.
const AFTER_OPERAND: &[&str] = &[
    "AND",
    "OR",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "ORDER",
    "GROUP",
    "LIMIT",
    "HAVING",
    "WHERE",
    "FROM",
    "UNION",
    "INTERSECT",
    "EXCEPT",
    "RETURNING",
    "ON",
    "JOIN",
    "INNER",
    "LEFT",
    "CROSS",
    "NATURAL",
    "RIGHT",
    "FULL",
    "COLLATE",
    "ESCAPE",
    "WINDOW",
    "DO",
    "AS",
    "ASC",
    "DESC",
    "NULLS",
];
/// Words that are values or start expressions, never column names.
const NOT_A_COLUMN: &[&str] = &[
    "NULL",
    "TRUE",
    "FALSE",
    "CURRENT_TIME",
    "CURRENT_DATE",
    "CURRENT_TIMESTAMP",
    "CASE",
    "CAST",
    "EXISTS",
    "NOT",
    "SELECT",
    "END",
];

/// Reads the parameters of a statement SQLite has accepted.
pub(super) fn read(baseline: &Baseline, t: &Tokens<'_>) -> Parameters {
    let mut r = Reader {
        t,
        scopes: Scopes::new(baseline, t),
        out: Parameters::default(),
    };
    r.comparisons();
    r.inserts();
    r.casts();
    for (i, w) in t.list.windows(2).enumerate() {
        if let (Some(idx), true) = (t.param[i], w[1].is_word("IS")) {
            r.out.nullable.insert(idx);
        }
    }
    let Parameters {
        bindings,
        casts,
        unknowable,
        ..
    } = &mut r.out;
    unknowable.retain(|idx, _| !bindings.contains_key(idx) && !casts.contains_key(idx));
    r.out
}

struct Reader<'t, 'a, 's> {
    t: &'t Tokens<'a>,
    scopes: Scopes<'s>,
    out: Parameters,
}

impl Reader<'_, '_, '_> {
    fn text(&self, i: usize) -> &str {
        self.t.list.get(i).map_or("", |t| t.text)
    }

    fn is_word(&self, i: usize, w: &str) -> bool {
        self.t.list.get(i).is_some_and(|t| t.is_word(w))
    }

    /// The operand that starts at token `start`, and the index just after it.
    fn operand_at(&self, start: usize) -> (Operand, usize) {
        let tokens = &self.t.list;
        let Some(tok) = tokens.get(start) else {
            return (Operand::Other, start);
        };
        if self.t.param[start].is_some() {
            return (Operand::Param(start), start + 1);
        }
        if tok.text == "(" {
            let Some(close) = self.t.partner[start] else {
                return (Operand::Other, tokens.len());
            };
            if opens_query(tokens, start) {
                return (Operand::Other, close + 1);
            }
            let mut elements = self.list(start + 1, close);
            let op = if elements.len() == 1 {
                elements.remove(0)
            } else {
                Operand::Row(elements)
            };
            return (op, close + 1);
        }
        if !is_name(tok) || NOT_A_COLUMN.iter().any(|w| tok.is_word(w)) {
            return (Operand::Other, start + 1);
        }
        if self.text(start + 1) == "(" {
            // A function call.
            let end = self.t.partner[start + 1].map_or(tokens.len(), |c| c + 1);
            return (Operand::Other, end);
        }
        if self.text(start + 1) == "." && tokens.get(start + 2).is_some_and(is_name) {
            let column = Operand::Column {
                at: start,
                qualifier: Some(tok.ident()),
                name: tokens[start + 2].ident(),
            };
            return (column, start + 3);
        }
        let column = Operand::Column {
            at: start,
            qualifier: None,
            name: tok.ident(),
        };
        (column, start + 1)
    }

    /// The comma-separated operands of tokens `start..end`; an element that is more than one
    /// operand is [`Operand::Other`].
    fn list(&self, start: usize, end: usize) -> Vec<Operand> {
        let mut out = Vec::new();
        let mut k = start;
        while k < end {
            let (op, after) = self.operand_at(k);
            let whole = after == end || self.text(after) == ",";
            out.push(if whole { op } else { Operand::Other });
            // On to the next top-level comma.
            k = after;
            while k < end && self.text(k) != "," {
                k = match self.text(k) {
                    "(" => self.t.partner[k].map_or(end, |c| c + 1),
                    _ => k + 1,
                };
            }
            k += 1;
        }
        out
    }

    /// The whole operand that ends just before token `end`.
    fn operand_before(&self, end: usize) -> Operand {
        let tokens = &self.t.list;
        let Some(last) = end.checked_sub(1) else {
            return Operand::Other;
        };
        let start = if tokens[last].text == ")" {
            let Some(open) = self.t.partner[last] else {
                return Operand::Other;
            };
            // `f(..)`, `IN (..)`: the parentheses belong to what precedes them.
            if open > 0 && is_name(&tokens[open - 1]) && !self.starts_operand(open) {
                return Operand::Other;
            }
            open
        } else if last >= 2 && tokens[last - 1].text == "." && is_name(&tokens[last - 2]) {
            last - 2
        } else {
            last
        };
        let (op, after) = self.operand_at(start);
        if after != end || !self.starts_operand(start) {
            return Operand::Other;
        }
        op
    }

    /// True when an operand starting at token `i` is not the tail of a larger expression.
    fn starts_operand(&self, i: usize) -> bool {
        i == 0
            || matches!(self.text(i - 1), "(" | ",")
            || BEFORE_OPERAND.iter().any(|w| self.is_word(i - 1, w))
    }

    /// The whole operand that starts at token `start`.
    fn operand_after(&self, start: usize) -> Operand {
        let (op, end) = self.operand_at(start);
        let ends = end >= self.t.list.len()
            || matches!(self.text(end), ")" | "," | ";")
            || AFTER_OPERAND.iter().any(|w| self.is_word(end, w));
        if ends {
            op
        } else {
            Operand::Other
        }
    }

    /// Where token `k` starts a comparison, the index just after its operator.
    fn comparison(&self, k: usize) -> Option<usize> {
        let tok = &self.t.list[k];
        if tok.kind == TokenKind::Punct && COMPARISONS.contains(&tok.text) {
            return Some(k + 1);
        }
        if tok.is_word("IS") {
            let mut end = k + 1;
            if self.is_word(end, "NOT") {
                end += 1;
            }
            if self.is_word(end, "DISTINCT") && self.is_word(end + 1, "FROM") {
                end += 2;
            }
            return Some(end);
        }
        PATTERN_MATCHES
            .iter()
            .any(|w| tok.is_word(w))
            .then_some(k + 1)
    }

    /// The end of the left operand of an operator at `k` that may follow a NOT.
    fn before_not(&self, k: usize) -> usize {
        if k > 0 && self.is_word(k - 1, "NOT") {
            k - 1
        } else {
            k
        }
    }

    /// Comparisons, `BETWEEN` and `IN` lists: a parameter on one side, a column on the other.
    fn comparisons(&mut self) {
        let tokens = &self.t.list;
        for k in 0..tokens.len() {
            if let Some(end) = self.comparison(k) {
                let left_end = if PATTERN_MATCHES.iter().any(|w| tokens[k].is_word(w)) {
                    self.before_not(k)
                } else {
                    k
                };
                let left = self.operand_before(left_end);
                let right = self.operand_after(end);
                self.pair(&left, &right);
            } else if tokens[k].is_word("BETWEEN") {
                let left = self.operand_before(self.before_not(k));
                // The AND that closes this BETWEEN: the first one at its level.
                let mut and = k + 1;
                while and < tokens.len() && !tokens[and].is_word("AND") {
                    and = match tokens[and].text {
                        "(" => self.t.partner[and].map_or(tokens.len(), |c| c + 1),
                        ")" => tokens.len(),
                        _ => and + 1,
                    };
                }
                if and >= tokens.len() {
                    continue;
                }
                let (low, low_end) = self.operand_at(k + 1);
                if low_end == and {
                    self.pair(&left, &low);
                }
                let high = self.operand_after(and + 1);
                self.pair(&left, &high);
            } else if tokens[k].is_word("IN")
                && self.text(k + 1) == "("
                && !opens_query(tokens, k + 1)
            {
                let left = self.operand_before(self.before_not(k));
                let Some(close) = self.t.partner[k + 1] else {
                    continue;
                };
                for element in self.list(k + 2, close) {
                    self.pair(&left, &element);
                }
            }
        }
    }

    fn pair(&mut self, a: &Operand, b: &Operand) {
        match (a, b) {
            (
                Operand::Param(p),
                Operand::Column {
                    at,
                    qualifier,
                    name,
                },
            )
            | (
                Operand::Column {
                    at,
                    qualifier,
                    name,
                },
                Operand::Param(p),
            ) => self.bind(*p, *at, qualifier.as_deref(), name),
            (Operand::Row(xs), Operand::Row(ys)) if xs.len() == ys.len() => {
                for (x, y) in xs.iter().zip(ys) {
                    self.pair(x, y);
                }
            }
            _ => {}
        }
    }

    fn bind(&mut self, param: usize, at: usize, qualifier: Option<&str>, name: &str) {
        let Some(idx) = self.t.param[param] else {
            return;
        };
        match self.scopes.resolve(at, qualifier, name) {
            Resolved::Column(table, column) => self.add(idx, table, column),
            Resolved::Elsewhere(source) => {
                let column = match qualifier {
                    Some(q) => format!("{q}.{name}"),
                    None => name.to_string(),
                };
                let param = self.t.list[param].text.to_string();
                self.out.unknowable.entry(idx).or_insert(Unknowable {
                    param,
                    column,
                    source,
                });
            }
            Resolved::Unknown => {}
        }
    }

    fn add(&mut self, idx: usize, table: String, column: String) {
        let columns = self.out.bindings.entry(idx).or_default();
        if !columns.contains(&(table.clone(), column.clone())) {
            columns.push((table, column));
        }
    }

    /// `INSERT INTO t (c1, c2, ..) VALUES (p1, p2, ..), ..` or `.. SELECT p1, p2, ..`: a value
    /// that is a parameter binds to the column in its position.
    fn inserts(&mut self) {
        let t = self.t;
        let tokens = &t.list;
        for into in (0..tokens.len()).filter(|&i| tokens[i].is_word("INTO")) {
            let mut open = into + 2;
            if self.text(into + 2) == "." {
                open += 2;
            }
            if self.text(open) != "(" {
                continue;
            }
            let (Some(table), Some(close)) = (
                tokens
                    .get(open - 1)
                    .filter(|t| is_name(t))
                    .map(|t| t.ident()),
                t.partner[open],
            ) else {
                continue;
            };
            let columns: Vec<String> = tokens[open + 1..close]
                .iter()
                .filter(|t| t.text != ",")
                .map(|t| t.ident())
                .collect();
            let mut rows = Vec::new();
            if self.is_word(close + 1, "VALUES") {
                let mut row = close + 2;
                while self.text(row) == "(" {
                    let Some(end) = self.t.partner[row] else {
                        break;
                    };
                    rows.push(self.list(row + 1, end));
                    if self.text(end + 1) != "," {
                        break;
                    }
                    row = end + 2;
                }
            } else if self.is_word(close + 1, "SELECT") {
                let start = close + 2;
                let mut end = start;
                while end < tokens.len()
                    && !["FROM", "WHERE", "GROUP", "ORDER", "LIMIT", "UNION", "ON"]
                        .iter()
                        .any(|w| tokens[end].is_word(w))
                {
                    end = match tokens[end].text {
                        "(" => self.t.partner[end].map_or(tokens.len(), |c| c + 1),
                        _ => end + 1,
                    };
                }
                rows.push(self.list(start, end.min(tokens.len())));
            }
            for row in rows {
                for (value, column) in row.iter().zip(&columns) {
                    let (Operand::Param(p), Some((t, c))) =
                        (value, self.scopes.column(&table, column))
                    else {
                        continue;
                    };
                    if let Some(idx) = self.t.param[*p] {
                        self.add(idx, t, c);
                    }
                }
            }
        }
    }

    /// `CAST(? AS type)`: the parameter has the cast's type (INTEGER, TEXT, REAL or BLOB; a
    /// NUMERIC cast takes integers and reals alike, so it states none).
    fn casts(&mut self) {
        let t = self.t;
        let tokens = &t.list;
        for k in 0..tokens.len() {
            if !(tokens[k].is_word("CAST") && self.text(k + 1) == "(" && self.is_word(k + 3, "AS"))
            {
                continue;
            }
            let (Some(idx), Some(close)) = (
                self.t.param.get(k + 2).copied().flatten(),
                self.t.partner[k + 1],
            ) else {
                continue;
            };
            let ty: Vec<&str> = tokens
                .get(k + 4..close)
                .unwrap_or_default()
                .iter()
                .map(|t| t.text)
                .collect();
            let affinity = Affinity::of(&ty.join(" "));
            if affinity != Affinity::Numeric {
                self.out.casts.entry(idx).or_insert(affinity);
            }
        }
    }
}
