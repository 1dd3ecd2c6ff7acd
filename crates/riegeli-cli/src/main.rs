//! `riegeli`: look into and work with Riegeli/records files (and ArrayRecord
//! files, Riegeli/records with a footer indexing the chunks).
//!
//! Exit codes: 0 success; 1 corrupt or unreadable data (or a failed check);
//! 2 usage errors; 3 an internal error of the library (a bug: a thread panicked).
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, reason = "a command-line tool prints its results")]
#![allow(clippy::print_stderr, reason = "a command-line tool prints its errors")]

mod array_record;
mod cat;
mod columnar;
mod describe;
mod exit;
#[cfg(test)]
mod fuzz_regressions;
mod input;
mod io;
mod progress;
mod proto;
mod text;
mod tfrecord;
mod write;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::exit::{Failed, Usage};

/// Look into and work with Riegeli/records files.
///
/// FILE arguments may be `-` for standard input. Exit codes: 0 success, 1 corrupt
/// or unreadable data, 2 usage error, 3 internal error (a bug).
#[derive(Debug, Parser)]
#[command(name = "riegeli", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Keep the ranges fetched from object storage in this local chunk cache, shared by every
    /// process (default: the `RIEGELI_CACHE_DIR` environment variable; bound:
    /// `RIEGELI_CACHE_MAX_BYTES`, 10 GiB).
    #[arg(long, global = true, value_name = "DIR")]
    cache_dir: Option<std::path::PathBuf>,
    /// Print what was fetched from object storage on stderr at the end: requests, bytes, cache
    /// hits and misses, retries, hedges, per object.
    #[arg(long, global = true)]
    stats: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the chunks of each file: position, type, sizes, records, compression.
    Describe(describe::DescribeArgs),
    /// Print the records of each file.
    Cat(cat::CatArgs),
    /// Count the records of each file (an ArrayRecord file's from its footer).
    Count(cat::CountArgs),
    /// Write records from standard input (or --input) to a new Riegeli or ArrayRecord file.
    Write(write::WriteArgs),
    /// Re-encode a file (Riegeli, ArrayRecord or TFRecord) as Riegeli, ArrayRecord or TFRecord,
    /// or write its proto records as a Parquet file (`--to parquet`).
    Convert(write::ConvertArgs),
    /// Check every block header, chunk header, data hash and chunk decoding.
    Verify(describe::VerifyArgs),
    /// Copy every readable record of a damaged file into a new, valid file.
    Recover(write::RecoverArgs),
    /// Concatenate files: physically when they are padded, record by record otherwise.
    Concat(write::ConcatArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
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
    // Commands that read their files whole, from the start (`cat` decides by its flags).
    if matches!(
        cli.command,
        Command::Describe(_) | Command::Convert(_) | Command::Verify(_) | Command::Recover(_) | Command::Concat(_)
    ) {
        io::read_objects_from_start();
    }
    io::configure_objects(cli.cache_dir.clone(), cli.stats);
    let result = match cli.command {
        Command::Describe(args) => describe::describe(args),
        Command::Cat(args) => cat::cat(args),
        Command::Count(args) => cat::count(args),
        Command::Write(args) => write::write(args),
        Command::Convert(args) => write::convert(args),
        Command::Verify(args) => describe::verify(args),
        Command::Recover(args) => write::recover(args),
        Command::Concat(args) => write::concat(args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "riegeli", &mut std::io::stdout());
            Ok(())
        }
    };
    progress::clear();
    // What the command fetched reaches the local chunk cache before the process ends (a
    // write there is not waited for by the read that fetched it).
    riegeli_object_store::finish_cache_writes(riegeli_object_store::CACHE_WRITES_AT_EXIT);
    io::print_stats();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.is::<Failed>() => ExitCode::from(1),
        Err(err) if err.is::<Usage>() => {
            eprintln!("riegeli: {err}");
            ExitCode::from(2)
        }
        Err(err) => {
            if io::is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("riegeli: {}", one_line(&err));
            let internal = err.chain().any(|cause| {
                cause
                    .downcast_ref::<riegeli_records::Error>()
                    .is_some_and(|e| matches!(e.kind(), riegeli_records::ErrorKind::Internal(_)))
            });
            // Not the file's fault: a bug of this program, worth reporting.
            ExitCode::from(if internal { 3 } else { 1 })
        }
    }
}

/// The error and its causes on one line.
fn one_line(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for (i, cause) in err.chain().enumerate() {
        let cause = cause.to_string();
        if i > 0 {
            if text.contains(&cause) {
                continue;
            }
            text.push_str(": ");
        }
        text.push_str(&cause.replace('\n', " "));
    }
    text
}
