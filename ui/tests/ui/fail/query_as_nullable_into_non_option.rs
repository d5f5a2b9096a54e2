struct Summary {
    id: String,
    title: String,
}

fn main() {
    let _ = seed_agents_store::query_as!(Summary, "SELECT id, title FROM runs");
}
