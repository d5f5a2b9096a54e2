fn main() {
    let _ = seed_agents_store::query!("SELECT id FROM runs WHERE id IN (?1, ?2)", "r1", 2_i64);
}
