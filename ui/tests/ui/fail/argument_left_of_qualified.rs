fn main() {
    let _ = seed_agents_store::query!("SELECT r.id FROM runs AS r WHERE ?1 >= r.attempt", 0.5);
}
