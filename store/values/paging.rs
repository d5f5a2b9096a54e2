//! Keyset paging: page sizes, cursors and pages.
//!
//! Invariant: a page holds the rows strictly after its cursor in `(updated_at DESC, id DESC)`
//! order, so rows inserted meanwhile never shift or repeat a page.

use ipld_core::cid::multibase;

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

impl Cursor {
    /// The cursor as an opaque, URL-safe token (base64url, no padding) to hand a client, who
    /// hands it back for the next page.
    ///
    /// # Examples
    /// ```
    /// use seed_agents_store::paging::Cursor;
    ///
    /// let cursor = Cursor { updated_at: 1_764_000_000_000, id: "agent-7".into() };
    /// let token = cursor.to_token();
    /// assert!(token.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    /// assert_eq!(Cursor::from_token(&token)?, cursor);
    /// # Ok::<(), seed_agents_store::Error>(())
    /// ```
    pub fn to_token(&self) -> String {
        let text = format!("{}:{}", self.updated_at, self.id);
        multibase::encode(multibase::Base::Base64Url, text)
    }

    /// The cursor a token from [`Cursor::to_token`] stands for.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`token`) for anything that is not such a token.
    pub fn from_token(token: &str) -> Result<Cursor> {
        let bad = || Error::Invalid {
            field: "token",
            reason: "is not a page token this store issued".into(),
        };
        let (base, bytes) = multibase::decode(token).map_err(|_| bad())?;
        if base != multibase::Base::Base64Url {
            return Err(bad());
        }
        let text = String::from_utf8(bytes).map_err(|_| bad())?;
        let (updated_at, id) = text.split_once(':').ok_or_else(bad)?;
        let updated_at = updated_at.parse().map_err(|_| bad())?;
        crate::values::ids::check_id("token", id)?;
        Ok(Cursor {
            updated_at,
            id: id.to_owned(),
        })
    }
}

/// With the `serde` feature: the token ([`Cursor::to_token`]) as a plain string, what a client
/// is handed and hands back.
#[cfg(feature = "serde")]
impl serde::Serialize for Cursor {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_token())
    }
}

/// With the `serde` feature: the cursor a token string stands for ([`Cursor::from_token`]); any
/// other string is a serde error saying so.
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Cursor {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let token = <String as serde::Deserialize>::deserialize(deserializer)?;
        Cursor::from_token(&token).map_err(serde::de::Error::custom)
    }
}

/// One page of a keyset listing. With the `serde` feature it derives `Serialize` and
/// `Deserialize` (for a `T` that does), its `next` cursor as a token string.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
/// [`Error::Invalid`] (`page_size`).
pub fn page_size(requested: Option<u32>) -> Result<u32> {
    match requested {
        None => Ok(DEFAULT_PAGE_SIZE),
        Some(n) if (1..=MAX_PAGE_SIZE).contains(&n) => Ok(n),
        Some(_) => Err(Error::Invalid {
            field: "page_size",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_round_trips_and_anything_else_is_invalid() {
        for cursor in [
            Cursor {
                updated_at: 0,
                id: "a".into(),
            },
            Cursor {
                updated_at: -5,
                id: "id:with:colons/and é".into(),
            },
            Cursor {
                updated_at: i64::MAX,
                id: "x".repeat(256),
            },
        ] {
            assert_eq!(Cursor::from_token(&cursor.to_token()).unwrap(), cursor);
        }
        let base32 = multibase::encode(multibase::Base::Base32Lower, "1:a");
        for bad in [
            "",
            "u",
            "not a token",
            "uAAAA",
            &base32,
            &multibase::encode(multibase::Base::Base64Url, "x:a"),
            &multibase::encode(multibase::Base::Base64Url, "1:"),
        ] {
            assert!(
                matches!(
                    Cursor::from_token(bad),
                    Err(Error::Invalid { field: "token", .. })
                ),
                "{bad:?}"
            );
        }
    }
}
