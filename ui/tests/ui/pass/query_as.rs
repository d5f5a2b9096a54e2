use seed_agents_store::schema::runs;

#[allow(dead_code)]
struct Summary {
    id: String,
    status: runs::Status,
    title: Option<String>,
    // A non-null column into an Option field is fine.
    attempt: Option<i64>,
}

fn main() {
    let q = seed_agents_store::query_as!(
        Summary,
        "SELECT id, status, title, attempt FROM runs WHERE session_id = ?1",
        "session-1"
    );
    assert!(q.sql().contains("attempt"));
}
