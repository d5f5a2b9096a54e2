//! Canonical key order

use super::*;

#[test]
fn fields_declared_out_of_order_encode_sorted_hand_written_bytes() {
    // McpServerStatus declares state, error, checkedAt. Length-first then bytewise order is
    // error (5), state (5; 'e' < 's'), checkedAt (9). Bytes, by RFC 8949 heads:
    //   a3                  map of 3 entries
    //   65 "error"  62 "no" text(5), text(2)
    //   65 "state"  62 "ok" text(5), text(2)
    //   69 "checkedAt" 05   text(9), unsigned 5
    let status = McpServerStatus {
        state: "ok".into(),
        error: Some("no".into()),
        checked_at: Some(5),
        extra: OpenMap::new(),
    };
    let mut expected = vec![0xa3, 0x65];
    expected.extend_from_slice(b"error");
    expected.push(0x62);
    expected.extend_from_slice(b"no");
    expected.push(0x65);
    expected.extend_from_slice(b"state");
    expected.push(0x62);
    expected.extend_from_slice(b"ok");
    expected.push(0x69);
    expected.extend_from_slice(b"checkedAt");
    expected.push(0x05);
    assert_eq!(round_trip(&status), expected);
}

#[test]
fn tagged_variant_hand_written_bytes() {
    // {"reason": "timer", "wakeAt": 1000}: both keys have 6 bytes, "reason" < "wakeAt".
    //   a2 | 66 "reason" 65 "timer" | 66 "wakeAt" 19 03 e8 (1000 as a two-byte unsigned)
    let wait = RunWait::Timer(RunWaitTimer {
        wake_at: 1000,
        extra: OpenMap::new(),
    });
    let mut expected = vec![0xa2, 0x66];
    expected.extend_from_slice(b"reason");
    expected.push(0x65);
    expected.extend_from_slice(b"timer");
    expected.push(0x66);
    expected.extend_from_slice(b"wakeAt");
    expected.extend_from_slice(&[0x19, 0x03, 0xe8]);
    assert_eq!(round_trip(&wait), expected);
}

#[test]
fn flattened_and_nested_maps_are_sorted_too() {
    let mut extra = odd_values();
    extra.insert("a".into(), Ipld::Integer(1));
    let config = ModelProviderConfig {
        provider_type: "openai".into(),
        model_defaults: Some(open([
            ("temperature", Ipld::Float(0.5)),
            ("model", s("gpt")),
            ("n", Ipld::Integer(1)),
        ])),
        secret_refs: Some(
            [("apiKey".to_owned(), "openai-key".to_owned())]
                .into_iter()
                .collect(),
        ),
        base_url: Some("https://api.example".into()),
        extra,
    };
    let bytes = round_trip(&config);
    // The flattened "a" (length 1) comes first, ahead of every typed field.
    assert_eq!(&bytes[1..3], &[0x61, b'a']);
}
