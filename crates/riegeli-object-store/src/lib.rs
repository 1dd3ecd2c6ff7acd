//! Riegeli/records and ArrayRecord files in object storage: S3, GCS, Azure
//! Blob Storage and plain HTTP(S) servers with range requests, through the
//! `object_store` crate, fetching only the bytes a read needs.
//!
//! [`ObjectSource`] is a `Read + Seek` view of one object, which
//! [`RecordReader`](riegeli_records::RecordReader) and
//! [`ArrayRecordReader`](riegeli_records::ArrayRecordReader) read like a file. Behind it, a
//! cache of byte ranges fetched by ranged GETs on a runtime of this crate's
//! own, several in flight:
//! - a read that continues the previous one fetches large ranges ahead
//!   ([`FetchConfig::sequential_window`] × [`FetchConfig::sequential_depth`]),
//!   so that a sequential read does not wait on each request's latency;
//! - any other read fetches [`FetchConfig::min_fetch`] bytes (a chunk header
//!   and what follows);
//! - an `ArrayRecordReader` opened by [`open_array_record`] tells the source
//!   the exact byte range of every chunk a read is about to read
//!   ([`ReadAt::will_need`](riegeli_records::ReadAt::will_need)): they are fetched concurrently, adjacent chunks in one
//!   request. Opening one makes two requests: one for the object's size and
//!   last 64 KiB (a suffix range), one for the footer. Nothing else.
//!
//! A source may be used in a process forked from the one that opened it (a
//! data loader's workers): each process fetches through a cache, requests,
//! connections and a runtime of its own, made on its first read there; the
//! parent's, whose requests ran on threads the child does not have (and whose
//! locks one of them may have held at the fork), are never touched there.
//! [`Location`] reads local files at positions of its own
//! ([`PositionalFile`](riegeli_records::PositionalFile)), so that processes
//! never move each other's.
//!
//! Credentials, regions and endpoints come from the environment as
//! `object_store`'s `from_env` builders read them (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT`, `AWS_ALLOW_HTTP`,
//! `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_NAME`, ...). Failed
//! requests are retried as `object_store` retries them; an error names the
//! URL and the byte range.
//!
//! [`Location::open`] opens a path or a URL (local paths, `file://`, and the
//! object-store URLs above), the one way every reader given one opens it:
//! [`open_records`], [`open_array_record`], the CLI and the Python package.
//! A reader of one byte range of an object
//! ([`RecordReader::set_byte_range`](riegeli_records::RecordReader::set_byte_range))
//! tells its source so through [`ReadHints`](riegeli_records::ReadHints):
//! nothing past the range is fetched ahead.
//!
//! # Writing
//!
//! [`Destination::create`] opens a path or a URL for writing, the one way
//! every writer given one does ([`create_records`], [`create_array_record`],
//! the CLI and the Python package). An object is written by an
//! [`ObjectSink`]: a multipart upload whose parts go out while the writer
//! encodes, [`UploadConfig::max_in_flight`] at a time; the object appears
//! only when [`Destination::finish`] (after the writer's `close`) completes
//! it, and a writer dropped or failed before that aborts the upload. A
//! flush cannot make an object's bytes visible or durable before that:
//! [`FlushType::FromMachine`](riegeli_records::FlushType::FromMachine) is an
//! error on a bucket.
//!
//! # Modules
//!
//! `store` (URLs, stores, the runtime, one ranged GET), `cache` (the range
//! cache of an object in a process and its requests, hedged and retried),
//! `disk` (the local chunk cache shared by processes, see
//! [`FetchConfig::cache_dir`]), `hedge` (the hedging deadline and the
//! backoff), `windows` (what reads
//! and the read-ahead ask for), `source` ([`ObjectSource`], the `Read + Seek`
//! and `ReadAt` views), `location` ([`Location`] and opening), `config`
//! ([`FetchConfig`], [`FetchStats`], [`UploadConfig`], [`UploadStats`]),
//! `upload` ([`ObjectSink`]: the multipart upload), `output`
//! ([`Destination`] and creating).

#![forbid(unsafe_code)]

mod cache;
mod config;
mod disk;
mod fetch;
mod hedge;
mod location;
mod output;
mod source;
mod store;
mod upload;
mod windows;

pub use crate::config::{FetchConfig, FetchStats, UploadConfig, UploadStats};
pub use crate::disk::{CACHE_WRITES_AT_EXIT, finish_cache_writes};
pub use crate::location::{Location, open_array_record, open_records};
pub use crate::output::{Destination, create_array_record, create_records};
pub use crate::source::ObjectSource;
pub use crate::store::is_url;
pub use crate::upload::{ObjectSink, UploadCounters};
