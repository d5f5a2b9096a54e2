//! Enqueue across accounts, turns of one session in one millisecond, and listings built at run
//! time on both backends.

use super::*;

#[test]
fn enqueue_refuses_another_accounts_agent_session_or_firing() {
    let f = fixture();
    session_in(&f.store, B, AGENT_B, "theirs");
    let mut run = agent_run("theirs", "x");
    let err = f.store.enqueue_run(&run).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotFound {
                what: "session",
                ..
            }
        ),
        "{err:?}"
    );
    run.session_id = None;
    run.agent_id = Some(AGENT_B.into());
    let err = f.store.enqueue_run(&run).unwrap_err();
    assert!(
        matches!(err, Error::NotFound { what: "agent", .. }),
        "{err:?}"
    );
    let mut fired = workflow_run("x");
    fired.trigger_firing_id = Some("nope".into());
    let err = f.store.enqueue_run(&fired).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotFound {
                what: "trigger firing",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn turns_of_one_session_enqueued_in_the_same_millisecond_are_claimed_in_enqueue_order() {
    let f = fixture();
    // The clock stands still: every turn is enqueued in the same millisecond, and the ids are
    // chosen so that id order is the reverse of enqueue order in half the sessions.
    let mut expected = Vec::new();
    for s in 0..20 {
        let session = f.session(&format!("s{s:02}"));
        let mut turns = Vec::new();
        for turn in 0..3 {
            let mut run = agent_run(&session, &format!("turn {turn}"));
            let rank = if s % 2 == 0 { turn } else { 2 - turn };
            run.id = Some(format!("run-{s:02}-{rank}"));
            run.queue = Queue::Interactive;
            turns.push(f.store.enqueue_run(&run).unwrap());
        }
        // The tie is broken in the row itself: created_at moves on by a millisecond per turn.
        assert!(turns.windows(2).all(|w| w[0].created_at < w[1].created_at));
        expected.push(turns.into_iter().map(|r| r.id).collect::<Vec<_>>());
    }
    // A second handle on the file (another process would do the same) enqueues in the same
    // millisecond too, and its turn lands after the first handle's.
    let other = f.reopen();
    let late = other.enqueue_run(&agent_run("s00", "turn 3")).unwrap();
    expected[0].push(late.id);
    let mut claimed: Vec<Vec<String>> = vec![Vec::new(); 20];
    while let Some(run) = f.store.claim_next_run("w", no_caps()).unwrap() {
        let session = run.session_id.clone().unwrap();
        let index: usize = session[1..].parse().unwrap();
        claimed[index].push(run.id.clone());
        f.store
            .finalize_run(
                &seed_agents_store::lease::Claim::of(&run).unwrap(),
                RunOutcome::Succeeded(RunOutput::default()),
            )
            .unwrap();
    }
    assert_eq!(claimed, expected);
}

#[test]
fn a_listing_built_at_run_time_runs_on_the_read_connection_and_decodes_rows() {
    use sea_query::{Expr, ExprTrait, Order, Query};
    use seed_agents_store::schema::runs;

    let f = fixture();
    let mut made = Vec::new();
    for title in ["one", "two", "three"] {
        made.push(f.store.enqueue_run(&workflow_run(title)).unwrap());
    }
    f.store.claim_run(A, &made[1].id, "w").unwrap().unwrap();
    // Filter, sort and page chosen at run time; the enum and the strings are bound values.
    let queued = |after: &str| {
        Query::select()
            .columns(runs::Column::ALL.iter().copied())
            .from(runs::Column::Table)
            .and_where(Expr::col(runs::Column::AccountId).eq(A))
            .and_where(Expr::col(runs::Column::Status).eq(Status::Queued))
            .and_where(Expr::col(runs::Column::Id).gt(after))
            .order_by(runs::Column::Id, Order::Asc)
            .limit(1)
            .to_owned()
    };
    let mut expected: Vec<&runs::Row> = [&made[0], &made[2]].into();
    expected.sort_by(|a, b| a.id.cmp(&b.id));
    let first: Vec<runs::Row> = f.store.select(&queued("")).unwrap();
    assert_eq!(first, [expected[0].clone()]);
    let second: Vec<runs::Row> = f.store.select(&queued(&first[0].id)).unwrap();
    assert_eq!(second, [expected[1].clone()]);
    let last: Vec<runs::Row> = f.store.select(&queued(&second[0].id)).unwrap();
    assert!(last.is_empty());
    // Another account's runs never match its filter.
    let other: Vec<runs::Row> = f
        .store
        .select(
            Query::select()
                .columns(runs::Column::ALL.iter().copied())
                .from(runs::Column::Table)
                .and_where(Expr::col(runs::Column::AccountId).eq("someone-else")),
        )
        .unwrap();
    assert!(other.is_empty());
}

#[test]
fn a_value_sqlite_cannot_hold_is_a_typed_error_naming_the_statement() {
    use sea_query::{Expr, ExprTrait, Query};
    use seed_agents_store::schema::runs;

    let f = fixture();
    let err = f
        .store
        .select::<runs::Row>(
            Query::select()
                .columns(runs::Column::ALL.iter().copied())
                .from(runs::Column::Table)
                .and_where(Expr::col(runs::Column::Attempt).eq(u64::MAX)),
        )
        .unwrap_err();
    assert!(
        matches!(err, Error::Invalid { field: "statement", ref reason } if reason.contains("does not fit")),
        "{err:?}"
    );
}

/// A listing means the same on both backends: a sort key that may be NULL puts its NULLs first
/// ascending and last descending (SQLite's order), `LIKE` folds ASCII case only, and what the
/// two would evaluate differently is refused on both, naming it.
#[test]
fn a_listing_means_on_every_backend_what_it_means_on_sqlite() {
    use sea_query::{Expr, ExprTrait, Func, Order, Query};
    use seed_agents_store::schema::runs;

    let f = fixture();
    let mut delayed = workflow_run("Nightly report");
    delayed.not_before = Some(T0 + 1_000);
    let delayed = f.store.enqueue_run(&delayed).unwrap();
    let undelayed = f.store.enqueue_run(&workflow_run("nightly ÉTÉ")).unwrap();
    let listing = |order: Order| {
        Query::select()
            .columns(runs::Column::ALL.iter().copied())
            .from(runs::Column::Table)
            .and_where(Expr::col(runs::Column::AccountId).eq(A))
            .order_by(runs::Column::NotBefore, order)
            .to_owned()
    };
    let ids = |rows: Vec<runs::Row>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let ascending = ids(f.store.select(&listing(Order::Asc)).unwrap());
    assert_eq!(ascending, [undelayed.id.clone(), delayed.id.clone()]);
    let descending = ids(f.store.select(&listing(Order::Desc)).unwrap());
    assert_eq!(descending, [delayed.id.clone(), undelayed.id.clone()]);

    let titled = |pattern: &str| {
        let mut select = listing(Order::Asc);
        select.and_where(Expr::col(runs::Column::Title).like(pattern));
        ids(f.store.select(&select).unwrap())
    };
    // ASCII letters match in either case; other letters only as written; `\` escapes nothing.
    assert_eq!(
        titled("NIGHTLY%"),
        [undelayed.id.clone(), delayed.id.clone()]
    );
    assert_eq!(titled("%été"), Vec::<String>::new());
    assert_eq!(titled("%ÉTÉ"), [undelayed.id]);
    assert_eq!(titled("nightly\\%"), Vec::<String>::new());
    let lowered = {
        let mut select = listing(Order::Asc);
        select.and_where(Func::lower(Expr::col(runs::Column::Title)).eq("nightly été"));
        ids(f.store.select(&select).unwrap())
    };
    assert_eq!(
        lowered,
        Vec::<String>::new(),
        "lower folds ASCII letters only"
    );

    for (what, condition) in [
        ("raw SQL", Expr::cust("random() > 0")),
        ("Div", Expr::col(runs::Column::Attempt).div(2).eq(0)),
        (
            "Greatest",
            Expr::expr(Func::greatest([
                Expr::col(runs::Column::Attempt),
                Expr::col(runs::Column::Depth),
            ]))
            .eq(1),
        ),
    ] {
        let mut select = listing(Order::Asc);
        select.and_where(condition);
        let err = f.store.select::<runs::Row>(&select).unwrap_err();
        assert!(
            matches!(&err, Error::Invalid { field: "statement", reason }
                if reason.contains(what) && reason.contains("PostgreSQL")),
            "{what}: {err:?}"
        );
    }
}
