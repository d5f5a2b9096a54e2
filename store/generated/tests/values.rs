//! Column values: nullable columns as `Option`, typed errors for stored values outside an enum's
//! set or a bool, and enums parsed from their text.

use super::*;

/// The columns of `table` that SQL lets be NULL (primary-key columns excluded).
fn nullable_columns(conn: &Connection, table: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare(r#"SELECT name FROM pragma_table_info(?1) WHERE "notnull" = 0 AND pk = 0"#)
        .unwrap();
    let rows = stmt.query_map([table], |row| row.get(0)).unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

/// Asserts that every nullable column of the row `id` of `table` holds SQL NULL.
fn assert_all_null(conn: &Connection, table: &str, id: &str, expected: usize) {
    let columns = nullable_columns(conn, table);
    assert_eq!(
        columns.len(),
        expected,
        "{table}: nullable columns {columns:?}"
    );
    for column in columns {
        let kind: String = conn
            .query_row(
                &format!(r#"SELECT typeof("{column}") FROM "{table}" WHERE id = ?1"#),
                [id],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(kind, "null", "{table}.{column}");
    }
}

#[test]
fn nullable_columns_are_options_that_round_trip_none() {
    let (_dir, store) = world();
    let raw = store.sqlite_writer().unwrap().raw();
    let conn = &*raw;

    let bare_run = runs::Row {
        id: "run-bare".into(),
        account_id: A.into(),
        root_run_id: "run-bare".into(),
        parent_run_id: None,
        parent_tool_call_id: None,
        continued_from_run_id: None,
        depth: 0,
        kind: runs::Kind::Workflow,
        agent_id: None,
        session_id: None,
        trigger_firing_id: None,
        origin: runs::Origin::User,
        title: None,
        model: None,
        source_cid: None,
        source_text: None,
        input_cbor: enc(&RunInput::default()),
        output_cbor: None,
        error_cbor: None,
        status: runs::Status::Queued,
        wait_cbor: None,
        attempt: 0,
        max_attempts: 1,
        not_before: None,
        queue: runs::Queue::Background,
        lease_owner: None,
        lease_expires_at: None,
        budget_cbor: None,
        usage_cbor: None,
        plan_cbor: None,
        created_at: T,
        started_at: None,
        finished_at: None,
        updated_at: T,
    };
    runs::insert(conn, &bare_run).unwrap();
    assert_eq!(runs::get(conn, A, "run-bare").unwrap(), Some(bare_run));
    assert_all_null(conn, "runs", "run-bare", 21);

    let bare_session = sessions::Row {
        id: "session-bare".into(),
        account_id: A.into(),
        agent_id: "agent-1".into(),
        title: None,
        title_source: sessions::TitleSource::System,
        status: sessions::Status::Idle,
        parent_session_id: None,
        run_id: None,
        plan_cbor: None,
        model_override_cbor: None,
        description: None,
        thoroughness: None,
        message_at: None,
        message_from: None,
        created_at: T,
        updated_at: T,
    };
    sessions::insert(conn, &bare_session).unwrap();
    assert_eq!(
        sessions::get(conn, A, "session-bare").unwrap(),
        Some(bare_session.clone())
    );
    assert_all_null(conn, "sessions", "session-bare", 9);

    // And back: a set value is cleared to NULL by update.
    let full = session("session-full", A, "agent-1", Some("session-1"));
    sessions::insert(conn, &full).unwrap();
    let cleared = sessions::Row {
        id: "session-full".into(),
        ..bare_session
    };
    assert_eq!(sessions::update(conn, &cleared).unwrap(), 1);
    assert_eq!(
        sessions::get(conn, A, "session-full").unwrap(),
        Some(cleared)
    );
    assert_all_null(conn, "sessions", "session-full", 9);

    let bare_agent = agents::Row {
        activity_at: None,
        activity_kind: None,
        message_at: None,
        message_from: None,
        activity_session_id: None,
        ..agent("agent-bare", A)
    };
    agents::insert(conn, &bare_agent).unwrap();
    assert_eq!(
        agents::get(conn, A, "agent-bare").unwrap(),
        Some(bare_agent)
    );
    assert_all_null(conn, "agents", "agent-bare", 5);
}

#[test]
fn an_unknown_enum_value_is_a_typed_error() {
    let (_dir, store) = world();
    let raw = store.sqlite_writer().unwrap().raw();
    let conn = &*raw;
    conn.execute("UPDATE runs SET status = 'exploded' WHERE id = 'run-1'", ())
        .unwrap();

    let unknown = |result: Result<_>| match result {
        Err(Error::UnknownEnumValue {
            table,
            column,
            value,
        }) => (table, column, value),
        other => panic!("expected UnknownEnumValue, got {other:?}"),
    };
    let expected = ("runs", "status", "exploded".to_owned());
    assert_eq!(unknown(runs::get(conn, A, "run-1").map(drop)), expected);
    assert_eq!(
        unknown(runs::list_by_account_id(conn, A).map(drop)),
        expected
    );
    // Other accounts' reads do not touch the row.
    assert_eq!(runs::list_by_account_id(conn, B).unwrap(), vec![]);
    // The message names the table, column and value.
    let message = runs::get(conn, A, "run-1").unwrap_err().to_string();
    assert!(message.contains("runs.status"), "{message}");
    assert!(message.contains("exploded"), "{message}");

    // A nullable enum column is checked the same way; NULL stays None.
    conn.execute(
        "UPDATE sessions SET thoroughness = 'Deep' WHERE id = 'session-1'",
        (),
    )
    .unwrap();
    assert_eq!(
        unknown(sessions::get(conn, A, "session-1").map(drop)),
        ("sessions", "thoroughness", "Deep".to_owned())
    );
    conn.execute(
        "UPDATE sessions SET thoroughness = NULL WHERE id = 'session-1'",
        (),
    )
    .unwrap();
    assert_eq!(
        sessions::get(conn, A, "session-1")
            .unwrap()
            .unwrap()
            .thoroughness,
        None
    );

    // Values are case-sensitive, exactly as schema.sql declares them.
    account_authorizations::insert(
        conn,
        &account_authorizations::Row {
            account_id: A.into(),
            signer_id: "signer-1".into(),
            role: account_authorizations::Role::Owner,
            capability: None,
            capability_cid: None,
            created_at: T,
        },
    )
    .unwrap();
    let stored: String = conn
        .query_row(
            "SELECT role FROM account_authorizations WHERE signer_id = 'signer-1'",
            (),
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(stored, "OWNER");
    conn.execute("UPDATE account_authorizations SET role = 'owner'", ())
        .unwrap();
    assert_eq!(
        unknown(account_authorizations::get(conn, A, "signer-1").map(drop)),
        ("account_authorizations", "role", "owner".to_owned())
    );
}

#[test]
fn a_bool_column_outside_0_and_1_is_a_typed_error() {
    let (_dir, store) = world();
    let raw = store.sqlite_writer().unwrap().raw();
    let conn = &*raw;
    let stored: (i64, i64) = conn
        .query_row(
            "SELECT public_read, public_chat FROM agents WHERE id = 'agent-1'",
            (),
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(stored, (1, 0), "bools are stored as 1 and 0");

    conn.execute("UPDATE agents SET public_read = 7 WHERE id = 'agent-1'", ())
        .unwrap();
    let invalid = |result: Result<()>| match result {
        Err(Error::InvalidBool {
            table,
            column,
            value,
        }) => (table, column, value),
        other => panic!("expected InvalidBool, got {other:?}"),
    };
    assert_eq!(
        invalid(agents::get(conn, A, "agent-1").map(drop)),
        ("agents", "public_read", 7)
    );
    assert_eq!(
        invalid(agents::list_by_account_id(conn, A).map(drop)),
        ("agents", "public_read", 7)
    );

    conn.execute(
        "UPDATE agent_triggers SET enabled = -1 WHERE id = 'trigger-1'",
        (),
    )
    .unwrap();
    assert_eq!(
        invalid(agent_triggers::get(conn, A, "trigger-1").map(drop)),
        ("agent_triggers", "enabled", -1)
    );
}

#[test]
fn enums_parse_from_their_stored_text_and_name_the_column_otherwise() {
    for status in runs::Status::ALL {
        assert_eq!(status.as_str().parse::<runs::Status>().unwrap(), *status);
    }
    let Err(Error::Invalid { field, reason }) = "exploded".parse::<runs::Status>() else {
        panic!("a value outside the set must be Error::Invalid");
    };
    assert_eq!(field, "status");
    assert!(
        reason.starts_with("\"exploded\" must be one of: "),
        "{reason}"
    );
    for status in runs::Status::ALL {
        assert!(reason.contains(status.as_str()), "{reason} lists {status}");
    }
    assert!(
        "Queued".parse::<runs::Status>().is_err(),
        "the stored text is case-sensitive"
    );
}
