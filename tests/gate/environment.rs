//! The environment's trouble, met as an operator meets it: a full disk (a small tmpfs), a
//! read-only mount, and files or directories the user may not touch. Each is reported as what it
//! is, naming the path, with exit code 1 from the CLI; nothing is refused or changed, and a
//! read-only medium is still readable.
//!
//! Mounting needs root: where `mount` fails (or, for permissions, where the suite cannot run the
//! CLI as another user) the test prints why and skips.

use seed_agents_store::schema::SCHEMA_VERSION;
use seed_agents_store::{integrity, status, Error, ErrorKind, Outcome, Store, Verdict};
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::gate::{at_version, files};

/// A tmpfs mounted on a temp dir for the test's duration.
struct Tmpfs {
    point: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. `4m`), or prints why not and returns `None`.
    fn mount(size: &str, test: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let point = dir.path().join("mnt");
        fs::create_dir(&point).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&point)
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            eprintln!("{test}: skipped: cannot mount a tmpfs here (needs root)");
            return None;
        }
        Some(Tmpfs { point, _dir: dir })
    }

    fn remount_read_only(&self) {
        let o = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.point)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.point).output();
    }
}

fn cli(args: &[&str], db: &Path, uid: Option<u32>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_seed-agents-db"));
    cmd.arg("--db-path")
        .arg(db)
        .args(args)
        .env_remove("SEED_AGENTS_DB_PATH");
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    cmd.output().unwrap()
}

/// Asserts `e` is storage trouble naming `path`: not a refusal, no advice to delete.
fn storage_trouble(e: &Error, path: &Path, cause: &str) {
    let msg = e.to_string();
    assert_eq!(e.kind(), ErrorKind::Storage, "{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains(cause), "{cause}: {msg}");
    assert!(!msg.contains("rm ") && !msg.contains("refusing"), "{msg}");
}

/// Fills the file system holding `dir` to the last byte.
fn fill(dir: &Path) -> PathBuf {
    let filler = dir.join("filler");
    let mut f = fs::File::create(&filler).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    while f.write_all(&chunk).is_ok() {}
    let mut byte = [0u8; 1];
    while f.write_all(&byte).is_ok() {
        byte[0] = 1;
    }
    filler
}

#[test]
fn a_full_disk_is_reported_as_full_and_the_file_is_unchanged() {
    let Some(fsys) = Tmpfs::mount("6m", "a_full_disk") else {
        return;
    };
    let old = fsys.point.join("old.sqlite");
    at_version(&old, 5);
    support::gate::write_db(
        &old,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
         INSERT INTO accounts SELECT 'acct-' || i || hex(randomblob(100)), 1, 1 FROM n;",
    );
    let fresh = fsys.point.join("fresh.sqlite");
    let before = fs::read(&old).unwrap();
    let filler = fill(&fsys.point);

    let e = Store::open(&old).unwrap_err();
    storage_trouble(&e, &old, "is full");
    assert_eq!(fs::read(&old).unwrap(), before, "the migration rolled back");
    let e = Store::open(&fresh).unwrap_err();
    storage_trouble(&e, &fresh, "is full");
    let o = cli(&["open"], &old, None);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is full"));
    assert_eq!(fs::read(&old).unwrap(), before);

    fs::remove_file(filler).unwrap();
    assert_eq!(
        Store::open(&old).unwrap().outcome(),
        Outcome::Migrated {
            from: 5,
            to: SCHEMA_VERSION
        }
    );
    assert_eq!(
        Store::open(&fresh).unwrap().outcome(),
        Outcome::Fresh {
            version: SCHEMA_VERSION
        }
    );
}

#[test]
fn a_read_only_mount_is_read_and_never_written() {
    let Some(fsys) = Tmpfs::mount("16m", "a_read_only_mount") else {
        return;
    };
    let current = fsys.point.join("current.sqlite");
    let old = fsys.point.join("old.sqlite");
    Store::open(&current)
        .unwrap()
        .touch_account("acct")
        .unwrap();
    at_version(&old, 27);
    let listing = files(&fsys.point);
    let bytes = (fs::read(&current).unwrap(), fs::read(&old).unwrap());
    fsys.remount_read_only();

    for path in [&current, &old, &fsys.point.join("new.sqlite")] {
        let e = Store::open(path).unwrap_err();
        assert!(matches!(e, Error::ReadOnly { .. }), "{e}");
        storage_trouble(&e, path, "cannot be written");
    }
    assert!(matches!(
        status(&current).unwrap().verdict,
        Verdict::Verified { version, .. } if version == SCHEMA_VERSION
    ));
    assert!(matches!(
        status(&old).unwrap().verdict,
        Verdict::Verified { version: 27, ref pending } if pending.len() == (SCHEMA_VERSION - 27) as usize
    ));
    assert!(integrity::check(&current).unwrap().is_clean());
    let store = Store::open_read_only(&current).unwrap();
    assert!(store.table_counts().unwrap().contains(&("accounts", 1)));
    let e = store.touch_account("other").unwrap_err();
    assert!(matches!(e, Error::ReadOnly { .. }), "{e}");
    drop(store);

    let o = cli(&["open"], &current, None);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot be written"));
    for cmd in ["status", "check"] {
        let o = cli(&[cmd], &current, None);
        assert_eq!(o.status.code(), Some(0), "{cmd}: {o:?}");
    }
    assert_eq!(files(&fsys.point), listing);
    assert_eq!(
        (fs::read(&current).unwrap(), fs::read(&old).unwrap()),
        bytes
    );
}

#[test]
fn files_the_user_may_not_touch_are_permission_or_read_only_errors_leaving_nothing_behind() {
    let uid = 65534; // nobody
    let probe = Command::new("true").uid(uid).gid(uid).status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("files_the_user_may_not_touch: skipped: cannot run the CLI as another user (needs root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let private = dir.path().join("private.sqlite");
    let shared = dir.path().join("shared.sqlite");
    for p in [&private, &shared] {
        drop(Store::open(p).unwrap());
    }
    fs::set_permissions(&private, fs::Permissions::from_mode(0o600)).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o644)).unwrap();
    let listing = files(dir.path());

    for cmd in ["open", "status", "check"] {
        let o = cli(&[cmd], &private, Some(uid));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains(&format!("permission denied on {}", private.display())),
            "{cmd}: {err}"
        );
    }
    // Readable but not writable, in a directory the user cannot write either.
    let o = cli(&["open"], &shared, Some(uid));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{} cannot be written", shared.display())),
        "{err}"
    );
    assert_eq!(cli(&["status"], &shared, Some(uid)).status.code(), Some(0));
    let new = dir.path().join("new.sqlite");
    let o = cli(&["open"], &new, Some(uid));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("permission denied on {}", new.display())),
        "{err}"
    );
    assert_eq!(files(dir.path()), listing, "no -wal, -shm or file left");
}

/// The TypeScript server's own version-11 file, in WAL mode.
const TS_V11: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/ts-server-v11.sqlite"
);

/// A WAL file needs room for its `-shm` before the first read: with 0 or 8 KiB free, SQLite
/// reports growing it as an I/O error (code 4874), which is a full disk and says so. The file
/// is left as it was, and `status`, `check` and `open` read it once there is room again.
#[test]
fn a_full_disk_under_a_wal_file_says_full_and_leaves_it_readable() {
    for free in [0_u64, 8 * 1024] {
        let Some(fsys) = Tmpfs::mount("2m", "a_full_disk_under_a_wal_file") else {
            return;
        };
        let copy = fsys.point.join("c11.sqlite");
        fs::copy(TS_V11, &copy).unwrap();
        let before = fs::read(&copy).unwrap();
        let filler = fill(&fsys.point);
        let len = fs::metadata(&filler).unwrap().len();
        fs::OpenOptions::new()
            .write(true)
            .open(&filler)
            .unwrap()
            .set_len(len - free)
            .unwrap();

        let e = Store::open(&copy).unwrap_err();
        assert!(matches!(e, Error::DiskFull { .. }), "{free} free: {e}");
        storage_trouble(&e, &copy, "is full");
        let o = cli(&["open"], &copy, None);
        assert_eq!(o.status.code(), Some(1), "{o:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("is full"),
            "{o:?}"
        );
        assert_eq!(fs::read(&copy).unwrap(), before);

        fs::remove_file(filler).unwrap();
        for cmd in ["status", "check"] {
            let o = cli(&[cmd], &copy, None);
            assert_eq!(o.status.code(), Some(0), "{cmd}: {o:?}");
        }
        assert!(matches!(
            status(&copy).unwrap().verdict,
            Verdict::Verified { version: 11, .. }
        ));
        assert!(integrity::check(&copy).unwrap().is_clean());
        assert_eq!(
            Store::open(&copy).unwrap().outcome(),
            Outcome::Migrated {
                from: 11,
                to: SCHEMA_VERSION
            }
        );
    }
}
