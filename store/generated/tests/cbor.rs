//! CBOR columns: what the generated helpers store is canonical DAG-CBOR.

use super::*;

#[test]
fn cbor_columns_round_trip_canonical_dag_cbor() {
    let (_dir, store) = world();
    let raw = store.sqlite_writer().unwrap().raw();
    let conn = &*raw;

    // sessions.plan_cbor: RunPlan. Keys sorted length-first, then bytewise within a length:
    // plan {"steps"(5), "title"(5), "settledAt"(9)} and step {"id"(2), "label"(5), "status"(6),
    // "resolvedBy"(10)}: neither declaration order nor plain bytewise order.
    let value = RunPlan {
        title: Some("t".into()),
        steps: vec![RunPlanStep {
            id: "s1".into(),
            label: "go".into(),
            status: RunPlanStepStatus::Done,
            resolved_by: None,
            extra: OpenMap::new(),
        }],
        settled_at: None,
        extra: OpenMap::new(),
    };
    let expected: Vec<u8> = [
        &b"\xa2"[..],          // map(2): absent optionals are left out
        b"\x65steps",          // text(5) "steps"
        b"\x81",               //   array(1)
        b"\xa3",               //     map(3)
        b"\x62id\x62s1",       //       "id": "s1"
        b"\x65label\x62go",    //       "label": "go"
        b"\x66status\x64done", //       "status": "done"
        b"\x65title\x61t",     // "title": "t"
    ]
    .concat();
    let row = sessions::Row {
        plan_cbor: Some(Cbor::encode(&value).unwrap()),
        ..session("session-2", A, "agent-1", None)
    };
    sessions::insert(conn, &row).unwrap();
    let raw: Vec<u8> = conn
        .query_row(
            "SELECT plan_cbor FROM sessions WHERE id = 'session-2'",
            (),
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(raw, expected, "stored bytes");
    let back = sessions::get(conn, A, "session-2").unwrap().unwrap();
    let plan_cbor = back.plan_cbor.expect("plan_cbor is set");
    assert_eq!(plan_cbor.as_bytes(), expected.as_slice());
    assert_eq!(plan_cbor.decode().unwrap(), value);

    // model_providers.config_cbor: ModelProviderConfig, with an unknown field kept in `extra`.
    // Keys by length: "z"(1), "type"(4), "baseUrl"(7), "secretRefs"(10), "modelDefaults"(13);
    // declared as type, modelDefaults, secretRefs, baseUrl, with the flattened "z" last.
    let config = ModelProviderConfig {
        base_url: Some("http://h".into()),
        secret_refs: Some([("apiKey".to_owned(), "key1".to_owned())].into()),
        extra: open([("z", Ipld::Integer(1))]),
        ..ModelProviderConfig::new("openai")
    };
    let expected: Vec<u8> = [
        &b"\xa4"[..],               // map(4): the absent modelDefaults is left out
        b"\x61z\x01",               // "z": 1
        b"\x64type\x66openai",      // "type": "openai"
        b"\x67baseUrl\x68http://h", // "baseUrl": "http://h"
        b"\x6asecretRefs\xa1",      // "secretRefs": map(1)
        b"\x66apiKey\x64key1",      //   "apiKey": "key1"
    ]
    .concat();
    let provider = model_providers::Row {
        id: "provider-1".into(),
        account_id: A.into(),
        name: "openai-main".into(),
        r#type: "openai".into(),
        config_cbor: Cbor::encode(&config).unwrap(),
        created_at: T,
        updated_at: T,
    };
    model_providers::insert(conn, &provider).unwrap();
    let raw: Vec<u8> = conn
        .query_row(
            "SELECT config_cbor FROM model_providers WHERE id = 'provider-1'",
            (),
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(raw, expected, "stored bytes");
    let back = model_providers::get_by_name(conn, A, "openai-main")
        .unwrap()
        .unwrap();
    assert_eq!(back.config_cbor.as_bytes(), expected.as_slice());
    assert_eq!(back.config_cbor.decode().unwrap(), config);
    assert_eq!(back, provider);

    // Reading a row never fails because of its payload: non-canonical bytes (the same map with
    // "type" after "baseUrl") come back as stored, and only decode() refuses them.
    let unsorted: Vec<u8> = [
        &b"\xa2"[..],
        b"\x67baseUrl\x68http://h",
        b"\x64type\x66openai",
    ]
    .concat();
    conn.execute(
        "UPDATE model_providers SET config_cbor = ?1 WHERE id = 'provider-1'",
        [&unsorted],
    )
    .unwrap();
    let back = model_providers::get(conn, A, "provider-1")
        .unwrap()
        .unwrap();
    assert_eq!(back.config_cbor.as_bytes(), unsorted.as_slice());
    assert!(
        matches!(
            back.config_cbor.decode(),
            Err(CborError::NonCanonical { .. })
        ),
        "{:?}",
        back.config_cbor.decode()
    );

    // A CBOR column holding something other than a BLOB is an SQLite type error, not a panic.
    conn.execute(
        "UPDATE model_providers SET config_cbor = 'text' WHERE id = 'provider-1'",
        (),
    )
    .unwrap();
    assert!(matches!(
        model_providers::get(conn, A, "provider-1"),
        Err(Error::Sqlite(_))
    ));
}
