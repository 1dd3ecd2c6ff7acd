//! Writing objects against object_store's in-memory store (the uploads' logic; the live
//! tests write to moto_server and Azurite): parts go out while writing goes on, a bounded
//! number at a time; the object appears only at `finish`; a dropped or failed writer aborts
//! its upload and leaves nothing; a durable flush is refused and the writer goes on.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{MultipartUpload, ObjectStore, ObjectStoreExt, PutPayload, UploadPart};
use riegeli_object_store::{Destination, FetchConfig, ObjectSink, ObjectSource, UploadConfig, UploadStats};
use riegeli_records::{
    ArrayRecordReader, ArrayRecordWriter, ErrorKind, FlushType, RecordReader, RecordWriter, RecordWriterOptions,
};

fn records(n: usize) -> Vec<Vec<u8>> {
    // Incompressible, so that the file is many parts long.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|i| {
            let mut record = format!("record {i} ").into_bytes();
            for _ in 0..(i % 40) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                record.extend_from_slice(&state.to_le_bytes());
            }
            record
        })
        .collect()
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(future)
}

/// The objects `store` lists.
fn listed(store: &dyn ObjectStore) -> Vec<String> {
    use futures_util::StreamExt;
    block_on(store.list(None).map(|meta| meta.unwrap().location.to_string()).collect())
}

fn read_back(store: &Arc<dyn ObjectStore>, name: &str) -> Vec<Vec<u8>> {
    let source = ObjectSource::with_store(
        Arc::clone(store),
        Path::from(name),
        &format!("memory:///{name}"),
        FetchConfig::default(),
    )
    .unwrap();
    let mut reader = RecordReader::new(source);
    let mut out = Vec::new();
    while let Some(record) = reader.read_record().unwrap() {
        out.push(record.to_vec());
    }
    out
}

/// What the test store saw of multipart uploads.
#[derive(Debug, Default)]
struct Seen {
    /// Multipart uploads started.
    starts: AtomicUsize,
    /// Parts handed to the store (when `put_part` is called).
    handed: AtomicUsize,
    uploading: AtomicUsize,
    most_at_once: AtomicUsize,
    parts: AtomicUsize,
    aborts: AtomicUsize,
    completes: AtomicUsize,
}

/// The in-memory store, with parts that take 5 ms each and fail from part `fail_at` on.
#[derive(Debug)]
struct Counted {
    inner: InMemory,
    seen: Arc<Seen>,
    fail_at: Option<usize>,
}

impl std::fmt::Display for Counted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Counted({})", self.inner)
    }
}

#[derive(Debug)]
struct CountedUpload {
    inner: Box<dyn MultipartUpload>,
    seen: Arc<Seen>,
    fail_at: Option<usize>,
    next: usize,
}

#[async_trait::async_trait]
impl MultipartUpload for CountedUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let (seen, index) = (Arc::clone(&self.seen), self.next);
        self.next += 1;
        self.seen.handed.fetch_add(1, Ordering::SeqCst);
        let fails = self.fail_at.is_some_and(|at| index >= at);
        let inner = self.inner.put_part(data);
        Box::pin(async move {
            let now = seen.uploading.fetch_add(1, Ordering::SeqCst) + 1;
            seen.most_at_once.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            seen.uploading.fetch_sub(1, Ordering::SeqCst);
            if fails {
                return Err(object_store::Error::Generic { store: "test", source: "part refused".into() });
            }
            seen.parts.fetch_add(1, Ordering::SeqCst);
            inner.await
        })
    }

    async fn complete(&mut self) -> object_store::Result<object_store::PutResult> {
        self.seen.completes.fetch_add(1, Ordering::SeqCst);
        self.inner.complete().await
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.seen.aborts.fetch_add(1, Ordering::SeqCst);
        self.inner.abort().await
    }
}

#[async_trait::async_trait]
impl ObjectStore for Counted {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: object_store::PutOptions,
    ) -> object_store::Result<object_store::PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: object_store::PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.seen.starts.fetch_add(1, Ordering::SeqCst);
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(CountedUpload { inner, seen: Arc::clone(&self.seen), fail_at: self.fail_at, next: 0 }))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: object_store::GetOptions,
    ) -> object_store::Result<object_store::GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: futures_util::stream::BoxStream<'static, object_store::Result<Path>>,
    ) -> futures_util::stream::BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&Path>,
    ) -> futures_util::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<object_store::ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: object_store::CopyOptions) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

fn counted(fail_at: Option<usize>) -> (Arc<dyn ObjectStore>, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    (Arc::new(Counted { inner: InMemory::new(), seen: Arc::clone(&seen), fail_at }), seen)
}

/// Parts of 64 KiB, two at a time.
const SMALL_PARTS: UploadConfig = UploadConfig { part_size: 64 << 10, max_in_flight: 2 };

fn sink(store: &Arc<dyn ObjectStore>, name: &str, config: UploadConfig) -> Destination {
    let url = format!("memory:///{name}");
    Destination::Object(Box::new(ObjectSink::with_store(Arc::clone(store), Path::from(name), &url, config).unwrap()))
}

#[test]
fn a_written_object_appears_at_finish_in_parts_a_bounded_number_at_a_time() {
    let (store, seen) = counted(None);
    let records = records(20_000);
    let dest = sink(&store, "a.riegeli", SMALL_PARTS);
    let counters = dest.counters();
    let mut writer = RecordWriter::with_io_thread(dest, "zstd:3".parse().unwrap()).unwrap();
    for record in &records {
        writer.write_record(record).unwrap();
    }
    writer.flush().unwrap();
    // Parts went out while writing, but nothing is visible before `finish`.
    assert!(seen.handed.load(Ordering::SeqCst) > 3, "{seen:?}");
    assert!(listed(store.as_ref()).is_empty());
    writer.close().unwrap().finish().unwrap();
    assert_eq!(listed(store.as_ref()), ["a.riegeli"]);
    assert_eq!(read_back(&store, "a.riegeli"), records);
    let size = block_on(store.head(&Path::from("a.riegeli"))).unwrap().size;
    let parts = size.div_ceil(64 << 10);
    assert_eq!(seen.parts.load(Ordering::SeqCst) as u64, parts);
    // Two at a time, never more.
    assert_eq!(seen.most_at_once.load(Ordering::SeqCst), 2, "{seen:?}");
    assert_eq!((seen.completes.load(Ordering::SeqCst), seen.aborts.load(Ordering::SeqCst)), (1, 0));
    // Starting the upload, each part, completing it.
    assert_eq!(counters.stats(), UploadStats { requests: parts + 2, bytes: size });
}

#[test]
fn an_object_smaller_than_a_part_is_one_put() {
    let (store, seen) = counted(None);
    let records = records(100);
    let dest = sink(&store, "small.riegeli", UploadConfig::default());
    let counters = dest.counters();
    let mut writer = ArrayRecordWriter::new(dest, "group_size:10".parse().unwrap()).unwrap();
    for record in &records {
        writer.write_record(record).unwrap();
    }
    writer.close().unwrap().finish().unwrap();
    let size = block_on(store.head(&Path::from("small.riegeli"))).unwrap().size;
    assert_eq!(counters.stats(), UploadStats { requests: 1, bytes: size });
    assert_eq!(seen.parts.load(Ordering::SeqCst), 0);
    let source = ObjectSource::with_store(
        Arc::clone(&store),
        Path::from("small.riegeli"),
        "memory:///small.riegeli",
        FetchConfig::default(),
    )
    .unwrap();
    let mut reader = ArrayRecordReader::new(source).unwrap();
    assert_eq!(reader.num_records(), 100);
    assert_eq!(reader.read(57).unwrap().as_ref(), records[57].as_slice());
}

#[test]
fn the_upload_starts_before_its_first_part_is_full_and_a_smaller_object_aborts_it() {
    let (store, seen) = counted(None);
    let url = "memory:///early.riegeli";
    let mut sink = ObjectSink::with_store(Arc::clone(&store), Path::from("early.riegeli"), url, SMALL_PARTS).unwrap();
    let counters = sink.counters();
    // Under a quarter of a part: nothing started.
    sink.write_all(&[1; 16 << 10][..(16 << 10) - 1]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(seen.starts.load(Ordering::SeqCst), 0);
    // A quarter: the upload starts in the background, no part being full.
    sink.write_all(&[1]).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while seen.starts.load(Ordering::SeqCst) == 0 {
        assert!(std::time::Instant::now() < deadline, "the upload was not started");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(seen.handed.load(Ordering::SeqCst), 0);
    // Finished smaller than a part: one PUT, and the upload started is aborted.
    sink.write_all(&[2; 1000]).unwrap();
    sink.finish().unwrap();
    assert_eq!((seen.aborts.load(Ordering::SeqCst), seen.completes.load(Ordering::SeqCst)), (1, 0));
    let object = block_on(async { store.get(&Path::from("early.riegeli")).await.unwrap().bytes().await.unwrap() });
    assert_eq!(object.len(), (16 << 10) + 1000);
    assert!(object[..16 << 10].iter().all(|&b| b == 1) && object[16 << 10..].iter().all(|&b| b == 2));
    // Starting the upload, the PUT, the abort.
    assert_eq!(counters.stats(), UploadStats { requests: 3, bytes: (16 << 10) + 1000 });
}

#[test]
fn a_writer_dropped_unclosed_aborts_and_an_object_there_stays_as_it_was() {
    let (store, seen) = counted(None);
    block_on(store.put(&Path::from("kept.riegeli"), b"old bytes".to_vec().into())).unwrap();
    let mut writer =
        RecordWriter::with_io_thread(sink(&store, "kept.riegeli", SMALL_PARTS), "zstd:3".parse().unwrap()).unwrap();
    for record in records(20_000) {
        writer.write_record(&record).unwrap();
    }
    assert!(seen.handed.load(Ordering::SeqCst) > 0, "{seen:?}");
    drop(writer);
    assert_eq!(seen.aborts.load(Ordering::SeqCst), 1);
    assert_eq!(seen.completes.load(Ordering::SeqCst), 0);
    assert_eq!(listed(store.as_ref()), ["kept.riegeli"]);
    let old = block_on(async { store.get(&Path::from("kept.riegeli")).await.unwrap().bytes().await.unwrap() });
    assert_eq!(old.as_ref(), b"old bytes");

    // Dropped before a part was full: no upload was started, nothing to abort.
    let mut writer =
        RecordWriter::new(sink(&store, "never.riegeli", SMALL_PARTS), RecordWriterOptions::default()).unwrap();
    writer.write_record(b"one").unwrap();
    drop(writer);
    assert_eq!(listed(store.as_ref()), ["kept.riegeli"]);
}

#[test]
fn a_failed_part_fails_the_writer_and_aborts_the_upload() {
    let (store, seen) = counted(Some(3));
    let mut writer =
        RecordWriter::with_io_thread(sink(&store, "failed.riegeli", SMALL_PARTS), "zstd:3".parse().unwrap()).unwrap();
    let mut failed = None;
    for record in records(40_000) {
        if let Err(e) = writer.write_record(&record) {
            failed = Some(e);
            break;
        }
    }
    let error = match failed {
        Some(e) => e,
        None => writer.close().and_then(|dest| dest.finish().map_err(Into::into)).unwrap_err(),
    };
    assert!(matches!(error.kind(), ErrorKind::Io(_)), "{error}");
    assert!(error.to_string().contains("part refused"), "{error}");
    // The writer is dropped (or closed) failed: the upload is aborted, nothing appears.
    assert!(listed(store.as_ref()).is_empty());
    assert_eq!(seen.aborts.load(Ordering::SeqCst), 1, "{seen:?}");
    assert_eq!(seen.completes.load(Ordering::SeqCst), 0);
}

#[test]
fn a_durable_flush_is_refused_and_the_writer_goes_on() {
    let (store, _) = counted(None);
    let records = records(5_000);
    for behind in [false, true] {
        let name = format!("synced-{behind}.riegeli");
        let dest = sink(&store, &name, SMALL_PARTS);
        let options: RecordWriterOptions = "zstd:3".parse().unwrap();
        let mut writer =
            if behind { RecordWriter::with_io_thread(dest, options) } else { RecordWriter::new(dest, options) }
                .unwrap();
        for (i, record) in records.iter().enumerate() {
            writer.write_record(record).unwrap();
            if i == 2_000 {
                writer.flush_with(FlushType::FromObject).unwrap();
                writer.flush_with(FlushType::FromProcess).unwrap();
                let error = writer.flush_with(FlushType::FromMachine).unwrap_err();
                assert!(matches!(error.kind(), ErrorKind::Io(e) if e.kind() == io::ErrorKind::Unsupported), "{error}");
                assert!(error.to_string().contains("durable only once complete"), "{error}");
            }
        }
        writer.close().unwrap().finish().unwrap();
        assert_eq!(read_back(&store, &name), records, "behind: {behind}");
    }
}

#[test]
fn http_urls_and_appending_to_objects_are_refused_files_are_written() {
    let error = Destination::create("http://127.0.0.1:1/x.riegeli", UploadConfig::default()).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::Unsupported, "{error}");
    assert!(error.to_string().starts_with("cannot create http://127.0.0.1:1/x.riegeli: writing over HTTP"), "{error}");
    let error = Destination::append("s3://bucket/x.riegeli").unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::Unsupported, "{error}");
    assert!(error.to_string().contains("an object cannot be appended to"), "{error}");
    let bad = UploadConfig { part_size: 0, ..UploadConfig::default() };
    let error = ObjectSink::with_store(Arc::new(InMemory::new()), Path::from("x"), "memory:///x", bad).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{error}");

    // A path and a file:// URL are local files; appending continues a file.
    let dir = std::env::temp_dir().join(format!("riegeli-write-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("local.riegeli");
    let mut writer = riegeli_object_store::create_records(&path, RecordWriterOptions::default()).unwrap();
    writer.write_record(b"first").unwrap();
    writer.close().unwrap().finish().unwrap();
    let url = url::Url::from_file_path(&path).unwrap().to_string();
    let (dest, size) = Destination::append(&url).unwrap();
    assert_eq!(size, std::fs::metadata(&path).unwrap().len());
    let mut writer = RecordWriter::append(dest, size, RecordWriterOptions::default()).unwrap();
    writer.write_record(b"second").unwrap();
    let mut dest = writer.close().unwrap();
    dest.flush().unwrap();
    dest.finish().unwrap();
    let mut reader = riegeli_object_store::open_records(&path, Default::default()).unwrap();
    let mut got = Vec::new();
    while let Some(record) = reader.read_record().unwrap() {
        got.push(record.to_vec());
    }
    assert_eq!(got, [b"first".to_vec(), b"second".to_vec()]);
    let error = Destination::create(&dir, UploadConfig::default()).unwrap_err();
    assert!(error.to_string().starts_with(&format!("cannot create {}: ", dir.display())), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Written through a shared buffer: the bytes a sink was given equal the object's.
#[test]
fn the_object_holds_exactly_the_bytes_written() {
    let (store, _) = counted(None);
    let bytes: Vec<u8> = (0..300_000u32).flat_map(|i| (i.wrapping_mul(2_654_435_761)).to_le_bytes()).collect();
    // Part boundaries at, before and after the end of the object; writes of odd sizes.
    for len in [0, 1, 65_535, 65_536, 65_537, 3 * 65_536, bytes.len()] {
        let name = format!("exact-{len}");
        let mut dest = sink(&store, &name, SMALL_PARTS);
        for piece in bytes[..len].chunks(7_777) {
            dest.write_all(piece).unwrap();
        }
        dest.finish().unwrap();
        let got = block_on(async { store.get(&Path::from(name.as_str())).await.unwrap().bytes().await.unwrap() });
        assert_eq!(got.as_ref(), &bytes[..len], "{len}");
    }
}
