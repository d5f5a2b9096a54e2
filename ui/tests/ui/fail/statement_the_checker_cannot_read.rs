fn main() {
    // SQLite accepts `NOT GLOB`; the parser the checker reads statements with does not.
    let _ = seed_agents_store::query!("SELECT id FROM runs WHERE id NOT GLOB ?1", "r-*");
}
