//! Activity watermarks (`activity_watermarks`): the activity trigger monitor's per-account,
//! per-server position in an HM activity feed.
//!
//! Invariant: one row per `(account_id, server_url)`, written only by single-statement upserts
//! (so a poll, a success and an error never lose one another's columns): the cursor moves only
//! with a success, which also clears the last error; an error keeps the cursor.

use crate::sql::db::Db;

use crate::error::{Error, Result};
use crate::payload::ActivityCursor;
use crate::schema::activity_watermarks;
use crate::values::cbor::Cbor;
use crate::values::check::non_empty;
use crate::{query, Store};

impl Store {
    /// The watermark of one feed.
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error.
    pub fn watermark(
        &self,
        account_id: &str,
        server_url: &str,
    ) -> Result<Option<activity_watermarks::Row>> {
        activity_watermarks::get(&self.reading()?, account_id, server_url)
    }

    /// Every watermark of the account, by server URL.
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error.
    pub fn watermarks(&self, account_id: &str) -> Result<Vec<activity_watermarks::Row>> {
        activity_watermarks::list_by_account_id(&self.reading()?, account_id)
    }

    /// Sets the cursor of a feed (creating the row), leaving the poll and outcome columns.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty URL, [`Error::Sqlite`] otherwise.
    pub fn set_watermark_cursor(
        &self,
        account_id: &str,
        server_url: &str,
        cursor: &ActivityCursor,
    ) -> Result<activity_watermarks::Row> {
        let cursor = Cbor::encode(cursor)?;
        self.upsert_watermark(account_id, server_url, |tx, _now| {
            query!(
                "INSERT INTO activity_watermarks (account_id, server_url, cursor_cbor) VALUES (?1, ?2, ?3)
                 ON CONFLICT (account_id, server_url) DO UPDATE SET cursor_cbor = excluded.cursor_cbor",
                account_id,
                server_url,
                cursor
            )
            .execute(tx)
        })
    }

    /// Records that a poll of the feed started now (a new row starts with an empty cursor).
    ///
    /// # Errors
    /// As [`Store::set_watermark_cursor`].
    pub fn record_watermark_poll(
        &self,
        account_id: &str,
        server_url: &str,
    ) -> Result<activity_watermarks::Row> {
        let empty = Cbor::encode(&ActivityCursor::default())?;
        self.upsert_watermark(account_id, server_url, |tx, now| {
            query!(
                "INSERT INTO activity_watermarks (account_id, server_url, cursor_cbor, last_poll_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (account_id, server_url) DO UPDATE SET last_poll_at = excluded.last_poll_at",
                account_id,
                server_url,
                empty,
                now
            )
            .execute(tx)
        })
    }

    /// Records a successful poll: the new cursor, `last_success_at` now, the last error cleared.
    ///
    /// # Errors
    /// As [`Store::set_watermark_cursor`].
    pub fn record_watermark_success(
        &self,
        account_id: &str,
        server_url: &str,
        cursor: &ActivityCursor,
    ) -> Result<activity_watermarks::Row> {
        let cursor = Cbor::encode(cursor)?;
        self.upsert_watermark(account_id, server_url, |tx, now| {
            query!(
                "INSERT INTO activity_watermarks (account_id, server_url, cursor_cbor, last_success_at, last_error)
                 VALUES (?1, ?2, ?3, ?4, NULL)
                 ON CONFLICT (account_id, server_url) DO UPDATE SET cursor_cbor = excluded.cursor_cbor,
                   last_success_at = excluded.last_success_at, last_error = NULL",
                account_id,
                server_url,
                cursor,
                now
            )
            .execute(tx)
        })
    }

    /// Records a failed poll: `last_error` set, cursor and `last_success_at` kept.
    ///
    /// # Errors
    /// As [`Store::set_watermark_cursor`].
    pub fn record_watermark_error(
        &self,
        account_id: &str,
        server_url: &str,
        error: &str,
    ) -> Result<activity_watermarks::Row> {
        let empty = Cbor::encode(&ActivityCursor::default())?;
        self.upsert_watermark(account_id, server_url, |tx, _now| {
            query!(
                "INSERT INTO activity_watermarks (account_id, server_url, cursor_cbor, last_error) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (account_id, server_url) DO UPDATE SET last_error = excluded.last_error",
                account_id,
                server_url,
                empty,
                error
            )
            .execute(tx)
        })
    }
}

impl Store {
    /// The shared body of every watermark write: the URL check, then in one write transaction
    /// the account touched, the caller's single upsert, and the row read back.
    fn upsert_watermark(
        &self,
        account_id: &str,
        server_url: &str,
        mut upsert: impl FnMut(&Db, i64) -> Result<usize>,
    ) -> Result<activity_watermarks::Row> {
        non_empty("server_url", server_url)?;
        self.write(|tx, now| {
            crate::accounts::touch(tx, account_id, now)?;
            upsert(tx, now)?;
            read_back(tx, account_id, server_url)
        })
    }
}

/// The row just written.
fn read_back(conn: &Db, account_id: &str, server_url: &str) -> Result<activity_watermarks::Row> {
    activity_watermarks::get(conn, account_id, server_url)?.ok_or_else(|| Error::NotFound {
        what: "watermark",
        id: server_url.to_owned(),
    })
}
