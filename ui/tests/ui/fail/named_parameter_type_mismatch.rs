fn main() {
    // `:status` binds to runs.status, which takes the generated enum, not a number.
    let _ = seed_agents_store::query!(
        "SELECT id FROM runs WHERE account_id = :account AND status = :status",
        "acct",
        7
    );
}
