fn main() {
    let _ = seed_agents_store::query!("SELECT id FROM runs WHERE attempt NOT BETWEEN ?1 AND ?2", "one", 5);
}
