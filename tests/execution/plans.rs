//! `EXPLAIN QUERY PLAN` pins the index of every hot execution-state query (claim, tree, session
//! runs, waits by timeout, firings by trigger, and the rest of `plans::hot_queries`), on a database
//! with planner statistics, so a planner change or a dropped `INDEXED BY` fails here.

use seed_agents_store::plans::hot_queries;
use seed_agents_store::runs::ClaimLimits;
use support::execution::*;

/// The plan of `sql`, one line per step.
fn plan(conn: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    // Parameters stay NULL: the plan does not depend on their values.
    for i in 1..=stmt.parameter_count() {
        stmt.raw_bind_parameter(i, rusqlite::types::Null).unwrap();
    }
    let mut rows = stmt.raw_query();
    let mut lines = Vec::new();
    while let Some(row) = rows.next().unwrap() {
        lines.push(row.get::<_, String>(3).unwrap());
    }
    lines
}

#[test]
fn every_hot_query_uses_its_index_and_scans_no_table() {
    if support::backend::skip_on_postgres(
        "every_hot_query_uses_its_index_and_scans_no_table",
        "it reads SQLite's query plans",
    ) {
        return;
    }
    let f = fixture();
    // Some rows and fresh statistics, so the planner has a real choice to make.
    let s = f.session("s");
    for i in 0..50 {
        let run = f
            .store
            .enqueue_run(&agent_run(&s, &format!("r{i}")))
            .unwrap();
        if i % 5 == 0 {
            f.store.claim_run(A, &run.id, "w").unwrap();
        }
    }
    // The plans are read on the connection that gathered the statistics (the store's own is
    // read-only, and another connection loads new statistics only when it reopens).
    let conn = raw(&f.store);
    conn.execute_batch("ANALYZE").unwrap();
    for (name, sql, index) in hot_queries() {
        let lines = plan(&conn, sql);
        let text = lines.join("\n");
        assert!(text.contains(index), "{name} does not use {index}:\n{text}");
        for line in &lines {
            // A full scan of a table (not of a CTE or a subquery result) is a regression.
            let full_scan = line.starts_with("SCAN ")
                && !line.contains("USING")
                && !line.contains("CONSTANT ROW")
                && !["tree", "candidate", "busy", "retired"]
                    .iter()
                    .any(|cte| line.starts_with(&format!("SCAN {cte}")))
                && !line.starts_with("SCAN (subquery");
            assert!(!full_scan, "{name} scans a table:\n{text}");
        }
    }
    let _ = f.store.claim_next_run("w", ClaimLimits::default()).unwrap();
}

#[test]
fn the_claim_reads_the_undelayed_queue_in_index_order() {
    if support::backend::skip_on_postgres(
        "the_claim_reads_the_undelayed_queue_in_index_order",
        "it reads SQLite's query plans",
    ) {
        return;
    }
    let f = fixture();
    let claim = hot_queries()
        .into_iter()
        .find(|q| q.0 == "claim next")
        .unwrap()
        .1;
    let text = plan(&f.store.conn().unwrap(), claim).join("\n");
    // The two undelayed branches walk runs_dispatch on (status, queue, not_before IS NULL) and
    // need no sort; only the (small) due-delayed branches may sort.
    let searches = text
        .matches("USING INDEX runs_dispatch (status=? AND queue=? AND not_before=?)")
        .count();
    assert_eq!(searches, 2, "{text}");
    println!("{text}");
}

/// Parents deleted one row per operation, rarely, whose references are left to a scan: an
/// index per referencing column would tax every insert into those busy tables (runs, firings,
/// documents, drafts) for a check that runs once per deleted agent or account.
const SCANNED_REFERENCES_TO: [&str; 2] = ["accounts", "agents"];

#[test]
fn deleting_a_referenced_row_finds_its_references_through_an_index() {
    if support::backend::skip_on_postgres(
        "deleting_a_referenced_row_finds_its_references_through_an_index",
        "it reads SQLite's query plans",
    ) {
        return;
    }
    let f = fixture();
    let conn = raw(&f.store);
    let mut checked = 0;
    for child in seed_agents_store::schema::TABLES {
        // (id, parent, child column), one row per column of each reference.
        let references: Vec<(i64, String, String)> = conn
            .prepare(&format!(
                "SELECT id, \"table\", \"from\" FROM pragma_foreign_key_list('{child}')"
            ))
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let mut ids: Vec<i64> = references.iter().map(|r| r.0).collect();
        ids.dedup();
        for id in ids {
            let columns: Vec<&(i64, String, String)> =
                references.iter().filter(|r| r.0 == id).collect();
            let parent = &columns[0].1;
            if SCANNED_REFERENCES_TO.contains(&parent.as_str()) {
                continue;
            }
            // What SQLite runs for each deleted parent row: the child rows that still name it.
            let wanted: Vec<String> = columns
                .iter()
                .enumerate()
                .map(|(i, c)| format!("\"{}\" = ?{}", c.2, i + 1))
                .collect();
            let sql = format!("SELECT 1 FROM \"{child}\" WHERE {}", wanted.join(" AND "));
            let text = plan(&conn, &sql).join("\n");
            assert!(
                text.contains("USING") && !text.starts_with("SCAN"),
                "deleting from {parent} scans {child}: {sql}\n{text}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} references checked");
}
