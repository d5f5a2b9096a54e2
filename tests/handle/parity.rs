//! `AsyncStore` keeps pace with `Store`: every public operation of the sync handle has an async
//! counterpart of the same name, or is listed here as deliberately sync, with the reason. Read
//! from the sources (as the build's own checks read them), so a new operation added to `Store`
//! alone fails this test until it is given a future or a reason.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// Operations that stay sync, each with why.
const SYNC_ONLY: &[(&str, &str)] = &[
    (
        "conn",
        "a SQLite connection lent by the handle: read in AsyncStore::call",
    ),
    (
        "reading",
        "a connection lent by the handle: read in AsyncStore::call or select",
    ),
    (
        "options",
        "a builder without I/O; AsyncStore::open_with takes it",
    ),
    (
        "open_with_clock",
        "AsyncStore::open_with(Store::options().clock(..))",
    ),
    (
        "key_provider",
        "an accessor without I/O: AsyncStore::store().key_provider()",
    ),
    (
        "idempotent",
        "its action is a closure run inside the write: AsyncStore::call",
    ),
    (
        "write_extension",
        "its statements are a closure run inside the write: AsyncStore::call",
    ),
    (
        "continue_session_with",
        "its successor is made by a closure inside the write: AsyncStore::call",
    ),
];

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The public methods of `impl <ty>` blocks, and (for the async side) the operations declared
/// through `async_operations!`.
#[derive(Default)]
struct Methods {
    sync: BTreeSet<String>,
    asynchronous: BTreeSet<String>,
}

fn self_type(item: &syn::ItemImpl) -> Option<String> {
    match &*item.self_ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

impl<'a> Visit<'a> for Methods {
    fn visit_item_impl(&mut self, item: &'a syn::ItemImpl) {
        // Trait impls (Clone, From, Drop) are not operations.
        if item.trait_.is_none() {
            let set = match self_type(item).as_deref() {
                Some("Store") => Some(&mut self.sync),
                Some("AsyncStore") => Some(&mut self.asynchronous),
                _ => None,
            };
            if let Some(set) = set {
                for inner in &item.items {
                    if let syn::ImplItem::Fn(f) = inner {
                        if matches!(f.vis, syn::Visibility::Public(_)) {
                            set.insert(f.sig.ident.to_string());
                        }
                    }
                }
            }
        }
        syn::visit::visit_item_impl(self, item);
    }

    fn visit_item_macro(&mut self, item: &'a syn::ItemMacro) {
        if item.mac.path.is_ident("async_operations") {
            // `fn name(params) -> T;` repeated: every identifier after `fn`.
            let mut tokens = item.mac.tokens.clone().into_iter().peekable();
            while let Some(token) = tokens.next() {
                if let proc_macro2::TokenTree::Ident(ident) = &token {
                    if ident == "fn" {
                        if let Some(proc_macro2::TokenTree::Ident(name)) = tokens.peek() {
                            self.asynchronous.insert(name.to_string());
                        }
                    }
                }
            }
        }
        syn::visit::visit_item_macro(self, item);
    }
}

fn methods() -> Methods {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("store"),
        &mut files,
    );
    let mut methods = Methods::default();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        methods.visit_file(&parsed);
    }
    methods
}

#[test]
fn every_operation_of_store_has_a_future_or_a_reason() {
    let methods = methods();
    assert!(
        methods.sync.len() > 100 && methods.asynchronous.len() > 100,
        "the sources were not read: {} sync and {} async operations found",
        methods.sync.len(),
        methods.asynchronous.len()
    );
    let listed: BTreeSet<&str> = SYNC_ONLY.iter().map(|(name, _)| *name).collect();
    let missing: Vec<&String> = methods
        .sync
        .iter()
        .filter(|name| !methods.asynchronous.contains(*name) && !listed.contains(name.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "Store operations without an AsyncStore counterpart: {missing:?}. Add each to an \
         `async_operations!` list (store/asynchronous/), or to SYNC_ONLY with the reason"
    );
    // A listed name must still be a sync operation without a future, so the list cannot rot.
    for (name, _) in SYNC_ONLY {
        assert!(
            methods.sync.contains(*name),
            "SYNC_ONLY lists {name}, which Store no longer has"
        );
        assert!(
            !methods.asynchronous.contains(*name),
            "SYNC_ONLY lists {name}, which AsyncStore now has"
        );
    }
}
