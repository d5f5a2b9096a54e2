//! Canonical DAG-CBOR: the one encoding of every `*_cbor` column.
//!
//! This module owns the byte form of payloads. Its invariant: [`to_vec`] only ever returns
//! canonical DAG-CBOR (map keys are text strings sorted length-first then bytewise, as
//! `@ipld/dag-cbor` sorts them, each key once; integers and lengths minimal; floats always 64-bit
//! and finite; no indefinite lengths; `None` written as `null`), whatever the field order of the
//! Rust type, and [`from_slice`] rejects bytes that are not canonical. So equal values always
//! have equal bytes, which is what content addressing (tool document CIDs) and the byte-for-byte
//! idempotency comparison rely on. [`Cbor`] is the typed BLOB column value built on top.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_ipld_dagcbor::DecodeError;

/// Why a value could not be encoded to, or decoded from, canonical DAG-CBOR.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CborError {
    /// The value cannot be written as canonical DAG-CBOR: a map key that is not a string, a
    /// non-finite float, an integer out of range, or a map that would hold the same key twice
    /// (for example a flattened `extra` entry that shadows a typed field).
    #[error("cannot encode as canonical DAG-CBOR: {message}")]
    Encode {
        /// What went wrong, as the serializer reported it.
        message: String,
    },
    /// The bytes are not DAG-CBOR, or do not have the shape of the requested type.
    #[error("cannot decode DAG-CBOR: {message}")]
    Decode {
        /// The serde message.
        message: String,
    },
    /// The bytes are well-formed CBOR but not canonical DAG-CBOR: map keys unsorted or repeated,
    /// an integer or length not minimally encoded, or an indefinite length.
    #[error("non-canonical DAG-CBOR input: {message}")]
    NonCanonical {
        /// Which rule the input breaks.
        message: String,
    },
}

/// Sorts a decoder error into [`CborError`]: canonical-form violations apart from the rest.
fn decode_error<E: fmt::Debug>(error: DecodeError<E>) -> CborError {
    match error {
        DecodeError::UnorderedKey => CborError::NonCanonical {
            message: "map keys are not sorted length-first then bytewise, or repeat".into(),
        },
        DecodeError::NonMinimal { name, found } => CborError::NonCanonical {
            message: format!("{name} is not minimally encoded (head byte {found:#04x})"),
        },
        DecodeError::IndefiniteSize => CborError::NonCanonical {
            message: "indefinite-length item".into(),
        },
        DecodeError::Msg(message) => CborError::Decode { message },
        other => CborError::Decode {
            message: other.to_string(),
        },
    }
}

/// Encodes `value` as canonical DAG-CBOR.
///
/// Map keys (struct fields included, in any declaration order, and flattened maps) are sorted
/// length-first then bytewise, and the result is checked once more so that a map holding the same
/// key twice is an error rather than non-canonical bytes.
///
/// # Errors
///
/// [`CborError::Encode`] when the value has no canonical DAG-CBOR form (see the variant).
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CborError> {
    let bytes = to_vec_unshadowed(value)?;
    // The serializer sorts every map it writes but cannot see a key written twice (a flattened
    // map that shadows a field). One allocation-free pass with the strict decoder catches it.
    serde_ipld_dagcbor::from_slice::<CanonicalCheck>(&bytes).map_err(|error| {
        CborError::Encode {
            message: match decode_error(error) {
                CborError::NonCanonical { message } => {
                    format!("the value would encode non-canonically: {message}")
                }
                other => other.to_string(),
            },
        }
    })?;
    Ok(bytes)
}

/// [`to_vec`] without its check pass, for a value none of whose maps can hold a key twice: one
/// with no flattened map that could shadow a field (a hot write checks that cheaply itself).
pub(crate) fn to_vec_unshadowed<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CborError> {
    serde_ipld_dagcbor::to_vec(value).map_err(|error| CborError::Encode {
        message: match error {
            serde_ipld_dagcbor::EncodeError::Msg(message) => message,
            other => other.to_string(),
        },
    })
}

/// Decodes canonical DAG-CBOR into a `T`.
///
/// # Errors
///
/// [`CborError::NonCanonical`] when the bytes break a canonical-form rule,
/// [`CborError::Decode`] for any other failure (malformed bytes, trailing data, wrong shape).
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CborError> {
    serde_ipld_dagcbor::from_slice(bytes).map_err(decode_error)
}

/// Walks a whole value through the strict decoder, so that every map's key order is checked.
/// (`serde::de::IgnoredAny` is skipped without checks by the decoder, so it cannot do this.)
struct CanonicalCheck;

impl<'de> Deserialize<'de> for CanonicalCheck {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CanonicalCheckVisitor)
    }
}

struct CanonicalCheckVisitor;

impl<'de> Visitor<'de> for CanonicalCheckVisitor {
    type Value = CanonicalCheck;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any DAG-CBOR value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<CanonicalCheck, E> {
        Ok(CanonicalCheck)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<CanonicalCheck, E> {
        Ok(CanonicalCheck)
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<CanonicalCheck, E> {
        Ok(CanonicalCheck)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<CanonicalCheck, E> {
        Ok(CanonicalCheck)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<CanonicalCheck, E> {
        Ok(CanonicalCheck)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<CanonicalCheck, E> {
        Ok(CanonicalCheck)
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<CanonicalCheck, E> {
        Ok(CanonicalCheck)
    }

    fn visit_none<E: de::Error>(self) -> Result<CanonicalCheck, E> {
        Ok(CanonicalCheck)
    }

    fn visit_unit<E: de::Error>(self) -> Result<CanonicalCheck, E> {
        Ok(CanonicalCheck)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<CanonicalCheck, D::Error> {
        CanonicalCheck::deserialize(deserializer)
    }

    // A CID (tag 42) arrives as a newtype around its bytes.
    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<CanonicalCheck, D::Error> {
        deserializer.deserialize_bytes(CanonicalCheckVisitor)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CanonicalCheck, A::Error> {
        while seq.next_element::<CanonicalCheck>()?.is_some() {}
        Ok(CanonicalCheck)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CanonicalCheck, A::Error> {
        while map
            .next_entry::<CanonicalCheck, CanonicalCheck>()?
            .is_some()
        {}
        Ok(CanonicalCheck)
    }
}

/// A typed BLOB column value: the stored canonical DAG-CBOR bytes of a `T`.
///
/// The bytes are kept exactly as stored; decoding is explicit ([`Cbor::decode`]) so that reading a
/// row never fails or loses bytes because of its payload. Equality and hashing compare the bytes,
/// which for canonical DAG-CBOR is value equality. Converts to and from SQLite BLOBs.
///
/// # Examples
///
/// ```
/// use seed_agents_store::cbor::Cbor;
/// use std::collections::BTreeMap;
///
/// let mut refs = BTreeMap::new();
/// refs.insert("bb".to_string(), 1u8);
/// refs.insert("a".to_string(), 2u8);
/// let value: Cbor<BTreeMap<String, u8>> = Cbor::encode(&refs)?;
/// // {"a": 2, "bb": 1}: a two-entry map, the shorter key first.
/// assert_eq!(value.as_bytes(), b"\xa2\x61a\x02\x62bb\x01");
/// assert_eq!(value.decode()?, refs);
///
/// let conn = rusqlite::Connection::open_in_memory()?;
/// conn.execute("CREATE TABLE t (b BLOB)", ())?;
/// conn.execute("INSERT INTO t (b) VALUES (?1)", (&value,))?;
/// let back: Cbor<BTreeMap<String, u8>> = conn.query_row("SELECT b FROM t", (), |row| row.get(0))?;
/// assert_eq!(back, value);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Cbor<T> {
    bytes: Vec<u8>,
    _type: PhantomData<fn() -> T>,
}

impl<T> Cbor<T> {
    /// Wraps bytes as stored, without checking that they decode to a `T`.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        Cbor {
            bytes,
            _type: PhantomData,
        }
    }

    /// The stored bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Gives up the wrapper, returning the stored bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

impl<T: Serialize> Cbor<T> {
    /// Encodes `value` as canonical DAG-CBOR (see [`to_vec`]).
    ///
    /// # Errors
    ///
    /// [`CborError::Encode`] when the value has no canonical DAG-CBOR form.
    pub fn encode(value: &T) -> Result<Self, CborError> {
        to_vec(value).map(Self::from_bytes)
    }
}

impl<T: DeserializeOwned + 'static> Cbor<T> {
    /// Decodes the stored bytes (see [`from_slice`]).
    ///
    /// # Errors
    ///
    /// [`CborError::Decode`] or [`CborError::NonCanonical`] when the bytes are not a canonical
    /// encoding of a `T`.
    pub fn decode(&self) -> Result<T, CborError> {
        // The Log's events, the hot read of a replay, have a decoder of their own for the
        // shapes they are written in; it leaves everything else to serde's.
        let mut event: Option<T> = None;
        if let Some(slot) = (&mut event as &mut dyn std::any::Any)
            .downcast_mut::<Option<crate::payload::SessionEventPayload>>()
        {
            *slot = crate::payload::decode_event(&self.bytes);
        }
        match event {
            Some(event) => Ok(event),
            None => from_slice(&self.bytes),
        }
    }
}

impl<T> Clone for Cbor<T> {
    fn clone(&self) -> Self {
        Self::from_bytes(self.bytes.clone())
    }
}

impl<T> PartialEq for Cbor<T> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl<T> Eq for Cbor<T> {}

impl<T> Hash for Cbor<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.bytes.hash(state);
    }
}

impl<T> fmt::Debug for Cbor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Cbor<{}>({} bytes)",
            std::any::type_name::<T>(),
            self.bytes.len()
        )
    }
}

impl<T> ToSql for Cbor<T> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(ValueRef::Blob(&self.bytes)))
    }
}

impl<T> FromSql for Cbor<T> {
    /// Reads a BLOB as is; any other SQLite type is [`FromSqlError::InvalidType`].
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        match value {
            ValueRef::Blob(bytes) => Ok(Self::from_bytes(bytes.to_vec())),
            _ => Err(FromSqlError::InvalidType),
        }
    }
}

/// With the `serde` feature: the stored bytes as one byte string (in JSON, an array of numbers),
/// never the decoded value, so serializing a row cannot fail on its payload and deserializing
/// gives back exactly the bytes that were stored. [`Cbor::decode`] gives the value.
#[cfg(feature = "serde")]
impl<T> Serialize for Cbor<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.bytes)
    }
}

/// With the `serde` feature: the bytes [`Cbor`]'s `Serialize` wrote, taken as they are (like
/// [`Cbor::from_bytes`], without checking that they decode to a `T`).
#[cfg(feature = "serde")]
impl<'de, T> Deserialize<'de> for Cbor<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_byte_buf(BytesVisitor)
            .map(Self::from_bytes)
    }
}

/// Bytes from a byte string, or from a sequence of numbers (how JSON writes a byte string).
#[cfg(feature = "serde")]
struct BytesVisitor;

#[cfg(feature = "serde")]
impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Vec<u8>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("the bytes of a CBOR payload")
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Vec<u8>, E> {
        Ok(bytes.to_vec())
    }

    fn visit_byte_buf<E: de::Error>(self, bytes: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(bytes)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut bytes = Vec::new();
        while let Some(byte) = seq.next_element()? {
            bytes.push(byte);
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipld_core::ipld::Ipld;
    use std::collections::BTreeMap;

    /// Fields declared against length-first order on purpose.
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Unordered {
        zebra: u8,
        b: u8,
        aa: u8,
        a: u8,
    }

    #[test]
    fn struct_fields_are_sorted_length_first() {
        let bytes = to_vec(&Unordered {
            zebra: 1,
            b: 2,
            aa: 3,
            a: 4,
        })
        .unwrap();
        // a4 = map(4); then "a" 4, "b" 2, "aa" 3, "zebra" 1.
        let expected = b"\xa4\x61a\x04\x61b\x02\x62aa\x03\x65zebra\x01";
        assert_eq!(bytes, expected);
        assert_eq!(
            from_slice::<Unordered>(&bytes).unwrap(),
            Unordered {
                zebra: 1,
                b: 2,
                aa: 3,
                a: 4
            }
        );
    }

    #[test]
    fn key_lengths_across_the_one_byte_head_boundary_sort_by_length() {
        // A 23-byte key has a one-byte head (0x77), a 24-byte key a two-byte head (0x78 0x18):
        // the bytewise sort of encoded entries must still put the shorter key first, even when
        // the longer key is bytewise smaller.
        let mut map = BTreeMap::new();
        map.insert("a".repeat(24), 1u8);
        map.insert("b".repeat(23), 2u8);
        let bytes = to_vec(&map).unwrap();
        let decoded: Ipld = from_slice(&bytes).unwrap();
        let Ipld::Map(_) = decoded else {
            panic!("not a map")
        };
        assert_eq!(&bytes[1..3], &[0x77, b'b']);
    }

    #[test]
    fn duplicate_keys_through_flatten_are_an_encode_error() {
        #[derive(Serialize)]
        struct Open {
            a: u8,
            #[serde(flatten)]
            extra: BTreeMap<String, Ipld>,
        }
        let mut extra = BTreeMap::new();
        extra.insert("a".to_string(), Ipld::Integer(2));
        let error = to_vec(&Open { a: 1, extra }).unwrap_err();
        assert!(matches!(error, CborError::Encode { .. }), "{error:?}");
    }

    #[test]
    fn non_string_keys_and_non_finite_floats_are_encode_errors() {
        let mut map = BTreeMap::new();
        map.insert(1u8, 1u8);
        assert!(matches!(to_vec(&map), Err(CborError::Encode { .. })));
        assert!(matches!(to_vec(&f64::NAN), Err(CborError::Encode { .. })));
        assert!(matches!(
            to_vec(&f64::INFINITY),
            Err(CborError::Encode { .. })
        ));
    }

    #[test]
    fn without_the_check_pass_non_finite_floats_are_still_encode_errors() {
        for float in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let inside = Ipld::List(vec![Ipld::Float(float)]);
            assert!(matches!(
                to_vec_unshadowed(&inside),
                Err(CborError::Encode { .. })
            ));
        }
    }

    #[test]
    fn integers_are_minimal_and_floats_are_64_bit() {
        assert_eq!(to_vec(&23u64).unwrap(), [0x17]);
        assert_eq!(to_vec(&24u64).unwrap(), [0x18, 0x18]);
        assert_eq!(to_vec(&-1i64).unwrap(), [0x20]);
        assert_eq!(to_vec(&256u32).unwrap(), [0x19, 0x01, 0x00]);
        assert_eq!(
            to_vec(&1.5f32).unwrap(),
            [0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(to_vec(&Option::<u8>::None).unwrap(), [0xf6]);
    }

    #[test]
    fn sequences_of_unknown_length_are_definite() {
        let bytes = to_vec(&(0u8..3).collect::<Vec<_>>()).unwrap();
        assert_eq!(bytes, [0x83, 0, 1, 2]);
    }

    #[test]
    fn non_canonical_input_is_rejected() {
        // {"b": 1, "a": 2}: unsorted keys.
        let unsorted = b"\xa2\x61b\x01\x61a\x02";
        assert!(matches!(
            from_slice::<Ipld>(unsorted),
            Err(CborError::NonCanonical { .. })
        ));
        // {"a": 1, "a": 2}: a repeated key.
        let repeated = b"\xa2\x61a\x01\x61a\x02";
        assert!(matches!(
            from_slice::<Ipld>(repeated),
            Err(CborError::NonCanonical { .. })
        ));
        // 1 written with a one-byte argument.
        assert!(matches!(
            from_slice::<u8>(b"\x18\x01"),
            Err(CborError::NonCanonical { .. })
        ));
        // An indefinite-length array [1].
        assert!(matches!(
            from_slice::<Ipld>(b"\x9f\x01\xff"),
            Err(CborError::NonCanonical { .. })
        ));
        // A 32-bit float.
        assert!(from_slice::<Ipld>(b"\xfa\x3f\xc0\x00\x00").is_err());
    }

    #[test]
    fn garbage_and_shape_mismatches_are_decode_errors() {
        assert!(matches!(
            from_slice::<Ipld>(b"\xa1"),
            Err(CborError::Decode { .. })
        ));
        assert!(matches!(
            from_slice::<Ipld>(b"\x01\x02"),
            Err(CborError::Decode { .. })
        ));
        let error = from_slice::<Unordered>(b"\xa1\x61a\x01").unwrap_err();
        let CborError::Decode { message } = error else {
            panic!("{error:?}")
        };
        assert!(message.contains("missing field"), "{message}");
    }

    #[test]
    fn cbor_value_semantics_ignore_the_type_parameter_bounds() {
        struct NotCloneNorEq;
        let a = Cbor::<NotCloneNorEq>::from_bytes(vec![1, 2, 3]);
        let b = a.clone();
        assert_eq!(a, b);
        assert_ne!(a, Cbor::from_bytes(vec![1, 2]));
        let debug = format!("{a:?}");
        assert!(debug.contains("NotCloneNorEq"), "{debug}");
        assert!(debug.contains("3 bytes"), "{debug}");
        assert_eq!(b.into_bytes(), vec![1, 2, 3]);
    }
}
