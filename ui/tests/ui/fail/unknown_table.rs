fn main() {
    let _ = seed_agents_store::query!("SELECT id FROM run_queue");
}
