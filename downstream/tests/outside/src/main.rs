//! `outside-server LOCATION add ACCOUNT HASH LABEL`, `outside-server LOCATION list ACCOUNT`, or
//! `outside-server LOCATION sneak`, which tries to empty a store table through the extension's
//! write path and prints the error's kind.

mod db {
    #![allow(missing_docs, dead_code, clippy::all)]
    include!(concat!(env!("OUT_DIR"), "/tokens.rs"));
}

use seed_agents_store::Store;

fn main() -> Result<(), seed_agents_store::Error> {
    let args: Vec<String> = std::env::args().collect();
    let store = Store::options().extension(db::EXTENSION).open(&args[1])?;
    match args[2].as_str() {
        "add" => {
            store.touch_account(&args[3])?;
            store.write_extension(|tx| {
                db::query!(
                    "INSERT INTO api_tokens (hash, account_id, label) VALUES (?1, ?2, ?3)",
                    &args[4],
                    &args[3],
                    Some(args[5].as_str())
                )
                .execute(tx)?;
                Ok(())
            })?;
        }
        "list" => {
            let rows = db::query!(
                "SELECT t.hash, t.label, a.created_at FROM api_tokens t \
                 JOIN accounts a ON a.id = t.account_id WHERE t.account_id = ?1 ORDER BY t.hash",
                &args[3]
            )
            .fetch_all(&store.reading()?)?;
            for row in rows {
                println!("{} {}", row.hash, row.label.unwrap_or_default());
            }
        }
        "sneak" => {
            let refused = store
                .write_extension(|tx| {
                    seed_agents_store::query!("DELETE FROM accounts").execute(tx)?;
                    Ok(())
                })
                .expect_err("a store table written through the extension's write path");
            println!("{}", refused.kind().as_str());
        }
        other => panic!("unknown command {other}"),
    }
    Ok(())
}
