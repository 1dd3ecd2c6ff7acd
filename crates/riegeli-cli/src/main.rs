//! `riegeli`: look into and work with Riegeli/records files.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, reason = "a command-line tool prints its results")]
#![allow(clippy::print_stderr, reason = "a command-line tool prints its errors")]

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use riegeli_framing::{FramingError, parse_chunk};

/// Look into and work with Riegeli/records files.
#[derive(Debug, Parser)]
#[command(name = "riegeli", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the chunks of each file: position, type, sizes and record counts.
    Describe {
        /// Files to describe.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("riegeli: {err:#}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Describe { files } => {
            for file in files {
                describe(&file)?;
            }
            Ok(())
        }
    }
}

fn describe(path: &std::path::Path) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    println!("file: {} ({} bytes)", path.display(), bytes.len());
    println!("{:>12} {:>4} {:>12} {:>10} {:>14}", "position", "type", "data_size", "records", "decoded_size");
    let mut pos = 0u64;
    while (pos as usize) < bytes.len() {
        let chunk = parse_chunk(&bytes[pos as usize..], pos).map_err(|e: FramingError| {
            anyhow::anyhow!("{}: {e}", path.display())
        })?;
        let header = chunk.header();
        let kind = char::from(header.chunk_type());
        println!(
            "{:>12} {:>4} {:>12} {:>10} {:>14}",
            pos,
            if kind.is_ascii_graphic() { kind.to_string() } else { format!("{:#04x}", header.chunk_type()) },
            header.data_size(),
            header.num_records(),
            header.decoded_data_size()
        );
        chunk.verify_data_hash().map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        pos = chunk.chunk_end();
    }
    Ok(())
}
