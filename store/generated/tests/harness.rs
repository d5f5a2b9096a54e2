//! The round trip, generic over the table: one [`Case`] per table runs insert, get, the
//! `get_by_*` and `list_by_*` helpers, update and delete, and checks that another account sees
//! none of it. `case!` builds a case from a table's helpers; `round_trips!` makes one test each.

use super::*;

pub(super) type GetFn<R> = fn(&Connection, &str) -> Result<Option<R>>;
pub(super) type ListFn<R> = fn(&Connection, &str) -> Result<Vec<R>>;
/// The row's account, another account, and how to move a row to another account.
pub(super) type Scope<R> = (&'static str, &'static str, fn(&mut R, &str));

/// One table's round trip. Every helper takes the account it runs in (unscoped tables ignore it).
pub(super) struct Case<R> {
    pub(super) table: &'static str,
    /// A row with every column set.
    pub(super) row: R,
    /// `row` with some non-key columns changed.
    pub(super) updated: R,
    pub(super) insert: fn(&Connection, &R) -> Result<()>,
    pub(super) update: fn(&Connection, &R) -> Result<usize>,
    /// `get` by the row's primary key.
    pub(super) get: GetFn<R>,
    /// `delete` by the row's primary key.
    pub(super) delete: fn(&Connection, &str) -> Result<usize>,
    /// `list_by_*` calls that must return the row.
    pub(super) lists: Vec<ListFn<R>>,
    /// `get_by_*` calls that must return the row.
    pub(super) uniques: Vec<GetFn<R>>,
    /// For account-scoped tables: the row's account, another account, and how to move a row to
    /// another account.
    pub(super) scope: Option<Scope<R>>,
}

pub(super) fn check<R: Clone + PartialEq + Debug>(conn: &Connection, case: Case<R>) {
    let Case {
        table,
        row,
        updated,
        insert,
        update,
        get,
        delete,
        lists,
        uniques,
        scope,
    } = case;
    let account = scope.map_or("", |(account, _, _)| account);
    assert!(
        !format!("{row:?}").contains("None"),
        "{table}: the test row must set every column: {row:#?}"
    );
    assert_ne!(row, updated, "{table}: the update must change something");

    assert_eq!(get(conn, account).unwrap(), None, "{table}: before insert");
    insert(conn, &row).unwrap_or_else(|e| panic!("{table}: insert: {e}"));
    assert_eq!(
        get(conn, account).unwrap(),
        Some(row.clone()),
        "{table}: get after insert"
    );
    assert!(
        insert(conn, &row).is_err(),
        "{table}: inserting the same key again fails"
    );
    for (i, list) in lists.iter().enumerate() {
        let listed = list(conn, account).unwrap();
        assert!(
            listed.contains(&row),
            "{table}: list helper #{i} returns the row: {listed:#?}"
        );
    }
    for (i, unique) in uniques.iter().enumerate() {
        assert_eq!(
            unique(conn, account).unwrap(),
            Some(row.clone()),
            "{table}: get_by helper #{i}"
        );
    }

    if let Some((_, other, move_to)) = scope {
        assert_eq!(
            get(conn, other).unwrap(),
            None,
            "{table}: get in another account"
        );
        for (i, list) in lists.iter().enumerate() {
            assert!(
                !list(conn, other).unwrap().contains(&row),
                "{table}: list helper #{i} in another account"
            );
        }
        for (i, unique) in uniques.iter().enumerate() {
            assert_eq!(
                unique(conn, other).unwrap(),
                None,
                "{table}: get_by helper #{i} in another account"
            );
        }
        let mut foreign = updated.clone();
        move_to(&mut foreign, other);
        assert_eq!(
            update(conn, &foreign).unwrap(),
            0,
            "{table}: update in another account"
        );
        assert_eq!(
            delete(conn, other).unwrap(),
            0,
            "{table}: delete in another account"
        );
        assert_eq!(
            get(conn, account).unwrap(),
            Some(row.clone()),
            "{table}: the other account's update and delete left the row alone"
        );
    }

    assert_eq!(update(conn, &updated).unwrap(), 1, "{table}: update");
    assert_eq!(
        get(conn, account).unwrap(),
        Some(updated.clone()),
        "{table}: get after update"
    );
    for (i, unique) in uniques.iter().enumerate() {
        assert_eq!(
            unique(conn, account).unwrap(),
            Some(updated.clone()),
            "{table}: get_by helper #{i} after update"
        );
    }

    assert_eq!(delete(conn, account).unwrap(), 1, "{table}: delete");
    assert_eq!(
        get(conn, account).unwrap(),
        None,
        "{table}: get after delete"
    );
    for (i, list) in lists.iter().enumerate() {
        assert!(
            !list(conn, account).unwrap().contains(&updated),
            "{table}: list helper #{i} after delete"
        );
    }
    assert_eq!(delete(conn, account).unwrap(), 0, "{table}: deleting again");
    assert_eq!(
        update(conn, &updated).unwrap(),
        0,
        "{table}: updating a deleted row"
    );
}

/// Builds a [`Case`] from a table's helpers. `key(...)` is the primary key after the account;
/// `lists[...]`/`uniques[...]` name `list_by_*`/`get_by_*` helpers with their arguments after the
/// account; `update: |r| {...}` edits a copy of `row` into the updated row.
macro_rules! case {
    (
        $table:ident,
        scoped($account:expr, $other:expr),
        key($($key:expr),+),
        lists[$($list:ident($($list_arg:expr),*)),*],
        uniques[$($unique:ident($($unique_arg:expr),*)),*],
        row: $row:expr,
        update: |$r:ident| $update:block $(,)?
    ) => {{
        let row: schema::$table::Row = $row;
        let updated = {
            let mut $r = row.clone();
            $update;
            $r
        };
        Case {
            table: schema::$table::TABLE,
            row,
            updated,
            insert: schema::$table::insert,
            update: schema::$table::update,
            get: |c, a| schema::$table::get(c, a, $($key),+),
            delete: |c, a| schema::$table::delete(c, a, $($key),+),
            lists: vec![$({
                let f: ListFn<schema::$table::Row> =
                    |c, a| schema::$table::$list(c, a, $($list_arg),*);
                f
            }),*],
            uniques: vec![$({
                let f: GetFn<schema::$table::Row> =
                    |c, a| schema::$table::$unique(c, a, $($unique_arg),*);
                f
            }),*],
            scope: Some(($account, $other, |r, a| r.account_id = a.to_owned())),
        }
    }};
    (
        $table:ident,
        unscoped,
        key($($key:expr),+),
        lists[$($list:ident($($list_arg:expr),*)),*],
        uniques[$($unique:ident($($unique_arg:expr),*)),*],
        row: $row:expr,
        update: |$r:ident| $update:block $(,)?
    ) => {{
        let row: schema::$table::Row = $row;
        let updated = {
            let mut $r = row.clone();
            $update;
            $r
        };
        Case {
            table: schema::$table::TABLE,
            row,
            updated,
            insert: schema::$table::insert,
            update: schema::$table::update,
            get: |c, _| schema::$table::get(c, $($key),+),
            delete: |c, _| schema::$table::delete(c, $($key),+),
            lists: vec![$({
                let f: ListFn<schema::$table::Row> =
                    |c, _| schema::$table::$list(c, $($list_arg),*);
                f
            }),*],
            uniques: vec![$({
                let f: GetFn<schema::$table::Row> =
                    |c, _| schema::$table::$unique(c, $($unique_arg),*);
                f
            }),*],
            scope: None,
        }
    }};
}

/// One `#[test]` per table (named after it) in `round_trip`, and [`COVERED`] listing the tables.
macro_rules! round_trips {
    ($($table:ident => $case:expr;)*) => {
        mod round_trip {
            use super::*;
            $(
                #[test]
                fn $table() {
                    let (_dir, store) = world();
                    check(&*store.sqlite_writer().unwrap().raw(), $case);
                }
            )*
        }

        /// The tables `round_trip` covers.
        const COVERED: &[&str] = &[$(schema::$table::TABLE),*];
    };
}

/// The harness itself catches a helper that ignores the account: a `get` that always reads in
/// account A must fail the scoping check.
#[test]
#[should_panic(expected = "runs: get in another account")]
fn the_round_trip_catches_a_get_that_ignores_the_account() {
    let (_dir, store) = world();
    let mut case = case!(
        runs, scoped(A, B), key("run-2"), lists[], uniques[],
        row: run("run-2", A, Some("run-1"), runs::Status::Waiting, runs::Queue::Interactive),
        update: |r| { r.attempt = 2; },
    );
    case.get = |c, _| runs::get(c, A, "run-2");
    check(&*store.sqlite_writer().unwrap().raw(), case);
}
