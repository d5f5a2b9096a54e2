fn main() {
    let _ = seed_agents_store::query!("SELECT id, priority FROM runs");
}
