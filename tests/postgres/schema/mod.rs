//! The PostgreSQL schema on a real server: fresh equals migrated at every version, the gate's
//! refusals leave the database untouched, and nodes preparing one database at once install it
//! exactly once.

use seed_agents_codegen::{postgres as dialect, Schema};
use seed_agents_store::postgres::{Database, State};
use seed_agents_store::{schema, Error, Outcome, Refusal};
use support::postgres::{contents, TempDb};

fn model(version: u32) -> Schema {
    dialect::portable(&Schema::from_canonical_json(schema::MODELS[version as usize]).unwrap())
}

fn set_version(client: &mut postgres::Client, version: &str) {
    client
        .execute(
            "INSERT INTO server_config (key, value) VALUES ('schema_migration_version', $1) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&version.as_bytes()],
        )
        .unwrap();
}

#[test]
fn a_fresh_install_reads_back_as_the_latest_model() {
    let Some(db) = TempDb::new("fresh_install") else {
        return;
    };
    let mut database = Database::connect(&db.url).unwrap();
    assert_eq!(database.inspect().unwrap(), State::Fresh);
    assert_eq!(
        database.prepare().unwrap(),
        Outcome::Fresh {
            version: schema::SCHEMA_VERSION
        }
    );
    assert_eq!(database.structure().unwrap(), model(schema::SCHEMA_VERSION));
    assert_eq!(
        database.inspect().unwrap(),
        State::At(schema::SCHEMA_VERSION)
    );
    assert_eq!(
        database.prepare().unwrap(),
        Outcome::Current {
            version: schema::SCHEMA_VERSION
        }
    );
}

/// Genesis at the baseline, then every step one at a time: after each the catalogs read back as
/// that version's model and the gate accepts it at that version; at the end the structure is the
/// fresh install's.
#[test]
fn every_step_from_the_baseline_reads_back_as_its_version_and_ends_at_the_fresh_structure() {
    let Some(fresh) = TempDb::new("steps_fresh") else {
        return;
    };
    let Some(migrated) = TempDb::new("steps_migrated") else {
        return;
    };
    let mut fresh_db = Database::connect(&fresh.url).unwrap();
    fresh_db.prepare().unwrap();

    let mut client = migrated.client();
    let mut database = Database::connect(&migrated.url).unwrap();
    for step in schema::POSTGRES_MIGRATIONS {
        client.batch_execute(step.sql).unwrap_or_else(|e| {
            panic!("{} failed on PostgreSQL: {e}", step.name);
        });
        set_version(&mut client, &step.version.to_string());
        assert_eq!(
            database.structure().unwrap(),
            model(step.version),
            "{}",
            step.name
        );
        assert_eq!(database.inspect().unwrap(), State::At(step.version));
    }
    assert_eq!(database.structure().unwrap(), fresh_db.structure().unwrap());
}

/// The whole upgrade from the baseline as `prepare` runs it: one transaction, rows kept, the
/// data-moving step (0032) filling what its dialect file says.
#[test]
fn prepare_migrates_a_baseline_database_with_rows_in_one_go() {
    let Some(db) = TempDb::new("prepare_migrates") else {
        return;
    };
    let mut client = db.client();
    client
        .batch_execute(schema::POSTGRES_MIGRATIONS[0].sql)
        .unwrap();
    set_version(&mut client, &schema::POSTGRES_BASELINE.to_string());
    client
        .batch_execute(
            "INSERT INTO accounts (id, created_at, updated_at) VALUES ('acct', 1, 1);
             INSERT INTO secrets (id, account_id, name, ciphertext, created_at, updated_at)
                 VALUES ('s1', 'acct', 'token', '\\x00', 1, 1);",
        )
        .unwrap();
    let mut database = Database::connect(&db.url).unwrap();
    assert_eq!(
        database.prepare().unwrap(),
        Outcome::Migrated {
            from: schema::POSTGRES_BASELINE,
            to: schema::SCHEMA_VERSION
        }
    );
    let key: i64 = client
        .query_one("SELECT key_id FROM secrets WHERE id = 's1'", &[])
        .unwrap()
        .get(0);
    assert_eq!(key, 1);
    let provider: String = client
        .query_one("SELECT provider FROM secret_keys WHERE id = 1", &[])
        .unwrap()
        .get(0);
    assert_eq!(provider, "database");
    assert_eq!(database.structure().unwrap(), model(schema::SCHEMA_VERSION));
}

mod cli_translation;
mod gate;
mod statements;
