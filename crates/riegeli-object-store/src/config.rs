//! How an object is fetched (`FetchConfig`) and what was fetched (`FetchStats`).

/// How an [`ObjectSource`](crate::ObjectSource) fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchConfig {
    /// Bytes fetched by a read that does not continue the previous one
    /// (default 64 KiB).
    pub min_fetch: u64,
    /// Bytes per request of a sequential read (default 8 MiB).
    pub sequential_window: u64,
    /// Requests a sequential read keeps ahead of itself (default 8: with 20 ms
    /// of latency on loopback, 8 windows read 12-29% faster than 4, in
    /// `cargo xtask bench objects --depth N`).
    pub sequential_depth: u64,
    /// The largest request a prefetch makes; longer runs of adjacent chunks
    /// are split (default 8 MiB).
    pub max_request: u64,
    /// Requests in flight at most, per source and its clones (default 16).
    pub max_in_flight: usize,
    /// Fetched bytes kept for reads to come: past this, ranges the reader
    /// has moved beyond are dropped (default 256 MiB).
    pub max_cached: u64,
    /// The object is to be read from its start (default `false`): opening
    /// asks for what a sequential read from the start asks for first (the
    /// first read's [`min_fetch`](Self::min_fetch) bytes, read-ahead windows
    /// growing up to a whole one, then whole windows, half the
    /// [`sequential_depth`](Self::sequential_depth) of them: 40 MiB in 9
    /// requests by default) at the same time as the object's tail, before its
    /// size is known. Reading then waits for no further round trip, and the
    /// connection stays busy while the requests that follow make theirs. Those
    /// bytes are fetched in vain if the start is never read, and for an
    /// object smaller than them, the requests past its end are answered with
    /// nothing.
    pub read_from_start: bool,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            min_fetch: 64 << 10,
            sequential_window: 8 << 20,
            sequential_depth: 8,
            max_request: 8 << 20,
            max_in_flight: 16,
            max_cached: 256 << 20,
            read_from_start: false,
        }
    }
}

/// Requests and bytes an [`ObjectSource`](crate::ObjectSource) (with its clones) fetched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchStats {
    /// Ranged GETs made (retries inside `object_store` not counted).
    pub requests: u64,
    /// Bytes they returned.
    pub bytes: u64,
}

/// How an [`ObjectSink`](crate::ObjectSink) uploads an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadConfig {
    /// Bytes per part of the multipart upload (default 8 MiB). S3 and GCS
    /// take at most 10,000 parts, each but the last at least 5 MiB: the
    /// default allows objects of up to 80 GB. An object smaller than one part
    /// is written by one PUT at close.
    pub part_size: usize,
    /// Parts uploading at once at most (default 4): a writer that gets
    /// further ahead waits for the oldest. The memory held is about
    /// `(max_in_flight + 1) × part_size`.
    pub max_in_flight: usize,
}

impl Default for UploadConfig {
    fn default() -> Self {
        Self { part_size: 8 << 20, max_in_flight: 4 }
    }
}

/// Requests and bytes an [`ObjectSink`](crate::ObjectSink) uploaded (the
/// names of [`FetchStats`]'s, for writers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UploadStats {
    /// Requests made: starting a multipart upload, each part, completing or
    /// aborting it, or the one PUT of a small object (retries inside
    /// `object_store` not counted).
    pub requests: u64,
    /// Bytes of parts (or of the one PUT) the server accepted.
    pub bytes: u64,
}
