fn main() {
    let _ = seed_agents_store::query!(
        "SELECT id FROM runs WHERE account_id = ?1 AND status = ?2",
        "acct"
    );
}
