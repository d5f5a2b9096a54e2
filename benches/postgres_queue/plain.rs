//! The bench's plain sides: a plain client, the plain queue's two statements, and the store's
//! own statements sent by a plain client, each a worker's one claim and finalize.

use crate::T;
use seed_agents_store::cbor::Cbor;
use seed_agents_store::payload::RunOutput;

/// A plain client, its commits waiting for the disk or not.
pub(crate) fn plain_client(url: &str, synchronous: bool) -> postgres::Client {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let setting = if synchronous { "on" } else { "off" };
    client
        .batch_execute(&format!("SET synchronous_commit = {setting}"))
        .unwrap();
    client
}

/// A plain queue's worker: `claim` (owner, now; returns id, attempt) then `finish` (id, owner,
/// attempt, output, now), each one autocommit statement, ids of type `I`.
pub(crate) fn plain_queue<I>(
    url: &str,
    synchronous: bool,
    owner: String,
    output: &RunOutput,
    claim: &str,
    finish: &str,
) -> Box<dyn FnMut()>
where
    I: for<'a> postgres::types::FromSql<'a> + postgres::types::ToSql + Sync + 'static,
{
    let mut client = plain_client(url, synchronous);
    let claim = client.prepare(claim).unwrap();
    let finish = client.prepare(finish).unwrap();
    let bytes = Cbor::encode(output).unwrap().as_bytes().to_vec();
    Box::new(move || {
        let now = T;
        let row = client.query_one(&claim, &[&owner, &now]).unwrap();
        let (id, attempt): (I, i64) = (row.get(0), row.get(1));
        let n = client
            .execute(&finish, &[&id, &owner, &attempt, &bytes, &now])
            .unwrap();
        assert_eq!(n, 1);
    })
}

/// The store's own claim and finalize statements, sent by a plain client the way the store sends
/// them (prepared once, generic plans, autocommit): the plain way of doing the store's work, with
/// its two queues, its delays and its one live agent run per session, so that what the store's
/// client adds can be told from what its work costs.
pub(crate) fn same_work(
    url: &str,
    synchronous: bool,
    owner: String,
    output: &RunOutput,
) -> Box<dyn FnMut()> {
    use seed_agents_store::schema::runs::COLUMN_LIST;
    let mut client = plain_client(url, synchronous);
    // The store's settings for its hot statements: one generic plan, no JIT (a generic plan
    // that PostgreSQL costs high would otherwise be compiled on every call).
    client
        .batch_execute("SET plan_cache_mode = force_generic_plan; SET jit = off")
        .unwrap();
    // As `crate::postgres::runs::claim_sql(false)` renders it.
    let eligible = "((r.kind = 'agent' AND $3 > 0 AND (r.session_id IS NULL OR NOT EXISTS \
        (SELECT 1 FROM runs AS s WHERE s.session_id = r.session_id AND s.status IN ('claimed', \
        'running')))) OR (r.kind = 'workflow' AND $4 > 0))";
    let branch = |alias: &str, q: u8, queue: &str, due: &str, order: &str| {
        format!(
            "SELECT * FROM (SELECT r.id, {q} AS q, r.created_at FROM runs AS r \
             WHERE r.status = 'queued' AND r.queue = '{queue}' AND {due} AND {eligible} \
             ORDER BY {order} LIMIT 1 FOR UPDATE OF r SKIP LOCKED) AS {alias}"
        )
    };
    let (undelayed, due) = ("r.not_before IS NULL", "r.not_before <= $2");
    let (by_index, by_age) = (
        "r.not_before NULLS FIRST, r.created_at, r.id",
        "r.created_at, r.id",
    );
    use postgres::types::Type;
    let claim = client
        .prepare_typed(
            &format!(
                "WITH candidate AS ({} UNION ALL {} UNION ALL {} UNION ALL {}) \
             UPDATE runs SET status = 'claimed', lease_owner = $1, lease_expires_at = $5, \
               attempt = attempt + 1, updated_at = $2 \
             WHERE id = (SELECT id FROM candidate ORDER BY q, created_at, id LIMIT 1) \
             RETURNING {COLUMN_LIST}",
                branch("interactive_now", 0, "interactive", undelayed, by_index),
                branch("interactive_due", 0, "interactive", due, by_age),
                branch("background_now", 1, "background", undelayed, by_index),
                branch("background_due", 1, "background", due, by_age),
            ),
            &[Type::TEXT, Type::INT8, Type::INT8, Type::INT8, Type::INT8],
        )
        .unwrap();
    // As `crate::postgres::runs::end_root_run` writes it; typed as the store binds them.
    let finish = client
        .prepare_typed(
            &format!(
            "WITH ended AS (UPDATE runs SET status = $5, output_cbor = coalesce($6, output_cbor), \
               error_cbor = coalesce($7, error_cbor), wait_cbor = NULL, not_before = NULL, \
               lease_owner = NULL, lease_expires_at = NULL, finished_at = $8, updated_at = $8 \
               WHERE account_id = $1 AND id = $2 AND lease_owner = $3 AND attempt = $4 \
               AND status IN ('claimed', 'running') \
               AND parent_run_id IS NULL AND session_id IS NULL RETURNING {COLUMN_LIST}), \
             waits AS (DELETE FROM run_event_waits WHERE run_id IN (SELECT id FROM ended)) \
             SELECT {COLUMN_LIST} FROM ended"
        ),
            &[
                Type::TEXT,
                Type::TEXT,
                Type::TEXT,
                Type::INT8,
                Type::TEXT,
                Type::BYTEA,
                Type::BYTEA,
                Type::INT8,
            ],
        )
        .unwrap();
    let bytes = Cbor::encode(output).unwrap().as_bytes().to_vec();
    let none: Option<&[u8]> = None;
    let unlimited = i64::from(u32::MAX);
    Box::new(move || {
        let now = T;
        let row = client
            .query_one(
                &claim,
                &[&owner, &now, &unlimited, &unlimited, &(now + 60_000)],
            )
            .unwrap();
        let (account, id, attempt): (String, String, i64) =
            (row.get("account_id"), row.get("id"), row.get("attempt"));
        let rows = client
            .query(
                &finish,
                &[
                    &account,
                    &id,
                    &owner,
                    &attempt,
                    &"succeeded",
                    &Some(bytes.as_slice()),
                    &none,
                    &now,
                ],
            )
            .unwrap();
        assert_eq!(rows.len(), 1);
    })
}
