//! Against real servers on loopback (`cargo xtask objects` starts them and sets the
//! environment): moto_server (S3), Azurite (Azure Blob Storage's emulator) and nginx (HTTP
//! with ranges, and `gs://` objects: object_store's GCS client reading anonymously, as of a
//! public bucket, from nginx at GCS's XML API paths; no GCS emulator runs here). Records are checked, and the fetch plans are counted in the servers' own
//! logs: requests (all three) and bytes (nginx's body bytes; the Range headers Azurite logs).
//!
//! Ignored unless run by that task (`cargo test -- --ignored live_`).

mod common;

use std::collections::BTreeSet;

use common::data_chunks;
use object_store::ObjectStoreExt;
use object_store::path::Path;
use riegeli_object_store::{ObjectSource, open_array_record, open_records};
use riegeli_records::{ArrayRecordReaderOptions, ArrayRecordWriter, RecordReaderOptions, RecordWriter};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run `cargo xtask objects`"))
}

/// A unique object name for this run.
fn unique(name: &str) -> String {
    format!("{}-{name}", std::process::id())
}

/// Puts `bytes` at `key` in the test bucket, the test container and nginx's root (also as an
/// object of the GCS bucket nginx serves); returns their URLs.
fn publish(key: &str, bytes: &[u8]) -> [String; 4] {
    let bucket = env("RIEGELI_TEST_S3_BUCKET");
    let container = env("RIEGELI_TEST_AZ_CONTAINER");
    let s3 = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(&bucket).build().unwrap();
    let azure = object_store::azure::MicrosoftAzureBuilder::from_env().with_container_name(&container).build().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(s3.put(&Path::from(key), bytes.to_vec().into())).unwrap();
    runtime.block_on(azure.put(&Path::from(key), bytes.to_vec().into())).unwrap();
    let root = std::path::PathBuf::from(env("RIEGELI_TEST_HTTP_ROOT"));
    std::fs::write(root.join(key), bytes).unwrap();
    let gs_bucket = env("RIEGELI_TEST_GS_BUCKET");
    std::fs::create_dir_all(root.join(&gs_bucket)).unwrap();
    std::fs::write(root.join(&gs_bucket).join(key), bytes).unwrap();
    [
        format!("s3://{bucket}/{key}"),
        format!("az://{container}/{key}"),
        format!("{}/{key}", env("RIEGELI_TEST_HTTP_URL")),
        format!("gs://{gs_bucket}/{key}"),
    ]
}

/// Whether the server of `url` logs the bytes it sent (nginx, also for `gs://`) or asked
/// (Azurite's Range headers).
fn logs_bytes(url: &str) -> bool {
    url.starts_with("http") || url.starts_with("az://") || url.starts_with("gs://")
}

/// What a server logged for `key` since `mark` (its log's length then): requests, and the
/// response body bytes where the log has them (nginx).
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    requests: u64,
    bytes: u64,
}

struct ServerLog {
    path: String,
    mark: usize,
    /// The path nginx logs for the object (`$uri`), for `http` and `gs` URLs: both are served
    /// by the one nginx, under the same key, and a line of one URL's read logged late must not
    /// count as the next URL's.
    uri: Option<String>,
}

impl ServerLog {
    fn for_url(url: &str) -> Self {
        let path = match url.split_once("://").map(|(scheme, _)| scheme) {
            Some("s3") => env("RIEGELI_TEST_S3_LOG"),
            Some("az") => env("RIEGELI_TEST_AZ_LOG"),
            _ => env("RIEGELI_TEST_HTTP_LOG"),
        };
        let mark = std::fs::read(&path).map_or(0, |log| log.len());
        let uri = match url.split_once("://") {
            Some(("gs", rest)) => Some(format!("/{rest}")),
            Some(("http" | "https", rest)) => rest.find('/').map(|slash| rest[slash..].to_owned()),
            _ => None,
        };
        Self { path, mark, uri }
    }

    /// GETs of `key` since the mark (and since the last call).
    fn take(&mut self, key: &str) -> Seen {
        // nginx writes its log line after the response; moto before: give both a moment.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let log = std::fs::read(&self.path).unwrap();
        let new = String::from_utf8_lossy(&log[self.mark.min(log.len())..]).into_owned();
        self.mark = log.len();
        let mut seen = Seen::default();
        for line in new.lines().filter(|line| line.contains(key)) {
            if line.contains("RequestMethod=GET ") {
                // Azurite: `... RequestMethod=GET RequestURL=.../key RequestHeaders:{..."range":"bytes=A-B"...}`.
                seen.requests += 1;
                let range = line.split("\"range\":\"bytes=").nth(1).and_then(|r| r.split('"').next());
                if let Some((a, b)) = range.and_then(|r| r.split_once('-')) {
                    seen.bytes += b.parse::<u64>().unwrap() + 1 - a.parse::<u64>().unwrap();
                }
            } else if line.contains("GET /")
                && self.uri.as_deref().is_none_or(|uri| line.split_whitespace().nth(1) == Some(uri))
            {
                seen.requests += 1;
                // nginx: `GET /key 206 <bytes> "<range>"`.
                if let Some(bytes) = line.split_whitespace().nth(3).and_then(|b| b.parse::<u64>().ok()) {
                    seen.bytes += bytes;
                }
            }
        }
        seen
    }
}

fn records(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("record {i} {}", "y".repeat(i % 500)).into_bytes()).collect()
}

#[test]
#[ignore = "needs the servers of `cargo xtask objects`"]
fn live_array_record_fetches_the_trailer_once_then_only_the_chunks_a_batch_touches() {
    let records = records(20_000);
    let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:100,zstd:3".parse().unwrap()).unwrap();
    for record in &records {
        writer.write_record(record).unwrap();
    }
    let file = writer.close().unwrap();
    let chunks = data_chunks(&file);
    let (footer_begin, footer_end) = *chunks.last().unwrap();
    let key = unique("batch.array_record");
    for url in publish(&key, &file) {
        let mut log = ServerLog::for_url(&url);
        let mut reader = open_array_record(&url, ArrayRecordReaderOptions::default()).unwrap();
        assert_eq!(reader.num_records(), 20_000, "{url}");
        let open = log.take(&key);
        assert!(open.requests <= 2, "{url}: opening made {open:?}");
        if logs_bytes(&url) {
            assert!(open.bytes <= 65536 + (footer_end - footer_begin) + (64 << 10), "{url}: {open:?}");
        }
        let indices: Vec<u64> = (0..10_000u64).map(|i| (i * 7919 + 13) % 20_000).collect();
        let got = reader.read_batch(&indices).unwrap();
        assert!(got.iter().zip(&indices).all(|(r, &i)| r[..] == records[i as usize][..]), "{url}");
        let batch = log.take(&key);
        let touched: BTreeSet<u64> = indices.iter().map(|i| i / 100).collect();
        let touched_bytes: u64 = touched.iter().map(|&k| chunks[k as usize].1 - chunks[k as usize].0).sum();
        // Adjacent chunks are coalesced: far fewer requests than chunks.
        assert!(batch.requests >= 1 && batch.requests < touched.len() as u64 / 4, "{url}: {batch:?}");
        if logs_bytes(&url) {
            let within = batch.bytes >= touched_bytes && batch.bytes as f64 <= touched_bytes as f64 * 1.05;
            assert!(within, "{url}: {batch:?} for {touched_bytes} bytes of chunks");
        }
        // count and num_records: no data chunk.
        let reader = open_array_record(&url, ArrayRecordReaderOptions::default()).unwrap();
        assert_eq!(reader.num_records(), 20_000);
        let again = log.take(&key);
        assert!(again.requests <= 2, "{url}: {again:?}");
    }
}

#[test]
#[ignore = "needs the servers of `cargo xtask objects`"]
fn live_sequential_reads_fetch_each_byte_once_in_large_requests() {
    let records = records(40_000);
    let mut writer = RecordWriter::new(Vec::new(), "zstd:1,chunk_size:256k".parse().unwrap()).unwrap();
    for record in &records {
        writer.write_record(record).unwrap();
    }
    let file = writer.close().unwrap();
    let key = unique("sequential.riegeli");
    for url in publish(&key, &file) {
        let mut log = ServerLog::for_url(&url);
        let options = RecordReaderOptions { parallelism: 1, ..RecordReaderOptions::default() };
        let mut reader = open_records(&url, options).unwrap();
        let mut n = 0;
        while let Some(record) = reader.read_record().unwrap() {
            assert_eq!(record, records[n][..], "{url}");
            n += 1;
        }
        assert_eq!(n, records.len(), "{url}");
        let seen = log.take(&key);
        let size = file.len() as u64;
        assert!(seen.requests <= size.div_ceil(8 << 20) + 2, "{url}: {seen:?} for {size} bytes");
        if logs_bytes(&url) {
            assert_eq!(seen.bytes, size, "{url}: each byte once");
        }
        // Seeking and searching work on objects too.
        let mut reader = open_records(&url, RecordReaderOptions::default()).unwrap();
        reader.seek_numeric(size / 2).unwrap();
        assert!(reader.read_record().unwrap().is_some());
    }
}

#[test]
#[ignore = "needs the servers of `cargo xtask objects`"]
fn live_missing_objects_are_not_found_errors_naming_the_url() {
    for url in [
        format!("s3://{}/{}", env("RIEGELI_TEST_S3_BUCKET"), unique("missing")),
        format!("az://{}/{}", env("RIEGELI_TEST_AZ_CONTAINER"), unique("missing")),
        format!("{}/{}", env("RIEGELI_TEST_HTTP_URL"), unique("missing")),
        format!("gs://{}/{}", env("RIEGELI_TEST_GS_BUCKET"), unique("missing")),
    ] {
        let error = ObjectSource::open(&url).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::NotFound, "{url}: {error}");
        assert!(error.to_string().contains(&url), "{url}: {error}");
    }
}

/// The bucket (or container) the live write tests write `scheme` URLs to: for `gs`, moto's
/// bucket behind nginx (`cargo xtask objects`).
fn written_bucket(scheme: &str) -> String {
    match scheme {
        "s3" => env("RIEGELI_TEST_S3_BUCKET"),
        "gs" => env("RIEGELI_TEST_GS_WRITE_BUCKET"),
        _ => env("RIEGELI_TEST_AZ_CONTAINER"),
    }
}

/// Whether an object is listed at `key` of the bucket `scheme` URLs are written to (see
/// [`written_bucket`]; `gs`'s is listed through moto, as S3's).
fn listed(scheme: &str, key: &str) -> bool {
    use futures_util::StreamExt;
    let store: Box<dyn object_store::ObjectStore> = match scheme {
        "s3" | "gs" => Box::new(
            object_store::aws::AmazonS3Builder::from_env().with_bucket_name(written_bucket(scheme)).build().unwrap(),
        ),
        _ => Box::new(
            object_store::azure::MicrosoftAzureBuilder::from_env()
                .with_container_name(env("RIEGELI_TEST_AZ_CONTAINER"))
                .build()
                .unwrap(),
        ),
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let names: Vec<String> =
        runtime.block_on(store.list(None).map(|meta| meta.unwrap().location.to_string()).collect());
    names.iter().any(|name| name == key)
}

/// The pending multipart uploads of `key` in the bucket `scheme` URLs are written to (`s3`
/// or `gs`, both moto's, which answers unsigned requests): the `<Key>` elements of
/// ListMultipartUploads.
fn pending_uploads(scheme: &str, key: &str) -> usize {
    use std::io::{Read, Write};
    let endpoint = env("AWS_ENDPOINT");
    let host = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    let bucket = written_bucket(scheme);
    write!(stream, "GET /{bucket}?uploads HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.contains("ListMultipartUploadsResult"), "{answer}");
    answer.matches(&format!("<Key>{key}</Key>")).count()
}

#[test]
#[ignore = "needs the servers of `cargo xtask objects`"]
fn live_written_objects_read_back_and_unfinished_ones_leave_nothing() {
    let records: Vec<Vec<u8>> = (0..100_000u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes().repeat(1 + (i % 50) as usize))
        .collect();
    for scheme in ["s3", "gs", "az"] {
        let container = written_bucket(scheme);
        // Written (several 8 MiB parts), then read back.
        let key = unique("written.riegeli");
        let url = format!("{scheme}://{container}/{key}");
        let dest =
            riegeli_object_store::Destination::create(&url, riegeli_object_store::UploadConfig::default()).unwrap();
        let counters = dest.counters();
        let mut writer = RecordWriter::with_io_thread(dest, "uncompressed".parse().unwrap()).unwrap();
        for record in &records {
            writer.write_record(record).unwrap();
        }
        writer.close().unwrap().finish().unwrap();
        let mut reader = open_records(&url, RecordReaderOptions::default()).unwrap();
        let mut got = Vec::new();
        while let Some(record) = reader.read_record().unwrap() {
            got.push(record.to_vec());
        }
        assert!(got == records, "{url}");
        let stats = counters.stats();
        assert_eq!(stats.bytes, reader.get_ref().object().unwrap().size(), "{url}");
        assert!(stats.requests >= 3, "{url}: {stats:?}");

        // Dropped unclosed after parts went out: no object, no pending upload.
        let key = unique("dropped.riegeli");
        let url = format!("{scheme}://{container}/{key}");
        let mut writer = riegeli_object_store::create_records(&url, "uncompressed".parse().unwrap()).unwrap();
        for record in &records {
            writer.write_record(record).unwrap();
        }
        // (Azure has no pending uploads to list: its blocks stay uncommitted.)
        let multipart = scheme != "az";
        if multipart {
            // About 20 MB: two 8 MiB parts went out.
            assert_eq!(pending_uploads(scheme, &key), 1, "{url}");
        }
        drop(writer);
        assert!(!listed(scheme, &key), "{url}");
        if multipart {
            assert_eq!(pending_uploads(scheme, &key), 0, "{url}");
        }
    }
}
