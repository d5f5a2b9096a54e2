-- seed-agents-store: the fresh-install baseline at schema version 29.
--
-- A comment directly above a table or column documents it (a comment at the end of a line documents
-- what that line declares). Lines starting with `@` are annotations that type a column beyond SQLite
-- affinity:
--   - `@enum(a, b, c)`: a TEXT column holding one of a closed set of values;
--   - `@bool`: an INTEGER column holding 0 or 1;
--   - `@timestamp`: an INTEGER column holding epoch milliseconds;
--   - `@cbor(Type)`: a BLOB column holding canonical DAG-CBOR of the payload type `Type`.
-- This file must stay equivalent to migrations/0000_genesis.sql plus every migration: the build fails
-- otherwise.
-- Every table, column and index carries a doc comment saying what it holds (an annotation alone
-- is not one): the build warns about a missing one, and fails on it in CI (CI=true or
-- SEED_AGENTS_STRICT_DOCS=1).

-- Server-local configuration blobs. Holds `schema_migration_version` (the schema version as TEXT
-- digits) and, while the database provider keeps them, the 32-byte AES-GCM keys of encrypted
-- secrets: `secret_encryption_key_v<id>` for key `<id>` of `secret_keys` (`..._v1` the original).
CREATE TABLE server_config (
    -- The configuration key.
    key TEXT PRIMARY KEY,
    -- The value; its encoding depends on the key.
    value BLOB NOT NULL
) WITHOUT ROWID;

-- The keys that encrypt secrets (`secrets`, `webhook_trigger_credentials`), never their bytes. Every
-- encrypted row names the key that decrypts it; the newest key not retired encrypts new values,
-- and a key is retired once no row names it.
CREATE TABLE secret_keys (
    -- The key's number, never reused; 1 is the original `secret_encryption_key_v1`.
    id INTEGER PRIMARY KEY NOT NULL,
    -- Where the key's bytes live: `database` (`server_config.secret_encryption_key_v<id>`), an
    -- environment variable, a file or an external command.
    -- @enum(database, env, file, command)
    provider TEXT NOT NULL,
    -- Lowercase hex of the first 16 bytes of SHA-256 over a fixed label and the key, which tells
    -- a provider's keys apart without holding them; NULL for the key migration 0032 registered
    -- until the store next writes with it.
    fingerprint TEXT UNIQUE,
    -- When the key was registered.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When the last row encrypted under it was re-encrypted under a newer key; NULL while in use.
    -- @timestamp
    retired_at INTEGER
);

-- Seed account principals known to this server, created or touched lazily as account-owned rows
-- are written.
CREATE TABLE accounts (
    -- The Seed account principal.
    id TEXT PRIMARY KEY,
    -- When the account row was created (the first account-owned write that named it).
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When an account-owned write last touched the row.
    -- @timestamp
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Local delegated signers of an account, consulted by the authorized-signer check. An AGENT row is
-- written when an envelope's capability delegation verifies.
CREATE TABLE account_authorizations (
    -- The account the signer may act for; references `accounts.id`.
    account_id TEXT NOT NULL,
    -- The exact cryptographic signer allowed to act for the account.
    signer_id TEXT NOT NULL,
    -- The signer's role: an `AGENT` row is written when an envelope's capability delegation
    -- verifies, which is how a web or device key acts for a vault account.
    -- @enum(OWNER, AGENT)
    role TEXT NOT NULL,
    -- The capability blob that proves a delegation, when there is one.
    capability TEXT,
    -- The CID of the capability blob.
    capability_cid TEXT,
    -- When the authorization was recorded.
    -- @timestamp
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, signer_id),
    FOREIGN KEY (account_id) REFERENCES accounts (id)
) WITHOUT ROWID;

-- Account-scoped model provider configuration; (account_id, name) is unique.
CREATE TABLE model_providers (
    -- The provider configuration's id.
    id TEXT PRIMARY KEY,
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The provider's name, unique within the account.
    name TEXT NOT NULL,
    -- The provider type (for example `openai`).
    type TEXT NOT NULL,
    -- The provider configuration: `type`, and optional `modelDefaults`, `secretRefs` and `baseUrl`.
    -- @cbor(ModelProviderConfig)
    config_cbor BLOB NOT NULL,
    -- When the provider was created.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When the provider was last changed.
    -- @timestamp
    updated_at INTEGER NOT NULL,
    UNIQUE (account_id, name)
) WITHOUT ROWID;

-- Encrypted account-scoped secret values (API keys, OAuth blobs, signing-identity seeds). Never
-- returned in plaintext through the API.
CREATE TABLE secrets (
    -- The secret's id.
    id TEXT PRIMARY KEY,
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The secret's name, unique within the account.
    name TEXT NOT NULL,
    -- AES-256-GCM: 12-byte nonce || encrypted bytes || 16-byte tag, under the key `key_id`.
    ciphertext BLOB NOT NULL,
    -- Metadata kept next to the ciphertext, outside the encryption; NULL when there is none.
    -- @cbor(SecretMetadata)
    metadata_cbor BLOB,
    -- When the secret was created.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When the secret was last changed (set), which is when its value was last written.
    -- @timestamp
    updated_at INTEGER NOT NULL,
    -- The key that encrypted `ciphertext`; references `secret_keys.id`.
    key_id INTEGER NOT NULL REFERENCES secret_keys (id),
    -- When a key rotation last re-encrypted the value (which leaves `updated_at` alone); NULL
    -- when none has.
    -- @timestamp
    rotated_at INTEGER,
    UNIQUE (account_id, name)
) WITHOUT ROWID;

-- The secrets a rotation has still to re-encrypt: those under a key older than the newest.
CREATE INDEX secrets_by_key_id ON secrets (key_id);

-- Agent definitions, their on-disk state directory and the activity rollup that unread
-- indicators read.
CREATE TABLE agents (
    -- The agent's id.
    id TEXT PRIMARY KEY,
    -- The owning account; all agent content is stored under it.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The agent definition, an open map whose unknown fields are kept; its `mcpServers` names the
    -- account's MCP servers the agent uses.
    -- @cbor(AgentDefinition)
    definition_cbor BLOB NOT NULL,
    -- The per-agent directory under the service data dir (its memory/ is the agent's private
    -- memory); removed when the agent is deleted.
    state_dir TEXT NOT NULL,
    -- The agent's coarse status; most runtime work, and its state, lives at the session and run
    -- level.
    -- @enum(idle, running, stopped, error)
    status TEXT NOT NULL,
    -- Whether any signed account may read the agent.
    -- @bool
    public_read INTEGER NOT NULL DEFAULT 0,
    -- Whether any signed account may chat with the agent.
    -- @bool
    public_chat INTEGER NOT NULL DEFAULT 0,
    -- Time of the latest transcript event across the agent's sessions; NULL until the first event.
    -- @timestamp
    activity_at INTEGER,
    -- The type of that latest event (message, tool_call, ...).
    activity_kind TEXT,
    -- Time of the latest message from a person, a trigger or the agent in a top-level session.
    -- @timestamp
    message_at INTEGER,
    -- Who sent that message (user, agent, trigger).
    message_from TEXT,
    -- The session that message belongs to (a `sessions.id`, no foreign key).
    activity_session_id TEXT,
    -- When the agent was created.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When the agent was last changed.
    -- @timestamp
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- An account's agents, most recently updated first (the agents list).
CREATE INDEX agents_by_account ON agents (account_id, updated_at DESC);

-- Pending invitations and accepted agent-level access grants. The agent's owner stays on
-- agents.account_id; account_id here is the invited or collaborating account.
CREATE TABLE agent_collaborators (
    -- The shared agent; references `agents.id`.
    agent_id TEXT NOT NULL REFERENCES agents (id),
    -- The invited or collaborating Seed account.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The access granted: reader or writer.
    -- @enum(reader, writer)
    role TEXT NOT NULL,
    -- `pending` for an invitation, `accepted` for a grant.
    -- @enum(pending, accepted)
    status TEXT NOT NULL,
    -- When the invitation was created.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When the row last changed.
    -- @timestamp
    updated_at INTEGER NOT NULL,
    -- Acceptance time; NULL while pending.
    -- @timestamp
    accepted_at INTEGER,
    PRIMARY KEY (agent_id, account_id)
) WITHOUT ROWID;

-- The agents an account is invited to or collaborates on, by status, most recently updated first.
CREATE INDEX agent_collaborators_by_account ON agent_collaborators (account_id, status, updated_at DESC);

-- Saved agent-scoped trigger definitions: activity, schedule, webhook and run-completed triggers.
CREATE TABLE agent_triggers (
    -- The trigger's id.
    id TEXT PRIMARY KEY,
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The agent the trigger belongs to; references `agents.id`.
    agent_id TEXT NOT NULL REFERENCES agents (id),
    -- The trigger's name; the agent writes its own triggers at `~/triggers/<name>`.
    name TEXT NOT NULL,
    -- Whether the trigger is active; the agent's own writes set it as written, and a trigger
    -- retired by combination is disabled.
    -- @bool
    enabled INTEGER NOT NULL,
    -- What the trigger listens to, schedules included.
    -- @cbor(AgentTriggerSource)
    source_cbor BLOB NOT NULL,
    -- The prompt a firing starts with.
    prompt TEXT NOT NULL,
    -- What a firing does; NULL means start a new thread.
    -- @cbor(TriggerContinuation)
    continuation_cbor BLOB,
    -- Vestigial: nothing reads or writes it.
    cooldown_ms INTEGER,
    -- The surviving trigger when this one was retired by combination (then disabled and immutable).
    merged_into TEXT REFERENCES agent_triggers (id),
    -- When the trigger was created.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When the trigger was last changed.
    -- @timestamp
    updated_at INTEGER NOT NULL,
    -- When the trigger was last checked; NULL until then.
    -- @timestamp
    last_checked_at INTEGER,
    -- When the trigger last fired; NULL until it has.
    -- @timestamp
    last_fired_at INTEGER,
    -- The last error recorded for the trigger, if any.
    last_error TEXT
) WITHOUT ROWID;

-- An agent's triggers, most recently updated first.
CREATE INDEX agent_triggers_by_agent ON agent_triggers (agent_id, updated_at DESC);
-- The triggers merged into a trigger: deleting a trigger checks them without a scan.
CREATE INDEX agent_triggers_by_merged_into ON agent_triggers (merged_into) WHERE merged_into IS NOT NULL;

-- Activity admission claims: (account_id, trigger_id, activity_key) admits an activity event once
-- per trigger, and survives combination into another trigger.
CREATE TABLE trigger_event_claims (
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The trigger the event was admitted for; references `agent_triggers.id`. Combination imports
    -- both triggers' claims into the survivor.
    trigger_id TEXT NOT NULL REFERENCES agent_triggers (id),
    -- The activity event's stable key.
    activity_key TEXT NOT NULL,
    -- The firing the claim admitted (a `trigger_firings.id`, no foreign key).
    firing_id TEXT,
    -- When the event was admitted (claims seeded by migration 26 carry their firing's time).
    -- @timestamp
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, trigger_id, activity_key)
) WITHOUT ROWID;

-- A trigger's event claims: deleting a trigger checks them without a scan.
CREATE INDEX trigger_event_claims_by_trigger ON trigger_event_claims (trigger_id);

-- Chat-like sessions. status is a derived mirror of the runs table, kept for client compatibility.
CREATE TABLE sessions (
    -- The session's id.
    id TEXT PRIMARY KEY,
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The agent the session talks to; references `agents.id`.
    agent_id TEXT NOT NULL REFERENCES agents (id),
    -- The session's title; `title_source` says who wrote it.
    title TEXT,
    -- Who wrote the title; a user title is never overwritten by an automatic path.
    -- @enum(system, agent, user)
    title_source TEXT NOT NULL DEFAULT 'system',
    -- A mirror derived from the runs: streaming iff a non-terminal agent run references the
    -- session, error when its latest run failed, idle otherwise (a canceled run mirrors to idle).
    -- @enum(idle, streaming, stopped, error)
    status TEXT NOT NULL,
    -- The session that spawned this one; NULL for a top-level session.
    parent_session_id TEXT REFERENCES sessions (id),
    -- The run this session is the transcript of, for sessions created as run children (a
    -- `runs.id`, no foreign key).
    run_id TEXT,
    -- The live checklist written by the plan verb.
    -- @cbor(RunPlan)
    plan_cbor BLOB,
    -- The quick-switched provider and model, when it differs from the agent's.
    -- @cbor(ModelOverride)
    model_override_cbor BLOB,
    -- The live status the agent maintains with the status verb.
    description TEXT,
    -- The delegation preset override; NULL means the agent's default.
    -- @enum(quick, normal, deep)
    thoroughness TEXT,
    -- Time of the latest message from a person, a trigger or the agent (top-level sessions only).
    -- @timestamp
    message_at INTEGER,
    -- Who sent that message (user, agent, trigger).
    message_from TEXT,
    -- When the session was created.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When the session was last changed.
    -- @timestamp
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- An agent's sessions, most recently updated first (session lists).
CREATE INDEX sessions_by_agent ON sessions (agent_id, updated_at DESC);
-- A session's child sessions in creation order.
CREATE INDEX sessions_by_parent ON sessions (parent_session_id, created_at);

-- Every execution as a durable row, forming a tree through parent_run_id; also the dispatch queue
-- (runs_dispatch is the queue).
CREATE TABLE runs (
    -- The run's id.
    id TEXT PRIMARY KEY,
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The tree's root run (a `runs.id`, no foreign key; its own id for a root run), denormalized
    -- so one subscription covers a whole tree.
    root_run_id TEXT NOT NULL,
    -- The run that spawned this one; references `runs.id`. NULL for a root run.
    parent_run_id TEXT REFERENCES runs (id),
    -- The parent's delegate call that spawned this run.
    parent_tool_call_id TEXT,
    -- The run this one continues (continue-as-new; a `runs.id`, no foreign key); the two rows are
    -- one piece of work.
    continued_from_run_id TEXT,
    -- Distance from the root.
    depth INTEGER NOT NULL DEFAULT 0,
    -- A model turn with a transcript session, or a script child.
    -- @enum(agent, workflow)
    kind TEXT NOT NULL,
    -- The run's agent; references `agents.id`.
    agent_id TEXT REFERENCES agents (id),
    -- The transcript session of an agent run; NULL for script runs.
    session_id TEXT REFERENCES sessions (id),
    -- The trigger firing that started the run; references `trigger_firings.id`. Nulled when the
    -- trigger is deleted, before its firings are.
    trigger_firing_id TEXT REFERENCES trigger_firings (id),
    -- Who enqueued the run (system is declared but nothing enqueues it).
    -- @enum(user, trigger, agent, workflow, system)
    origin TEXT NOT NULL,
    -- The run's display title.
    title TEXT,
    -- The run's model, if any.
    model TEXT,
    -- The sha256 digest of a script run's module.
    source_cid TEXT,
    -- A script run's JS module.
    source_text TEXT,
    -- The run's input.
    -- @cbor(RunInput)
    input_cbor BLOB NOT NULL,
    -- The run's output; may carry `unmetObligations` (what the run had committed to and not
    -- delivered when it ended).
    -- @cbor(RunOutput)
    output_cbor BLOB,
    -- Why the run failed: `code` and `message`, with optional detail (`retryable`, `httpStatus`,
    -- `stack`, the journaled `tool` and `callSeq`, `unmetObligations`).
    -- @cbor(RunErrorInfo)
    error_cbor BLOB,
    -- Where the run is in its life; succeeded, failed and canceled are terminal.
    -- @enum(queued, claimed, running, waiting, succeeded, failed, canceled)
    status TEXT NOT NULL,
    -- Why a parked run waits: children, timer, event or budget-pause.
    -- @cbor(RunWait)
    wait_cbor BLOB,
    -- How many times the run has been claimed: each claim adds one.
    attempt INTEGER NOT NULL DEFAULT 0,
    -- How many attempts a retryable failure may use (default 1: no retry).
    max_attempts INTEGER NOT NULL DEFAULT 1,
    -- Backoff or timer wake: the run is not claimed before this time.
    -- @timestamp
    not_before INTEGER,
    -- Which queue dispatches the run.
    -- @enum(interactive, background)
    queue TEXT NOT NULL DEFAULT 'background',
    -- The queue instance that claimed the run.
    lease_owner TEXT,
    -- Written on claim (sixty seconds out) and cleared on park or requeue; recorded but never read,
    -- because the boot sweep requeues every run the previous process left claimed or running.
    -- @timestamp
    lease_expires_at INTEGER,
    -- The run's budget, if it has one; a run that stops before spending more parks with a
    -- budget-pause wait.
    -- @cbor(RunBudget)
    budget_cbor BLOB,
    -- Usage persisted per turn boundary, children rolled up on finalize.
    -- @cbor(RunUsage)
    usage_cbor BLOB,
    -- A workflow's ctx.step/ctx.plan snapshot, or the settled copy of its session's plan.
    -- @cbor(RunPlan)
    plan_cbor BLOB,
    -- When the run was enqueued.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When the run started running; NULL until then.
    -- @timestamp
    started_at INTEGER,
    -- When the run reached a terminal status; NULL until then.
    -- @timestamp
    finished_at INTEGER,
    -- When the row last changed.
    -- @timestamp
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- The queue: claims walk it by status, queue, not_before, created_at.
CREATE INDEX runs_dispatch ON runs (status, queue, not_before, created_at);
-- A run tree in creation order, for subscriptions to its root.
CREATE INDEX runs_by_root ON runs (root_run_id, created_at);
-- A run's children.
CREATE INDEX runs_by_parent ON runs (parent_run_id);
-- A delegate call's child run: a transcript's delegate row finds its child while the child works.
CREATE INDEX runs_by_parent_tool_call ON runs (parent_run_id, parent_tool_call_id);
-- Per-session run lookups, newest first: the session status mirror, and the claim that serializes
-- turns per session.
CREATE INDEX runs_by_session ON runs (session_id, created_at DESC);
-- At most one live (claimed or running) agent run per session: a session runs one model turn at
-- a time. The claim skips a session with a live run; this makes the database refuse a second
-- one too, so that claimers on several nodes claim in one statement each.
CREATE UNIQUE INDEX runs_live_agent_by_session ON runs (session_id)
    WHERE kind = 'agent' AND status IN ('claimed', 'running');
-- An account's runs, newest first.
CREATE INDEX runs_by_account ON runs (account_id, created_at DESC);
-- The runs a trigger firing started: deleting a firing checks them without a scan.
CREATE INDEX runs_by_trigger_firing ON runs (trigger_firing_id) WHERE trigger_firing_id IS NOT NULL;
-- Ended runs by when they ended: pruning walks the oldest first without a scan.
CREATE INDEX runs_by_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;

-- One row per outstanding ctx.waitForEvent; deleted the moment it is delivered, times out or its
-- run dies.
CREATE TABLE run_event_waits (
    -- The waiting run; references `runs.id`.
    run_id TEXT NOT NULL REFERENCES runs (id),
    -- The wait's id within its run.
    wait_id TEXT NOT NULL,
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- A {signal} or an {eventType, resource, author} activity match.
    -- @cbor(WaitMatch)
    match_cbor BLOB NOT NULL,
    -- When the wait times out; NULL when it has no timeout.
    -- @timestamp
    timeout_at INTEGER,
    -- When the script registered the wait.
    -- @timestamp
    created_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, wait_id)
) WITHOUT ROWID;

-- An account's outstanding waits in creation order.
CREATE INDEX run_event_waits_by_account ON run_event_waits (account_id, created_at);
-- The timeout sweep finds expired waits without a scan.
CREATE INDEX run_event_waits_by_timeout ON run_event_waits (timeout_at);

-- Remote MCP servers an account has connected; (account_id, name) is unique.
CREATE TABLE mcp_servers (
    -- The server's id.
    id TEXT PRIMARY KEY,
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The server's name, unique within the account. Agents reference servers by it
    -- (`definition.mcpServers`), and its projected tools are named `<server>__<tool>`.
    name TEXT NOT NULL,
    -- How to reach the server: `url`, and optional `transport`, `headers` and `secretRefs` (secret
    -- header values live in `secrets` named `mcp-<name>-<header>`).
    -- @cbor(McpServerConfig)
    config_cbor BLOB NOT NULL,
    -- The tools of the last successful discovery, kept across a failed refresh.
    -- @cbor(McpTools)
    tools_cbor BLOB,
    -- The server's last known `state`, with optional `error` and `checkedAt`.
    -- @cbor(McpServerStatus)
    status_cbor BLOB,
    -- Whether the server is enabled; the tool documents projected from it are deleted while it is
    -- disabled.
    -- @bool
    enabled INTEGER NOT NULL DEFAULT 1,
    -- When the server was connected.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When the server's row last changed.
    -- @timestamp
    updated_at INTEGER NOT NULL,
    UNIQUE (account_id, name)
) WITHOUT ROWID;

-- Every tool an agent holds, as a content-addressed tool document.
CREATE TABLE tool_documents (
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The agent holding the tool; references `agents.id`.
    agent_id TEXT NOT NULL REFERENCES agents (id),
    -- The tool's name, unique per agent. Authored names match `^[a-z][a-z0-9_-]{1,63}$`; an mcp
    -- tool is named `<server>__<tool>`.
    name TEXT NOT NULL,
    -- builtin (shipped, bound to a runtime executor), lambda (authored source) or mcp (projected
    -- from an MCP server).
    -- @enum(builtin, lambda, mcp)
    kind TEXT NOT NULL,
    -- CIDv1 (dag-cbor, sha2-256) of exactly doc_cbor: the tool's version.
    cid TEXT NOT NULL,
    -- The tool document: `name`, `kind`, `summary`, `description`, `input`, and optional `output`,
    -- `source`, `runtime`, `binding`.
    -- @cbor(ToolDocument)
    doc_cbor BLOB NOT NULL,
    -- Whether the tool is enabled.
    -- @bool
    enabled INTEGER NOT NULL DEFAULT 1,
    -- When the tool document was first stored.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When the tool document was last rewritten.
    -- @timestamp
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, agent_id, name)
) WITHOUT ROWID;

-- An agent's tools, most recently updated first (tool listings).
CREATE INDEX tool_documents_by_agent ON tool_documents (account_id, agent_id, updated_at DESC);

-- Hypermedia write drafts: content, signing identity and the targets the draft publishes against.
CREATE TABLE agent_drafts (
    -- The draft's id.
    id TEXT PRIMARY KEY,
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The agent the draft belongs to, if any; references `agents.id`.
    agent_id TEXT REFERENCES agents (id),
    -- The secret holding the signing identity.
    signer_secret_name TEXT,
    -- The draft's title.
    title TEXT,
    -- The encoding of content_cbor (for example `markdown`).
    content_format TEXT NOT NULL,
    -- The draft's content, in the encoding `content_format` names.
    -- @cbor(DraftContent)
    content_cbor BLOB NOT NULL,
    -- The draft's optional document metadata.
    -- @cbor(DraftMetadata)
    metadata_cbor BLOB,
    -- The edit target the draft publishes against, if any.
    edit_target TEXT,
    -- The location target the draft publishes against, if any.
    location_target TEXT,
    -- The path name given for publishing, if any.
    path_name TEXT,
    -- The visibility given for publishing, if any.
    visibility TEXT,
    -- `draft` until published, then `published`.
    -- @enum(draft, published)
    status TEXT NOT NULL,
    -- When the draft was created.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When the draft was last changed.
    -- @timestamp
    updated_at INTEGER NOT NULL,
    -- When the draft was published; NULL while it is a draft.
    -- @timestamp
    published_at INTEGER,
    -- The id of what the publication produced, once published.
    published_id TEXT,
    -- The version the publication produced, once published.
    published_version TEXT
) WITHOUT ROWID;

-- An account's drafts, most recently updated first.
CREATE INDEX agent_drafts_account_updated_idx ON agent_drafts (account_id, updated_at DESC);
-- An agent's drafts within its account, most recently updated first.
CREATE INDEX agent_drafts_agent_updated_idx ON agent_drafts (account_id, agent_id, updated_at DESC);
-- An account's drafts by status.
CREATE INDEX agent_drafts_status_idx ON agent_drafts (account_id, status);

-- Append-only journal of script runs that makes replay-from-top resume safe; seq is the count of
-- the run's entries plus one at append.
CREATE TABLE run_journal (
    -- The script run; references `runs.id`.
    run_id TEXT NOT NULL REFERENCES runs (id),
    -- The entry's position in the run's journal: the count of the run's entries plus one at append.
    seq INTEGER NOT NULL,
    -- One journal entry (call, result, timer, fired, wait, event, now, log, step or plan). Its
    -- `callSeq` groups the entries of one ctx call; a group's first entry carries the replay key.
    -- @cbor(WorkflowJournalEntry)
    entry_cbor BLOB NOT NULL,
    -- When the entry was appended.
    -- @timestamp
    created_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- One row per continue_session edge. A successor has exactly one row, and (predecessor, tool call)
-- is unique so a retried call cannot create a second successor. Session ids carry no foreign key:
-- the history outlives session deletion.
CREATE TABLE session_continuations (
    -- The edge's id.
    id TEXT PRIMARY KEY,
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The session that called continue_session (a session id, no foreign key).
    predecessor_session_id TEXT NOT NULL,
    -- The session the call created (a session id, no foreign key); unique, so a successor has
    -- exactly one row.
    successor_session_id TEXT NOT NULL,
    -- The first session of the chain (a session id, no foreign key).
    origin_session_id TEXT NOT NULL,
    -- The continue_session call that created the edge.
    tool_call_id TEXT NOT NULL,
    -- The initiating event, if one was recorded.
    initiating_event_id TEXT,
    -- The reason given for the continuation, if any.
    reason TEXT,
    -- The successor's exact starting point.
    -- @cbor(ContinuationManifest)
    manifest_cbor BLOB NOT NULL,
    -- When the edge was created.
    -- @timestamp
    created_at INTEGER NOT NULL,
    UNIQUE (successor_session_id),
    UNIQUE (predecessor_session_id, tool_call_id)
) WITHOUT ROWID;

-- A continuation chain: the edges from one origin session in creation order.
CREATE INDEX session_continuations_by_origin ON session_continuations (origin_session_id, created_at);

-- One secret per webhook trigger, created with the trigger.
CREATE TABLE webhook_trigger_credentials (
    -- The webhook trigger; references `agent_triggers.id`, one row per trigger.
    trigger_id TEXT PRIMARY KEY REFERENCES agent_triggers (id),
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The hash delivery requests are checked against.
    secret_hash TEXT NOT NULL,
    -- The secret encrypted with the key `key_id` (as `secrets.ciphertext`), returned to editors.
    secret_ciphertext BLOB NOT NULL,
    -- When the secret was created, with the trigger.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- When the row last changed.
    -- @timestamp
    updated_at INTEGER NOT NULL,
    -- The key that encrypted `secret_ciphertext`; references `secret_keys.id`.
    key_id INTEGER NOT NULL REFERENCES secret_keys (id),
    -- When a key rotation last re-encrypted the secret; NULL when none has.
    -- @timestamp
    rotated_at INTEGER
) WITHOUT ROWID;

-- The webhook secrets a rotation has still to re-encrypt.
CREATE INDEX webhook_trigger_credentials_by_key_id ON webhook_trigger_credentials (key_id);

-- Events or occurrences that matched a trigger; (account_id, trigger_id, activity_key) is unique,
-- which makes firing exactly-once.
CREATE TABLE trigger_firings (
    -- The firing's id.
    id TEXT PRIMARY KEY,
    -- The owning account; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The trigger's agent; references `agents.id`.
    agent_id TEXT NOT NULL REFERENCES agents (id),
    -- The trigger that matched; references `agent_triggers.id`. A firing keeps its trigger when
    -- triggers are combined.
    trigger_id TEXT NOT NULL REFERENCES agent_triggers (id),
    -- The stable admission key: schedule:<triggerId>:<scheduledAt>, webhook:<Idempotency-Key>,
    -- run:<runId>, or the activity event's key.
    activity_key TEXT NOT NULL,
    -- The session the firing created.
    session_id TEXT REFERENCES sessions (id),
    -- The headless run a tool or script continuation started (a `runs.id`, no foreign key).
    run_id TEXT,
    -- The matched event.
    -- @cbor(TriggerActivity)
    activity_cbor BLOB NOT NULL,
    -- The trigger's name, prompt and matched conditions at admission.
    -- @cbor(FiringContext)
    context_cbor BLOB,
    -- A webhook body's digest, so a reused Idempotency-Key with a different body is refused.
    body_digest TEXT,
    -- The firing's state: created at admission, started, then succeeded or failed; skipped for a
    -- firing admitted but not acted on.
    -- @enum(created, started, succeeded, failed, skipped)
    status TEXT NOT NULL,
    -- Why the firing failed or was skipped, when that was recorded.
    error TEXT,
    -- When the firing was admitted.
    -- @timestamp
    created_at INTEGER NOT NULL,
    UNIQUE (account_id, trigger_id, activity_key)
) WITHOUT ROWID;

-- A trigger's firing history, newest first.
CREATE INDEX trigger_firings_by_trigger ON trigger_firings (trigger_id, created_at DESC);
-- A session's firings: deleting a session checks them without a scan.
CREATE INDEX trigger_firings_by_session ON trigger_firings (session_id) WHERE session_id IS NOT NULL;

-- Per-account HM activity feed progress of the activity trigger monitor.
CREATE TABLE activity_watermarks (
    -- The account whose activity is followed; references `accounts.id`.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The HM server whose activity feed is polled.
    server_url TEXT NOT NULL,
    -- Where the monitor is in that feed.
    -- @cbor(ActivityCursor)
    cursor_cbor BLOB NOT NULL,
    -- When the feed was last polled; NULL until then.
    -- @timestamp
    last_poll_at INTEGER,
    -- When a poll last succeeded; NULL until one has.
    -- @timestamp
    last_success_at INTEGER,
    -- The last poll error recorded, if any.
    last_error TEXT,
    PRIMARY KEY (account_id, server_url)
) WITHOUT ROWID;

-- The Log: the append-only durable event log of a session; seq is contiguous per session from 1.
CREATE TABLE session_events (
    -- The event's id.
    id TEXT NOT NULL UNIQUE,
    -- The session whose log this is; references `sessions.id`.
    session_id TEXT NOT NULL REFERENCES sessions (id),
    -- The event's position in the session's log, contiguous from 1; GetSession with `afterSeq`
    -- returns the events after it.
    seq INTEGER NOT NULL,
    -- The event: message, tool_call, tool_spawn, tool_result, error, or any other map, kept as
    -- written.
    -- @cbor(SessionEventPayload)
    event_cbor BLOB NOT NULL,
    -- When the event was appended.
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- Keyed by position, so that a session's events lie side by side in the file and a replay
    -- reads them in order.
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

-- Request and response bytes per (account, action, client request id): identical request bytes
-- replay the response, different bytes are a conflict.
CREATE TABLE action_idempotency (
    -- The account that sent the request (an account id, no foreign key).
    account_id TEXT NOT NULL,
    -- The action name (CreateAgent, CreateSession, MessageSession, ...).
    action TEXT NOT NULL,
    -- The client's id for the request (`clientRequestId`; `clientMessageId` for MessageSession).
    client_request_id TEXT NOT NULL,
    -- The request, compared byte for byte with a retry's.
    -- @cbor(Ipld)
    request_cbor BLOB NOT NULL,
    -- The response, replayed to a retry with identical request bytes.
    -- @cbor(Ipld)
    response_cbor BLOB NOT NULL,
    -- When the request was first handled.
    -- @timestamp
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, action, client_request_id)
) WITHOUT ROWID;

-- Idempotency rows by when they were recorded: pruning finds those past the replay window
-- without a scan.
CREATE INDEX action_idempotency_by_created ON action_idempotency (created_at);

-- Opt-in retention, one row per kind of row pruned; no row means the kind is kept forever. The
-- CLI and every server process on the file prune with these rows (see `store/maintenance`).
CREATE TABLE retention_policies (
    -- Which rows the policy prunes: the events of idle sessions, whole ended run trees, the
    -- journals of ended runs, or idempotency rows past their replay window.
    -- @enum(session_events, runs, run_journal, action_idempotency)
    kind TEXT PRIMARY KEY,
    -- How old a row (or what it hangs off) must be before pruning may remove it, in milliseconds.
    max_age_ms INTEGER NOT NULL,
    -- For session events: how many of an old session's newest events stay (at least 1); NULL
    -- elsewhere.
    keep_count INTEGER,
    -- When the policy was last set.
    -- @timestamp
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- The audit log: an append-only record of provider, secret and tool changes and of security
-- events (refused cross-account access, idempotency conflicts, failed secret decryption), each
-- written in the transaction of the change it records. The log is one hash chain per account:
-- row n of a chain commits to row n-1 of the same chain (`hash` is SHA-256 over `prev_hash` and
-- the row's fields), so an edited, deleted or reordered row breaks its chain (`seed-agents-db
-- audit verify`), and writes of different accounts never wait on one head. No row holds a secret
-- value or any part of one.
CREATE TABLE audit_events (
    -- The chain the row belongs to: the account the event concerns (`account_id`), or '' for
    -- the rows written before version 36, which form one chain over every account.
    chain TEXT NOT NULL,
    -- The event's position in its chain: 1, 2, 3, ... without gaps (pruning removes a prefix).
    seq INTEGER NOT NULL,
    -- When the event happened (the store's clock).
    -- @timestamp
    at INTEGER NOT NULL,
    -- The account the event concerns: the owner of the row acted on, also when another account
    -- was refused access to it. An account id without a foreign key, so the log outlives the
    -- account's rows.
    account_id TEXT NOT NULL,
    -- Who acted: the calling account, or `store` for the store's own maintenance.
    actor TEXT NOT NULL,
    -- What the event is about.
    -- @enum(provider, secret, tool, security)
    kind TEXT NOT NULL,
    -- What was done, `<object>.<verb>` (`secret.set`, `provider.delete`, `access.refused`, ...).
    action TEXT NOT NULL,
    -- What it was done to: `<object> <id or name>` (`secret api-key`, `MCP server github`).
    target TEXT NOT NULL,
    -- How it ended: done, refused (the store declined it), failed (it could not be done).
    -- @enum(ok, refused, failed)
    outcome TEXT NOT NULL,
    -- Words a person needs beyond the fields (which error, which action); never a value.
    detail TEXT,
    -- The hash of the chain's previous row; for its first row, the chain's anchor
    -- (`audit_chain`).
    prev_hash BLOB NOT NULL,
    -- SHA-256 over `prev_hash` and the canonical encoding of this row's other fields.
    hash BLOB NOT NULL,
    PRIMARY KEY (chain, seq)
) WITHOUT ROWID;
-- Reads one account's events, newest first.
CREATE INDEX audit_events_by_account ON audit_events (account_id, at);
-- Reads one kind of events, newest first.
CREATE INDEX audit_events_by_kind ON audit_events (kind, at);
-- Reads the events of a time range, newest first.
CREATE INDEX audit_events_by_time ON audit_events (at);

-- Each audit chain's two ends, one row per chain, written with every append to it: the newest
-- row's seq and hash, so deleting the newest rows is detected, and the anchor the oldest
-- retained row chains from (seq 0 and 32 zero bytes until pruning moves it). No row for a chain
-- means it is empty.
CREATE TABLE audit_chain (
    -- The chain (`audit_events.chain`): an account id, or '' for the log before version 36.
    chain TEXT NOT NULL PRIMARY KEY,
    -- The seq of the chain's newest row (its anchor's seq when it holds no row).
    head_seq INTEGER NOT NULL,
    -- The hash of the chain's newest row (the anchor's hash when it holds no row).
    head_hash BLOB NOT NULL,
    -- The seq of the chain's last pruned row (0 before any pruning): its first retained row is
    -- the next.
    anchor_seq INTEGER NOT NULL,
    -- The hash of the chain's last pruned row: the `prev_hash` of its first retained row.
    anchor_hash BLOB NOT NULL
) WITHOUT ROWID;
