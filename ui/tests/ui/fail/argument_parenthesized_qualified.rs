fn main() {
    let _ = seed_agents_store::query!("SELECT r.id FROM runs r WHERE (r.attempt) < ?1", "1");
}
