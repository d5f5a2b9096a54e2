//! Replay: reading a session's Log back.

use super::*;

#[test]
fn replay_returns_events_after_a_seq_ascending_with_an_optional_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, _, session) = fixture(&support::backend::location(dir.path(), "db.sqlite"));
    for i in 0..10 {
        store
            .append_event(A, &session, &tool_call(&format!("c{i}")))
            .unwrap();
    }
    let after: Vec<i64> = store
        .events_after(A, &session, 7, None)
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(after, [8, 9, 10]);
    let limited: Vec<i64> = store
        .events_after(A, &session, 2, Some(3))
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(limited, [3, 4, 5]);
    assert!(store
        .events_after(A, &session, 10, None)
        .unwrap()
        .is_empty());
    let event = &store.events_after(A, &session, 0, Some(1)).unwrap()[0];
    assert_eq!(event.event_cbor.decode().unwrap(), tool_call("c0"));
    assert!(matches!(
        store.events_after(A, &session, -1, None),
        Err(Error::Invalid {
            field: "after_seq",
            ..
        })
    ));
    assert!(matches!(
        store.events_after(A, &session, 0, Some(0)),
        Err(Error::Invalid { field: "limit", .. })
    ));
}

#[test]
fn an_unknown_event_map_is_stored_and_replayed_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, _, session) = fixture(&support::backend::location(dir.path(), "db.sqlite"));
    // {"x": 1, "type": "future", "nested": {"b": [true]}} written by hand, canonically.
    let bytes = [
        &[0xa3, 0x61, b'x', 0x01][..],
        &[0x64, b't', b'y', b'p', b'e', 0x66][..],
        b"future",
        &[0x66][..],
        b"nested",
        &[0xa1, 0x61, b'b', 0x81, 0xf5][..],
    ]
    .concat();
    let event: SessionEventPayload = cbor::from_slice(&bytes).unwrap();
    assert!(matches!(event, SessionEventPayload::Other(_)));
    store.append_event(A, &session, &event).unwrap();
    let stored = &store.events_after(A, &session, 0, None).unwrap()[0];
    assert_eq!(stored.event_cbor.as_bytes(), &bytes[..]);
}
