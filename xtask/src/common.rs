//! Helpers that every task shares: where the workspace is, and how a step is announced.
//!
//! A leaf: it imports no other module of xtask, so any task can use it.

use std::path::{Path, PathBuf};

/// The workspace root (the parent of this crate's manifest directory).
pub(crate) fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Announces a step of a task on stderr.
pub(crate) fn step(name: &str) {
    eprintln!("\n==> {name}");
}

/// The crates with workspaces of their own (the root `Cargo.toml` excludes them).
pub(crate) const OTHER_WORKSPACES: &[&str] = &["fuzz", "xtask/bench/peers", "xtask/s3-server"];
