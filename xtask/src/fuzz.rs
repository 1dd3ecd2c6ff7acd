//! `cargo xtask fuzz <target|all> [--seconds N]`: run cargo-fuzz on this stable toolchain.

use anyhow::{Context, Result, bail};
use xshell::{Shell, cmd};

pub(crate) fn run(sh: &Shell, args: &[String]) -> Result<()> {
    let mut target = None;
    let mut seconds = 60u64;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seconds" => {
                seconds = it.next().context("--seconds needs a value")?.parse().context("--seconds N")?;
            }
            other if target.is_none() => target = Some(other.to_owned()),
            other => bail!("unexpected argument {other:?}"),
        }
    }
    let Some(target) = target else { bail!("usage: cargo xtask fuzz <target|all> [--seconds N]") };
    if cmd!(sh, "cargo fuzz --version").quiet().ignore_stdout().ignore_stderr().run().is_err() {
        cmd!(sh, "cargo install cargo-fuzz --locked").run()?;
    }
    let _dir = sh.push_dir("fuzz");
    let targets = if target == "all" {
        cmd!(sh, "cargo fuzz list").read()?.lines().map(str::to_owned).collect()
    } else {
        vec![target]
    };
    let max_time = format!("-max_total_time={seconds}");
    for target in targets {
        crate::ci::step(&format!("fuzz {target} for {seconds} s"));
        // cargo-fuzz passes unstable flags to rustc; RUSTC_BOOTSTRAP lets the
        // stable toolchain accept them.
        cmd!(sh, "cargo fuzz run --sanitizer none {target} -- {max_time}")
            .env("RUSTC_BOOTSTRAP", "1")
            .run()?;
    }
    Ok(())
}
