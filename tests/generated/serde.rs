//! The `serde` feature: rows read from a store round-trip through JSON, enums are their stored
//! text, and a page cursor travels as its opaque token.

#![cfg(feature = "serde")]

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use seed_agents_store::agents::NewAgent;
use seed_agents_store::paging::{Cursor, Page};
use seed_agents_store::payload::{AgentDefinition, Ipld};
use seed_agents_store::runs::NewRun;
use seed_agents_store::schema::{agents, runs};
use seed_agents_store::Store;

const A: &str = "acct-a";

/// `value` through JSON text and back.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: &T) -> Value {
    let text = serde_json::to_string(value).expect("serializes");
    let back: T = serde_json::from_str(&text).expect("deserializes what it serialized");
    assert_eq!(&back, value, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn rows_read_from_a_store_round_trip_with_their_column_names() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("db.sqlite")).unwrap();
    let agent = store
        .create_agent(
            A,
            &NewAgent {
                definition: AgentDefinition {
                    mcp_servers: None,
                    extra: [("model".to_owned(), Ipld::String("model-1".into()))].into(),
                },
                state_dir: "/var/lib/seed/agents/a".into(),
                public_read: true,
                public_chat: false,
            },
        )
        .unwrap();
    let read = agents::get(&store.conn().unwrap(), A, &agent.id)
        .unwrap()
        .unwrap();
    let json = round_trip(&read);
    let object = json.as_object().unwrap();
    // The SQL column names, in full: no camelCase, nothing skipped.
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    let mut columns = agents::COLUMNS.to_vec();
    columns.sort_unstable();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, columns);
    assert_eq!(
        object["status"],
        json!("idle"),
        "an enum is its stored text"
    );
    assert_eq!(object["public_read"], json!(true));
    assert_eq!(object["activity_at"], Value::Null);
    // A payload is its stored bytes, exactly.
    let bytes: Vec<u8> = serde_json::from_value(object["definition_cbor"].clone()).unwrap();
    assert_eq!(bytes, read.definition_cbor.as_bytes());

    let run = store
        .enqueue_run(&NewRun::new(
            A,
            runs::Kind::Workflow,
            runs::Origin::System,
            "nightly",
        ))
        .unwrap();
    let read = runs::get(&store.conn().unwrap(), A, &run.id)
        .unwrap()
        .unwrap();
    let json = round_trip(&read);
    assert_eq!(json["status"], json!(read.status.as_str()));
    assert_eq!(json["kind"], json!("workflow"));
}

#[test]
fn an_enum_is_its_sql_text_and_other_text_is_refused() {
    for status in runs::Status::ALL {
        assert_eq!(
            serde_json::to_value(status).unwrap(),
            json!(status.as_str())
        );
        let back: runs::Status = serde_json::from_value(json!(status.as_str())).unwrap();
        assert_eq!(back, *status);
    }
    let error = serde_json::from_value::<runs::Status>(json!("exploded")).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("exploded"), "{message}");
    for status in runs::Status::ALL {
        assert!(
            message.contains(status.as_str()),
            "names every value: {message}"
        );
    }
    // Not the Rust variant's name either: only the stored text.
    assert!(serde_json::from_value::<runs::Status>(json!("Queued")).is_err());
    assert!(serde_json::from_value::<runs::Status>(json!(1)).is_err());
}

#[test]
fn a_cursor_is_its_token_string() {
    let cursor = Cursor {
        updated_at: 1_764_000_000_000,
        id: "agent:7/é".into(),
    };
    let json = serde_json::to_value(&cursor).unwrap();
    assert_eq!(json, Value::String(cursor.to_token()));
    assert_eq!(round_trip(&cursor), json);

    for garbage in [
        json!("not a token"),
        json!(""),
        json!(42),
        json!({"id": "a"}),
    ] {
        assert!(
            serde_json::from_value::<Cursor>(garbage.clone()).is_err(),
            "{garbage}"
        );
    }
    let error = serde_json::from_value::<Cursor>(json!("uAAAA")).unwrap_err();
    assert!(error.to_string().contains("page token"), "{error}");
}

#[test]
fn a_page_carries_its_next_cursor_as_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("db.sqlite")).unwrap();
    for i in 0..3 {
        store
            .create_agent(
                A,
                &NewAgent {
                    definition: AgentDefinition::default(),
                    state_dir: format!("/agents/{i}"),
                    public_read: false,
                    public_chat: false,
                },
            )
            .unwrap();
    }
    let page: Page<agents::Row> = store.agents(A, Some(2), None).unwrap();
    let next = page.next.clone().expect("a third agent is left");
    let json = round_trip(&page);
    assert_eq!(json["next"], json!(next.to_token()));
    assert_eq!(json["items"].as_array().unwrap().len(), 2);
    let last: Page<agents::Row> = store.agents(A, Some(2), Some(&next)).unwrap();
    assert_eq!(round_trip(&last)["next"], Value::Null);
}
