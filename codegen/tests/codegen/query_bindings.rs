//! What the checker reads about a statement's parameters: the column each binds to in every
//! comparison form, resolved in the scope SQLite resolves it in; the type a CAST gives; the
//! parameters compared with a column of unknown type; and the forms that bind to nothing.

use crate::common::small_checker;
use seed_agents_codegen::model::Affinity;
use seed_agents_codegen::query::Described;

fn describe(sql: &str) -> Described {
    small_checker()
        .describe(sql)
        .unwrap_or_else(|e| panic!("SQLite rejects {sql}: {e}"))
}

/// Each parameter's bindings as `table.column`, in parameter order.
fn bound(sql: &str) -> Vec<(usize, Vec<String>)> {
    describe(sql)
        .bindings
        .into_iter()
        .map(|(i, cols)| (i, cols.iter().map(|(t, c)| format!("{t}.{c}")).collect()))
        .collect()
}

fn one(i: usize, col: &str) -> (usize, Vec<String>) {
    (i, vec![col.to_string()])
}

#[test]
fn every_comparison_form_binds_the_parameter_to_the_column() {
    let cases: &[(&str, &[(usize, &str)])] = &[
        ("SELECT id FROM a WHERE n = ?1", &[(1, "a.n")]),
        ("SELECT id FROM a WHERE n <= ?1 AND n != ?2", &[(1, "a.n"), (2, "a.n")]),
        ("SELECT id FROM a WHERE n BETWEEN ?1 AND ?2", &[(1, "a.n"), (2, "a.n")]),
        ("SELECT id FROM a WHERE n NOT BETWEEN ?1 AND ?2 AND id = ?3", &[(1, "a.n"), (2, "a.n"), (3, "a.id")]),
        ("SELECT id FROM a WHERE ?1 < n", &[(1, "a.n")]),
        ("SELECT id FROM a WHERE ?1 = id", &[(1, "a.id")]),
        ("SELECT x.id FROM a AS x WHERE ?1 >= x.n", &[(1, "a.n")]),
        ("SELECT id FROM a WHERE (id) = ?1", &[(1, "a.id")]),
        ("SELECT x.id FROM a x WHERE ((x.n)) < ?1", &[(1, "a.n")]),
        ("SELECT id FROM a WHERE n IN (?1, 2, ?2)", &[(1, "a.n"), (2, "a.n")]),
        ("SELECT id FROM a WHERE n NOT IN (?1)", &[(1, "a.n")]),
        ("SELECT id FROM a WHERE note LIKE ?1 OR note NOT LIKE ?2", &[(1, "a.note"), (2, "a.note")]),
        ("SELECT id FROM a WHERE note GLOB ?1 OR n IS DISTINCT FROM ?2", &[(1, "a.note"), (2, "a.n")]),
        ("UPDATE a SET (n, note) = (?1, ?2)", &[(1, "a.n"), (2, "a.note")]),
        ("UPDATE a SET n = ? WHERE id = ? RETURNING note", &[(1, "a.n"), (2, "a.id")]),
        ("DELETE FROM b WHERE a_id = ?1 AND n < ?2", &[(1, "b.a_id"), (2, "b.n")]),
        ("SELECT id FROM a INDEXED BY sqlite_autoindex_a_1 WHERE id = ?1", &[(1, "a.id")]),
        ("SELECT id FROM a WHERE note IS NOT ?1", &[(1, "a.note")]),
        ("SELECT id FROM a WHERE (n, id) < (?1, ?2)", &[(1, "a.n"), (2, "a.id")]),
        ("UPDATE a SET n = ?1, note = ?2 WHERE id = ?3", &[(1, "a.n"), (2, "a.note"), (3, "a.id")]),
        ("SELECT id FROM a WHERE id = :id AND n > ?", &[(1, "a.id"), (2, "a.n")]),
        ("SELECT id FROM a WHERE \"n\" = ?1 AND a.\"note\" = ?2", &[(1, "a.n"), (2, "a.note")]),
        ("SELECT CASE WHEN n = ?1 THEN id END AS x FROM a", &[(1, "a.n")]),
        ("SELECT id FROM a WHERE NOT id = ?1 COLLATE NOCASE", &[(1, "a.id")]),
        (
            "INSERT INTO a (id, n) VALUES (?1, ?2) ON CONFLICT (id) DO UPDATE SET n = excluded.n WHERE note = ?3",
            &[(1, "a.id"), (2, "a.n"), (3, "a.note")],
        ),
    ];
    for (sql, want) in cases {
        let want: Vec<_> = want.iter().map(|(i, c)| one(*i, c)).collect();
        assert_eq!(bound(sql), want, "{sql}");
    }
}

#[test]
fn a_column_resolves_in_its_own_scope_first_then_outward() {
    // b has an `n` too: inside the subquery, `n` is b's; `note` only a has.
    assert_eq!(
        bound(
            "SELECT id FROM a WHERE EXISTS \
             (SELECT 1 FROM b WHERE b.a_id = a.id AND n > ?1 AND note = ?2)"
        ),
        [one(1, "b.n"), one(2, "a.note")]
    );
    assert_eq!(
        bound("SELECT id FROM a WHERE n = ?1 UNION SELECT id FROM b WHERE n = ?2"),
        [one(1, "a.n"), one(2, "b.n")]
    );
    // The same parameter in two places binds to both columns.
    assert_eq!(
        bound("SELECT a.id FROM a JOIN b ON b.a_id = a.id WHERE a.n = ?1 OR b.n = ?1"),
        [(1, vec!["a.n".to_string(), "b.n".to_string()])]
    );
}

#[test]
fn a_querys_order_by_resolves_in_its_select() {
    // `note` is a's only; the ORDER BY is the query's, after its SELECT core.
    assert_eq!(
        bound("SELECT id FROM b WHERE EXISTS (SELECT 1 FROM a ORDER BY note = ?1)"),
        [one(1, "a.note")]
    );
}

#[test]
fn outer_joins_are_read_from_the_joins_not_from_words() {
    for (sql, outer) in [
        ("SELECT a.id FROM a LEFT JOIN b ON b.a_id = a.id", true),
        ("SELECT a.id FROM a NATURAL LEFT JOIN b", true),
        (
            "SELECT id FROM a WHERE id IN (SELECT b.a_id FROM b RIGHT JOIN a ON 1)",
            true,
        ),
        ("SELECT a.id FROM a JOIN b ON b.a_id = a.id", false),
        (
            "SELECT id AS \"left\", note AS \"full\" FROM a WHERE note = 'RIGHT'",
            false,
        ),
    ] {
        assert_eq!(describe(sql).outer_join, outer, "{sql}");
    }
}

#[test]
fn a_statement_sqlite_accepts_and_the_parser_does_not_read_is_an_error_naming_where() {
    let checker = small_checker();
    let e = checker
        .describe("SELECT id FROM a WHERE note NOT GLOB ?1")
        .unwrap_err();
    assert!(e.contains("SQLite accepts this statement"), "{e}");
    assert!(e.contains("Line: 1, Column: 33"), "{e}");
    let e = checker.describe("SELECT nope FROM a").unwrap_err();
    assert!(
        e.starts_with("SQLite rejects this statement: no such column: nope"),
        "{e}"
    );
}

#[test]
fn inserted_values_bind_by_position() {
    assert_eq!(
        bound("INSERT INTO a (id, n) VALUES (?1, ?2), (?3, 4)"),
        [one(1, "a.id"), one(2, "a.n"), one(3, "a.id")]
    );
    // The SELECT feeding an INSERT has its own sources.
    assert_eq!(
        bound("INSERT INTO b (id, a_id, n) SELECT ?1, id, ?2 FROM a WHERE n = ?3"),
        [one(1, "b.id"), one(2, "b.n"), one(3, "a.n")]
    );
}

#[test]
fn a_parameter_inside_an_expression_binds_to_nothing() {
    for sql in [
        "SELECT id FROM a WHERE n + 1 = ?1",
        "SELECT id FROM a WHERE -n = ?1",
        "SELECT id FROM a WHERE ?1 = n * 2",
        "SELECT id FROM a WHERE lower(note) = ?1",
        "SELECT id FROM a WHERE note = ?1 || 'x'",
        "SELECT id FROM a WHERE (SELECT max(n) FROM b) < ?1",
        "SELECT id FROM a WHERE ?1 AND n > 0",
        "SELECT id FROM a LIMIT ?1",
        "SELECT id FROM a WHERE n IN (SELECT n FROM b WHERE id = 'x') AND ?1 IS NULL",
    ] {
        let d = describe(sql);
        assert!(d.bindings.is_empty(), "{sql}: {:?}", d.bindings);
        assert!(d.unknowable.is_empty(), "{sql}: {:?}", d.unknowable);
    }
}

#[test]
fn a_cast_gives_the_parameter_its_type() {
    let d = describe("SELECT id FROM a WHERE n < CAST(?1 AS INTEGER) AND note = CAST(?2 AS TEXT)");
    assert_eq!(
        d.casts.into_iter().collect::<Vec<_>>(),
        [(1, Affinity::Integer), (2, Affinity::Text)]
    );
    assert!(d.bindings.is_empty(), "a cast is an expression");
    assert!(describe("SELECT CAST(?1 AS NUMERIC)").casts.is_empty());
}

#[test]
fn a_parameter_compared_with_a_column_of_unknown_type_is_marked() {
    for (sql, column, source) in [
        (
            "WITH t AS (SELECT n FROM a) SELECT n FROM t WHERE t.n = ?1",
            "t.n",
            "t",
        ),
        (
            "WITH t(m) AS (SELECT n FROM a) SELECT m FROM t WHERE ?1 < m",
            "m",
            "t",
        ),
        (
            "SELECT s.n FROM (SELECT n FROM a) AS s WHERE s.n BETWEEN ?1 AND 3",
            "s.n",
            "s",
        ),
    ] {
        let d = describe(sql);
        let u = d.unknowable.get(&1).unwrap_or_else(|| panic!("{sql}"));
        assert_eq!(
            (u.param.as_str(), u.column.as_str()),
            ("?1", column),
            "{sql}"
        );
        assert_eq!(u.source, source, "{sql}");
    }
    // A cast states the type, and so does a binding elsewhere.
    for sql in [
        "WITH t AS (SELECT n FROM a) SELECT n FROM t WHERE t.n = CAST(?1 AS INTEGER)",
        "WITH t AS (SELECT n FROM a) SELECT n FROM t WHERE t.n = ?1 \
         AND EXISTS (SELECT 1 FROM a WHERE a.n = ?1)",
    ] {
        assert!(describe(sql).unknowable.is_empty(), "{sql}");
    }
}

#[test]
fn parameters_tested_for_null_are_marked() {
    let d = describe("SELECT id FROM a WHERE (?1 IS NULL OR note = ?1) AND n = ?2");
    assert_eq!(d.nullable.into_iter().collect::<Vec<_>>(), [1]);
}
