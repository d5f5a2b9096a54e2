//! Extensions: a server crate's own tables in the store's database, under the same gate.
//!
//! A server crate declares an extension in its `build.rs` (`seed_agents_codegen::Builder::
//! extension`), which checks its schema and migrations on top of the store's and generates
//! [`Extension`] with its rows, helpers and checked-SQL macros. Registered with
//! [`OpenOptions::extension`](crate::OpenOptions::extension), it is installed and migrated
//! after the store, each under its own version key ([`version_key`]), so the store's releases
//! and the extension's never collide.
//!
//! Invariant: every object of an open database belongs to exactly one owner (the store at its
//! version, or a registered extension at its own) and has exactly that owner's structure; the
//! gate refuses a file holding an object that belongs to nobody, an extension this program does
//! not declare, or one newer than its declaration. The extension's rows are written only
//! through [`Store::write_extension`](crate::Store::write_extension) ([`write`]), which cannot
//! write the store's.

pub(crate) mod write;

use crate::error::{Error, Refusal, Result};
use crate::values::version::{self, parse_version, EmbeddedMigration, VERSION_KEY};
use seed_agents_model::{diff, Schema};
use std::collections::BTreeSet;
use std::sync::Arc;

/// A server crate's own schema, as its build generated it: register it with
/// [`OpenOptions::extension`](crate::OpenOptions::extension).
///
/// The generated module of an extension holds one as the constant `EXTENSION`; its fields are
/// the build's output, not API to fill by hand. It is `Copy`: pass it by value or by reference.
///
/// ```ignore
/// mod db {
///     include!(concat!(env!("OUT_DIR"), "/prefs.rs"));
/// }
/// let store = seed_agents_store::Store::options()
///     .extension(db::EXTENSION)
///     .open("data/agents.sqlite")?;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Extension {
    #[doc(hidden)]
    pub name: &'static str,
    #[doc(hidden)]
    pub version: u32,
    #[doc(hidden)]
    pub schema_sql: &'static str,
    #[doc(hidden)]
    pub migrations: &'static [EmbeddedMigration],
    #[doc(hidden)]
    pub fingerprints: &'static [&'static str],
    #[doc(hidden)]
    pub models: &'static [&'static str],
    #[doc(hidden)]
    pub postgres_schema: &'static [&'static str],
    #[doc(hidden)]
    pub postgres_migrations: &'static [EmbeddedMigration],
    #[doc(hidden)]
    pub postgres_fingerprints: &'static [(u32, &'static str)],
}

impl Extension {
    /// Its name, as declared in its `build.rs`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The version this build installs and migrates it to: the number of its last migration.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The `server_config` key its version is stored under.
    pub fn version_key(&self) -> String {
        version_key(self.name)
    }

    /// Its structure at `version` (of this build's chain), from the canonical JSON the build
    /// embedded.
    pub(crate) fn model(&self, version: u32) -> Schema {
        Schema::from_canonical_json(self.models[version as usize])
            .expect("the build embeds every version's model as canonical JSON")
    }

    /// The names of its objects at its newest version, lower-case.
    fn names(&self) -> BTreeSet<String> {
        lower_names(&self.model(self.version))
    }
}

/// The `server_config` keys of extensions start with this.
pub const KEY_PREFIX: &str = "extension:";

/// The `server_config` key of the extension `name`'s version: `extension:<name>:` followed by
/// the store's own key name (`schema_migration_version`), its value TEXT digits as the store's.
pub fn version_key(name: &str) -> String {
    format!("{KEY_PREFIX}{name}:{VERSION_KEY}")
}

/// The extension a `server_config` key names, if it is an extension's version key.
fn named_by(key: &str) -> Option<&str> {
    key.strip_prefix(KEY_PREFIX)?
        .strip_suffix(VERSION_KEY)?
        .strip_suffix(':')
}

/// The extensions an open registers, checked to be distinct and to own distinct objects.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extensions {
    list: Arc<[Extension]>,
    /// Every object name they own at their newest versions, lower-case.
    owned: Arc<BTreeSet<String>>,
}

impl Extensions {
    /// Checks and keeps `list`.
    ///
    /// # Errors
    /// [`Error::ExtensionDeclaration`] when two share a name or an object, or one owns an
    /// object of the store's.
    pub(crate) fn new(list: Vec<Extension>) -> Result<Extensions> {
        // Most stores register none: their open reads no model.
        if list.is_empty() {
            return Ok(Extensions::default());
        }
        let store = lower_names(&version::model(crate::schema::SCHEMA_VERSION));
        let mut owned = BTreeSet::new();
        let mut names = BTreeSet::new();
        let declared = |name: &str, detail: String| Error::ExtensionDeclaration {
            name: name.to_string(),
            detail,
        };
        for ext in &list {
            if !names.insert(ext.name) {
                return Err(declared(ext.name, "it is registered twice".into()));
            }
            for object in ext.names() {
                if store.contains(&object) {
                    return Err(declared(
                        ext.name,
                        format!("its `{object}` is the name of one of the store's objects (this store release added it): rename it in a migration of the extension"),
                    ));
                }
                if !owned.insert(object.clone()) {
                    return Err(declared(
                        ext.name,
                        format!("its `{object}` is also another registered extension's"),
                    ));
                }
            }
        }
        Ok(Extensions {
            list: list.into(),
            owned: Arc::new(owned),
        })
    }

    /// The registered extensions, in the order they were registered (installed and migrated
    /// in that order).
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Extension> + '_ {
        self.list.iter()
    }

    /// Whether none is registered.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Every object name they own, lower-case: what their write path may write.
    pub(crate) fn owned(&self) -> Arc<BTreeSet<String>> {
        self.owned.clone()
    }

    /// The version each registered extension claims (`None`: not installed), read through
    /// `read` (a key's stored text) from the keys `stored` (every extension key the database
    /// holds): the refusal for an undeclared, unparseable or newer one.
    ///
    /// # Errors
    /// Whatever `read` fails with (trouble reading, never a refusal).
    pub(crate) fn claimed(
        &self,
        stored: &[String],
        mut read: impl FnMut(&str) -> Result<Option<String>>,
    ) -> Result<std::result::Result<Vec<Option<u32>>, Refusal>> {
        for key in stored {
            let Some(name) = named_by(key) else { continue };
            if !self.iter().any(|e| e.name == name) {
                return Ok(Err(Refusal::UndeclaredExtension {
                    name: name.to_string(),
                    version: read(key)?.unwrap_or_default(),
                }));
            }
        }
        let mut versions = Vec::new();
        for ext in self.iter() {
            let Some(value) = read(&ext.version_key())? else {
                versions.push(None);
                continue;
            };
            let Some(found) = parse_version(&value) else {
                return Ok(Err(Refusal::UnparseableExtensionVersion {
                    name: ext.name.to_string(),
                    value,
                }));
            };
            if found > ext.version {
                return Ok(Err(Refusal::ExtensionAhead {
                    name: ext.name.to_string(),
                    found,
                    supported: ext.version,
                }));
            }
            versions.push(Some(found));
        }
        Ok(Ok(versions))
    }
}

/// What a read-only open would have to do to the registered `extensions` found at `versions`
/// (install or migrate one), if anything.
pub(crate) fn pending(extensions: &Extensions, versions: &[Option<u32>]) -> Option<String> {
    extensions
        .iter()
        .zip(versions)
        .find_map(|(ext, v)| match *v {
            None => Some(format!(
                "its extension `{}` is not installed and needs version {}",
                ext.name, ext.version
            )),
            Some(v) if v < ext.version => Some(format!(
                "its extension `{}` is at version {v} and needs migrating to {}",
                ext.name, ext.version
            )),
            Some(_) => None,
        })
}

/// The names of `schema`'s objects, lower-case: SQLite compares names without case.
fn lower_names(schema: &Schema) -> BTreeSet<String> {
    schema
        .names()
        .into_iter()
        .map(str::to_ascii_lowercase)
        .collect()
}

/// One owner of objects in a database: the store (`name` `None`) or an extension, with the
/// structure it must have there and that structure's fingerprint.
pub(crate) struct Owner<'a> {
    pub(crate) name: Option<&'static str>,
    pub(crate) version: u32,
    pub(crate) expected: Schema,
    pub(crate) fingerprint: &'a str,
}

/// Judges `actual`, a whole database's structure, against its `owners` (the store first):
/// every object must belong to one of them, and each owner's objects must have its structure
/// exactly. An object of nobody is refused as a difference from the store's version, naming
/// it. `supported` is this binary's store version, for the refusal.
pub(crate) fn judge(
    actual: &Schema,
    owners: &[Owner<'_>],
    supported: u32,
) -> std::result::Result<(), Refusal> {
    let owned: BTreeSet<String> = owners
        .iter()
        .flat_map(|o| lower_names(&o.expected))
        .collect();
    let unowned: Vec<String> = actual
        .names()
        .into_iter()
        .filter(|n| !owned.contains(&n.to_ascii_lowercase()))
        .map(str::to_string)
        .collect();
    for owner in owners {
        let mine = lower_names(&owner.expected);
        // Objects of nobody are judged with the store's, as objects its version does not have.
        let store = owner.name.is_none();
        let part = actual.select(|n| {
            mine.contains(&n.to_ascii_lowercase()) || (store && unowned.iter().any(|u| u == n))
        });
        if part.fingerprint() == owner.fingerprint {
            continue;
        }
        let left = match owner.name {
            None => format!("version {}", owner.version),
            Some(name) => format!("extension {name} version {}", owner.version),
        };
        let diff = diff::render(
            &diff::diff(&owner.expected, &part),
            &left,
            "the database",
            |_| None,
        );
        return Err(match owner.name {
            None => Refusal::StructureMismatch {
                version: owner.version,
                supported,
                diff,
                unowned,
            },
            Some(name) => Refusal::ExtensionStructureMismatch {
                name: name.to_string(),
                version: owner.version,
                diff,
            },
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_keys_name_their_extension() {
        assert_eq!(
            version_key("prefs"),
            "extension:prefs:schema_migration_version"
        );
        assert_eq!(named_by(&version_key("prefs")), Some("prefs"));
        assert_eq!(named_by("extension:prefs"), None);
        assert_eq!(named_by(VERSION_KEY), None);
    }
}
