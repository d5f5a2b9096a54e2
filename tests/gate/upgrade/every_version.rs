//! 1. Every version upgrades

use super::*;

/// Builds a filled database at version `k`, opens it with the store, and checks outcome, data,
/// structure and a second open.
fn upgrade_from(k: u32) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("v{k}.sqlite"));
    let conn = build_at(&path, k);
    let counts = fill(&conn);
    let before = snapshot(&conn);
    // Every table of version k got rows (server_config: the stamp and ROWS more).
    assert_eq!(before.len(), counts.len());
    for (t, rows) in &before {
        let extra = usize::from(t == "server_config");
        assert_eq!(rows.len(), ROWS + extra, "{t} at version {k}");
    }
    conn.close().unwrap();

    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: k,
            to: SCHEMA_VERSION,
        },
    );
    assert_eq!(
        version_stamp(&store.conn().unwrap()),
        text(&SCHEMA_VERSION.to_string())
    );
    assert_upgraded(k, &before, &store.conn().unwrap());
    assert_healthy(&store.conn().unwrap(), &format!("from version {k}"));
    if k < 26 {
        // The claims are the only rows a migration adds; every generated firing key is an
        // activity key, so each firing got one.
        let claims = rows_of(&store.conn().unwrap(), "trigger_event_claims").len();
        let firings = before.get("trigger_firings").map_or(0, Vec::len);
        assert_eq!(claims, firings, "claims seeded from version {k}");
    }
    let fresh = fresh_store(dir.path());
    assert_same_structure(
        &store.conn().unwrap(),
        &fresh.conn().unwrap(),
        &format!("from version {k}"),
    );
    let after = snapshot(&store.conn().unwrap());
    drop(store);

    let again = open_expecting(
        &path,
        Outcome::Current {
            version: SCHEMA_VERSION,
        },
    );
    assert_eq!(
        snapshot(&again.conn().unwrap()),
        after,
        "reopening changed rows"
    );
}

macro_rules! upgrade_tests {
    ($($name:ident: $k:expr,)*) => {
        $(
            #[test]
            fn $name() {
                upgrade_from($k);
            }
        )*
        /// The list above covers every version before the latest.
        #[test]
        fn every_earlier_version_has_an_upgrade_test() {
            let covered: Vec<u32> = vec![$($k),*];
            assert_eq!(SCHEMA_VERSION, LATEST, "add upgrade tests for the new versions");
            assert_eq!(covered, (0..LATEST).collect::<Vec<_>>());
            assert_eq!(MIGRATIONS.len(), LATEST as usize + 1);
            for (i, m) in MIGRATIONS.iter().enumerate() {
                assert_eq!(m.version as usize, i, "{}", m.name);
                assert!(m.name.starts_with(&format!("{i:04}_")), "{}", m.name);
            }
        }
    };
}

upgrade_tests! {
    upgrade_from_v00: 0,
    upgrade_from_v01: 1,
    upgrade_from_v02: 2,
    upgrade_from_v03: 3,
    upgrade_from_v04: 4,
    upgrade_from_v05: 5,
    upgrade_from_v06: 6,
    upgrade_from_v07: 7,
    upgrade_from_v08: 8,
    upgrade_from_v09: 9,
    upgrade_from_v10: 10,
    upgrade_from_v11: 11,
    upgrade_from_v12: 12,
    upgrade_from_v13: 13,
    upgrade_from_v14: 14,
    upgrade_from_v15: 15,
    upgrade_from_v16: 16,
    upgrade_from_v17: 17,
    upgrade_from_v18: 18,
    upgrade_from_v19: 19,
    upgrade_from_v20: 20,
    upgrade_from_v21: 21,
    upgrade_from_v22: 22,
    upgrade_from_v23: 23,
    upgrade_from_v24: 24,
    upgrade_from_v25: 25,
    upgrade_from_v26: 26,
    upgrade_from_v27: 27,
    upgrade_from_v28: 28,
    upgrade_from_v29: 29,
    upgrade_from_v30: 30,
    upgrade_from_v31: 31,
    upgrade_from_v32: 32,
    upgrade_from_v33: 33,
    upgrade_from_v34: 34,
    upgrade_from_v35: 35,
}

/// A fresh store's baseline is the SCHEMA_SQL the generated module exposes, and equals genesis
/// plus every migration.
#[test]
fn the_baseline_equals_genesis_plus_every_migration() {
    let dir = tempfile::tempdir().unwrap();
    let migrated = build_at(&dir.path().join("all.sqlite"), LATEST);
    let baseline = Connection::open_in_memory().unwrap();
    baseline.execute_batch(SCHEMA_SQL).unwrap();
    assert_same_structure(&migrated, &baseline, "SCHEMA_SQL");
    let fresh = fresh_store(dir.path());
    assert_same_structure(&fresh.conn().unwrap(), &baseline, "a fresh store");
}
