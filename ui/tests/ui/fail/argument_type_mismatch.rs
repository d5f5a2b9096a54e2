fn main() {
    let _ = seed_agents_store::query!("SELECT id FROM runs WHERE attempt > ?1", "three");
}
