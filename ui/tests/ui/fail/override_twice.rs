fn main() {
    let _ = seed_agents_store::query!(r#"SELECT CAST(count(*) AS INTEGER) AS "n!?" FROM runs"#);
}
