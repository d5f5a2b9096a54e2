//! The one byte form of a tool document and its CID.
//!
//! Invariant: a document's bytes are its canonical DAG-CBOR encoding and its CID is the CIDv1
//! (DAG-CBOR, sha2-256) over exactly those bytes, in the text form the TypeScript server writes,
//! so equal documents have equal CIDs on both and any edit changes it. The CID is framed and
//! encoded by the `cid` crate (with its `multihash` and `multibase`), which `ipld-core`
//! re-exports.

use ipld_core::cid::multihash::Multihash;
use ipld_core::cid::Cid;
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::payload::{ToolDocument, ToolKind};
use crate::values::cbor;
use crate::values::check::invalid;

use super::Kind;

/// The multicodec code of DAG-CBOR, the content type a tool CID names.
const DAG_CBOR: u64 = 0x71;
/// The multihash code of sha2-256.
const SHA2_256: u64 = 0x12;

/// A tool document encoded once: its canonical bytes and the CID over them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The document's name.
    pub name: String,
    /// The document's kind.
    pub kind: Kind,
    /// [`encode_document`] of the document.
    pub bytes: Vec<u8>,
    /// [`cid_of`] the bytes.
    pub cid: String,
}

impl Encoded {
    /// Encodes `doc` and computes its CID. The document is not validated (see
    /// [`validate_document`](super::validate_document)).
    ///
    /// # Errors
    /// [`Error::Invalid`](crate::Error::Invalid) (`kind`) for a kind outside builtin, lambda and
    /// mcp; [`Error::Cbor`](crate::Error::Cbor) when the document has no canonical encoding (an
    /// `extra` key that repeats a field).
    pub fn new(doc: &ToolDocument) -> Result<Encoded> {
        let kind = row_kind(&doc.kind)?;
        let bytes = encode_document(doc)?;
        let cid = cid_of(&bytes);
        Ok(Encoded {
            name: doc.name.clone(),
            kind,
            bytes,
            cid,
        })
    }
}

/// The canonical DAG-CBOR bytes of `doc`, the bytes its CID is over.
///
/// Map keys are sorted length-first whatever order the input had, and an absent optional field
/// is left out (see [`crate::payload`]), as the TypeScript server writes documents, so a
/// document has the same bytes, and CID, on both, and decoding the bytes and encoding the result
/// gives the same bytes.
///
/// # Errors
/// [`Error::Cbor`](crate::Error::Cbor) when the document has no canonical encoding (an `extra` key
/// that repeats a field, a non-finite float).
pub fn encode_document(doc: &ToolDocument) -> Result<Vec<u8>> {
    Ok(cbor::to_vec(doc)?)
}

/// The CIDv1 of DAG-CBOR `bytes` in its usual text form: multibase base32 (lower case, no
/// padding, prefix `b`) of the CID's bytes, `varint(1) varint(0x71 dag-cbor) varint(0x12
/// sha2-256) varint(32) sha256(bytes)`. The result starts with `bafyrei`.
pub fn cid_of(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    // Wrapping fails only for a digest longer than the 64 bytes a `Cid` holds; sha2-256's is 32.
    let hash = Multihash::<64>::wrap(SHA2_256, &digest).expect("a sha2-256 digest fits");
    // `Display` of a CIDv1 is multibase base32 lower (the `b` prefix, no padding).
    Cid::new_v1(DAG_CBOR, hash).to_string()
}

/// The row kind of a document kind; a kind this version does not know cannot be stored.
pub(super) fn row_kind(kind: &ToolKind) -> Result<Kind> {
    match kind {
        ToolKind::Builtin => Ok(Kind::Builtin),
        ToolKind::Lambda => Ok(Kind::Lambda),
        ToolKind::Mcp => Ok(Kind::Mcp),
        ToolKind::Other(other) => Err(invalid(
            "kind",
            format!("{other:?} is not one of builtin, lambda, mcp"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cids_have_the_dag_cbor_sha256_prefix_and_length() {
        let cid = cid_of(b"\xa0");
        assert!(cid.starts_with("bafyrei"), "{cid}");
        assert_eq!(cid.len(), 59);
    }

    #[test]
    fn a_cid_names_dag_cbor_and_the_sha256_of_the_bytes() {
        let cid = Cid::try_from(cid_of(b"\xa0").as_str()).unwrap();
        assert_eq!(cid.version(), ipld_core::cid::Version::V1);
        assert_eq!(cid.codec(), DAG_CBOR);
        assert_eq!(cid.hash().code(), SHA2_256);
        assert_eq!(cid.hash().digest(), Sha256::digest(b"\xa0").as_slice());
    }
}
