fn main() {
    let _ = seed_agents_store::query!("SELECT id FROM runs WHERE title LIKE ?1", 1_i64);
}
