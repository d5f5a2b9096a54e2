fn main() {
    let db = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("db");
    if let Err(e) = seed_agents_codegen::Builder::new(db)
        .extension("tokens", seed_agents_schema::DIR)
        .run()
    {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
