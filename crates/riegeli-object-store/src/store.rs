//! Stores and URLs: which store and path a URL names (configured from the
//! environment), the runtime their requests run on (one per process), and one
//! ranged GET, its body kept as the pieces it arrived in.

use std::fmt;
use std::io;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreScheme};
use riegeli_records::PerProcess;
use url::Url;

/// Whether `location` names an object (`s3://`, `s3a://`, `gs://`, `az://`,
/// `abfs(s)://`, `adl://`, `azure://`, `http(s)://`) rather than a local path.
pub fn is_url(location: &str) -> bool {
    let Some((scheme, _)) = location.split_once("://") else { return false };
    matches!(
        scheme.to_ascii_lowercase().as_str(),
        "s3" | "s3a" | "gs" | "az" | "adl" | "azure" | "abfs" | "abfss" | "http" | "https"
    )
}

/// A fetched range as the pieces its response body arrived in: gathering
/// them into one buffer would cost a copy (and a fresh buffer's page faults)
/// of every byte fetched.
#[derive(Default)]
pub(crate) struct Pieces {
    parts: Vec<Bytes>,
    /// Where each part ends, from the start of the range.
    ends: Vec<u64>,
}

impl Pieces {
    pub(crate) fn push(&mut self, part: Bytes) {
        if !part.is_empty() {
            self.ends.push(self.len() + part.len() as u64);
            self.parts.push(part);
        }
    }

    /// Keeps the first `len` bytes (fewer held: all of them).
    pub(crate) fn truncate(&mut self, len: u64) {
        let keep = self.ends.partition_point(|&end| end < len) + 1;
        self.parts.truncate(keep);
        self.ends.truncate(keep);
        if let (Some(part), Some(end)) = (self.parts.last_mut(), self.ends.last_mut())
            && *end > len
        {
            part.truncate(part.len() - (*end - len) as usize);
            *end = len;
        }
    }

    /// The parts, in order.
    pub(crate) fn parts(&self) -> &[Bytes] {
        &self.parts
    }

    /// Bytes held.
    pub(crate) fn len(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Copies the bytes from `offset` on into `buf`, as many as fit; returns
    /// how many.
    pub(crate) fn copy_at(&self, offset: u64, buf: &mut [u8]) -> usize {
        let mut copied = 0;
        let first = self.ends.partition_point(|&end| end <= offset);
        for (part, &end) in self.parts.iter().zip(&self.ends).skip(first) {
            let Some(rest) = buf.get_mut(copied..).filter(|rest| !rest.is_empty()) else { break };
            // The first part holds `offset`; the next ones are read from their start.
            let skip = if copied == 0 { part.len() - (end - offset) as usize } else { 0 };
            let from = part.get(skip..).unwrap_or_default();
            let n = from.len().min(rest.len());
            rest[..n].copy_from_slice(&from[..n]);
            copied += n;
        }
        copied
    }
}

/// The runtime the requests of every source run on: one per process. A child
/// forked from a process that had one has none of its threads (and its locks
/// may be held forever by one of them): it starts its own, and the parent's
/// is never touched there (see [`PerProcess`]).
pub(crate) fn runtime() -> io::Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: PerProcess<Result<tokio::runtime::Runtime, String>> = PerProcess::new();
    let runtime = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("riegeli-object-store")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the object store runtime: {e}"))
    });
    runtime.as_ref().map_err(|e| io::Error::other(e.clone()))
}

/// Runs `future` on the runtime and waits for it on this thread (which may
/// itself be a thread of another runtime: nothing here blocks on it).
pub(crate) fn wait<T: Send + 'static>(future: impl std::future::Future<Output = T> + Send + 'static) -> io::Result<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        let _ = tx.send(future.await);
    });
    rx.recv().map_err(|_| io::Error::other("an object store request was cancelled"))
}

/// A ranged GET's answer: the object's size and ETag (or version), the range
/// the answer holds (object_store checks that it is the range asked for), and
/// its body as the pieces it arrived in.
pub(crate) struct Got {
    pub(crate) size: u64,
    pub(crate) tag: Option<String>,
    pub(crate) range: Range<u64>,
    pub(crate) pieces: Pieces,
}

/// What one try of a GET returns (see [`Requests::attempt`](crate::fetch::Requests::attempt)).
pub(crate) type GotPieces = object_store::Result<Got>;

/// The ETag of an object, or its version where it has none.
pub(crate) fn tag_of(meta: &object_store::ObjectMeta) -> Option<String> {
    meta.e_tag.clone().or_else(|| meta.version.clone()).filter(|tag| !tag.is_empty())
}

/// The answer of one GET of `range` of `location`, once its headers came.
pub(crate) async fn get_answer(
    store: &dyn ObjectStore,
    location: &Path,
    range: GetRange,
) -> object_store::Result<object_store::GetResult> {
    store.get_opts(location, GetOptions::new().with_range(Some(range))).await
}

/// The body of `answer`, a byte at least every `stall` (else an error). A
/// body longer than its range is an error, read no further: a server cannot
/// make a read hold more than it asked for.
pub(crate) async fn read_body(answer: object_store::GetResult, stall: std::time::Duration) -> GotPieces {
    let (size, tag, range) = (answer.meta.size, tag_of(&answer.meta), answer.range.clone());
    let expected = range.end.saturating_sub(range.start);
    let mut body = answer.into_stream();
    let mut pieces = Pieces::default();
    loop {
        let piece = match tokio::time::timeout(stall, body.next()).await {
            Ok(Some(piece)) => piece?,
            Ok(None) => break,
            Err(_) => {
                return Err(object_store::Error::Generic {
                    store: "riegeli-object-store",
                    source: format!("the response stalled: no byte for {stall:?}").into(),
                });
            }
        };
        pieces.push(piece);
        if pieces.len() > expected {
            // Not tried again: a server (or proxy) that ignores ranges answers a retry the same.
            return Err(object_store::Error::NotSupported {
                source: format!("the server sent more than the {expected} bytes of {range:?}").into(),
            });
        }
    }
    Ok(Got { size, tag, range, pieces })
}

/// An `object_store` error as an `io::Error` naming the URL and the bytes.
pub(crate) fn io_error(error: &object_store::Error, what: &str) -> io::Error {
    let kind = match error {
        object_store::Error::NotFound { .. } => io::ErrorKind::NotFound,
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
            io::ErrorKind::PermissionDenied
        }
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, format!("{what}: {error}"))
}

/// The retries `object_store` makes itself inside one request of ours: a
/// few, within 10 s (its default, 10 within 3 minutes, would hold a read of
/// a dead server that long); the reader retries and hedges on top (see
/// [`FetchConfig::max_attempts`](crate::FetchConfig::max_attempts)).
fn retry_config() -> object_store::RetryConfig {
    object_store::RetryConfig {
        max_retries: 2,
        retry_timeout: std::time::Duration::from_secs(10),
        ..object_store::RetryConfig::default()
    }
}

/// The store and path of `url`, configured from the environment.
pub(crate) fn store_for(url: &str) -> io::Result<(Arc<dyn ObjectStore>, Path)> {
    let invalid = |e: &dyn fmt::Display| io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {e}"));
    let parsed = Url::parse(url).map_err(|e| invalid(&e))?;
    let (scheme, path) = ObjectStoreScheme::parse(&parsed).map_err(|e| invalid(&e))?;
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::AmazonS3 => Arc::new(
            object_store::aws::AmazonS3Builder::from_env()
                .with_url(url)
                .with_retry(retry_config())
                .build()
                .map_err(|e| invalid(&e))?,
        ),
        ObjectStoreScheme::GoogleCloudStorage => Arc::new(
            object_store::gcp::GoogleCloudStorageBuilder::from_env()
                .with_url(url)
                .with_retry(retry_config())
                .build()
                .map_err(|e| invalid(&e))?,
        ),
        ObjectStoreScheme::MicrosoftAzure => Arc::new(
            object_store::azure::MicrosoftAzureBuilder::from_env()
                .with_url(url)
                .with_retry(retry_config())
                .build()
                .map_err(|e| invalid(&e))?,
        ),
        ObjectStoreScheme::Http => {
            let origin = &parsed[..url::Position::BeforePath];
            // An `http://` URL says plain HTTP is wanted.
            let client = object_store::ClientOptions::new().with_allow_http(parsed.scheme() == "http");
            Arc::new(
                object_store::http::HttpBuilder::new()
                    .with_url(origin)
                    .with_client_options(client)
                    .with_retry(retry_config())
                    .build()
                    .map_err(|e| invalid(&e))?,
            )
        }
        _ => return Err(invalid(&"not an object store URL (s3://, gs://, az://, http(s)://)")),
    };
    Ok((store, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_copy_across_their_parts() {
        let flat: Vec<u8> = (0..200u8).collect();
        let mut pieces = Pieces::default();
        let mut at = 0;
        for len in [1, 0, 7, 50, 2, 140] {
            pieces.push(Bytes::copy_from_slice(&flat[at..at + len]));
            at += len;
        }
        assert_eq!(pieces.len(), 200);
        for offset in 0..=200u64 {
            for len in [0, 1, 3, 49, 200] {
                let mut buf = vec![0u8; len];
                let n = pieces.copy_at(offset, &mut buf);
                let want = &flat[offset as usize..(offset as usize + len).min(200)];
                assert_eq!(&buf[..n], want, "offset {offset}, len {len}");
            }
        }
        for keep in [0u64, 1, 2, 8, 9, 58, 59, 60, 61, 199, 200, 300] {
            let mut short = Pieces { parts: pieces.parts.clone(), ends: pieces.ends.clone() };
            short.truncate(keep);
            let kept = keep.min(200) as usize;
            assert_eq!(short.len(), kept as u64, "keep {keep}");
            let mut buf = vec![0u8; 256];
            assert_eq!(short.copy_at(0, &mut buf), kept, "keep {keep}");
            assert_eq!(&buf[..kept], &flat[..kept], "keep {keep}");
        }
    }
}
