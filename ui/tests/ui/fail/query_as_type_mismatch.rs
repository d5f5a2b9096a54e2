struct Summary {
    id: String,
    attempt: String,
}

fn main() {
    let _ = seed_agents_store::query_as!(Summary, "SELECT id, attempt FROM runs");
}
