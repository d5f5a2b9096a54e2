fn main() {
    let _ = seed_agents_store::query!(r#"SELECT count(*) AS "n!" FROM runs"#);
}
