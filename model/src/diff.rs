//! Structural differences between two [`Schema`]s, rendered so a person can act on them.

use crate::model::{Schema, Table};
use std::collections::BTreeSet;

/// One object that differs; `left` and `right` describe each side, `None` when absent there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The table the object belongs to (for triggers and views: the table they are on).
    pub table: String,
    /// What differs inside the table, e.g. `column title_source`, `index runs_dispatch`;
    /// `None` when the table itself is on one side only.
    pub object: Option<String>,
    /// The left side's declaration, `None` when it lacks the object.
    pub left: Option<String>,
    /// The right side's declaration, `None` when it lacks the object.
    pub right: Option<String>,
    /// The column the difference is about, when it is one.
    pub column: Option<String>,
}

impl Difference {
    /// `table runs, column foo` or `table runs`.
    pub fn path(&self) -> String {
        match &self.object {
            Some(o) => format!("table {}, {}", self.table, o),
            None => format!("table {}", self.table),
        }
    }
}

/// Every difference between `left` and `right`, ordered by table then object.
pub fn diff(left: &Schema, right: &Schema) -> Vec<Difference> {
    let mut out = Vec::new();
    let names: BTreeSet<&String> = left.tables.keys().chain(right.tables.keys()).collect();
    for name in names {
        match (left.tables.get(name), right.tables.get(name)) {
            (Some(l), Some(r)) => diff_table(l, r, &mut out),
            (l, r) => out.push(Difference {
                table: name.clone(),
                object: None,
                left: l.map(describe_table),
                right: r.map(describe_table),
                column: None,
            }),
        }
    }
    for (kind, l, r) in [
        ("trigger", &left.triggers, &right.triggers),
        ("view", &left.views, &right.views),
    ] {
        let names: BTreeSet<&String> = l.keys().chain(r.keys()).collect();
        for name in names {
            let (a, b) = (l.get(name), r.get(name));
            if a != b {
                out.push(Difference {
                    table: a.or(b).map(|o| o.table.clone()).unwrap_or_default(),
                    object: Some(format!("{kind} {name}")),
                    left: a.map(|o| o.sql.clone()),
                    right: b.map(|o| o.sql.clone()),
                    column: None,
                });
            }
        }
    }
    out
}

fn describe_table(t: &Table) -> String {
    let cols: Vec<String> = t.ordered_columns().map(|c| c.describe()).collect();
    let cols = if cols.is_empty() {
        t.columns.values().map(|c| c.describe()).collect()
    } else {
        cols
    };
    format!("CREATE TABLE {} ({})", t.name, cols.join(", "))
}

fn diff_table(l: &Table, r: &Table, out: &mut Vec<Difference>) {
    let mut push = |object: String, column: Option<&str>, a: Option<String>, b: Option<String>| {
        if a != b {
            out.push(Difference {
                table: l.name.clone(),
                object: Some(object),
                left: a,
                right: b,
                column: column.map(str::to_string),
            });
        }
    };
    let flags = |t: &Table| {
        let mut f = Vec::new();
        if t.without_rowid {
            f.push("WITHOUT ROWID");
        }
        if t.strict {
            f.push("STRICT");
        }
        if f.is_empty() {
            "rowid table".to_string()
        } else {
            f.join(", ")
        }
    };
    push("table options".into(), None, Some(flags(l)), Some(flags(r)));
    let cols: BTreeSet<&String> = l.columns.keys().chain(r.columns.keys()).collect();
    for c in cols {
        push(
            format!("column {c}"),
            Some(c),
            l.columns.get(c).map(|c| c.describe()),
            r.columns.get(c).map(|c| c.describe()),
        );
    }
    push(
        "primary key".into(),
        None,
        Some(format!("PRIMARY KEY ({})", l.primary_key.join(", "))),
        Some(format!("PRIMARY KEY ({})", r.primary_key.join(", "))),
    );
    for u in l.uniques.symmetric_difference(&r.uniques) {
        let d = format!("UNIQUE ({})", u.join(", "));
        push(
            format!("unique ({})", u.join(", ")),
            None,
            l.uniques.contains(u).then(|| d.clone()),
            r.uniques.contains(u).then_some(d),
        );
    }
    let idx: BTreeSet<&String> = l.indexes.keys().chain(r.indexes.keys()).collect();
    for i in idx {
        push(
            format!("index {i}"),
            None,
            l.indexes.get(i).map(|x| x.describe()),
            r.indexes.get(i).map(|x| x.describe()),
        );
    }
    for fk in l.foreign_keys.symmetric_difference(&r.foreign_keys) {
        let column = (fk.columns.len() == 1).then(|| fk.columns[0].as_str());
        push(
            format!("foreign key ({})", fk.columns.join(", ")),
            column,
            l.foreign_keys.contains(fk).then(|| fk.describe()),
            r.foreign_keys.contains(fk).then(|| fk.describe()),
        );
    }
}

/// Renders differences as an indented report: each line names the object and shows both sides
/// under their labels, followed by `note(diff)` when it returns something (the migration that last
/// touched the object, for example).
pub fn render(
    diffs: &[Difference],
    left_label: &str,
    right_label: &str,
    note: impl Fn(&Difference) -> Option<String>,
) -> String {
    let mut out = String::new();
    for d in diffs {
        let side = |s: &Option<String>| match s {
            Some(s) => format!("`{s}`"),
            None => "nothing".to_string(),
        };
        out.push_str(&format!(
            "  {}:\n      {left_label} has {}\n      {right_label} has {}\n",
            d.path(),
            side(&d.left),
            side(&d.right)
        ));
        if let Some(n) = note(d) {
            out.push_str(&format!("      {n}\n"));
        }
    }
    out
}
