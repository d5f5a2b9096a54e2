fn main() {
    let _ = seed_agents_store::query!("SELECT id FROM runs WHERE id = ?1", "run-1", "extra");
}
