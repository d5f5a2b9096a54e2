//! 4. A current file

use super::*;

#[test]
fn a_migrated_file_at_the_latest_version_reopens_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latest.sqlite");
    let conn = build_at(&path, LATEST);
    fill(&conn);
    let before = snapshot(&conn);
    conn.close().unwrap();
    for _ in 0..2 {
        let store = open_expecting(
            &path,
            Outcome::Current {
                version: SCHEMA_VERSION,
            },
        );
        assert_eq!(snapshot(&store.conn().unwrap()), before);
    }
}

#[test]
fn a_fresh_store_reopens_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let store = fresh_store(dir.path());
        // Rows of every table in every shape, as another writer of the file would put them
        // (the store's own connection is read-only).
        let raw = Connection::open(store.path()).unwrap();
        fill(&raw);
        snapshot(&raw)
    };
    let total: usize = before.values().map(Vec::len).sum();
    assert_eq!(before.len(), 26, "tables at version {LATEST}");
    assert_eq!(total, 26 * ROWS + 1);
    for _ in 0..2 {
        let store = open_expecting(
            &dir.path().join("fresh.sqlite"),
            Outcome::Current {
                version: SCHEMA_VERSION,
            },
        );
        assert_eq!(snapshot(&store.conn().unwrap()), before);
    }
}

/// The hash of an audit row as the log's documented encoding defines it (an oracle beside the
/// store's own): SHA-256 over the domain, `prev_hash`, seq and at as 8 bytes big-endian, each text
/// as its 8-byte length and bytes, and `detail` absent as one 0 byte.
fn audit_hash(prev: &[u8], seq: i64, at: i64, texts: [&str; 6]) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"seed-agents-store audit v1\0");
    h.update(prev);
    h.update(seq.to_be_bytes());
    h.update(at.to_be_bytes());
    for t in texts {
        h.update((t.len() as u64).to_be_bytes());
        h.update(t.as_bytes());
    }
    h.update([0]);
    h.finalize().to_vec()
}

#[test]
fn a_log_written_before_version_36_stays_one_chain_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v35.sqlite");
    let conn = build_at(&path, 35);
    // Three events of two accounts on the one chain version 35 kept, seq 1..=3.
    let mut prev = vec![0u8; 32];
    for (seq, account) in [(1, "acct-a"), (2, "acct-b"), (3, "acct-a")] {
        let texts = [account, account, "secret", "secret.set", "secret s", "ok"];
        let hash = audit_hash(&prev, seq, T + seq, texts);
        conn.execute(
            "INSERT INTO audit_events (seq, at, account_id, actor, kind, action, target, outcome, \
             detail, prev_hash, hash) VALUES (?1, ?2, ?3, ?3, 'secret', 'secret.set', 'secret s', \
             'ok', NULL, ?4, ?5)",
            params![seq, T + seq, account, prev, hash],
        )
        .unwrap();
        prev = hash;
    }
    conn.execute(
        "INSERT INTO audit_chain (id, head_seq, head_hash, anchor_seq, anchor_hash) \
         VALUES (1, 3, ?1, 0, zeroblob(32))",
        [&prev],
    )
    .unwrap();
    conn.close().unwrap();

    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: 35,
            to: LATEST,
        },
    );
    let report = store.verify_audit_log().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!((report.rows, report.chains, report.head_seq), (3, 1, 3));
    assert_eq!(report.head_hash, hex::encode(&prev));
    // New events go to their account's chain, from seq 1; the old chain stays as it was.
    store.set_secret("acct-a", "new", b"v", None).unwrap();
    let report = store.verify_audit_log().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!((report.rows, report.chains, report.head_seq), (4, 2, 4));
    // The old chain is still checked: an edit there is found, in the chain ''.
    Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE audit_events SET target = 'secret t' WHERE chain = '' AND seq = 2",
            [],
        )
        .unwrap();
    let problems = store.verify_audit_log().unwrap().problems;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!((problems[0].chain.as_str(), problems[0].seq), ("", 2));
}
