//! No SQL text can make the query macros' analysis panic: arbitrary text, soups of SQL words
//! and valid statements cut or spliced at random all give either an expansion or a
//! `syn::Error` (which always carries a span) with a message.

use crate::common::small_checker;
use proptest::prelude::*;
use quote::quote;
use seed_agents_codegen::query::Checker;

/// Statements the macros accept, each a shape the reading follows; mutated below.
const VALID: &[&str] = &[
    "SELECT id, n FROM a WHERE n = ?1 AND note LIKE ?2",
    "SELECT a.id, b.n FROM a LEFT JOIN b ON b.a_id = a.id WHERE (a.n, a.id) > (?1, ?2) ORDER BY a.n LIMIT ?3",
    "WITH t(m) AS (SELECT n FROM a) SELECT m FROM t WHERE m < CAST(?1 AS INTEGER)",
    "INSERT INTO a (id, n) VALUES (?1, ?2) ON CONFLICT (id) DO UPDATE SET n = excluded.n WHERE note = ?3 RETURNING id",
    "UPDATE a SET n = ?, note = ? WHERE id IN (SELECT a_id FROM b WHERE n BETWEEN ? AND ?)",
    "DELETE FROM b WHERE a_id = :id AND (?2 IS NULL OR n < ?2) RETURNING CAST(n AS REAL) AS r",
    "SELECT id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.a_id = a.id AND n > ?1) UNION SELECT id FROM b WHERE n = ?2",
];

const WORDS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "a",
    "b",
    "t",
    "id",
    "n",
    "note",
    "a_id",
    "?",
    "?1",
    "?2",
    "?99",
    ":x",
    "@y",
    "$z",
    "(",
    ")",
    ",",
    ".",
    "=",
    "==",
    "<",
    ">=",
    "<>",
    "+",
    "-",
    "*",
    "||",
    "IS",
    "NULL",
    "NOT",
    "IN",
    "BETWEEN",
    "AND",
    "OR",
    "LIKE",
    "GLOB",
    "ESCAPE",
    "CAST",
    "AS",
    "INTEGER",
    "TEXT",
    "BLOB",
    "JOIN",
    "LEFT",
    "NATURAL",
    "ON",
    "USING",
    "INSERT",
    "OR",
    "REPLACE",
    "IGNORE",
    "INTO",
    "VALUES",
    "DEFAULT",
    "UPDATE",
    "SET",
    "DELETE",
    "WITH",
    "RECURSIVE",
    "UNION",
    "ALL",
    "ORDER",
    "BY",
    "DESC",
    "LIMIT",
    "OFFSET",
    "EXISTS",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "1",
    "2.5",
    "'x'",
    "X'00'",
    "excluded",
    "DO",
    "CONFLICT",
    "NOTHING",
    "RETURNING",
    "COLLATE",
    "NOCASE",
    "INDEXED",
    "count",
    "max",
    "json_each",
    "\"n\"",
    "`id`",
    "[note]",
    ";",
    "--c\n",
    "/*c*/",
];

thread_local! {
    // A checker holds a SQLite connection, which is not shared between threads.
    static CHECKER: Checker = small_checker();
}

/// Runs both macros and the description on `sql` with `args` arguments.
fn analyse(sql: &str, args: usize) -> Result<(), TestCaseError> {
    CHECKER.with(|c| analyse_with(c, sql, args))
}

/// The arguments `arg0, arg1, ..`: `args` of them.
fn arguments(args: usize) -> Vec<syn::Ident> {
    (0..args).map(|i| quote::format_ident!("arg{i}")).collect()
}

fn analyse_with(c: &Checker, sql: &str, args: usize) -> Result<(), TestCaseError> {
    let names = arguments(args);
    for expansion in [
        c.query(quote!(#sql #(, #names)*)),
        c.query_as(quote!(Target, #sql #(, #names)*)),
    ] {
        if let Err(e) = expansion {
            prop_assert!(
                !e.to_string().is_empty(),
                "an error without a message for {sql:?}"
            );
        }
    }
    if let Err(e) = c.describe(sql) {
        prop_assert!(
            !e.is_empty(),
            "a description error without a message for {sql:?}"
        );
    }
    Ok(())
}

/// A valid statement cut at a random place, with a random word spliced in.
fn mutated() -> impl Strategy<Value = String> {
    (
        prop::sample::select(VALID),
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        prop::sample::select(WORDS),
    )
        .prop_map(|(sql, at, len, word)| {
            let chars: Vec<char> = sql.chars().collect();
            let start = at.index(chars.len());
            let end = (start + len.index(8)).min(chars.len());
            let mut out: String = chars[..start].iter().collect();
            out.push(' ');
            out.push_str(word);
            out.push(' ');
            out.extend(&chars[end..]);
            out
        })
}

/// An expression over a's and b's columns, parameters and literals, in every form the reading
/// looks at (and some it must leave alone).
fn expression() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(
        &[
            // Mostly names every scope has, so that most statements are accepted.
            "n", "n", "id", "?", "?", "?1", "?2", "?7", ":p", "@q", "1", "'x'", "NULL", "x'00'",
        ][..],
    )
    .prop_map(str::to_string);
    leaf.prop_recursive(3, 12, 3, |inner| {
        let op = prop::sample::select(
            &[
                "=",
                "==",
                "<",
                ">=",
                "<>",
                "IS",
                "IS NOT",
                "LIKE",
                "NOT LIKE",
                "GLOB",
                "+",
                "||",
                "AND",
                "OR",
                "IS DISTINCT FROM",
            ][..],
        );
        let op2 = prop::sample::select(&["=", "<", ">="][..]);
        let ty = prop::sample::select(&["INTEGER", "TEXT", "REAL", "BLOB", "NUMERIC"][..]);
        prop_oneof![
            1 => inner.clone().prop_map(|e| format!("({e})")),
            4 => (inner.clone(), op, inner.clone()).prop_map(|(l, o, r)| format!("{l} {o} {r}")),
            1 => (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(e, l, h)| format!("{e} BETWEEN {l} AND {h}")),
            1 => (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(e, x, y)| format!("{e} NOT IN ({x}, {y})")),
            1 => (inner.clone(), ty).prop_map(|(e, t)| format!("CAST({e} AS {t})")),
            1 => (inner.clone(), inner.clone(), op2).prop_map(|(x, y, o)| format!("({x}, {y}) {o} (?, ?)")),
            1 => inner
                .clone()
                .prop_map(|e| format!("EXISTS (SELECT 1 FROM b WHERE {e})")),
            1 => inner
                .clone()
                .prop_map(|e| format!("(SELECT max(n) FROM b WHERE {e})")),
            1 => inner.clone().prop_map(|e| format!("{e} IS NULL")),
            1 => inner.clone().prop_map(|e| format!("NOT {e}")),
            1 => inner
                .clone()
                .prop_map(|e| format!("lower({e}) COLLATE NOCASE")),
        ]
    })
}

/// Whole statements of every kind the reading follows, with generated expressions in them.
fn generated() -> impl Strategy<Value = String> {
    let template = prop::sample::select(&[
        "SELECT {} AS c FROM a WHERE {}",
        "SELECT a.id FROM a LEFT JOIN (SELECT a_id FROM b) AS c ON c.a_id = a.id AND {} WHERE {} ORDER BY {} LIMIT {}",
        "UPDATE a SET n = {} WHERE {}",
        "DELETE FROM b WHERE {} RETURNING {}",
        "INSERT INTO a (id, n) VALUES ({}, {}) ON CONFLICT (id) DO UPDATE SET note = {} WHERE {}",
        "WITH t(n, id) AS (SELECT n, id FROM a WHERE {}) SELECT n FROM t WHERE {}",
        "SELECT id FROM a WHERE {} UNION SELECT id FROM b WHERE {}",
        "SELECT s.n FROM (SELECT n, id FROM a WHERE {}) AS s WHERE {}",
    ][..]);
    (template, prop::collection::vec(expression(), 4)).prop_map(|(t, es)| {
        let mut out = String::new();
        let mut parts = t.split("{}");
        out.push_str(parts.next().unwrap_or_default());
        for (part, e) in parts.zip(es.iter().cycle()) {
            out.push_str(e);
            out.push_str(part);
        }
        out
    })
}

fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 1..40).prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_gives_an_expansion_or_an_error(sql in "\\PC{0,120}", args in 0usize..4) {
        analyse(&sql, args)?;
    }

    #[test]
    fn soups_of_sql_words_give_an_expansion_or_an_error(sql in soup(), args in 0usize..4) {
        analyse(&sql, args)?;
    }

    #[test]
    fn generated_statements_give_an_expansion_or_an_error(sql in generated(), args in 0usize..8) {
        analyse(&sql, args)?;
    }

    #[test]
    fn mutated_statements_give_an_expansion_or_an_error(sql in mutated(), args in 0usize..5) {
        analyse(&sql, args)?;
    }
}

#[test]
fn most_generated_statements_reach_the_reading() {
    // The generator is only worth its cases if SQLite and the parser accept most of them, so
    // the reading runs on them.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = generated();
    let accepted = CHECKER.with(|c| {
        (0..200)
            .filter(|_| {
                let sql = strategy.new_tree(&mut runner).unwrap().current();
                c.describe(&sql).is_ok()
            })
            .count()
    });
    assert!(
        accepted >= 100,
        "only {accepted} of 200 generated statements were described"
    );
}

#[test]
fn the_statements_mutated_are_accepted_whole() {
    // Otherwise the mutations would start from text the analysis refuses at once.
    CHECKER.with(|c| {
        for sql in VALID {
            let args = c
                .describe(sql)
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
                .params;
            let names = arguments(args);
            if let Err(e) = c.query(quote!(#sql #(, #names)*)) {
                panic!("{sql}: {e}");
            }
        }
    });
}
