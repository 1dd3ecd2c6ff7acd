//! `cargo xtask release <version>`: bump every crate together and package them in order.

use anyhow::{Context, Result, bail};
use xshell::{Shell, cmd};

/// Publishable crates, lowest layer first.
const CRATES: &[&str] = &["riegeli-hash", "riegeli-framing", "riegeli-codec", "riegeli-records", "riegeli-cli"];

pub(crate) fn run(sh: &Shell, args: &[String]) -> Result<()> {
    let version = args.first().context("usage: cargo xtask release <version>")?;
    if version.split('.').count() != 3 || !version.split('.').all(|p| p.parse::<u64>().is_ok()) {
        bail!("version {version:?} is not MAJOR.MINOR.PATCH");
    }
    let changelog = sh.read_file("CHANGELOG.md").context("CHANGELOG.md is missing")?;
    if !changelog.lines().any(|l| l.starts_with("## ") && l.contains(version.as_str())) {
        bail!("CHANGELOG.md has no section for {version}: add `## {version}` first");
    }
    let manifest = sh.read_file("Cargo.toml")?;
    let old = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \"").and_then(|r| r.strip_suffix('"')))
        .context("no workspace version in Cargo.toml")?
        .to_owned();
    let bumped = manifest
        .replace(&format!("version = \"{old}\""), &format!("version = \"{version}\""))
        .replace(&format!("version = \"{old}\" }}"), &format!("version = \"{version}\" }}"));
    sh.write_file("Cargo.toml", bumped)?;
    cmd!(sh, "cargo update --workspace").run()?;
    for krate in CRATES {
        crate::common::step(&format!("package {krate}"));
    }
    // `--workspace` packages the crates in dependency order against a local overlay registry.
    let packages: Vec<String> = CRATES.iter().map(|c| format!("--package={c}")).collect();
    cmd!(sh, "cargo publish --dry-run --allow-dirty {packages...}").run()?;
    eprintln!("bumped {old} -> {version}; review, commit, tag v{version}, then `cargo publish` in the order above");
    Ok(())
}
