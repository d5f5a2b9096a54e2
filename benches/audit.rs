//! The audit log: what `verify_audit_log` (and so `seed-agents-db audit verify`) costs on
//! 1,000,000 audit rows, what a page of one account's events costs there, and what the audit
//! event adds to a secret write (`set_secret`, audited, against the same statements by hand
//! without the event, and those statements with and without the event's).
//!
//! The 1M-row file is built once per schema version through the store's own operations (so every
//! row is a real, chained event) and kept under `target/bench-data`; building it is timed.

mod common;

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use common::paired;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rusqlite::{params, Connection, TransactionBehavior};
use seed_agents_store::audit::AuditFilter;
use seed_agents_store::{Durability, Store};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const ROWS: usize = 1_000_000;
const ACCOUNTS: usize = 100;

/// Builds (once) a store whose audit log holds [`ROWS`] events: `set_secret` over
/// [`ACCOUNTS`] accounts.
fn audit_file(dir: &Path) -> PathBuf {
    let version = seed_agents_store::schema::SCHEMA_VERSION;
    let path = dir.join(format!("audit-{ROWS}-v{version}.sqlite"));
    let done = dir.join(format!("audit-{ROWS}-v{version}.done"));
    if done.exists() {
        return path;
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let store = Store::open(&path).unwrap();
    store.set_durability(Durability::Normal).unwrap();
    let began = Instant::now();
    // One thread: under writers that never pause, the WAL is never reset and grows without
    // bound (gigabytes here), whatever the operation.
    for i in 0..ROWS {
        let account = format!("acct-{:03}", i % ACCOUNTS);
        let name = format!("key-{}", i % 10);
        store.set_secret(&account, &name, b"value", None).unwrap();
    }
    eprintln!(
        "built {ROWS} audit rows through set_secret in {:?}",
        began.elapsed()
    );
    assert_eq!(store.verify_audit_log().unwrap().rows, ROWS as u64);
    drop(store);
    std::fs::write(done, "").unwrap();
    path
}

/// The plain side of a secret write: the statements `set_secret` runs for an existing secret
/// (key read, AES-256-GCM, row read, update, account touch), and with `audited` also the
/// event's (chain read, SHA-256, insert, chain update), in one `BEGIN IMMEDIATE`.
fn plain_set_secret(conn: &mut Connection, now: i64, audited: bool) {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    let key: Vec<u8> = tx
        .prepare_cached("SELECT value FROM server_config WHERE key = 'secret_encryption_key_v1'")
        .unwrap()
        .query_row([], |r| r.get(0))
        .unwrap();
    let cipher = Aes256Gcm::new_from_slice(&key).unwrap();
    let mut blob = vec![7u8; 12];
    blob.extend_from_slice(b"value");
    let (nonce, body) = blob.split_at_mut(12);
    let tag = cipher
        .encrypt_in_place_detached(Nonce::from_slice(nonce), b"", body)
        .unwrap();
    blob.extend_from_slice(&tag);
    let id: String = tx
        .prepare_cached("SELECT id FROM secrets WHERE account_id = ?1 AND name = ?2")
        .unwrap()
        .query_row(["acct-plain", "key"], |r| r.get(0))
        .unwrap();
    tx.prepare_cached("UPDATE secrets SET ciphertext = ?1, updated_at = ?2 WHERE id = ?3")
        .unwrap()
        .execute(params![blob, now, id])
        .unwrap();
    tx.prepare_cached("UPDATE accounts SET updated_at = ?1 WHERE id = ?2")
        .unwrap()
        .execute(params![now, "acct-plain"])
        .unwrap();
    if audited {
        let (seq, prev): (i64, Vec<u8>) = tx
            .prepare_cached(
                "SELECT head_seq, head_hash FROM audit_chain WHERE chain = 'acct-plain'",
            )
            .unwrap()
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        let mut h = Sha256::new();
        h.update(&prev);
        h.update((seq + 1).to_be_bytes());
        h.update(b"acct-plain acct-plain secret secret.set secret key ok");
        let hash = h.finalize().to_vec();
        tx.prepare_cached(
            "INSERT INTO audit_events (chain, seq, at, account_id, actor, kind, action, target, \
             outcome, prev_hash, hash) VALUES ('acct-plain', ?1, ?2, 'acct-plain', 'acct-plain', \
             'secret', 'secret.set', 'secret key', 'ok', ?3, ?4)",
        )
        .unwrap()
        .execute(params![seq + 1, now, prev, hash])
        .unwrap();
        tx.prepare_cached(
            "UPDATE audit_chain SET head_seq = ?1, head_hash = ?2 WHERE chain = 'acct-plain'",
        )
        .unwrap()
        .execute(params![seq + 1, hash])
        .unwrap();
    }
    tx.commit().unwrap();
}

fn bench(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let big = audit_file(&dir);
    let store = Store::open(&big).unwrap();

    let mut g = c.benchmark_group("audit_verify_1m");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Elements(ROWS as u64));
    g.bench_function("verify_audit_log", |b| {
        b.iter(|| assert!(store.verify_audit_log().unwrap().is_intact()))
    });
    g.finish();

    let mut g = c.benchmark_group("audit_read_1m");
    let one_account = AuditFilter {
        account_id: Some("acct-042".into()),
        ..AuditFilter::default()
    };
    g.bench_function("page_of_50_one_account", |b| {
        b.iter(|| {
            let page = store.audit_events(&one_account, None, None).unwrap();
            assert_eq!(page.items.len(), 50);
        })
    });
    g.finish();
    drop(store);

    // The cost the event adds to a write, each side on a file of its own (two connections
    // alternating on one file would empty each other's page cache at every write).
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(small_file(tmp.path(), "store.sqlite")).unwrap();
    store.set_durability(Durability::Normal).unwrap();
    let mut plain = plain_conn(&small_file(tmp.path(), "plain.sqlite"));
    let mut audited = plain_conn(&small_file(tmp.path(), "audited.sqlite"));
    let (mut a, mut b) = (1_764_000_000_000i64, 1_764_000_000_000i64);
    paired(
        "set_secret (synchronous=NORMAL)",
        10_000,
        ["store, audited", "plain, not audited"],
        || {
            store
                .set_secret("acct-plain", "key", b"value", None)
                .unwrap();
        },
        || {
            a += 1;
            plain_set_secret(&mut plain, a, false)
        },
    );
    paired(
        "plain secret write (synchronous=NORMAL)",
        10_000,
        ["with the audit event", "without"],
        || {
            b += 1;
            plain_set_secret(&mut audited, b, true)
        },
        || {
            a += 1;
            plain_set_secret(&mut plain, a, false)
        },
    );
    drop((store, plain, audited));

    // Does the log's size cost the writer? The same audited write on a copy of the 1M-row file
    // (the cached one stays as built) and on a small file.
    let copy = tmp.path().join("large.sqlite");
    std::fs::copy(&big, &copy).unwrap();
    let large = Store::open(&copy).unwrap();
    large.set_durability(Durability::Normal).unwrap();
    let small = Store::open(small_file(tmp.path(), "small.sqlite")).unwrap();
    small.set_durability(Durability::Normal).unwrap();
    paired(
        "set_secret by log size (synchronous=NORMAL)",
        10_000,
        ["1M-row log", "1-row log"],
        || {
            large
                .set_secret("acct-042", "key-1", b"value", None)
                .unwrap();
        },
        || {
            small
                .set_secret("acct-plain", "key", b"value", None)
                .unwrap();
        },
    );
}

/// A small store file holding the secret `key` of `acct-plain` (and so one audit event).
fn small_file(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let store = Store::open(&path).unwrap();
    store
        .set_secret("acct-plain", "key", b"value", None)
        .unwrap();
    path
}

/// A plain connection configured as the store configures its writer.
fn plain_conn(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536; PRAGMA foreign_keys = ON;",
    )
    .unwrap();
    conn
}

criterion_group!(benches, bench);
criterion_main!(benches);
