// SQLite answers a division by zero with NULL and PostgreSQL with an error: the translation
// fails closed, and the statement does not compile.
fn main() {
    let _ = seed_agents_store::query!("SELECT attempt / depth AS ratio FROM runs");
    let _ = seed_agents_store::query!("SELECT random() AS r FROM runs");
}
