//! The built-in key providers: the database (the default), an environment variable, a file and
//! an external command, and the `kind:where` spelling the CLI and a server's configuration use.
//!
//! Invariants: outside the database a key ring is text, one key per whitespace-separated word,
//! each 64 hexadecimal digits, the key to encrypt with first; no provider ever prints, logs or
//! puts a key into an error; a key file that group or others can access is refused before it is
//! read; a command is run as a program and its arguments, never through a shell.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use zeroize::Zeroizing;

use super::{EncryptionKey, KeyProvider, ProviderKind};
use crate::error::{Error, Result};
use crate::values::check::invalid;

/// Parses a key ring: whitespace-separated keys of 64 hex digits each, the first the current.
fn parse_ring(text: &str, source: &str) -> Result<Vec<EncryptionKey>> {
    let keys = text
        .split_whitespace()
        .map(|word| EncryptionKey::from_hex(word, source))
        .collect::<Result<Vec<_>>>()?;
    if keys.is_empty() {
        return Err(Error::KeyMalformed {
            provider: source.to_owned(),
            detail: "it serves no key".into(),
        });
    }
    Ok(keys)
}

/// Keys kept in the database itself, in `server_config.secret_encryption_key_v<id>`: the
/// default, and what the store always did. The store reads them in its own transactions, so
/// this provider's ring is empty.
#[derive(Debug, Clone, Copy, Default)]
pub struct DatabaseKeyProvider;

impl KeyProvider for DatabaseKeyProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Database
    }

    fn describe(&self) -> String {
        ProviderKind::Database.as_str().into()
    }

    fn keys(&self) -> Result<Vec<EncryptionKey>> {
        Ok(Vec::new())
    }
}

/// Keys in an environment variable: 64 hex digits, or several keys separated by whitespace
/// (the current first) during a rotation. Read each time a key is needed.
#[derive(Debug, Clone)]
pub struct EnvKeyProvider {
    name: String,
}

impl EnvKeyProvider {
    /// The provider reading the variable `name`.
    pub fn new(name: impl Into<String>) -> Self {
        EnvKeyProvider { name: name.into() }
    }
}

impl KeyProvider for EnvKeyProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Env
    }

    fn describe(&self) -> String {
        format!("env:{}", self.name)
    }

    fn keys(&self) -> Result<Vec<EncryptionKey>> {
        let value = std::env::var(&self.name).map_err(|_| Error::KeyEnvUnset {
            name: self.name.clone(),
        })?;
        let value = Zeroizing::new(value);
        parse_ring(&value, &self.describe())
    }
}

/// Keys in a file holding the ring as text (64 hex digits per key, the current first). The
/// file is refused, before it is read, when group or others have any access to it (on Unix):
/// `chmod 600`. [`KeyProvider::offer`] creates a missing file with mode 600 holding the key.
#[derive(Debug, Clone)]
pub struct FileKeyProvider {
    path: PathBuf,
}

impl FileKeyProvider {
    /// The provider reading the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileKeyProvider { path: path.into() }
    }

    /// The key file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn unreadable(&self, source: std::io::Error) -> Error {
        Error::KeyFileUnreadable {
            path: self.path.clone(),
            source,
        }
    }

    /// Refuses a file group or others can access.
    #[cfg(unix)]
    fn check_mode(&self, file: &std::fs::File) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let mode = file
            .metadata()
            .map_err(|e| self.unreadable(e))?
            .permissions()
            .mode()
            & 0o7777;
        if mode & 0o077 != 0 {
            return Err(Error::KeyFileExposed {
                path: self.path.clone(),
                mode,
            });
        }
        Ok(())
    }

    #[cfg(not(unix))]
    fn check_mode(&self, _file: &std::fs::File) -> Result<()> {
        Ok(())
    }
}

impl KeyProvider for FileKeyProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::File
    }

    fn describe(&self) -> String {
        format!("file:{}", self.path.display())
    }

    fn keys(&self) -> Result<Vec<EncryptionKey>> {
        use std::io::Read;
        let mut file = std::fs::File::open(&self.path).map_err(|e| self.unreadable(e))?;
        self.check_mode(&file)?;
        let mut text = Zeroizing::new(String::new());
        file.read_to_string(&mut text)
            .map_err(|e| self.unreadable(e))?;
        parse_ring(&text, &self.describe())
    }

    fn offer(&self, key: &EncryptionKey) -> Result<bool> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = match options.open(&self.path) {
            Ok(file) => file,
            // An existing file is the operator's: it must already serve the key.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(self.unreadable(e)),
        };
        let mut text = key.to_hex();
        text.push('\n');
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| self.unreadable(e))?;
        Ok(true)
    }
}

/// Keys printed by a program, the way git credential helpers work: the store runs `program`
/// with `args` (no shell: nothing in them is interpreted), stdin empty, and reads the ring from
/// its stdout; stderr passes through. A KMS or the OS keychain plugs in here, e.g.
/// `security find-generic-password -s seed-agents -w` on macOS or `secret-tool lookup service
/// seed-agents` on Linux. It runs each time a key is needed, never inside a transaction.
#[derive(Debug, Clone)]
pub struct CommandKeyProvider {
    program: PathBuf,
    args: Vec<String>,
}

impl CommandKeyProvider {
    /// The provider running `program` with `args`.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        CommandKeyProvider {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        }
    }

    /// The program and its arguments, for messages.
    fn command_line(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl KeyProvider for CommandKeyProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Command
    }

    fn describe(&self) -> String {
        format!("command:{}", self.command_line())
    }

    fn keys(&self) -> Result<Vec<EncryptionKey>> {
        let output = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|source| Error::KeyCommandSpawn {
                command: self.command_line(),
                source,
            })?;
        let stdout = Zeroizing::new(output.stdout);
        if !output.status.success() {
            return Err(Error::KeyCommandFailed {
                command: self.command_line(),
                status: output.status.to_string(),
            });
        }
        let text = std::str::from_utf8(&stdout).map_err(|_| Error::KeyMalformed {
            provider: self.describe(),
            detail: "its output is not text".into(),
        })?;
        parse_ring(text, &self.describe())
    }
}

/// The provider a spec names: `database`, `env:NAME`, `file:PATH` or `command:PROGRAM [ARG]...`
/// (the command split on whitespace, with no quoting and no shell). The CLI's `--key-provider`
/// and `move-key --to` take this form.
///
/// # Errors
/// [`Error::Invalid`] (`key_provider`) for any other form.
///
/// ```
/// use seed_agents_store::keys::{provider_from_spec, ProviderKind};
/// assert_eq!(provider_from_spec("env:SEED_KEY")?.kind(), ProviderKind::Env);
/// assert_eq!(provider_from_spec("command:pass show seed")?.describe(), "command:pass show seed");
/// assert!(provider_from_spec("vault:x").is_err());
/// # Ok::<(), seed_agents_store::Error>(())
/// ```
pub fn provider_from_spec(spec: &str) -> Result<Box<dyn KeyProvider>> {
    let refuse = || {
        invalid(
            "key_provider",
            "must be database, env:NAME, file:PATH or command:PROGRAM [ARG]...",
        )
    };
    if spec == "database" {
        return Ok(Box::new(DatabaseKeyProvider));
    }
    let (kind, rest) = spec.split_once(':').ok_or_else(refuse)?;
    if rest.trim().is_empty() {
        return Err(refuse());
    }
    Ok(match kind {
        "env" => Box::new(EnvKeyProvider::new(rest)),
        "file" => Box::new(FileKeyProvider::new(rest)),
        "command" => {
            let mut words = rest.split_whitespace();
            let program = words.next().ok_or_else(refuse)?;
            Box::new(CommandKeyProvider::new(program, words))
        }
        _ => return Err(refuse()),
    })
}
