//! The `build.rs` entry point: load and check the project, report undocumented schema objects
//! (warnings, or an error when strict), then write generated code to `OUT_DIR`, touching the file
//! only when its bytes change.

use crate::coverage::{self, CI_ENV, STRICT_DOCS_ENV};
use crate::emit;
use crate::error::{Error, Result};
use crate::project::Project;
use std::fs;
use std::path::PathBuf;

/// File name of the generated module inside the output directory (an extension's is
/// `<name>.rs`).
pub const GENERATED_FILE: &str = "schema.rs";

/// Configures and runs code generation, prost-build style.
///
/// In `build.rs`, inside `fn main()`:
///
/// ```no_run
/// if let Err(e) = seed_agents_codegen::Builder::new(env!("CARGO_MANIFEST_DIR")).run() {
///     eprintln!("{e}");
///     std::process::exit(1);
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    root: PathBuf,
    out_dir: Option<PathBuf>,
    runtime: String,
    writes: emit::rust::WriteHelpers,
    serde_feature: Option<String>,
    emit_cargo_directives: bool,
    strict_docs: Option<bool>,
    /// The extension's name and the store's schema directory it extends.
    extension: Option<(String, PathBuf)>,
    module: Option<String>,
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct Output {
    /// The checked project.
    pub project: Project,
    /// Where the generated module was written.
    pub path: PathBuf,
    /// Whether the file's bytes changed (false: left untouched so nothing recompiles).
    pub changed: bool,
}

impl Builder {
    /// A builder for the schema directory `root` (holding schema.sql and migrations/).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Builder {
            root: root.into(),
            out_dir: None,
            runtime: "crate::__private".into(),
            writes: emit::rust::WriteHelpers::Public,
            serde_feature: None,
            emit_cargo_directives: true,
            strict_docs: None,
            extension: None,
            module: None,
        }
    }

    /// Declares the schema directory as the extension `name` of the store whose schema
    /// directory is `store` (`seed_agents_schema::DIR`): a server crate's own tables, with their
    /// own `schema.sql`, `migrations/` and lock, replayed on top of the store's newest schema
    /// and checked as the store's are ([`extension::load`](crate::extension::load)).
    ///
    /// The generated module (`$OUT_DIR/<name>.rs`) holds the extension's rows, helpers and
    /// docs, `EXTENSION` (what `OpenOptions::extension` registers) and the crate's own `query!`
    /// and `query_as!`, which know the store's tables and the extension's. Its runtime path
    /// defaults to `::seed_agents_store::__private`, and the crate includes it at
    /// [`Builder::module`] (default `crate::db`).
    ///
    /// In the server crate's `build.rs`:
    ///
    /// ```no_run
    /// # let store_schema_dir = "";
    /// // store_schema_dir: seed_agents_schema::DIR
    /// let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("db");
    /// if let Err(e) = seed_agents_codegen::Builder::new(root)
    ///     .extension("prefs", store_schema_dir)
    ///     .run()
    /// {
    ///     eprintln!("error: {e}");
    ///     std::process::exit(1);
    /// }
    /// ```
    pub fn extension(mut self, name: &str, store: impl Into<PathBuf>) -> Self {
        self.extension = Some((name.to_string(), store.into()));
        if self.runtime == "crate::__private" {
            self.runtime = "::seed_agents_store::__private".into();
        }
        self
    }

    /// The absolute path at which the crate includes an extension's generated module (default
    /// `crate::db`): its `query!` names the extension's generated types through it.
    pub fn module(mut self, path: &str) -> Self {
        self.module = Some(path.to_string());
        self
    }

    /// Where to write the generated module (default: `$OUT_DIR`).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// The path through which generated code reaches the runtime (default `crate::__private`).
    pub fn runtime_path(mut self, path: impl Into<String>) -> Self {
        self.runtime = path.into();
        self
    }

    /// Who may call the generated `insert`, `update` and `delete` helpers (default
    /// [`WriteHelpers::Public`](emit::rust::WriteHelpers::Public)). A crate whose operations keep
    /// invariants across rows passes [`WriteHelpers::Crate`](emit::rust::WriteHelpers::Crate) so
    /// that no other crate can write around them.
    pub fn write_helpers(mut self, writes: emit::rust::WriteHelpers) -> Self {
        self.writes = writes;
        self
    }

    /// The cargo feature of the including crate that turns on serde support (default `None`: no
    /// serde code). With `Some("serde")`, every `Row` derives `Serialize` and `Deserialize` and
    /// every enum (de)serializes as its stored text, under `#[cfg(feature = "serde")]`; the
    /// runtime path must then provide `serde` (see
    /// [`Options::serde_feature`](emit::rust::Options::serde_feature)).
    pub fn serde_feature(mut self, feature: Option<&str>) -> Self {
        self.serde_feature = feature.map(str::to_owned);
        self
    }

    /// Whether to print `cargo:` directives (default true; tests turn it off).
    pub fn cargo_directives(mut self, on: bool) -> Self {
        self.emit_cargo_directives = on;
        self
    }

    /// Whether a table, column or index of schema.sql without a doc comment fails the run (true)
    /// or is a warning (false). Default: decided by the environment, see
    /// [`coverage::strict_from_env`] (`SEED_AGENTS_STRICT_DOCS`, else `CI=true`).
    pub fn strict_docs(mut self, strict: bool) -> Self {
        self.strict_docs = Some(strict);
        self
    }

    /// Loads and checks the project, then writes `schema.rs`. Undocumented objects become
    /// warnings in [`Output::project`] (printed as `cargo:warning`), or an error when strict.
    ///
    /// # Errors
    /// Every check of [`Project::load`], [`Error::Undocumented`] when strict, [`Error::Env`] for
    /// an unreadable `SEED_AGENTS_STRICT_DOCS`, plus I/O errors writing the output.
    pub fn run(&self) -> Result<Output> {
        if self.emit_cargo_directives {
            // Printed before loading so a failed build still reruns when an input is fixed.
            for p in [
                self.root.join("schema.sql"),
                self.root.join("migrations"),
                self.root.join("migrations").join(crate::lock::LOCK_FILE),
            ] {
                println!("cargo:rerun-if-changed={}", p.display());
            }
            if self.strict_docs.is_none() {
                println!("cargo:rerun-if-env-changed={STRICT_DOCS_ENV}");
                println!("cargo:rerun-if-env-changed={CI_ENV}");
            }
        }
        let mut project = match &self.extension {
            Some((name, store)) => {
                if self.emit_cargo_directives {
                    println!(
                        "cargo:rerun-if-changed={}",
                        store.join("schema.sql").display()
                    );
                }
                crate::extension::load(name, &self.root, store)?
            }
            None => Project::load(&self.root)?,
        };
        self.check_docs(&mut project)?;
        if self.emit_cargo_directives {
            for p in project.inputs() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
            for w in &project.warnings {
                println!("cargo:warning={}", w.replace('\n', " "));
            }
        }
        let docs = emit::docs::render(&project);
        let options = emit::rust::Options {
            writes: self.writes,
            serde_feature: self.serde_feature.clone(),
            module: self.module.clone(),
        };
        let code = emit::rust::render(&project, &self.runtime, &docs, options)?;
        let dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or_else(|| Error::Io {
                    path: PathBuf::from("$OUT_DIR"),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "OUT_DIR is not set: call Builder::out_dir outside a build script",
                    ),
                })?,
        };
        fs::create_dir_all(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        let path = match &project.extension {
            Some(name) => dir.join(format!("{name}.rs")),
            None => dir.join(GENERATED_FILE),
        };
        let changed = fs::read_to_string(&path).ok().as_deref() != Some(code.as_str());
        if changed {
            fs::write(&path, &code).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
        }
        Ok(Output {
            project,
            path,
            changed,
        })
    }

    /// Adds one warning per undocumented object to `project`, or fails when strict.
    fn check_docs(&self, project: &mut Project) -> Result<()> {
        let gaps = coverage::gaps(&project.fresh, &project.annotations);
        if gaps.is_empty() {
            return Ok(());
        }
        let path = project.schema_path.display().to_string();
        let lines = gaps.iter().map(|g| format!("{path}:{}: {g}", g.line));
        let strict = match self.strict_docs {
            Some(true) => Some("Builder::strict_docs(true)".to_string()),
            Some(false) => None,
            None => coverage::strict_from_env(|k| std::env::var(k).ok())?,
        };
        match strict {
            Some(why) => Err(Error::Undocumented {
                count: gaps.len(),
                why,
                report: lines
                    .map(|l| format!("  {l}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            }),
            None => {
                project.warnings.extend(lines);
                Ok(())
            }
        }
    }
}
