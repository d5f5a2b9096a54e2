fn main() {
    let _ = seed_agents_store::query!("WITH t AS (SELECT id, attempt FROM runs) SELECT id FROM t WHERE t.attempt > ?1", 3);
}
