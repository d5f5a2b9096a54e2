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
        "INSERT INTO t (id, n) VALUES ($1, $2) ON CONFLICT(id) DO UPDATE SET n = GREATEST(t.n, excluded.n)"
    );
    assert_eq!(
        pg("INSERT OR IGNORE INTO t (a) VALUES (?1)", 1),
        "INSERT INTO t (a) VALUES ($1) ON CONFLICT DO NOTHING"
    );
    assert_eq!(
        pg("SELECT max(a, ?1), CAST(b AS BLOB) FROM t ORDER BY a, b DESC LIMIT ?2", 2),
        "SELECT GREATEST(a, $1), CAST(b AS BYTEA) FROM t ORDER BY a NULLS FIRST, b DESC NULLS LAST LIMIT NULLIF($2, -1)"
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
