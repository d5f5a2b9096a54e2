//! Keyset paging: page sizes, cursors and pages.
//!
//! Invariant: a page holds the rows strictly after its cursor in `(updated_at DESC, id DESC)`
//! order, so rows inserted meanwhile never shift or repeat a page.

use crate::error::{Error, Result};

/// The default number of rows in a page.
pub const DEFAULT_PAGE_SIZE: u32 = 50;
/// The largest page size accepted.
pub const MAX_PAGE_SIZE: u32 = 200;

/// Where a keyset page starts: the `(updated_at, id)` of the last row of the previous page. The
/// next page holds the rows strictly after it in `(updated_at DESC, id DESC)` order, so rows
/// inserted meanwhile (which sort first) never shift or repeat a page.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor {
    /// The last row's `updated_at`.
    pub updated_at: i64,
    /// The last row's id.
    pub id: String,
}

/// One page of a keyset listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The rows, in listing order.
    pub items: Vec<T>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor>,
}

/// Checks a requested page size: `None` is [`DEFAULT_PAGE_SIZE`], otherwise 1 to
/// [`MAX_PAGE_SIZE`].
///
/// # Errors
/// [`Error::Invalid`] (`pageSize`).
pub fn page_size(requested: Option<u32>) -> Result<u32> {
    match requested {
        None => Ok(DEFAULT_PAGE_SIZE),
        Some(n) if (1..=MAX_PAGE_SIZE).contains(&n) => Ok(n),
        Some(_) => Err(Error::Invalid {
            field: "pageSize",
            reason: format!("must be between 1 and {MAX_PAGE_SIZE}"),
        }),
    }
}

/// Fetches `size + 1` rows to learn whether there is a next page, and builds it.
pub(crate) fn page_of<T>(
    mut items: Vec<T>,
    size: u32,
    key: impl Fn(&T) -> (i64, String),
) -> Page<T> {
    let next = if items.len() > size as usize {
        items.truncate(size as usize);
        items.last().map(|last| {
            let (updated_at, id) = key(last);
            Cursor { updated_at, id }
        })
    } else {
        None
    };
    Page { items, next }
}
