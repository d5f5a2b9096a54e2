fn main() {
    let _ = seed_agents_store::query!("SELECT id FROM runs WHERE attempt < CAST(?1 AS INTEGER)", "3");
}
