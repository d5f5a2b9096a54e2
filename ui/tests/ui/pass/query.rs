use seed_agents_store::schema::runs;

/// Never run: it only has to type-check, which pins the record's field types.
#[allow(dead_code)]
fn typed(conn: &rusqlite::Connection) -> seed_agents_store::Result<()> {
    let rows = seed_agents_store::query!(
        "SELECT id, status, title, parent_run_id FROM runs WHERE account_id = ?1 AND status = ?2 AND attempt < ?3",
        "acct",
        runs::Status::Queued,
        3
    )
    .fetch_all(conn)?;
    for r in rows {
        let _: (String, runs::Status, Option<String>, Option<String>) =
            (r.id, r.status, r.title, r.parent_run_id);
    }
    Ok(())
}

fn main() {
    let q = seed_agents_store::query!("SELECT id FROM runs WHERE id = ?1", "run-1");
    assert!(q.sql().starts_with("SELECT id"));
}
