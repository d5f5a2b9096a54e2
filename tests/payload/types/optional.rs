//! Optional fields: None is left out, as the TypeScript encoder leaves out an absent key

use super::*;

#[test]
fn absent_optionals_are_left_out_and_a_typed_null_reads_as_absent() {
    let absent = cbor::to_vec(&map([("type", s("openai"))])).unwrap();
    let null = cbor::to_vec(&map([
        ("type", s("openai")),
        ("baseUrl", Ipld::Null),
        ("secretRefs", Ipld::Null),
        ("modelDefaults", Ipld::Null),
    ]))
    .unwrap();
    let from_absent: ModelProviderConfig = cbor::from_slice(&absent).unwrap();
    let from_null: ModelProviderConfig = cbor::from_slice(&null).unwrap();
    assert_eq!(from_absent, ModelProviderConfig::new("openai"));
    assert_eq!(from_null, from_absent);
    assert_eq!(cbor::to_vec(&from_absent).unwrap(), absent);

    // The same inside a tagged variant.
    let absent = cbor::to_vec(&map([("reason", s("event")), ("waitId", s("1"))])).unwrap();
    let null = cbor::to_vec(&map([
        ("reason", s("event")),
        ("waitId", s("1")),
        ("timeoutAt", Ipld::Null),
    ]))
    .unwrap();
    for bytes in [&absent, &null] {
        let wait: RunWait = cbor::from_slice(bytes).unwrap();
        let RunWait::Event(event) = &wait else {
            panic!("{wait:?}")
        };
        assert_eq!(event.timeout_at, None);
        assert_eq!(&cbor::to_vec(&wait).unwrap(), &absent);
    }

    // Every optional absent at once.
    let absent = cbor::to_vec(&map([("state", s("ok"))])).unwrap();
    let status: McpServerStatus = cbor::from_slice(&absent).unwrap();
    assert_eq!((&status.error, status.checked_at), (&None, None));
    assert_eq!(cbor::to_vec(&status).unwrap(), absent);
}

#[test]
fn a_field_of_unknown_shape_keeps_null_apart_from_absent() {
    let null = map([
        ("type", s("tool_result")),
        ("toolCallId", s("c")),
        ("name", s("n")),
        ("output", Ipld::Null),
    ]);
    let SessionEventPayload::ToolResult(result) = survives(&null) else {
        panic!("a tool result")
    };
    assert_eq!(result.output, Some(Ipld::Null));
    let absent = map([
        ("type", s("tool_result")),
        ("toolCallId", s("c")),
        ("name", s("n")),
    ]);
    let SessionEventPayload::ToolResult(result) = survives(&absent) else {
        panic!("a tool result")
    };
    assert_eq!(result.output, None);
}

#[test]
fn missing_required_fields_and_wrong_types_are_errors() {
    let bytes = cbor::to_vec(&map([("baseUrl", s("x"))])).unwrap();
    let error = cbor::from_slice::<ModelProviderConfig>(&bytes).unwrap_err();
    assert!(matches!(error, CborError::Decode { .. }), "{error:?}");
    let bytes = cbor::to_vec(&s("not a map")).unwrap();
    assert!(cbor::from_slice::<RunWait>(&bytes).is_err());
    assert!(cbor::from_slice::<RunPlan>(&bytes).is_err());
}

#[test]
fn agent_definition_mcp_server_references() {
    let mut definition = AgentDefinition {
        mcp_servers: Some(vec!["github".into(), "linear".into()]),
        extra: OpenMap::new(),
    };
    assert!(definition.references_mcp_server("linear"));
    assert!(definition.remove_mcp_server("linear"));
    assert!(!definition.remove_mcp_server("linear"));
    assert_eq!(definition.mcp_server_names(), ["github".to_owned()]);
    assert!(AgentDefinition::default().mcp_server_names().is_empty());
}
