fn main() {
    let _ = seed_agents_store::query!("SELECT id FROM runs WHERE ?1 = id", 1_i64);
}
