struct Summary {
    id: String,
}

fn main() {
    let _ = seed_agents_store::query_as!(Summary, "SELECT id, model FROM runs");
}
