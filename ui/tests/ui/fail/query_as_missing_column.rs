struct Summary {
    id: String,
    title: Option<String>,
}

fn main() {
    let _ = seed_agents_store::query_as!(Summary, "SELECT id FROM runs");
}
