//! The translation's rules, one statement each.
use super::translate;

fn pg(sql: &str, params: usize) -> String {
    translate(sql, params, &["id".to_string()].into()).unwrap()
}

#[test]
fn parameters_are_numbered_as_sqlite_numbers_them() {
    assert_eq!(
        pg("SELECT a FROM t WHERE b = ?1 AND c = ?2 AND d = ?1", 2),
        "SELECT a FROM t WHERE b = $1 AND c = $2 AND d = $1"
    );
    assert_eq!(
        pg("SELECT a FROM t WHERE b = ? AND c = ?", 2),
        "SELECT a FROM t WHERE b = $1 AND c = $2"
    );
    assert!(translate("SELECT a FROM t WHERE b = ?1", 2, &Default::default()).is_err());
}

#[test]
fn conditions_and_integers_meet_as_each_dialect_wants() {
    assert_eq!(
        pg("SELECT CAST(a IS NULL AS INTEGER) AS n, b = 1 AS m FROM t WHERE enabled AND NOT gone", 0),
        "SELECT CAST(CAST(a IS NULL AS INT) AS BIGINT) AS n, CAST(CAST(b = 1 AS INT) AS BIGINT) AS m \
         FROM t WHERE (enabled) <> 0 AND NOT (gone) <> 0"
    );
    assert_eq!(
        pg("SELECT sum(a IS NULL) FROM t", 0),
        "SELECT sum(CAST(CAST(a IS NULL AS INT) AS BIGINT)) FROM t"
    );
}

#[test]
fn sqlite_only_spellings_become_postgresql_ones() {
    assert_eq!(
        pg("INSERT INTO t (id, n) VALUES (?1, ?2) ON CONFLICT (id) DO UPDATE SET n = max(n, excluded.n)", 2),
        "INSERT INTO t (id, n) VALUES ($1, $2) ON CONFLICT(id) DO UPDATE SET n = \
         CASE WHEN t.n IS NULL OR excluded.n IS NULL THEN NULL ELSE GREATEST(t.n, excluded.n) END"
    );
    assert_eq!(
        pg("INSERT OR IGNORE INTO t (a) VALUES (?1)", 1),
        "INSERT INTO t (a) VALUES ($1) ON CONFLICT DO NOTHING"
    );
    assert_eq!(
        pg("SELECT max(a, ?1), CAST(b AS BLOB) FROM t ORDER BY a, b DESC LIMIT ?2", 2),
        "SELECT CASE WHEN a IS NULL OR $1 IS NULL THEN NULL ELSE GREATEST(a, $1) END, CAST(b AS BYTEA) \
         FROM t ORDER BY a NULLS FIRST, b DESC NULLS LAST LIMIT NULLIF($2, -1)"
    );
    assert_eq!(
        pg("SELECT a FROM t INDEXED BY t_by_a WHERE a = 1 AND NOT EXISTS (SELECT 1 FROM u NOT INDEXED)", 0),
        "SELECT a FROM t WHERE a = 1 AND NOT EXISTS (SELECT 1 FROM u)"
    );
    // A key never NULL keeps PostgreSQL's order, which its index serves.
    assert_eq!(
        pg("SELECT a FROM t ORDER BY id DESC, a", 0),
        "SELECT a FROM t ORDER BY id DESC, a NULLS FIRST"
    );
    assert_eq!(
        pg("SELECT n FROM (SELECT count(*) AS n FROM t)", 0),
        "SELECT n FROM (SELECT count(*) AS n FROM t) AS derived_1"
    );
}

/// SQLite folds ASCII case only, and its LIKE has no escape character: the translation makes
/// PostgreSQL's do the same, and scalar max/min are NULL when an argument is, as SQLite's.
#[test]
fn like_case_folding_and_scalar_max_mean_what_they_mean_in_sqlite() {
    let fold = "'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'";
    assert_eq!(
        pg("SELECT id FROM t WHERE title NOT LIKE ?1", 1),
        format!("SELECT id FROM t WHERE translate(title, {fold}) NOT LIKE translate($1, {fold}) ESCAPE ''")
    );
    assert_eq!(
        pg("SELECT id FROM t WHERE title LIKE ?1 ESCAPE '!'", 1),
        format!(
            "SELECT id FROM t WHERE translate(title, {fold}) LIKE translate($1, {fold}) ESCAPE '!'"
        )
    );
    assert_eq!(
        pg("SELECT lower(a), upper(b) FROM t", 0),
        "SELECT translate(a, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), \
         translate(b, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ') FROM t"
    );
    assert_eq!(
        pg("SELECT min(a, b, ?1), max(a) FROM t", 1),
        "SELECT CASE WHEN a IS NULL OR b IS NULL OR $1 IS NULL THEN NULL ELSE LEAST(a, b, $1) END, \
         max(a) FROM t"
    );
}

/// The translation fails closed: a function, operator or form not on its allow-list is refused,
/// named, whatever PostgreSQL would make of it.
#[test]
fn what_is_not_allowed_is_refused_by_name() {
    let refused = |sql: &str, what: &str| {
        let e = translate(sql, 0, &Default::default()).unwrap_err();
        assert!(e.contains(what), "{sql}: {e}");
    };
    refused("SELECT random() FROM t", "the function `random`");
    refused(
        "SELECT json_extract(a, '$.b') FROM t",
        "the function `json_extract`",
    );
    refused("SELECT printf('%d', a) FROM t", "the function `printf`");
    refused("SELECT a / 2 FROM t", "the operator `/`");
    refused("SELECT a % 2 FROM t", "the operator `%`");
    refused("SELECT a * 2 FROM t", "the operator `*`");
    refused("SELECT a || b FROM t", "the operator `||`");
    refused("SELECT count(*) OVER () FROM t", "`count` as a window");
    refused("SELECT CAST(a AS DATE) FROM t", "a cast to DATE");
    refused("SELECT substr(a, -2) FROM t", "substr(..)");
    refused("SELECT substr(a, 1, ?) FROM t", "substr(..)");
    refused("SELECT a FROM t WHERE a ILIKE 'x'", "ILIKE");
    // GLOB does not even parse as a statement to translate.
    assert!(translate("SELECT a FROM t WHERE a GLOB 'x*'", 0, &Default::default()).is_err());
    // What the store's statements use passes.
    assert!(translate(
        "SELECT count(*), sum(n), coalesce(a, ifnull(b, 1)), nullif(a, ''), length(a), substr(lower(a), 1, 7) \
         FROM t WHERE a IN (1, 2) AND b BETWEEN 1 AND 2 AND c IS NOT NULL AND (d, e) < (1, 2) \
         AND EXISTS (SELECT 1 FROM u) AND CASE WHEN a THEN 1 ELSE 0 END = 1 AND -a + 1 - 2 >= 0",
        0,
        &Default::default()
    )
    .is_ok());
}
