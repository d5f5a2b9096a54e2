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

-- Server-local configuration blobs. Holds `schema_migration_version` (the schema version as TEXT
-- digits) and `secret_encryption_key_v1` (the 32-byte AES-GCM key for encrypted secrets).
CREATE TABLE server_config (
    -- The configuration key.
    key TEXT PRIMARY KEY,
    -- The value; its encoding depends on the key.
    value BLOB NOT NULL
) WITHOUT ROWID;

-- Seed account principals known to this server, created or touched lazily as account-owned rows
-- are written.
CREATE TABLE accounts (
    -- The Seed account principal.
    id TEXT PRIMARY KEY,
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- @timestamp
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Local delegated signers of an account, consulted by the authorized-signer check. An AGENT row is
-- written when an envelope's capability delegation verifies.
CREATE TABLE account_authorizations (
    account_id TEXT NOT NULL,
    -- The exact cryptographic signer allowed to act for the account.
    signer_id TEXT NOT NULL,
    -- @enum(OWNER, AGENT)
    role TEXT NOT NULL,
    -- The capability blob that proves a delegation, when there is one.
    capability TEXT,
    -- The CID of the capability blob.
    capability_cid TEXT,
    -- @timestamp
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, signer_id),
    FOREIGN KEY (account_id) REFERENCES accounts (id)
) WITHOUT ROWID;

-- Account-scoped model provider configuration; (account_id, name) is unique.
CREATE TABLE model_providers (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The provider's name, unique within the account.
    name TEXT NOT NULL,
    -- The provider type (for example `openai`).
    type TEXT NOT NULL,
    -- @cbor(ModelProviderConfig)
    config_cbor BLOB NOT NULL,
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- @timestamp
    updated_at INTEGER NOT NULL,
    UNIQUE (account_id, name)
) WITHOUT ROWID;

-- Encrypted account-scoped secret values (API keys, OAuth blobs, signing-identity seeds). Never
-- returned in plaintext through the API.
CREATE TABLE secrets (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The secret's name, unique within the account.
    name TEXT NOT NULL,
    -- AES-256-GCM: 12-byte nonce || encrypted bytes || 16-byte tag, under the server key.
    ciphertext BLOB NOT NULL,
    -- @cbor(SecretMetadata)
    metadata_cbor BLOB,
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- @timestamp
    updated_at INTEGER NOT NULL,
    UNIQUE (account_id, name)
) WITHOUT ROWID;

-- Agent definitions, their on-disk state directory and the activity rollup that unread
-- indicators read.
CREATE TABLE agents (
    id TEXT PRIMARY KEY,
    -- The owning account; all agent content is stored under it.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- @cbor(AgentDefinition)
    definition_cbor BLOB NOT NULL,
    -- The per-agent directory under the service data dir (its memory/ is the agent's private
    -- memory); removed when the agent is deleted.
    state_dir TEXT NOT NULL,
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
    -- The session that message belongs to.
    activity_session_id TEXT,
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- @timestamp
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX agents_by_account ON agents (account_id, updated_at DESC);

-- Pending invitations and accepted agent-level access grants. The agent's owner stays on
-- agents.account_id; account_id here is the invited or collaborating account.
CREATE TABLE agent_collaborators (
    agent_id TEXT NOT NULL REFERENCES agents (id),
    -- The invited or collaborating Seed account.
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- @enum(reader, writer)
    role TEXT NOT NULL,
    -- @enum(pending, accepted)
    status TEXT NOT NULL,
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- @timestamp
    updated_at INTEGER NOT NULL,
    -- Acceptance time; NULL while pending.
    -- @timestamp
    accepted_at INTEGER,
    PRIMARY KEY (agent_id, account_id)
) WITHOUT ROWID;

CREATE INDEX agent_collaborators_by_account ON agent_collaborators (account_id, status, updated_at DESC);

-- Saved agent-scoped trigger definitions: activity, schedule, webhook and run-completed triggers.
CREATE TABLE agent_triggers (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    agent_id TEXT NOT NULL REFERENCES agents (id),
    name TEXT NOT NULL,
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
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- @timestamp
    updated_at INTEGER NOT NULL,
    -- @timestamp
    last_checked_at INTEGER,
    -- @timestamp
    last_fired_at INTEGER,
    last_error TEXT
) WITHOUT ROWID;

CREATE INDEX agent_triggers_by_agent ON agent_triggers (agent_id, updated_at DESC);

-- Activity admission claims: (account_id, trigger_id, activity_key) admits an activity event once
-- per trigger, and survives combination into another trigger.
CREATE TABLE trigger_event_claims (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    trigger_id TEXT NOT NULL REFERENCES agent_triggers (id),
    -- The activity event's stable key.
    activity_key TEXT NOT NULL,
    -- The firing the claim admitted.
    firing_id TEXT,
    -- @timestamp
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, trigger_id, activity_key)
) WITHOUT ROWID;

-- Chat-like sessions. status is a derived mirror of the runs table, kept for client compatibility.
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    agent_id TEXT NOT NULL REFERENCES agents (id),
    title TEXT,
    -- Who wrote the title; a user title is never overwritten by an automatic path.
    -- @enum(system, agent, user)
    title_source TEXT NOT NULL DEFAULT 'system',
    -- @enum(idle, streaming, stopped, error)
    status TEXT NOT NULL,
    -- The session that spawned this one; NULL for a top-level session.
    parent_session_id TEXT REFERENCES sessions (id),
    -- The run this session is the transcript of, for sessions created as run children.
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
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- @timestamp
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX sessions_by_agent ON sessions (agent_id, updated_at DESC);
CREATE INDEX sessions_by_parent ON sessions (parent_session_id, created_at);

-- Every execution as a durable row, forming a tree through parent_run_id; also the dispatch queue
-- (runs_dispatch is the queue).
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The tree's root, denormalized so one subscription covers a whole tree.
    root_run_id TEXT NOT NULL,
    parent_run_id TEXT REFERENCES runs (id),
    -- The parent's delegate call that spawned this run.
    parent_tool_call_id TEXT,
    -- The run this one continues (continue-as-new); the two rows are one piece of work.
    continued_from_run_id TEXT,
    -- Distance from the root.
    depth INTEGER NOT NULL DEFAULT 0,
    -- A model turn with a transcript session, or a script child.
    -- @enum(agent, workflow)
    kind TEXT NOT NULL,
    agent_id TEXT REFERENCES agents (id),
    -- The transcript session of an agent run; NULL for script runs.
    session_id TEXT REFERENCES sessions (id),
    trigger_firing_id TEXT REFERENCES trigger_firings (id),
    -- Who enqueued the run (system is declared but nothing enqueues it).
    -- @enum(user, trigger, agent, workflow, system)
    origin TEXT NOT NULL,
    title TEXT,
    model TEXT,
    -- The sha256 digest of a script run's module.
    source_cid TEXT,
    -- A script run's JS module.
    source_text TEXT,
    -- @cbor(RunInput)
    input_cbor BLOB NOT NULL,
    -- @cbor(RunOutput)
    output_cbor BLOB,
    -- @cbor(RunErrorInfo)
    error_cbor BLOB,
    -- @enum(queued, claimed, running, waiting, succeeded, failed, canceled)
    status TEXT NOT NULL,
    -- Why a parked run waits: children, timer, event or budget-pause.
    -- @cbor(RunWait)
    wait_cbor BLOB,
    attempt INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 1,
    -- Backoff or timer wake: the run is not claimed before this time.
    -- @timestamp
    not_before INTEGER,
    -- @enum(interactive, background)
    queue TEXT NOT NULL DEFAULT 'background',
    -- The queue instance that claimed the run.
    lease_owner TEXT,
    -- @timestamp
    lease_expires_at INTEGER,
    -- @cbor(RunBudget)
    budget_cbor BLOB,
    -- Usage persisted per turn boundary, children rolled up on finalize.
    -- @cbor(RunUsage)
    usage_cbor BLOB,
    -- A workflow's ctx.step/ctx.plan snapshot, or the settled copy of its session's plan.
    -- @cbor(RunPlan)
    plan_cbor BLOB,
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- @timestamp
    started_at INTEGER,
    -- @timestamp
    finished_at INTEGER,
    -- @timestamp
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX runs_dispatch ON runs (status, queue, not_before, created_at);
CREATE INDEX runs_by_root ON runs (root_run_id, created_at);
CREATE INDEX runs_by_parent ON runs (parent_run_id);
CREATE INDEX runs_by_parent_tool_call ON runs (parent_run_id, parent_tool_call_id);
CREATE INDEX runs_by_session ON runs (session_id, created_at DESC);
CREATE INDEX runs_by_account ON runs (account_id, created_at DESC);

-- One row per outstanding ctx.waitForEvent; deleted the moment it is delivered, times out or its
-- run dies.
CREATE TABLE run_event_waits (
    run_id TEXT NOT NULL REFERENCES runs (id),
    wait_id TEXT NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- A {signal} or an {eventType, resource, author} activity match.
    -- @cbor(WaitMatch)
    match_cbor BLOB NOT NULL,
    -- @timestamp
    timeout_at INTEGER,
    -- @timestamp
    created_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, wait_id)
) WITHOUT ROWID;

CREATE INDEX run_event_waits_by_account ON run_event_waits (account_id, created_at);
CREATE INDEX run_event_waits_by_timeout ON run_event_waits (timeout_at);

-- Remote MCP servers an account has connected; (account_id, name) is unique.
CREATE TABLE mcp_servers (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    name TEXT NOT NULL,
    -- @cbor(McpServerConfig)
    config_cbor BLOB NOT NULL,
    -- The tools of the last successful discovery, kept across a failed refresh.
    -- @cbor(McpTools)
    tools_cbor BLOB,
    -- @cbor(McpServerStatus)
    status_cbor BLOB,
    -- @bool
    enabled INTEGER NOT NULL DEFAULT 1,
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- @timestamp
    updated_at INTEGER NOT NULL,
    UNIQUE (account_id, name)
) WITHOUT ROWID;

-- Every tool an agent holds, as a content-addressed tool document.
CREATE TABLE tool_documents (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    agent_id TEXT NOT NULL REFERENCES agents (id),
    name TEXT NOT NULL,
    -- @enum(builtin, lambda, mcp)
    kind TEXT NOT NULL,
    -- CIDv1 (dag-cbor, sha2-256) of exactly doc_cbor: the tool's version.
    cid TEXT NOT NULL,
    -- @cbor(ToolDocument)
    doc_cbor BLOB NOT NULL,
    -- @bool
    enabled INTEGER NOT NULL DEFAULT 1,
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- @timestamp
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, agent_id, name)
) WITHOUT ROWID;

CREATE INDEX tool_documents_by_agent ON tool_documents (account_id, agent_id, updated_at DESC);

-- Hypermedia write drafts: content, signing identity and the targets the draft publishes against.
CREATE TABLE agent_drafts (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    agent_id TEXT REFERENCES agents (id),
    -- The secret holding the signing identity.
    signer_secret_name TEXT,
    title TEXT,
    -- The encoding of content_cbor (for example `markdown`).
    content_format TEXT NOT NULL,
    -- @cbor(DraftContent)
    content_cbor BLOB NOT NULL,
    -- @cbor(DraftMetadata)
    metadata_cbor BLOB,
    edit_target TEXT,
    location_target TEXT,
    path_name TEXT,
    visibility TEXT,
    -- @enum(draft, published)
    status TEXT NOT NULL,
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- @timestamp
    updated_at INTEGER NOT NULL,
    -- @timestamp
    published_at INTEGER,
    published_id TEXT,
    published_version TEXT
) WITHOUT ROWID;

CREATE INDEX agent_drafts_account_updated_idx ON agent_drafts (account_id, updated_at DESC);
CREATE INDEX agent_drafts_agent_updated_idx ON agent_drafts (account_id, agent_id, updated_at DESC);
CREATE INDEX agent_drafts_status_idx ON agent_drafts (account_id, status);

-- Append-only journal of script runs that makes replay-from-top resume safe; seq is the count of
-- the run's entries plus one at append.
CREATE TABLE run_journal (
    run_id TEXT NOT NULL REFERENCES runs (id),
    seq INTEGER NOT NULL,
    -- @cbor(WorkflowJournalEntry)
    entry_cbor BLOB NOT NULL,
    -- @timestamp
    created_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- One row per continue_session edge. A successor has exactly one row, and (predecessor, tool call)
-- is unique so a retried call cannot create a second successor. Session ids carry no foreign key:
-- the history outlives session deletion.
CREATE TABLE session_continuations (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    predecessor_session_id TEXT NOT NULL,
    successor_session_id TEXT NOT NULL,
    -- The first session of the chain.
    origin_session_id TEXT NOT NULL,
    -- The continue_session call that created the edge.
    tool_call_id TEXT NOT NULL,
    initiating_event_id TEXT,
    reason TEXT,
    -- The successor's exact starting point.
    -- @cbor(ContinuationManifest)
    manifest_cbor BLOB NOT NULL,
    -- @timestamp
    created_at INTEGER NOT NULL,
    UNIQUE (successor_session_id),
    UNIQUE (predecessor_session_id, tool_call_id)
) WITHOUT ROWID;

CREATE INDEX session_continuations_by_origin ON session_continuations (origin_session_id, created_at);

-- One secret per webhook trigger, created with the trigger.
CREATE TABLE webhook_trigger_credentials (
    trigger_id TEXT PRIMARY KEY REFERENCES agent_triggers (id),
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The hash delivery requests are checked against.
    secret_hash TEXT NOT NULL,
    -- The secret encrypted with the server key, returned to editors.
    secret_ciphertext BLOB NOT NULL,
    -- @timestamp
    created_at INTEGER NOT NULL,
    -- @timestamp
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Events or occurrences that matched a trigger; (account_id, trigger_id, activity_key) is unique,
-- which makes firing exactly-once.
CREATE TABLE trigger_firings (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    agent_id TEXT NOT NULL REFERENCES agents (id),
    trigger_id TEXT NOT NULL REFERENCES agent_triggers (id),
    -- The stable admission key: schedule:<triggerId>:<scheduledAt>, webhook:<Idempotency-Key>,
    -- run:<runId>, or the activity event's key.
    activity_key TEXT NOT NULL,
    -- The session the firing created.
    session_id TEXT REFERENCES sessions (id),
    -- The headless run a tool or script continuation started.
    run_id TEXT,
    -- The matched event.
    -- @cbor(TriggerActivity)
    activity_cbor BLOB NOT NULL,
    -- The trigger's name, prompt and matched conditions at admission.
    -- @cbor(FiringContext)
    context_cbor BLOB,
    -- A webhook body's digest, so a reused Idempotency-Key with a different body is refused.
    body_digest TEXT,
    -- @enum(created, started, succeeded, failed, skipped)
    status TEXT NOT NULL,
    error TEXT,
    -- @timestamp
    created_at INTEGER NOT NULL,
    UNIQUE (account_id, trigger_id, activity_key)
) WITHOUT ROWID;

CREATE INDEX trigger_firings_by_trigger ON trigger_firings (trigger_id, created_at DESC);

-- Per-account HM activity feed progress of the activity trigger monitor.
CREATE TABLE activity_watermarks (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    server_url TEXT NOT NULL,
    -- @cbor(ActivityCursor)
    cursor_cbor BLOB NOT NULL,
    -- @timestamp
    last_poll_at INTEGER,
    -- @timestamp
    last_success_at INTEGER,
    last_error TEXT,
    PRIMARY KEY (account_id, server_url)
) WITHOUT ROWID;

-- The Log: the append-only durable event log of a session; seq is contiguous per session from 1.
CREATE TABLE session_events (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id),
    seq INTEGER NOT NULL,
    -- @cbor(SessionEventPayload)
    event_cbor BLOB NOT NULL,
    -- @timestamp
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, seq)
) WITHOUT ROWID;

-- Request and response bytes per (account, action, client request id): identical request bytes
-- replay the response, different bytes are a conflict.
CREATE TABLE action_idempotency (
    account_id TEXT NOT NULL,
    -- The action name (CreateAgent, CreateSession, MessageSession, ...).
    action TEXT NOT NULL,
    client_request_id TEXT NOT NULL,
    -- @cbor(Ipld)
    request_cbor BLOB NOT NULL,
    -- @cbor(Ipld)
    response_cbor BLOB NOT NULL,
    -- @timestamp
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, action, client_request_id)
) WITHOUT ROWID;
