fn main() {
    let _ = seed_agents_store::query!("SELECT id FROM runs WHERE (created_at, id) < (?1, ?2)", "yesterday", "r1");
}
