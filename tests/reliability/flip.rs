//! A seeded byte-flip and truncation sweep of the gate: copies of a valid current database and
//! of a valid version-10 database, each with one byte flipped at a random offset or cut short at
//! a random length, go through `status` and then `Store::open` in a child process. Never a
//! panic or an abort (the child must exit normally), never a hang (the child is bounded), and
//! `status` never changes a file, nor does an `open` that refuses it (bytes compared). Opening
//! or an error are both allowed outcomes here; the counts are printed.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use seed_agents_store::{status, Error, Store};
use support::old_versions::build_at;
use support::reliability::*;

const FILE: &str = "RELIABILITY_FLIP_FILE";
/// How long one child may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(60);

/// One way to damage a copy.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// XOR the byte at this offset with a non-zero mask.
    Flip { offset: u64, mask: u8 },
    /// Keep only this many bytes.
    Truncate { len: u64 },
}

fn damage(bytes: &[u8], d: Damage) -> Vec<u8> {
    let mut out = bytes.to_vec();
    match d {
        Damage::Flip { offset, mask } => out[offset as usize] ^= mask,
        Damage::Truncate { len } => out.truncate(len as usize),
    }
    out
}

/// Runs the gate child on `file`; returns its outcome line, or fails the test on a panic, an
/// abort, a hang or a changed file.
fn run_gate(file: &Path, ctx: &str) -> String {
    let mut child = spawn(
        &support::child_test!("gate_child"),
        "gate",
        &[(FILE, file.display().to_string())],
    );
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > HANG {
            child.kill().unwrap_or_default();
            panic!("{ctx}: the gate hung for more than {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        status.success(),
        "{ctx}: the gate child did not exit normally ({status}):\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = support::results(&stdout);
    for r in &results {
        assert!(!r.starts_with("changed"), "{ctx}: {r}");
    }
    results
        .iter()
        .find_map(|r| r.strip_prefix("open ").map(str::to_owned))
        .unwrap_or_else(|| panic!("{ctx}: no outcome:\n{stdout}"))
}

/// Sweeps `flips` flips and `cuts` truncations of `original`; returns outcome counts by kind.
fn sweep(dir: &Path, name: &str, original: &[u8], seed: u64, flips: usize, cuts: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let len = original.len() as u64;
    let mut tally: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for trial in 0..flips + cuts {
        let (kind, d) = if trial < flips {
            let offset = rng.gen_range(0..len);
            (
                "flip",
                Damage::Flip {
                    offset,
                    mask: rng.gen_range(1..=255),
                },
            )
        } else {
            (
                "truncation",
                Damage::Truncate {
                    len: rng.gen_range(0..len),
                },
            )
        };
        let file = dir.join(format!("{name}-{trial}.sqlite"));
        std::fs::write(&file, damage(original, d)).unwrap();
        let ctx = format!("{name} seed {seed:#x} trial {trial}: {d:?}");
        let outcome = run_gate(&file, &ctx);
        *tally.entry((kind, outcome)).or_default() += 1;
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = file.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
    println!("{name}: {flips} flips and {cuts} truncations, 0 failures; outcomes {tally:?}");
}

#[test]
fn flipped_and_truncated_files_never_panic_hang_or_change_when_refused() {
    if role().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A current database with rows in several tables; closing it checkpoints and removes the WAL.
    let current = dir.path().join("current.sqlite");
    let (store, sessions) = store_with_sessions(&current, 3);
    for (i, s) in sessions.iter().cycle().take(60).enumerate() {
        store
            .append_event(ACCOUNT, s, &message(format!("event {i}")))
            .unwrap();
    }
    drop(store);
    let old = dir.path().join("old.sqlite");
    drop(build_at(&old, 10));
    for (name, path, seed, flips, cuts) in [
        ("current", &current, 0x666c6970_u64, 200, 40),
        ("version-10", &old, 0x6f6c64_u64, 60, 20),
    ] {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(run_gate(path, name), "opened", "the undamaged {name} file");
        sweep(dir.path(), name, &bytes, seed, flips, cuts);
    }
}

/// The child side: `status`, then `Store::open`, on the file named in the environment. Prints
/// `RESULT open opened|refused|error`, and `RESULT changed ...` when a call that must leave the
/// file alone changed it. A panic fails the child, so the parent sees it.
#[test]
fn gate_child() {
    if role().as_deref() != Some("gate") {
        return;
    }
    let file = std::env::var(FILE).unwrap();
    let before = std::fs::read(&file).unwrap();
    let verdict = status(&file);
    if std::fs::read(&file).unwrap() != before {
        println!("RESULT changed by status ({verdict:?})");
    }
    let outcome = match Store::open(&file) {
        Ok(_) => "opened",
        Err(Error::Refused { reason, .. }) => {
            if std::fs::read(&file).unwrap() != before {
                println!("RESULT changed although refused ({reason})");
            }
            "refused"
        }
        Err(_) => "error",
    };
    println!("RESULT open {outcome}");
}
