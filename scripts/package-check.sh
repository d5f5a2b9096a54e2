#!/usr/bin/env bash
# Proves the crates are publishable as they are: packages every published crate of the
# workspace (in dependency order), unpacks the .crate files into a directory, and builds and
# tests the `downstream` crate against those packaged sources instead of the repository. A file
# a package needs but does not carry (an include_str! reaching outside it, a schema file left
# out) fails here, as it would for a user depending on the published crates.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}

cargo package --workspace --exclude seed-agents-downstream --exclude seed-agents-test-support --exclude seed-agents-ui-tests --no-verify --locked --allow-dirty --quiet

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/packaged" "$work/app"
for crate in "$target"/package/seed-agents-*-0.1.0.crate; do
  tar -xzf "$crate" -C "$work/packaged"
done

# The downstream crate's code (its lib, with the `prefs` extension its build script declares),
# with a manifest that names published versions only; [patch] points those versions at the
# unpacked packages. Its test of the macros comes along; the others need the repository's
# test-support crate, which is not published.
cp -r downstream/src downstream/build.rs downstream/db "$work/app/"
mkdir "$work/app/tests"
cp downstream/tests/downstream.rs "$work/app/tests/"
cat >"$work/app/Cargo.toml" <<TOML
[package]
name = "seed-agents-downstream"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
seed-agents-store = "0.1.0"

[build-dependencies]
seed-agents-codegen = "0.1.0"
seed-agents-schema = "0.1.0"

[dev-dependencies]
rusqlite = { version = "0.43", features = ["bundled"] }
tempfile = "3"

[patch.crates-io]
seed-agents-store = { path = "$work/packaged/seed-agents-store-0.1.0" }
seed-agents-macros = { path = "$work/packaged/seed-agents-macros-0.1.0" }
seed-agents-codegen = { path = "$work/packaged/seed-agents-codegen-0.1.0" }
seed-agents-model = { path = "$work/packaged/seed-agents-model-0.1.0" }
seed-agents-schema = { path = "$work/packaged/seed-agents-schema-0.1.0" }
TOML
# The workspace's lock keeps third-party versions (and so their compiled artifacts) the same.
cp Cargo.lock "$work/app/"

cd "$work/app"
# Every crate of ours resolves to an unpacked package, none to the repository.
metadata=$(cargo metadata --format-version 1 --quiet)
for name in store macros codegen model schema; do
  if ! grep -q "\"manifest_path\":\"$work/packaged/seed-agents-$name-0.1.0/Cargo.toml\"" <<<"$metadata"; then
    echo "package-check: seed-agents-$name does not come from its package" >&2
    exit 1
  fi
done
if grep -q "\"manifest_path\":\"$root/" <<<"$metadata"; then
  echo "package-check: the downstream build resolves a crate from the repository" >&2
  exit 1
fi
# A library user compiles no CLI parser: clap and indicatif come only with the `cli` feature.
if cargo tree -e normal,build --prefix none | grep -qE '^(clap|indicatif) '; then
  echo "package-check: a library user would compile clap or indicatif" >&2
  exit 1
fi
# The same target directory: third-party crates compiled for the workspace are reused.
CARGO_TARGET_DIR="$target" cargo test --quiet
echo "package-check: the packaged crates build and pass the downstream tests"
