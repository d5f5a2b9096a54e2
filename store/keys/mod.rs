//! The keys that encrypt secrets: where their bytes live ([`KeyProvider`]), which one encrypts
//! what (the `secret_keys` registry), rotating to a new key ([`Store::rotate_key`]) and moving
//! the key out of the database ([`Store::move_key_out`]).
//!
//! Invariants: every encrypted row (`secrets.ciphertext`,
//! `webhook_trigger_credentials.secret_ciphertext`) names in `key_id` the registered key that
//! decrypts it, and changes its ciphertext and its `key_id` in one write; the newest key not
//! retired encrypts; a key is retired (and, when the database holds it, deleted) only in the
//! write that finds no row naming it. Keys are created only by writes that encrypt (the first
//! secret) or rotate, never by a read, whatever the provider. Key bytes never reach an error, a
//! log or `Debug`: a key is known by its id and its fingerprint.
//!
//! [`Store::rotate_key`]: crate::Store::rotate_key
//! [`Store::move_key_out`]: crate::Store::move_key_out

mod providers;
pub(crate) mod registry;
mod relocate;
mod rotate;

use rand::RngCore;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::error::{Error, Result};

pub use crate::schema::secret_keys::Provider as ProviderKind;
pub use providers::{
    provider_from_spec, CommandKeyProvider, DatabaseKeyProvider, EnvKeyProvider, FileKeyProvider,
};
pub use relocate::MoveReport;
pub use rotate::{RotateOptions, RotationProgress, RotationReport, DEFAULT_ROTATION_BATCH};

/// The length of a key: AES-256.
pub const KEY_BYTES: usize = 32;

/// The label hashed with a key into its fingerprint, so that the fingerprint is not a plain
/// SHA-256 of the key that some other system might also publish.
const FINGERPRINT_LABEL: &[u8] = b"seed-agents-store secret key fingerprint v1\0";

/// A 32-byte AES-256 key. Zeroized on drop; `Debug` shows only the fingerprint.
///
/// Outside the database a key is written as 64 hexadecimal digits (either case), with
/// surrounding whitespace ignored; see [`EncryptionKey::from_hex`].
#[derive(Clone)]
pub struct EncryptionKey(Zeroizing<[u8; KEY_BYTES]>);

impl EncryptionKey {
    /// The key of these bytes.
    pub fn from_bytes(bytes: [u8; KEY_BYTES]) -> Self {
        EncryptionKey(Zeroizing::new(bytes))
    }

    /// A new key from the operating system's generator.
    pub fn generate() -> Self {
        let mut bytes = Zeroizing::new([0u8; KEY_BYTES]);
        rand::rngs::OsRng.fill_bytes(bytes.as_mut());
        EncryptionKey(bytes)
    }

    /// Parses 64 hexadecimal digits (surrounding whitespace ignored). `source` names where the
    /// text came from, for the error, which never holds the text.
    ///
    /// # Errors
    /// [`Error::KeyMalformed`] naming `source`.
    ///
    /// ```
    /// use seed_agents_store::keys::EncryptionKey;
    /// let key = EncryptionKey::from_hex(&"ab".repeat(32), "example")?;
    /// assert_eq!(key.fingerprint().len(), 32);
    /// assert!(EncryptionKey::from_hex("abcd", "example").is_err());
    /// # Ok::<(), seed_agents_store::Error>(())
    /// ```
    pub fn from_hex(text: &str, source: &str) -> Result<Self> {
        let text = text.trim();
        let malformed = |detail: &str| Error::KeyMalformed {
            provider: source.to_owned(),
            detail: detail.to_owned(),
        };
        if text.len() != 2 * KEY_BYTES {
            return Err(malformed(&format!(
                "a key is {} hexadecimal digits, this is {} characters",
                2 * KEY_BYTES,
                text.len()
            )));
        }
        let mut bytes = Zeroizing::new([0u8; KEY_BYTES]);
        hex::decode_to_slice(text, bytes.as_mut())
            .map_err(|_| malformed("a key is hexadecimal digits only"))?;
        Ok(EncryptionKey(bytes))
    }

    /// Builds a key from stored bytes (`server_config`), which must be exactly 32.
    pub(crate) fn from_slice(bytes: &[u8]) -> Result<Self> {
        let array: [u8; KEY_BYTES] = bytes
            .try_into()
            .map_err(|_| Error::SecretKeyMalformed { len: bytes.len() })?;
        Ok(EncryptionKey::from_bytes(array))
    }

    /// The key as 64 lowercase hexadecimal digits, in a buffer zeroized on drop: the form a file
    /// or an environment variable holds.
    pub fn to_hex(&self) -> Zeroizing<String> {
        Zeroizing::new(hex::encode(self.0.as_ref()))
    }

    /// The fingerprint: lowercase hex of the first 16 bytes of SHA-256 over a fixed label and
    /// the key. It tells keys apart and cannot give the key back.
    pub fn fingerprint(&self) -> String {
        let digest = Sha256::new()
            .chain_update(FINGERPRINT_LABEL)
            .chain_update(self.0.as_ref())
            .finalize();
        hex::encode(&digest[..16])
    }

    /// The key's bytes, for the cipher and for storing it in the database.
    pub(crate) fn bytes(&self) -> &[u8; KEY_BYTES] {
        &self.0
    }
}

impl std::fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EncryptionKey({})", self.fingerprint())
    }
}

/// Where the encryption keys live. The store asks its provider for keys when it encrypts or
/// decrypts, outside any transaction, and matches them to the `secret_keys` registry by
/// fingerprint; it never asks a provider to create a key.
///
/// A provider serves a key ring: its keys, the one to encrypt new values with first. During a
/// rotation to a key outside the database the ring holds the new key first and the old one
/// after it, until [`Store::rotate_key`](crate::Store::rotate_key) reports it retired. Keys of
/// the kind [`ProviderKind::Database`] are read by the store from `server_config` itself, so
/// [`DatabaseKeyProvider`] serves an empty ring.
///
/// This is the hook for a KMS or the OS keychain: implement it, or point a
/// [`CommandKeyProvider`] at a program that prints the key.
///
/// ```no_run
/// use seed_agents_store::keys::EnvKeyProvider;
/// use seed_agents_store::Store;
///
/// let store = Store::options()
///     .key_provider(EnvKeyProvider::new("SEED_AGENTS_SECRET_KEY"))
///     .open("data/agents.sqlite")?;
/// # Ok::<(), seed_agents_store::Error>(())
/// ```
pub trait KeyProvider: Send + Sync + std::fmt::Debug {
    /// The kind recorded in `secret_keys.provider` for the keys this provider creates.
    fn kind(&self) -> ProviderKind;

    /// Where the keys are, for messages: `env:NAME`, `file:PATH`, `command:PROGRAM`. Never a key.
    fn describe(&self) -> String;

    /// The key ring, the key to encrypt with first.
    ///
    /// # Errors
    /// The provider's own: unset variable, unsafe file, failed command, malformed key.
    fn keys(&self) -> Result<Vec<EncryptionKey>>;

    /// Asked to keep `key` when the store moves its key out of the database
    /// ([`Store::move_key_out`](crate::Store::move_key_out)): a provider that can store a key
    /// does and returns `true`; the default returns `false`, and the key must already be served.
    ///
    /// # Errors
    /// The provider's own, when storing fails.
    fn offer(&self, key: &EncryptionKey) -> Result<bool> {
        let _ = key;
        Ok(false)
    }
}

/// A provider's key ring, fetched once before a write or a read (never inside a transaction,
/// so a slow command never holds the write lock). A failed fetch is kept, not returned, and
/// surfaces only when a key outside the database is actually needed: rows under a database key
/// stay readable while the external provider is unreachable.
pub(crate) struct Ring<'a> {
    pub(crate) provider: &'a dyn KeyProvider,
    keys: Vec<EncryptionKey>,
    failure: Option<Error>,
}

impl<'a> Ring<'a> {
    /// Asks `provider` for its keys; the database provider has none to ask for.
    pub(crate) fn fetch(provider: &'a dyn KeyProvider) -> Self {
        Ring::fetch_if(provider, true)
    }

    /// [`Ring::fetch`] when the operation may need a key (`needed`), an empty ring otherwise: an
    /// operation that may or may not encrypt runs no key command when it will not.
    pub(crate) fn fetch_if(provider: &'a dyn KeyProvider, needed: bool) -> Self {
        let (keys, failure) = match provider.kind() {
            _ if !needed => (Vec::new(), None),
            ProviderKind::Database => (Vec::new(), None),
            _ => match provider.keys() {
                Ok(keys) => (keys, None),
                Err(e) => (Vec::new(), Some(e)),
            },
        };
        Ring {
            provider,
            keys,
            failure,
        }
    }

    /// The ring's key with this fingerprint; the fetch's failure when it failed.
    pub(crate) fn find(&mut self, fingerprint: &str) -> Result<Option<&EncryptionKey>> {
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        Ok(self.keys.iter().find(|k| k.fingerprint() == fingerprint))
    }

    /// The key to encrypt with: the ring's first.
    pub(crate) fn first(&mut self) -> Result<&EncryptionKey> {
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        self.keys.first().ok_or_else(|| Error::KeyMalformed {
            provider: self.provider.describe(),
            detail: "it serves no key".into(),
        })
    }
}
