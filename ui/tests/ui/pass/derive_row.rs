#[allow(dead_code)]
#[derive(seed_agents_store::Row)]
#[row(table = "runs")]
struct Lease {
    id: String,
    lease_owner: Option<String>,
    lease_expires_at: Option<i64>,
    queue: seed_agents_store::schema::runs::Queue,
}

fn main() {
    assert_eq!(Lease::TABLE, "runs");
    assert_eq!(
        Lease::COLUMN_LIST,
        r#""id", "lease_owner", "lease_expires_at", "queue""#
    );
}
