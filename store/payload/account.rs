//! Account- and agent-level configuration payloads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Ipld, OpenMap};

/// `model_providers.config_cbor`: an account's model provider configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelProviderConfig {
    /// The provider type (for example `openai`).
    #[serde(rename = "type")]
    pub provider_type: String,
    /// Default model settings, free-form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_defaults: Option<OpenMap>,
    /// Setting name to the name of the account secret that holds its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_refs: Option<BTreeMap<String, String>>,
    /// The provider's API base URL, when not the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

impl ModelProviderConfig {
    /// A configuration of the given provider type with nothing else set.
    pub fn new(provider_type: impl Into<String>) -> Self {
        ModelProviderConfig {
            provider_type: provider_type.into(),
            model_defaults: None,
            secret_refs: None,
            base_url: None,
            extra: OpenMap::new(),
        }
    }
}

open_map! {
    /// `secrets.metadata_cbor`: metadata of an encrypted secret. The description gives it no
    /// fields, so it is an open map.
    SecretMetadata
}

/// `agents.definition_cbor`: an agent definition.
///
/// An open map: only `mcpServers` is typed (the description names no other field), every other
/// field is kept as written in `extra` and reachable through [`AgentDefinition::get`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentDefinition {
    /// Names of the account's MCP servers (`mcp_servers.name`) the agent uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<String>>,
    /// Every other field of the definition, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

impl AgentDefinition {
    /// The MCP server names the agent references; empty when it names none.
    pub fn mcp_server_names(&self) -> &[String] {
        self.mcp_servers.as_deref().unwrap_or_default()
    }

    /// Whether the definition references the MCP server `name`.
    pub fn references_mcp_server(&self, name: &str) -> bool {
        self.mcp_server_names().iter().any(|server| server == name)
    }

    /// Removes every reference to the MCP server `name` (as deleting a server must); returns
    /// whether there was one.
    pub fn remove_mcp_server(&mut self, name: &str) -> bool {
        let Some(servers) = self.mcp_servers.as_mut() else {
            return false;
        };
        let before = servers.len();
        servers.retain(|server| server != name);
        servers.len() != before
    }

    /// The untyped field `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Ipld> {
        self.extra.get(key)
    }
}

/// `sessions.model_override_cbor`: the session's quick-switched provider and model, when they
/// differ from the agent's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelOverride {
    /// The model provider's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}
