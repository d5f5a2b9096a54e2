//! Every checked statement of the store and every generated helper prepares on PostgreSQL.

use super::*;

/// Every `query!`/`query_as!` statement in `source`, as written (the first string literal of the
/// macro's arguments).
fn checked_statements(source: &str) -> Vec<String> {
    use proc_macro2::{TokenStream, TokenTree};
    fn walk(tokens: TokenStream, out: &mut Vec<String>) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, t) in tokens.iter().enumerate() {
            let TokenTree::Group(g) = t else { continue };
            let is_macro = i >= 2
                && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '!')
                && matches!(&tokens[i - 2], TokenTree::Ident(id)
                    if id == "query" || id == "query_as");
            if is_macro {
                let sql = g.stream().into_iter().find_map(|t| match t {
                    TokenTree::Literal(l) => syn::parse_str::<syn::LitStr>(&l.to_string()).ok(),
                    _ => None,
                });
                out.extend(sql.map(|l| l.value()));
            }
            walk(g.stream(), out);
        }
    }
    let mut out = Vec::new();
    walk(source.parse().expect("the store's sources lex"), &mut out);
    out
}

/// Prepares `pg` as the store does: a parameter the server cannot type from the statement alone
/// (`$2 IS NULL OR id = $2`, a recursive query's seed) is typed by the value bound to it, which
/// is text wherever the store's statements leave one open.
fn prepare(client: &mut postgres::Client, pg: &str) -> Result<(), String> {
    let mut types = Vec::new();
    loop {
        let e = match client.prepare_typed(pg, &types) {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let message = e
            .as_db_error()
            .map_or(e.to_string(), |d| d.message().to_string());
        let open = message
            .strip_prefix("could not determine data type of parameter $")
            .and_then(|n| n.parse::<usize>().ok());
        match open {
            Some(n)
                if types
                    .get(n - 1)
                    .is_none_or(|t| *t == postgres::types::Type::UNKNOWN) =>
            {
                types.resize(types.len().max(n), postgres::types::Type::UNKNOWN);
                types[n - 1] = postgres::types::Type::TEXT;
            }
            _ => return Err(message),
        }
    }
}

/// The `.rs` files under `dir`, recursively, sorted.
fn sources(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The store's files (under `store/`) whose checked statements run only on a SQLite store: the
/// gate and the planner statistics read SQLite's own catalog, and the migrator stamps SQLite's
/// version its own way (PostgreSQL's are in `store/postgres/`).
const SQLITE_ONLY: &[&str] = &[
    "sqlite/gate.rs",
    "sqlite/statistics.rs",
    "sqlite/migrate.rs",
];

/// Every checked statement of the store (each `query!`/`query_as!` in `store/`), translated as
/// the macros translate it, is prepared on a live server holding the newest schema: the tables,
/// columns and types it names exist there and line up, which the compile-time check cannot see.
#[test]
fn every_checked_statement_of_the_store_prepares_on_postgres() {
    let Some(db) = TempDb::new("checked_statements") else {
        return;
    };
    drop(seed_agents_store::Store::open(&db.url).unwrap());
    let latest =
        Schema::from_canonical_json(schema::MODELS[schema::SCHEMA_VERSION as usize]).unwrap();
    let non_null = dialect::non_null_columns(latest.tables.values());
    let mut client = db.client();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("store");
    let (mut prepared, mut failures) = (0, Vec::new());
    for file in sources(&root) {
        let relative = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if SQLITE_ONLY.contains(&relative.as_str()) {
            continue;
        }
        for sql in checked_statements(&std::fs::read_to_string(&file).unwrap()) {
            // The macro knows the parameter count; the translation accepts exactly that one.
            let Some(pg) = (0..=64).find_map(|n| dialect::translate(&sql, n, &non_null).ok())
            else {
                failures.push(format!("{}: no translation: {sql}", file.display()));
                continue;
            };
            match prepare(&mut client, &pg) {
                Ok(()) => prepared += 1,
                Err(e) => failures.push(format!("{}: {e}\n  {pg}", file.display())),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(prepared > 100, "only {prepared} statements found");
    support::backend::say(&format!(
        "prepared {prepared} checked statements of the store on PostgreSQL"
    ));
}

/// Every generated query helper's statement (`schema::HELPER_STATEMENTS`, rendered for
/// PostgreSQL at build time) is prepared on a live server holding the newest schema, and each
/// has the parameters its SQLite text has.
#[test]
fn every_generated_helper_prepares_on_postgres() {
    let Some(db) = TempDb::new("helper_statements") else {
        return;
    };
    drop(seed_agents_store::Store::open(&db.url).unwrap());
    let mut client = db.client();
    let (mut prepared, mut failures) = (0, Vec::new());
    for (table, statements) in schema::HELPER_STATEMENTS {
        for (helper, sql, pg) in *statements {
            // The helpers number their parameters (`?1`, `?2`, ...).
            let wanted = sql
                .split('?')
                .skip(1)
                .filter_map(|rest| {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    digits.parse::<usize>().ok()
                })
                .max()
                .unwrap_or(0);
            match client.prepare(pg) {
                Ok(statement) if statement.params().len() == wanted => prepared += 1,
                Ok(statement) => failures.push(format!(
                    "{table}::{helper}: {} parameters on PostgreSQL, {wanted} on SQLite: {pg}",
                    statement.params().len()
                )),
                Err(e) => failures.push(format!("{table}::{helper}: {e:?}\n  {pg}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(prepared > 150, "only {prepared} helpers found");
    support::backend::say(&format!(
        "prepared {prepared} generated helpers of the store on PostgreSQL"
    ));
}
