//! The audit log's events: every audited change records one event in its own transaction, a
//! rolled-back change records none, the security events (refused cross-account access,
//! idempotency conflicts, failed decryption) survive their operation's rollback, no event holds
//! any part of a secret value, and reading pages and filters by account, kind and time.

use std::collections::BTreeMap;

use seed_agents_store::audit::AuditFilter;
use seed_agents_store::idempotency::{Action, Outcome as Idem};
use seed_agents_store::mcp::McpServerInput;
use seed_agents_store::paging::Cursor;
use seed_agents_store::payload::{McpServerConfig, ModelProviderConfig, OpenMap};
use seed_agents_store::schema::audit_events::{Kind, Outcome, Row};
use seed_agents_store::{Error, Store};
use support::tools::{agent, lambda, open, A, B, T};

/// The value no event may hold any part of.
const VALUE: &str = "zq7-Wombat-Lantern-93xk-Pebble";
/// The smallest run of the value counted as a part of it.
const PART: usize = 5;

/// Every event, oldest first.
fn all(store: &Store) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut after: Option<Cursor> = None;
    loop {
        let page = store
            .audit_events(&AuditFilter::default(), Some(200), after.as_ref())
            .unwrap();
        rows.extend(page.items);
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    rows.reverse();
    rows
}

/// `(account, actor, action, target, outcome)` of every event, oldest first.
fn log(store: &Store) -> Vec<(String, String, String, String, &'static str)> {
    all(store)
        .into_iter()
        .map(|r| {
            let outcome = r.outcome.as_str();
            (r.account_id, r.actor, r.action, r.target, outcome)
        })
        .collect()
}

fn mcp_input(header_value: Option<&str>) -> McpServerInput {
    McpServerInput {
        config: McpServerConfig {
            url: "https://mcp.example/mcp".into(),
            transport: None,
            headers: None,
            secret_refs: None,
            extra: OpenMap::new(),
        },
        secret_headers: header_value
            .map(|v| BTreeMap::from([("authorization".to_owned(), format!("Bearer {v}"))]))
            .unwrap_or_default(),
    }
}

/// Runs every audited operation once, with [`VALUE`] as the secret and the MCP header value.
fn do_everything(store: &mut Store) {
    store
        .set_secret(A, "api-key", VALUE.as_bytes(), None)
        .unwrap();
    store
        .set_secret(A, "api-key", VALUE.as_bytes(), None)
        .unwrap();
    let provider = store
        .create_provider(A, "main", &ModelProviderConfig::new("openai"))
        .unwrap();
    store
        .update_provider(
            A,
            &provider.id,
            Some("primary"),
            &ModelProviderConfig::new("anthropic"),
        )
        .unwrap();
    store
        .create_mcp_server(A, "docs", &mcp_input(Some(VALUE)))
        .unwrap();
    store.set_mcp_server_enabled(A, "docs", false).unwrap();
    store.set_mcp_server_enabled(A, "docs", true).unwrap();
    store.record_mcp_discovery(A, "docs", Ok(vec![])).unwrap();
    store
        .record_mcp_discovery(A, "docs", Err(format!("401 for {VALUE}")))
        .unwrap();
    store
        .update_mcp_server(A, "docs", &mcp_input(None))
        .unwrap();
    store
        .create_mcp_server(A, "search", &mcp_input(Some(VALUE)))
        .unwrap();
    store.delete_mcp_server(A, "search").unwrap();
    let agent_id = agent(store, A, &[]);
    store
        .put_lambda_tool(A, &agent_id, &lambda("echo"))
        .unwrap();
    store.set_tool_enabled(A, &agent_id, "echo", false).unwrap();
    assert!(store.delete_tool(A, &agent_id, "echo").unwrap());
    assert!(store.delete_provider(A, &provider.id).unwrap());
    assert!(store.delete_secret(A, "api-key").unwrap());
}

#[test]
fn every_audited_change_records_one_event_naming_account_actor_action_target_and_outcome() {
    let (_dir, mut store, _clock) = open();
    do_everything(&mut store);
    let events = all(&store);
    let actions: Vec<&str> = events.iter().map(|r| r.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "secret.set",
            "secret.set",
            "provider.create",
            "provider.update",
            "secret.set",
            "mcp_server.create",
            "mcp_server.disable",
            "mcp_server.enable",
            "mcp_server.discovery",
            "mcp_server.discovery",
            "secret.delete",
            "mcp_server.update",
            "secret.set",
            "mcp_server.create",
            "secret.delete",
            "mcp_server.delete",
            "tool.create",
            "tool.disable",
            "tool.delete",
            "provider.delete",
            "secret.delete",
        ]
    );
    for (i, r) in events.iter().enumerate() {
        assert_eq!(r.seq, i as i64 + 1);
        assert_eq!((r.account_id.as_str(), r.actor.as_str()), (A, A));
        assert_eq!(r.at, T);
    }
    assert_eq!(events[0].target, "secret api-key");
    assert_eq!(events[0].kind, Kind::Secret);
    assert_eq!(events[2].kind, Kind::Provider);
    assert!(events[2].target.starts_with("model provider "));
    assert_eq!(events[4].target, "secret mcp-docs-authorization");
    assert_eq!(events[5].kind, Kind::Tool);
    assert_eq!(events[5].target, "MCP server docs");
    assert_eq!(events[8].outcome, Outcome::Ok);
    assert_eq!(events[9].outcome, Outcome::Failed);
    assert_eq!(events[16].target.split('/').nth(1), Some("echo"));
    assert!(store.verify_audit_log().unwrap().is_intact());
}

#[test]
fn a_change_that_rolls_back_leaves_no_event_and_a_no_op_records_nothing() {
    let (_dir, store, _clock) = open();
    store
        .create_provider(A, "main", &ModelProviderConfig::new("openai"))
        .unwrap();
    let duplicate = store.create_provider(A, "main", &ModelProviderConfig::new("openai"));
    assert!(matches!(duplicate, Err(Error::Conflict { .. })));
    // Too long a value is refused before the transaction; a missing secret deletes nothing.
    assert!(store
        .set_secret(A, "big", &vec![0; 65 * 1024], None)
        .is_err());
    assert!(!store.delete_secret(A, "nope").unwrap());
    assert!(!store.delete_provider(A, "no-such-id").unwrap());
    let actions: Vec<String> = all(&store).into_iter().map(|r| r.action).collect();
    assert_eq!(actions, ["provider.create"]);
}

#[test]
fn no_event_holds_any_part_of_a_secret_value() {
    if support::backend::skip_on_postgres(
        "no_event_holds_any_part_of_a_secret_value",
        "it reads every byte of the log through a raw SQLite connection",
    ) {
        return;
    }
    let (dir, mut store, _clock) = open();
    do_everything(&mut store);
    // And the security events: a failed decryption and a conflict.
    store
        .set_secret(A, "other", VALUE.as_bytes(), None)
        .unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("db.sqlite")).unwrap();
    conn.execute(
        "UPDATE secrets SET ciphertext = zeroblob(40) WHERE name = 'other'",
        [],
    )
    .unwrap();
    assert!(store.decrypt_secret(A, "other").is_err());
    assert!(all(&store).iter().any(|r| r.action == "secret.decrypt"));

    let mut stmt = conn
        .prepare("SELECT * FROM audit_events UNION ALL SELECT *, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM audit_chain")
        .unwrap();
    let columns = stmt.column_count();
    let mut bytes = Vec::new();
    let mut rows = stmt.query([]).unwrap();
    while let Some(row) = rows.next().unwrap() {
        for i in 0..columns {
            match row.get_ref(i).unwrap() {
                rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                    bytes.extend_from_slice(t);
                    bytes.push(0);
                }
                _ => {}
            }
        }
    }
    assert!(bytes.len() > 1_000, "the log holds {} bytes", bytes.len());
    let value = VALUE.as_bytes();
    for part in value.windows(PART) {
        assert!(
            !bytes.windows(PART).any(|w| w == part),
            "the audit log holds {:?}, part of the secret value",
            String::from_utf8_lossy(part)
        );
    }
}

#[test]
fn another_accounts_provider_named_by_id_is_recorded_under_its_owner_as_refused() {
    let (_dir, store, _clock) = open();
    let provider = store
        .create_provider(A, "main", &ModelProviderConfig::new("openai"))
        .unwrap();
    let update = store.update_provider(B, &provider.id, None, &ModelProviderConfig::new("x"));
    assert!(matches!(update, Err(Error::NotFound { .. })));
    assert!(!store.delete_provider(B, &provider.id).unwrap());
    // An id nobody has is an ordinary not found: nothing is recorded.
    let unknown = store.update_provider(B, "nobody", None, &ModelProviderConfig::new("x"));
    assert!(matches!(unknown, Err(Error::NotFound { .. })));
    let refusal = (
        A.to_owned(),
        B.to_owned(),
        "access.refused".to_owned(),
        format!("model provider {}", provider.id),
        "refused",
    );
    assert_eq!(log(&store)[1..], [refusal.clone(), refusal]);
    let security = AuditFilter {
        kind: Some(Kind::Security),
        ..AuditFilter::default()
    };
    assert_eq!(
        store
            .audit_events(&security, None, None)
            .unwrap()
            .items
            .len(),
        2
    );
    // A's provider is untouched.
    assert_eq!(
        store.provider(A, &provider.id).unwrap().unwrap().r#type,
        "openai"
    );
}

#[test]
fn an_idempotency_conflict_is_recorded_in_every_form_though_its_transaction_rolled_back() {
    let (_dir, store, _clock) = open();
    let first = store
        .idempotent(A, Action::CreateSession, Some("req-1"), "one", |_, _| Ok(1))
        .unwrap();
    assert!(matches!(first, Idem::Fresh(1)));
    let conflict = store.idempotent(A, Action::CreateSession, Some("req-1"), "two", |_, _| Ok(2));
    assert!(matches!(conflict, Err(Error::Conflict { .. })));
    let replay: Result<Option<i32>, _> =
        store.idempotent_replay(A, Action::CreateSession, "req-1", "three");
    assert!(matches!(replay, Err(Error::Conflict { .. })));
    let record = store.record_idempotent(A, Action::CreateSession, "req-1", "four", 4);
    assert!(matches!(record, Err(Error::Conflict { .. })));
    // A replay with identical bytes is no conflict.
    assert!(store
        .idempotent(A, Action::CreateSession, Some("req-1"), "one", |_, _| Ok(1))
        .unwrap()
        .is_replayed());
    let event = (
        A.to_owned(),
        A.to_owned(),
        "idempotency.conflict".to_owned(),
        "client request id CreateSession/req-1".to_owned(),
        "refused",
    );
    assert_eq!(log(&store), vec![event; 3]);
}

#[test]
fn a_failed_decryption_is_recorded_with_its_cause_and_a_read_only_handle_records_nothing() {
    let (dir, store, _clock) = open();
    store.set_secret(A, "k", VALUE.as_bytes(), None).unwrap();
    assert_eq!(
        store.decrypt_secret(A, "k").unwrap().expose(),
        VALUE.as_bytes()
    );
    let location = support::backend::location(dir.path(), "db.sqlite");
    support::backend::exec(
        &location,
        "UPDATE secrets SET ciphertext = ?1 WHERE name = 'k'",
        &[&vec![7u8; 60]],
    );
    assert!(matches!(
        store.decrypt_secret(A, "k"),
        Err(Error::SecretTagMismatch)
    ));
    support::backend::exec(
        &location,
        "DELETE FROM server_config WHERE key = 'secret_encryption_key_v1'",
        &[],
    );
    assert!(matches!(
        store.decrypt_secret(A, "k"),
        Err(Error::NoSecretKey)
    ));
    // Not found is no decryption failure.
    assert!(matches!(
        store.decrypt_secret(A, "missing"),
        Err(Error::NotFound { .. })
    ));
    let failures: Vec<(String, Option<String>)> = all(&store)
        .into_iter()
        .filter(|r| r.action == "secret.decrypt")
        .map(|r| {
            assert_eq!(
                (r.kind, r.outcome, r.target.as_str()),
                (Kind::Security, Outcome::Failed, "secret k")
            );
            (r.account_id, r.detail)
        })
        .collect();
    assert_eq!(
        failures,
        [
            (
                A.to_owned(),
                Some("the ciphertext does not authenticate under the server key".to_owned())
            ),
            (
                A.to_owned(),
                Some("the database has no server key".to_owned())
            ),
        ]
    );
    let reader = Store::open_read_only(&location).unwrap();
    assert!(matches!(
        reader.decrypt_secret(A, "k"),
        Err(Error::NoSecretKey)
    ));
    assert_eq!(
        all(&store)
            .iter()
            .filter(|r| r.action == "secret.decrypt")
            .count(),
        2
    );
}

#[test]
fn reading_pages_newest_first_and_filters_by_account_kind_and_time() {
    let (_dir, store, clock) = open();
    for i in 0..7 {
        store.set_secret(A, &format!("a{i}"), b"v", None).unwrap();
        store.set_secret(B, &format!("b{i}"), b"v", None).unwrap();
        clock.advance(1_000);
    }
    store
        .create_provider(A, "main", &ModelProviderConfig::new("openai"))
        .unwrap();

    // Pages of 3 over A's events: no repeat, no gap, newest first, even with appends between.
    let only_a = AuditFilter {
        account_id: Some(A.into()),
        ..AuditFilter::default()
    };
    let first = store.audit_events(&only_a, Some(3), None).unwrap();
    store.set_secret(A, "late", b"v", None).unwrap();
    let mut seqs: Vec<i64> = first.items.iter().map(|r| r.seq).collect();
    let mut after = first.next;
    while let Some(cursor) = after {
        let token = cursor.to_token();
        let page = store
            .audit_events(&only_a, Some(3), Some(&Cursor::from_token(&token).unwrap()))
            .unwrap();
        seqs.extend(page.items.iter().map(|r| r.seq));
        after = page.next;
    }
    // A's own chain, its seqs counting A's events only.
    assert_eq!(seqs, [8, 7, 6, 5, 4, 3, 2, 1]);

    let secrets_of_b = AuditFilter {
        account_id: Some(B.into()),
        kind: Some(Kind::Secret),
        ..AuditFilter::default()
    };
    let page = store.audit_events(&secrets_of_b, None, None).unwrap();
    assert_eq!(page.items.len(), 7);
    assert!(page.items.iter().all(|r| r.account_id == B));
    let providers = AuditFilter {
        kind: Some(Kind::Provider),
        ..AuditFilter::default()
    };
    assert_eq!(
        store
            .audit_events(&providers, None, None)
            .unwrap()
            .items
            .len(),
        1
    );

    // [T + 2s, T + 4s): the events of rounds 2 and 3.
    let window = AuditFilter {
        since: Some(T + 2_000),
        until: Some(T + 4_000),
        ..AuditFilter::default()
    };
    let targets: Vec<String> = store
        .audit_events(&window, None, None)
        .unwrap()
        .items
        .into_iter()
        .map(|r| r.target)
        .collect();
    assert_eq!(
        targets,
        ["secret b3", "secret a3", "secret b2", "secret a2"]
    );

    let foreign = Cursor {
        updated_at: T,
        id: "agent-7".into(),
    };
    assert!(matches!(
        store.audit_events(&AuditFilter::default(), None, Some(&foreign)),
        Err(Error::Invalid { field: "after", .. })
    ));
    assert!(matches!(
        store.audit_events(&AuditFilter::default(), Some(0), None),
        Err(Error::Invalid {
            field: "page_size",
            ..
        })
    ));
}

#[test]
fn a_key_rotation_and_a_key_move_are_recorded_by_the_store_without_the_key() {
    let (dir, store, _clock) = open();
    store
        .set_secret(A, "api-key", VALUE.as_bytes(), None)
        .unwrap();
    let report = store
        .rotate_key(seed_agents_store::keys::RotateOptions::new())
        .unwrap();
    assert!(report.complete);
    let key = seed_agents_store::schema::server_config::get(
        &store.reading().unwrap(),
        &format!("secret_encryption_key_v{}", report.key_id),
    )
    .unwrap()
    .unwrap()
    .value;
    let file = dir.path().join("moved.key");
    store
        .move_key_out(&seed_agents_store::keys::FileKeyProvider::new(&file))
        .unwrap();
    let store_actor = seed_agents_store::audit::STORE_ACTOR;
    let keys: Vec<_> = log(&store)
        .into_iter()
        .filter(|(_, _, action, _, _)| action.starts_with("key."))
        .collect();
    let event = |action: &str, target: &str| {
        (
            store_actor.to_string(),
            store_actor.to_string(),
            action.to_string(),
            target.to_string(),
            "ok",
        )
    };
    assert_eq!(
        keys,
        vec![
            event("key.create", "secret key 2"),
            event("key.retire", "secret key 1"),
            event("key.move", "secret key 2"),
        ]
    );
    assert!(store.verify_audit_log().unwrap().is_intact());
    for row in all(&store) {
        let text = format!("{} {}", row.target, row.detail.unwrap_or_default());
        assert!(!text.contains(&hex(&key)), "{text}");
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_key_the_provider_does_not_serve_is_recorded_as_a_failed_decryption() {
    let (dir, store, _clock) = open();
    store
        .set_secret(A, "api-key", VALUE.as_bytes(), None)
        .unwrap();
    let file = dir.path().join("moved.key");
    store
        .move_key_out(&seed_agents_store::keys::FileKeyProvider::new(&file))
        .unwrap();
    // The database provider (the default) no longer holds the key.
    let err = store.decrypt_secret(A, "api-key").unwrap_err();
    assert!(matches!(err, Error::KeyNotServed { id: 1, .. }), "{err:?}");
    // A's newest event: the move is the store's own, in its own chain, at the same instant.
    let failed = all(&store)
        .into_iter()
        .rfind(|r| r.account_id == A)
        .unwrap();
    assert_eq!(
        (
            failed.action.as_str(),
            failed.target.as_str(),
            failed.outcome
        ),
        ("secret.decrypt", "secret api-key", Outcome::Failed)
    );
    assert_eq!(
        failed.detail.as_deref(),
        Some("the key that encrypted it is not served")
    );
}

#[test]
fn reading_another_accounts_agent_or_session_is_recorded_and_reading_ones_own_is_not() {
    let (_dir, mut store, _clock) = open();
    let agent_id = agent(&mut store, A, &[]);
    let session = store
        .create_session(
            A,
            &seed_agents_store::sessions::NewSession {
                agent_id: agent_id.clone(),
                ..Default::default()
            },
        )
        .unwrap();
    let before = log(&store).len();
    // A's own reads, and B's reads of ids nobody has, record nothing.
    assert!(store.agent(A, &agent_id).unwrap().is_some());
    assert!(store.session(A, &session.id).unwrap().is_some());
    assert!(store
        .events_after(A, &session.id, 0, None)
        .unwrap()
        .is_empty());
    assert!(store.agent(B, "nobody").unwrap().is_none());
    assert!(store.session(B, "nobody").unwrap().is_none());
    assert_eq!(log(&store).len(), before);
    // B naming A's rows gets the answer of an unknown id, and the refusal is on record.
    assert!(store.agent(B, &agent_id).unwrap().is_none());
    assert!(store.session(B, &session.id).unwrap().is_none());
    // A replay is not audited: an empty answer is what every caught-up poll gets.
    assert!(store
        .events_after(B, &session.id, 0, None)
        .unwrap()
        .is_empty());
    let refusal = |target: String| {
        (
            A.to_owned(),
            B.to_owned(),
            "access.refused".to_owned(),
            target,
            "refused",
        )
    };
    assert_eq!(
        log(&store)[before..],
        [
            refusal(format!("agent {agent_id}")),
            refusal(format!("session {}", session.id)),
        ]
    );
}
