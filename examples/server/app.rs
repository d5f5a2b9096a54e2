//! The example server's routes: agents, sessions, their event log, and the run queue, as JSON
//! over HTTP on an [`AsyncStore`].
//!
//! Every route but the run queue's claim acts for the account named by the `x-account-id`
//! header (a real server would take it from an authenticated identity). Every failure answers
//! `{"error": kind, "message": ...}` with a status chosen from the store's
//! [`ErrorKind`](seed_agents_store::ErrorKind) in one place, [`status_of`]; a server-side
//! failure's message stays in the server's log and the client gets a generic one.
//!
//! The two streams are server-sent events: each item is an `append` event (a session event's
//! `id:` is its seq, so a client that reconnects with `Last-Event-ID` resumes without a gap),
//! and a stream whose session or run tree is deleted ends with an `end` event carrying the
//! error body. They follow the store's change feed, so a write by another process or node
//! reaches them as it commits.
//!
//! | Route | Does |
//! |---|---|
//! | `POST /agents` `{}` | creates an agent (201) |
//! | `POST /sessions` `{"agent_id", "title"?}` | creates a session (201) |
//! | `POST /sessions/{id}/messages` `{"content"}` | appends a user message (201, its seq) |
//! | `GET /sessions/{id}/events?after=N&limit=M` | replays the events after seq `N` |
//! | `GET /sessions/{id}/events/stream?after=N` | the events after `N`, then each new one (SSE) |
//! | `GET /runs/{id}/journal/stream` | a run tree's journal entries, replayed then live (SSE) |
//! | `POST /runs` `{"title", "agent_id"?, "session_id"?, "max_attempts"?}` | enqueues (201) |
//! | `POST /runs/claim` `{"owner"}` | claims the next queued run (200), 204 when none |
//! | `POST /runs/{id}/finalize` `{"owner", "attempt", "outcome", "error"?}` | ends a claim |

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use seed_agents_store::agents::NewAgent;
use seed_agents_store::feed::TreeEntry;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{
    AgentDefinition, MessageEvent, RunErrorInfo, RunOutput, SessionEventPayload,
};
use seed_agents_store::runs::{ClaimLimits, Finalized, NewRun, RunOutcome};
use seed_agents_store::schema::{runs, session_events, sessions};
use seed_agents_store::sessions::NewSession;
use seed_agents_store::{ids, AsyncStore, ErrorKind};

use futures_util::{Stream, StreamExt};
use std::convert::Infallible;

/// The header naming the account a request acts for.
pub const ACCOUNT_HEADER: &str = "x-account-id";

/// The server's routes over `store`.
pub fn router(store: AsyncStore) -> Router {
    Router::new()
        .route("/agents", post(create_agent))
        .route("/sessions", post(create_session))
        .route("/sessions/{id}/messages", post(post_message))
        .route("/sessions/{id}/events", get(replay_events))
        .route("/sessions/{id}/events/stream", get(stream_events))
        .route("/runs/{id}/journal/stream", get(stream_journal))
        .route("/runs", post(enqueue_run))
        .route("/runs/claim", post(claim_run))
        .route("/runs/{id}/finalize", post(finalize_run))
        .with_state(store)
}

/// The HTTP status of a store failure of `kind`.
///
/// - `Busy`: 503, another connection holds the lock and a retry may succeed;
/// - `Refused`: 500, the schema gate refuses a file only when the store opens, so seeing it on
///   a request is a fault of the server's deployment, not something a client can retry past;
/// - `Storage`: 500, the disk or the file failed (507 would blame the request's size, which is
///   rarely the cause);
/// - `Corrupt`: 500, what is stored cannot be read (a payload that does not decode, a secret
///   that does not authenticate): the server's data is at fault, not the request.
pub fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Invalid => StatusCode::BAD_REQUEST,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::Busy => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Refused | ErrorKind::Storage | ErrorKind::Corrupt | ErrorKind::Internal => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
        // `ErrorKind` is non-exhaustive: a kind added later is a server fault until mapped.
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A failed request: its status and the `{"error", "message"}` body.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl ApiError {
    fn invalid(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: ErrorKind::Invalid.as_str(),
            message: message.into(),
        }
    }

    fn not_found(what: &str, id: &str) -> Self {
        ApiError {
            status: StatusCode::NOT_FOUND,
            kind: ErrorKind::NotFound.as_str(),
            message: format!("no {what} {id:?}"),
        }
    }
}

impl From<seed_agents_store::Error> for ApiError {
    fn from(e: seed_agents_store::Error) -> Self {
        let kind = e.kind();
        let status = status_of(kind);
        // A client's own mistake is explained to it; a server fault is logged here and not
        // echoed (it names paths and SQLite details that are none of the client's business).
        // Store errors never carry secret values, and no request body is logged.
        let message = if status.is_server_error() && status != StatusCode::SERVICE_UNAVAILABLE {
            eprintln!("store failure ({kind}): {e}");
            "the server failed; see its log".to_owned()
        } else {
            e.to_string()
        };
        ApiError {
            status,
            kind: kind.as_str(),
            message,
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        ApiError::invalid(format!("bad JSON body: {}", rejection.body_text()))
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::invalid(format!("bad query: {}", rejection.body_text()))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Json(json!({ "error": self.kind, "message": self.message }));
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            return (self.status, [(header::RETRY_AFTER, "1")], body).into_response();
        }
        (self.status, body).into_response()
    }
}

type Answer = Result<(StatusCode, Json<Value>), ApiError>;

/// The account a request acts for, from [`ACCOUNT_HEADER`].
pub struct Account(String);

impl<S: Send + Sync> FromRequestParts<S> for Account {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let value = parts
            .headers
            .get(ACCOUNT_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty());
        value
            .map(|v| Account(v.to_owned()))
            .ok_or_else(|| ApiError::invalid(format!("the {ACCOUNT_HEADER} header is required")))
    }
}

async fn create_agent(State(store): State<AsyncStore>, Account(account): Account) -> Answer {
    // The agent's working directory, relative to where the server keeps agent state.
    let new = NewAgent {
        definition: AgentDefinition::default(),
        state_dir: format!("agents/{}", ids::new_id()),
        public_read: false,
        public_chat: false,
    };
    let agent = store.create_agent(&account, &new).await?;
    Ok((StatusCode::CREATED, Json(json!({ "id": agent.id }))))
}

#[derive(Deserialize)]
struct CreateSession {
    agent_id: String,
    title: Option<String>,
}

async fn create_session(
    State(store): State<AsyncStore>,
    Account(account): Account,
    body: Result<Json<CreateSession>, JsonRejection>,
) -> Answer {
    let Json(body) = body?;
    let new = NewSession {
        agent_id: body.agent_id,
        title: body.title,
        ..NewSession::default()
    };
    let session = store.create_session(&account, &new).await?;
    Ok((StatusCode::CREATED, Json(session_json(&session))))
}

#[derive(Deserialize)]
struct PostMessage {
    content: String,
}

async fn post_message(
    State(store): State<AsyncStore>,
    Account(account): Account,
    Path(session_id): Path<String>,
    body: Result<Json<PostMessage>, JsonRejection>,
) -> Answer {
    let Json(body) = body?;
    let event = MessageEvent::user(body.content).into();
    let appended = store.append_event(&account, &session_id, &event).await?;
    let body = json!({ "id": appended.id, "seq": appended.seq, "created_at": appended.created_at });
    Ok((StatusCode::CREATED, Json(body)))
}

#[derive(Deserialize)]
struct Replay {
    #[serde(default)]
    after: i64,
    limit: Option<u32>,
}

async fn replay_events(
    State(store): State<AsyncStore>,
    Account(account): Account,
    Path(session_id): Path<String>,
    query: Result<Query<Replay>, QueryRejection>,
) -> Answer {
    let Query(query) = query?;
    // A replay of a session the account does not have is empty, not an error: look it up so
    // the client gets a 404 (a deletion racing the replay just answers an empty list).
    if store.session(&account, &session_id).await?.is_none() {
        return Err(ApiError::not_found("session", &session_id));
    }
    let events = store
        .events_after(&account, &session_id, query.after, query.limit)
        .await?;
    let events = events
        .iter()
        .map(event_json)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((StatusCode::OK, Json(json!({ "events": events }))))
}

#[derive(Deserialize)]
struct Follow {
    #[serde(default)]
    after: i64,
}

/// A session's events after `after` (or the `Last-Event-ID` a reconnecting client sends), then
/// each new one as it commits.
async fn stream_events(
    State(store): State<AsyncStore>,
    Account(account): Account,
    Path(session_id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<Follow>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query?;
    let after = match headers.get("last-event-id") {
        Some(id) => id
            .to_str()
            .ok()
            .and_then(|id| id.trim().parse().ok())
            .ok_or_else(|| ApiError::invalid("Last-Event-ID must be a seq"))?,
        None => query.after,
    };
    let events = store.follow_events(&account, &session_id, after).await?;
    Ok(sse(events, |row| {
        let id = row.seq.to_string();
        Ok(Event::default()
            .id(id)
            .event("append")
            .data(event_json(&row)?.to_string()))
    }))
}

/// A run tree's journal entries from the first, then each new one as it commits.
async fn stream_journal(
    State(store): State<AsyncStore>,
    Account(account): Account,
    Path(root_run_id): Path<String>,
) -> Result<Response, ApiError> {
    let entries = store.follow_journal(&account, &root_run_id).await?;
    Ok(sse(entries, |entry: TreeEntry| {
        let body = json!({
            "run_id": entry.run_id,
            "seq": entry.record.seq,
            "created_at": entry.record.created_at,
            "entry": serde_json::to_value(&entry.record.entry)
                .map_err(|e| ApiError::invalid(format!("an entry without JSON: {e}")))?,
        });
        Ok(Event::default().event("append").data(body.to_string()))
    }))
}

/// Server-sent events of `items`, each rendered by `render`; the first failure is sent as an
/// `end` event with its error body, and ends the stream.
fn sse<T: Send + 'static>(
    items: impl Stream<Item = seed_agents_store::Result<T>> + Send + Unpin + 'static,
    render: fn(T) -> Result<Event, ApiError>,
) -> Response {
    let events = futures_util::stream::unfold(Some(items), move |items| async move {
        let mut items = items?;
        let event = match items.next().await? {
            Ok(item) => match render(item) {
                Ok(event) => return Some((Ok::<_, Infallible>(event), Some(items))),
                Err(e) => e,
            },
            Err(e) => ApiError::from(e),
        };
        let end = json!({ "error": event.kind, "message": event.message });
        Some((
            Ok(Event::default().event("end").data(end.to_string())),
            None,
        ))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[derive(Deserialize)]
struct EnqueueRun {
    title: String,
    agent_id: Option<String>,
    session_id: Option<String>,
    max_attempts: Option<i64>,
}

async fn enqueue_run(
    State(store): State<AsyncStore>,
    Account(account): Account,
    body: Result<Json<EnqueueRun>, JsonRejection>,
) -> Answer {
    let Json(body) = body?;
    let mut new = NewRun::new(
        account,
        runs::Kind::Workflow,
        runs::Origin::User,
        body.title,
    );
    new.agent_id = body.agent_id;
    new.session_id = body.session_id;
    new.max_attempts = body.max_attempts.unwrap_or(1);
    let run = store.enqueue_run(&new).await?;
    Ok((StatusCode::CREATED, Json(run_json(&run))))
}

#[derive(Deserialize)]
struct ClaimRequest {
    owner: String,
}

/// Claims the next queued run of any account: the worker pool serves them all.
async fn claim_run(
    State(store): State<AsyncStore>,
    body: Result<Json<ClaimRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body?;
    if body.owner.trim().is_empty() {
        return Err(ApiError::invalid("owner must not be empty"));
    }
    match store
        .claim_next_run(&body.owner, ClaimLimits::default())
        .await?
    {
        Some(run) => Ok((StatusCode::OK, Json(run_json(&run))).into_response()),
        None => Ok(StatusCode::NO_CONTENT.into_response()),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum OutcomeName {
    Succeeded,
    Failed,
    Canceled,
}

#[derive(Deserialize)]
struct FinalizeRequest {
    owner: String,
    attempt: i64,
    outcome: OutcomeName,
    /// For a failure: `{"code", "message", "retryable"?}`.
    error: Option<RunErrorInfo>,
}

/// Ends the run held by the claim (`owner`, `attempt`): a claim that no longer holds it (the
/// run was finalized, reclaimed or canceled since) is a conflict.
async fn finalize_run(
    State(store): State<AsyncStore>,
    Account(account): Account,
    Path(run_id): Path<String>,
    body: Result<Json<FinalizeRequest>, JsonRejection>,
) -> Answer {
    let Json(body) = body?;
    let outcome = match (body.outcome, body.error) {
        (OutcomeName::Succeeded, _) => RunOutcome::Succeeded(RunOutput::default()),
        (OutcomeName::Canceled, _) => RunOutcome::Canceled,
        (OutcomeName::Failed, Some(error)) => RunOutcome::Failed(error),
        (OutcomeName::Failed, None) => return Err(ApiError::invalid("a failure needs `error`")),
    };
    let claim = Claim {
        account_id: account,
        run_id,
        owner: body.owner,
        attempt: body.attempt,
    };
    let (result, run) = match store.finalize_run(&claim, outcome).await? {
        Finalized::Finished(run) => ("finished", run),
        Finalized::Retrying(run) => ("retrying", run),
        Finalized::AlreadyCanceled(run) => ("already_canceled", run),
    };
    Ok((
        StatusCode::OK,
        Json(json!({ "result": result, "run": run_json(&run) })),
    ))
}

fn session_json(session: &sessions::Row) -> Value {
    json!({
        "id": session.id,
        "agent_id": session.agent_id,
        "title": session.title,
        "status": session.status.as_str(),
        "created_at": session.created_at,
    })
}

fn run_json(run: &runs::Row) -> Value {
    json!({
        "id": run.id,
        "account_id": run.account_id,
        "title": run.title,
        "status": run.status.as_str(),
        "attempt": run.attempt,
        "lease_owner": run.lease_owner,
    })
}

/// An event as JSON: its seq and type, and a message's role and text.
fn event_json(row: &session_events::Row) -> Result<Value, ApiError> {
    let event: SessionEventPayload = row
        .event_cbor
        .decode()
        .map_err(|e| ApiError::from(seed_agents_store::Error::from(e)))?;
    let mut out = json!({
        "seq": row.seq,
        "created_at": row.created_at,
        "type": event.event_type(),
    });
    if let SessionEventPayload::Message(message) = &event {
        out["role"] = json!(message.role.as_str());
        out["content"] = json!(message.content);
    }
    Ok(out)
}
