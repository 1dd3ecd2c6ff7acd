//! Fetch plans against object_store's in-memory store: what each kind of read
//! asks for, counted by the source (requests and bytes), and the records it gets.

mod common;

use std::sync::Arc;

use common::data_chunks;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use riegeli_object_store::{FetchConfig, Location, ObjectSource, finish_cache_writes};
use riegeli_records::{
    ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordWriter, ReadAt, RecordReader, RecordWriter,
};

fn records(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("record {i} {}", "x".repeat(i % 300)).into_bytes()).collect()
}

/// A Riegeli/records file of `records`, uncompressed in 64 KiB chunks.
fn riegeli_file(records: &[Vec<u8>]) -> Vec<u8> {
    let mut writer = RecordWriter::new(Vec::new(), "uncompressed,chunk_size:64k".parse().unwrap()).unwrap();
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.close().unwrap()
}

/// An in-memory store holding `bytes` at `name`.
fn store_with(name: &str, bytes: Vec<u8>) -> Arc<dyn ObjectStore> {
    let store = Arc::new(InMemory::new());
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(store.put(&Path::from(name), bytes.into())).unwrap();
    store
}

fn source(store: &Arc<dyn ObjectStore>, name: &str) -> ObjectSource {
    source_with(store, name, FetchConfig::default())
}

/// A source of `name` in `store` (as `memory:///name`), fetching as `config` says.
fn source_with(store: &Arc<dyn ObjectStore>, name: &str, config: FetchConfig) -> ObjectSource {
    ObjectSource::with_store(Arc::clone(store), Path::from(name), &format!("memory:///{name}"), config).unwrap()
}

#[test]
fn array_record_open_fetches_the_trailer_and_a_batch_fetches_its_chunks() {
    let records = records(20_000);
    let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:100,zstd:3".parse().unwrap()).unwrap();
    for record in &records {
        writer.write_record(record).unwrap();
    }
    let file = writer.close().unwrap();
    let size = file.len() as u64;
    let chunks = data_chunks(&file);
    // The last data chunk is the footer's: data chunks are the others.
    let (footer_begin, footer_end) = *chunks.last().unwrap();
    let store = store_with("a.array_record", file.clone());
    let source = source(&store, "a.array_record");
    let opened = source.clone();
    let mut reader =
        ArrayRecordReader::with_options(Location::Object(source), ArrayRecordReaderOptions::default()).unwrap();
    assert_eq!(reader.num_records(), 20_000);
    let open = opened.stats();
    // The size with the last 64 KiB (one suffix range), and the footer.
    assert!(open.requests <= 2, "{open:?}");
    assert!(open.bytes <= 65536 + (footer_end - footer_begin) + (64 << 10), "{open:?}");
    assert!(size - open.bytes >= footer_begin - 64 * 1024, "no data chunk fetched: {open:?} of {size}");

    // A batch of random indices: each touched chunk's bytes, once.
    let indices: Vec<u64> = (0..2000u64).map(|i| (i * 7919) % 20_000).collect();
    let got = reader.read_batch(&indices).unwrap();
    assert!(got.iter().zip(&indices).all(|(r, &i)| r[..] == records[i as usize][..]));
    let batch = opened.stats();
    let touched: std::collections::BTreeSet<u64> = indices.iter().map(|i| i / 100).collect();
    let touched_bytes: u64 = touched.iter().map(|&k| chunks[k as usize].1 - chunks[k as usize].0).sum();
    let fetched = batch.bytes - open.bytes;
    assert!(
        fetched >= touched_bytes && fetched as f64 <= touched_bytes as f64 * 1.05,
        "{fetched} for {touched_bytes}: {} of {} chunks, {open:?} {batch:?}, size {size}",
        touched.len(),
        chunks.len()
    );
    // Adjacent chunks are fetched together.
    assert!(batch.requests - open.requests < touched.len() as u64, "{batch:?}");

    // A single read: its chunk, exactly.
    let before = opened.stats();
    assert_eq!(reader.read(12_345).unwrap(), records[12_345][..]);
    let single = opened.stats();
    let (begin, end) = chunks[123];
    assert_eq!((single.requests - before.requests, single.bytes - before.bytes), (1, end - begin));
}

#[test]
fn a_sequential_read_fetches_large_ranges_ahead_and_reads_every_record() {
    let records = records(50_000);
    let file = riegeli_file(&records);
    let size = file.len() as u64;
    let store = store_with("f.riegeli", file);
    let config = FetchConfig { sequential_window: 1 << 20, ..FetchConfig::default() };
    let source =
        ObjectSource::with_store(Arc::clone(&store), Path::from("f.riegeli"), "memory:///f.riegeli", config).unwrap();
    let counting = source.clone();
    let mut reader = RecordReader::new(source);
    let mut n = 0;
    while let Some(record) = reader.read_record().unwrap() {
        assert_eq!(record, records[n][..]);
        n += 1;
    }
    assert_eq!(n, records.len());
    let stats = counting.stats();
    assert_eq!(stats.bytes, size, "each byte once");
    // Whole windows, but for the opening, the first read and the first windows, which grow
    // from an eighth of a window (4 more).
    assert!(stats.requests <= size.div_ceil(1 << 20) + 2 + 4, "{stats:?} for {size} bytes");

    // Seeking and reading back: records at their positions, fetched again as needed.
    let mut reader = RecordReader::new(counting.clone());
    reader.seek_numeric(size / 2).unwrap();
    let record = reader.read_record().unwrap().unwrap();
    let index = records.iter().position(|r| r[..] == record[..]).unwrap();
    assert!(index > 0 && index < records.len());
}

#[test]
fn a_missing_object_and_a_bad_url_are_clear_errors() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let error =
        ObjectSource::with_store(store, Path::from("nope"), "memory:///nope", FetchConfig::default()).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound, "{error}");
    assert!(error.to_string().contains("memory:///nope"), "{error}");
    let error = ObjectSource::open("ftp://host/file").unwrap_err();
    assert!(error.to_string().contains("ftp://host/file"), "{error}");
    assert!(riegeli_object_store::is_url("s3://bucket/key") && riegeli_object_store::is_url("HTTPS://h/k"));
    assert!(!riegeli_object_store::is_url("/tmp/file") && !riegeli_object_store::is_url("file.riegeli"));
}

#[test]
fn opening_fetches_the_size_and_the_tail_in_one_request_which_later_reads_reuse() {
    let bytes: Vec<u8> = (0..1u32 << 20).map(|i| (i % 253) as u8).collect();
    for size in [0usize, 1, 1000, 64 << 10, (64 << 10) + 1, 1 << 20] {
        let store = store_with("o", bytes[..size].to_vec());
        let mut source = source(&store, "o");
        assert_eq!(source.size(), size as u64);
        let open = source.stats();
        let tail = size.min(64 << 10) as u64;
        // (Requests count every one made: an empty object's suffix GET, answered with nothing,
        // too.)
        assert_eq!((open.requests, open.bytes), (1, tail), "size {size}");
        // The tail again: no request.
        std::io::Seek::seek(&mut source, std::io::SeekFrom::Start(size as u64 - tail)).unwrap();
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut source, &mut got).unwrap();
        assert_eq!(got, bytes[size - tail as usize..size], "size {size}");
        assert_eq!(source.stats(), open, "size {size}");
        // The whole object, each byte once.
        std::io::Seek::seek(&mut source, std::io::SeekFrom::Start(0)).unwrap();
        got.clear();
        std::io::Read::read_to_end(&mut source, &mut got).unwrap();
        assert_eq!(got, bytes[..size], "size {size}");
        assert_eq!(source.stats().bytes, size as u64, "size {size}");
    }
}

#[test]
fn prefetching_stops_at_the_cache_bound() {
    // An index may claim chunks as large as the object: prefetching holds at most
    // `max_cached` bytes, and reads past them still get their bytes.
    let bytes: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
    let store = store_with("big", bytes.clone());
    let config = FetchConfig { max_cached: 1 << 20, max_request: 256 << 10, ..FetchConfig::default() };
    let mut source = ObjectSource::with_store(Arc::clone(&store), Path::from("big"), "memory:///big", config).unwrap();
    source.prefetch(std::slice::from_ref(&(0..8 << 20)));
    let mut buf = [0u8; 16];
    std::io::Read::read_exact(&mut source, &mut buf).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let stats = source.stats();
    assert!(stats.bytes <= 1 << 20, "{stats:?}");
    std::io::Seek::seek(&mut source, std::io::SeekFrom::Start(7 << 20)).unwrap();
    std::io::Read::read_exact(&mut source, &mut buf).unwrap();
    assert_eq!(&buf[..], &bytes[7 << 20..(7 << 20) + 16]);
}

#[test]
fn byte_range_reads_fetch_about_their_range_not_the_read_ahead_past_it() {
    // Workers reading the byte ranges of a split: together they fetch about the object once.
    let records = records(40_000);
    let file = riegeli_file(&records);
    let size = file.len() as u64;
    let store = store_with("split.riegeli", file);
    let config = FetchConfig { sequential_window: 256 << 10, sequential_depth: 8, ..FetchConfig::default() };
    let (mut fetched, mut n) = (0, 0);
    let ranges: Vec<_> = riegeli_records::byte_ranges(size, 1 << 20).collect();
    for range in &ranges {
        let source = ObjectSource::with_store(
            Arc::clone(&store),
            Path::from("split.riegeli"),
            "memory:///split",
            config.clone(),
        )
        .unwrap();
        let counting = source.clone();
        // The reader tells the source what it reads: no call of the source's own.
        let mut reader = RecordReader::new(Location::Object(source));
        reader.set_byte_range(range.clone()).unwrap();
        while let Some(record) = reader.read_record().unwrap() {
            assert_eq!(record, records[n][..]);
            n += 1;
        }
        let stats = counting.stats();
        fetched += stats.bytes;
        // The opening, the first read, whole windows over the range (no small first windows:
        // fewer requests per range) and the chunk that crosses its end.
        let windows = (range.end - range.start).div_ceil(config.sequential_window);
        assert!(stats.requests <= 2 + windows + 1, "{stats:?} for {range:?}");
    }
    assert_eq!(n, records.len());
    // Each range: its bytes, the object's tail (read on opening), the chunk that crosses its
    // end, and at most one read-ahead window more.
    let bound = size + ranges.len() as u64 * ((64 << 10) + (64 << 10) + (256 << 10));
    assert!(fetched <= bound, "{fetched} bytes fetched for {size} in {} ranges (bound {bound})", ranges.len());
}

#[test]
fn a_server_sending_more_than_asked_for_is_an_error_read_no_further() {
    // A server that answers every range with 64 MiB (its Content-Length says so, its
    // Content-Range says the range): the reader stops at the range.
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::{AtomicU64, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sent = Arc::new(AtomicU64::new(0));
    let gets = Arc::new(AtomicU64::new(0));
    let (counter, get_counter) = (Arc::clone(&sent), Arc::clone(&gets));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (counter, get_counter) = (Arc::clone(&counter), Arc::clone(&get_counter));
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                loop {
                    let mut head = Vec::new();
                    let mut line = String::new();
                    while reader.read_line(&mut line).unwrap_or(0) > 2 {
                        head.push(std::mem::take(&mut line));
                    }
                    let Some(request) = head.first() else { return };
                    if request.starts_with("HEAD") {
                        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n");
                        continue;
                    }
                    let range = head
                        .iter()
                        .find_map(|h| h.to_ascii_lowercase().strip_prefix("range: bytes=").map(str::to_owned));
                    let (a, b) = match range.as_deref().map(str::trim).and_then(|r| r.split_once('-')) {
                        Some(("", n)) => (1048576 - n.parse::<u64>().unwrap().min(1048576), 1048575),
                        Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                        None => (0, 1048575),
                    };
                    let reply = format!(
                        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/1048576\r\nContent-Length: 67108864\r\n\r\n"
                    );
                    if stream.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                    get_counter.fetch_add(1, Ordering::Relaxed);
                    let piece = vec![7u8; 64 << 10];
                    for _ in 0..1024 {
                        if stream.write_all(&piece).is_err() {
                            return;
                        }
                        counter.fetch_add(piece.len() as u64, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let url = format!("http://127.0.0.1:{port}/object");
    let error = match ObjectSource::open(&url) {
        Err(error) => error,
        Ok(mut source) => {
            assert_eq!(source.size(), 1 << 20);
            let mut buf = vec![0u8; 1000];
            std::io::Read::read_exact(&mut source, &mut buf).unwrap_err()
        }
    };
    assert!(error.to_string().contains("more than"), "{error}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    // What the socket buffers of each connection took (a few MiB on loopback, more where TCP
    // autotuning grows them), not the 64 MiB of each answer.
    let (sent, gets) = (sent.load(Ordering::Relaxed), gets.load(Ordering::Relaxed));
    assert!(gets > 0 && sent < gets * (16 << 20), "the server sent {sent} bytes in {gets} answers");
}

/// The in-memory store, holding every GET of a bounded range back until it is opened, and
/// noting the range each asked for (an unbounded one as `u64::MAX..u64::MAX`).
#[derive(Debug)]
struct Gated {
    inner: InMemory,
    /// (open, the ranges asked for so far).
    state: std::sync::Mutex<(bool, Vec<std::ops::Range<u64>>)>,
}

impl Gated {
    /// A store holding `bytes` at `name`, open (answering) or not.
    fn with(name: &str, bytes: Vec<u8>, open: bool) -> Arc<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let inner = InMemory::new();
        runtime.block_on(inner.put(&Path::from(name), bytes.into())).unwrap();
        Arc::new(Gated { inner, state: std::sync::Mutex::new((open, Vec::new())) })
    }

    fn asked(&self) -> Vec<std::ops::Range<u64>> {
        self.state.lock().unwrap().1.clone()
    }

    fn open(&self, open: bool) {
        self.state.lock().unwrap().0 = open;
    }
}

impl std::fmt::Display for Gated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Gated({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for Gated {
    async fn put_opts(
        &self,
        location: &Path,
        payload: object_store::PutPayload,
        opts: object_store::PutOptions,
    ) -> object_store::Result<object_store::PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: object_store::PutMultipartOptions,
    ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: object_store::GetOptions,
    ) -> object_store::Result<object_store::GetResult> {
        let asked = match &options.range {
            Some(object_store::GetRange::Bounded(range)) => range.clone(),
            _ => u64::MAX..u64::MAX,
        };
        let bounded = asked.start != u64::MAX;
        self.state.lock().unwrap().1.push(asked);
        while bounded && !self.state.lock().unwrap().0 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
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

#[test]
fn a_read_from_the_start_asks_for_the_first_window_with_it_and_windows_grow() {
    let records = records(20_000);
    let file = riegeli_file(&records);
    let size = file.len() as u64;
    let store = Gated::with("f", file, true);
    let window = 1u64 << 20;
    let config = FetchConfig { sequential_window: window, ..FetchConfig::default() };
    let dyn_store: Arc<dyn ObjectStore> = Arc::clone(&store) as Arc<dyn ObjectStore>;
    let source = ObjectSource::with_store(dyn_store, Path::from("f"), "memory:///f", config).unwrap();
    let opening = store.asked().len();

    // Held back, the first read of a sequential read asks for its bytes and for the first
    // window after them before any answer comes: reading on waits for no second round trip.
    store.open(false);
    let reader = std::thread::spawn(move || {
        let mut reader = RecordReader::new(source);
        let mut n = 0;
        while let Some(record) = reader.read_record().unwrap() {
            assert_eq!(record, records[n][..]);
            n += 1;
        }
        n
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while store.asked().len() < opening + 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let mut held = store.asked()[opening..].to_vec();
    held.sort_unstable_by_key(|r| r.start);
    store.open(true);
    assert_eq!(held, [0..64 << 10, (64 << 10)..(64 << 10) + window / 8], "the requests of the first read");
    assert_eq!(reader.join().unwrap(), 20_000);

    // The read-ahead's windows, in file order: each at least as long as the one before,
    // from an eighth of a window up to a whole one, and every byte asked for once.
    let mut asked = store.asked()[opening..].to_vec();
    asked.sort_unstable_by_key(|r| r.start);
    let lengths: Vec<u64> = asked.iter().map(|r| r.end - r.start).collect();
    let last = lengths.len() - 1;
    assert!(lengths[1..last].windows(2).all(|w| w[0] <= w[1]), "{lengths:?}");
    assert!(lengths[1] == window / 8 && lengths[..last].iter().all(|&l| l <= window), "{lengths:?}");
    assert!(lengths.contains(&window), "{lengths:?}");
    // (The object's tail came with the opening.)
    assert!(asked.windows(2).all(|w| w[0].end == w[1].start) && asked[last].end == size - (64 << 10), "{asked:?}");
}

#[test]
fn an_object_to_be_read_from_its_start_has_its_first_windows_asked_for_with_the_opening() {
    let window = 1u64 << 20;
    let config = FetchConfig { sequential_window: window, read_from_start: true, ..FetchConfig::default() };
    // The suffix (the tail, and the size), then the first read's 64 KiB, windows growing
    // from an eighth of a window to a whole one, and whole ones: half the depth's (4) in all.
    let k = 64u64 << 10;
    let mut opening = vec![u64::MAX..u64::MAX, 0..k];
    while opening.iter().filter(|r| r.end - r.start == window).count() < 4 {
        let end = opening.last().unwrap().end;
        opening.push(end..end + end.clamp(window / 8, window));
    }
    let reach = opening.last().unwrap().end;
    let bytes: Vec<u8> = (0..6u32 << 20).map(|i| (i % 251) as u8).collect();
    for size in [0u64, 1, 1000, k, k + 1, 2 * k, 2 * k + window / 8, 3 << 20, 5 << 20, 6 << 20] {
        let store = Gated::with("o", bytes[..size as usize].to_vec(), false);
        let dyn_store: Arc<dyn ObjectStore> = Arc::clone(&store) as Arc<dyn ObjectStore>;
        let mut source = ObjectSource::with_store(dyn_store, Path::from("o"), "memory:///o", config.clone()).unwrap();
        assert_eq!(source.size(), size);
        // Held back, the first windows were asked for with the opening, before its answer
        // told the size.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while store.asked().len() < opening.len() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut asked = store.asked();
        asked.sort_unstable_by_key(|r| (r.start != u64::MAX, r.start));
        assert_eq!(asked, opening, "size {size}");
        store.open(true);
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut source, &mut got).unwrap();
        assert!(got == bytes[..size as usize], "size {size}");
        // Reading on asks for none of those bytes again, nor for the tail.
        let later = &store.asked()[opening.len()..];
        assert!(later.iter().all(|r| r.start >= reach && r.end <= size - k), "size {size}: {later:?}");
        // Every byte fetched once, but where the opening's ranges overlap the tail or run
        // past the end (the answers to those are counted when they come).
        let overlap: u64 =
            opening[1..].iter().map(|r| r.end.min(size).saturating_sub(r.start.max(size.saturating_sub(k)))).sum();
        while source.stats().bytes < size + overlap && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(source.stats().bytes, size + overlap, "size {size}");
    }
}

#[test]
fn a_byte_range_reader_asks_for_its_windows_from_its_first_chunk_before_reading() {
    let records = records(40_000);
    let file = riegeli_file(&records);
    let size = file.len() as u64;
    let store = Gated::with("s", file, true);
    let window = 256u64 << 10;
    let config = FetchConfig { sequential_window: window, ..FetchConfig::default() };
    let range = (1u64 << 20) + 1000..(2u64 << 20) + 5000;
    assert!(size > range.end + (1 << 20), "a file of {size} bytes is too small for the test");
    let dyn_store: Arc<dyn ObjectStore> = Arc::clone(&store) as Arc<dyn ObjectStore>;
    let source = ObjectSource::with_store(dyn_store, Path::from("s"), "memory:///s", config).unwrap();
    let mut reader = RecordReader::new(Location::Object(source));
    let before = store.asked().len();
    reader.set_byte_range(range.clone()).unwrap();
    let first = reader.pos().chunk_begin();
    assert!(first >= range.start && first < range.end, "first chunk at {first}");

    // Setting the range asked for the windows from the first chunk to the range's end at
    // once, before any record is read.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while store.asked().iter().skip(before).map(|r| r.end).max() < Some(range.end)
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    let mut held = store.asked()[before..].to_vec();
    held.sort_unstable_by_key(|r| r.start);
    // Finding the first chunk read the block that holds the range's start (one minimal
    // fetch, which the reader holds); then whole windows from there.
    let block = range.start / (64 << 10) * (64 << 10);
    let fetched = block + (64 << 10);
    assert_eq!(held.first(), Some(&(block..fetched)), "{held:?}");
    held.remove(0);
    let mut expected = Vec::new();
    let mut cursor = first.max(fetched);
    while cursor < range.end {
        expected.push(cursor..(cursor + window).min(range.end));
        cursor += window;
    }
    assert_eq!(held, expected);
    // The records of the chunks that begin in the range (and only those), in order.
    let mut got = Vec::new();
    while let Some(record) = reader.read_record().unwrap() {
        got.push(record.to_vec());
    }
    assert!(!got.is_empty());
    let at = records.iter().position(|r| *r == got[0]).unwrap();
    assert!(got.iter().zip(&records[at..]).all(|(a, b)| a == b));
    // Nothing asked for again, nor before the first chunk (but what the search read).
    let asked = store.asked();
    let later = &asked[before + 1 + held.len()..];
    assert!(later.iter().all(|r| r.start >= range.end), "{later:?}");
}

/// A fresh directory for a cache.
fn cache_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("riegeli-cache-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The cache's first segment at `dir` (its data file and its bytes), once the cache's writes
/// have ended ([`finish_cache_writes`]: a copy landing after a test damaged the file would
/// mend the damage), and where the first byte of `object` at or after `at` that is not 0 is
/// (a hole of the file reads as 0).
fn settled_segment(dir: &std::path::Path, object: &[u8], at: usize) -> (std::path::PathBuf, Vec<u8>, usize) {
    assert!(finish_cache_writes(std::time::Duration::from_secs(30)), "the cache's writes never ended");
    let at = at + object[at..].iter().position(|&b| b != 0).expect("a byte that is not 0");
    let data = std::fs::read_dir(dir.join("riegeli-cache-v2/data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "data"))
        .expect("a segment");
    let bytes = std::fs::read(&data).unwrap();
    assert_eq!(bytes.get(at), Some(&object[at]), "the cache holds byte {at}");
    (data, bytes, at)
}

/// An ArrayRecord file of `records` (`group_size:1`).
fn array_record_file(records: &[Vec<u8>]) -> Vec<u8> {
    let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:1,zstd:3".parse().unwrap()).unwrap();
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.close().unwrap()
}

/// Opens `name` with the cache at `dir` and reads every record at random; returns the stats.
fn read_all_cached(
    store: &Arc<dyn ObjectStore>,
    name: &str,
    config: FetchConfig,
    want: &[Vec<u8>],
) -> riegeli_object_store::FetchStats {
    read_all_cached_checking(store, name, config, want, true)
}

/// [`read_all_cached`] by a reader that checks chunk hashes (`verify_hashes`) or not: the
/// cache then reads the chunks it holds without checks of its own, or checks their pieces.
fn read_all_cached_checking(
    store: &Arc<dyn ObjectStore>,
    name: &str,
    config: FetchConfig,
    want: &[Vec<u8>],
    verify_hashes: bool,
) -> riegeli_object_store::FetchStats {
    let source = source_with(store, name, config);
    let counting = source.clone();
    let mut options = ArrayRecordReaderOptions::default();
    options.chunks.verify_hashes = verify_hashes;
    let mut reader = ArrayRecordReader::with_options(Location::Object(source), options).unwrap();
    let mut indices: Vec<u64> = (0..want.len() as u64).collect();
    indices.reverse();
    indices.swap(3, 700);
    let got = reader.read_batch(&indices).unwrap();
    for (record, &i) in got.iter().zip(&indices) {
        assert_eq!(record[..], want[i as usize][..], "record {i}");
    }
    // What the read fetched is in the cache before the next reader looks.
    assert!(finish_cache_writes(std::time::Duration::from_secs(30)), "the cache's writes never ended");
    counting.stats()
}

#[test]
fn the_cache_serves_a_second_reader_and_never_an_old_copy_of_a_changed_object() {
    let dir = cache_dir("changed");
    let records = records(2000);
    let store = store_with("c.array_record", array_record_file(&records));
    let config = FetchConfig { cache_dir: Some(dir.clone()), ..FetchConfig::default() };
    let first = read_all_cached(&store, "c.array_record", config.clone(), &records);
    assert!(first.requests >= 2 && first.cache_misses > 0, "{first:?}");
    // Everything is cached now: the next reader's only request is the HEAD that checks the
    // object's ETag (cache_max_age 0).
    let second = read_all_cached(&store, "c.array_record", config.clone(), &records);
    assert_eq!((second.requests, second.bytes, second.cache_misses), (1, 0, 0), "{second:?}");
    assert!(second.cache_hits > 0 && second.cache_bytes > 0, "{second:?}");
    // Trusted for an hour: opening costs no request at all.
    let trusting = FetchConfig { cache_max_age: std::time::Duration::from_secs(3600), ..config.clone() };
    let third = read_all_cached(&store, "c.array_record", trusting, &records);
    assert_eq!((third.requests, third.cache_misses), (0, 0), "{third:?}");
    // The object changes under the same URL (a new ETag): the HEAD sees it, the new records
    // are read, fetched from the server.
    let changed: Vec<Vec<u8>> = records.iter().map(|r| [b"new ".as_slice(), r].concat()).collect();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(store.put(&Path::from("c.array_record"), array_record_file(&changed).into())).unwrap();
    let fourth = read_all_cached(&store, "c.array_record", config, &changed);
    assert!(fourth.cache_misses > 0 && fourth.bytes > 0, "{fourth:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_damaged_cache_entry_is_dropped_and_fetched_again() {
    // Found by the reader's chunk hashes, or (a reader that checks none) by the cache's own.
    for verify_hashes in [true, false] {
        damaged_cache_entry(verify_hashes);
    }
}

fn damaged_cache_entry(verify_hashes: bool) {
    let dir = cache_dir(&format!("damaged-{verify_hashes}"));
    let records = records(2000);
    let store = store_with("d.array_record", array_record_file(&records));
    let config = FetchConfig { cache_dir: Some(dir.clone()), ..FetchConfig::default() };
    let read_all_cached =
        |store: &_, name, config, want: &_| read_all_cached_checking(store, name, config, want, verify_hashes);
    read_all_cached(&store, "d.array_record", config.clone(), &records);
    // Flip a byte every 4 KiB of every cached segment, and cut one short.
    let data = dir.join("riegeli-cache-v2/data");
    let mut damaged = 0;
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "data") {
            let mut bytes = std::fs::read(&path).unwrap();
            for i in (0..bytes.len()).step_by(4096) {
                bytes[i] ^= 0x40;
            }
            bytes.truncate(bytes.len() - 10);
            std::fs::write(&path, bytes).unwrap();
            damaged += 1;
        }
    }
    assert!(damaged > 0);
    let again = read_all_cached(&store, "d.array_record", config.clone(), &records);
    assert!(again.cache_damaged > 0 && again.cache_misses > 0 && again.bytes > 0, "{again:?}");
    // What was fetched again replaced the damaged pieces.
    let healed = read_all_cached(&store, "d.array_record", config, &records);
    assert_eq!((healed.cache_misses, healed.cache_damaged), (0, 0), "{healed:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn one_damaged_unit_costs_one_refetch_of_what_it_held() {
    for verify_hashes in [true, false] {
        one_damaged_unit(verify_hashes);
    }
}

fn one_damaged_unit(verify_hashes: bool) {
    let dir = cache_dir(&format!("unit-{verify_hashes}"));
    let records = records(2000);
    let object = array_record_file(&records);
    let store = store_with("u.array_record", object.clone());
    let config = FetchConfig { cache_dir: Some(dir.clone()), ..FetchConfig::default() };
    let read_all_cached =
        |store: &_, name, config, want: &_| read_all_cached_checking(store, name, config, want, verify_hashes);
    read_all_cached(&store, "u.array_record", config.clone(), &records);
    // One byte flipped about the middle of the object's first segment. (Past the block
    // header at the middle, which a read by the index skips unread: a byte of a chunk,
    // which every check sees.)
    let (data, mut bytes, middle) = settled_segment(&dir, &object, object.len() / 2 + 1000);
    bytes[middle] ^= 0x40;
    std::fs::write(&data, bytes).unwrap();
    // The pieces around it are still read from the cache; the damaged one (at most 4 KiB)
    // is dropped and what the reads need of it fetched again.
    let again = read_all_cached(&store, "u.array_record", config.clone(), &records);
    assert_eq!(again.cache_damaged, 1, "{again:?}");
    assert!(again.bytes > 0 && again.bytes <= 3 * 4096, "{again:?}");
    let healed = read_all_cached(&store, "u.array_record", config, &records);
    assert_eq!((healed.cache_misses, healed.cache_damaged, healed.bytes), (0, 0, 0), "{healed:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_chunk_asked_for_by_a_reader_that_checks_nothing_is_read_checked_from_the_cache() {
    // One source, two readers of the same bytes: one that checks its chunks' hashes (whose
    // chunks the cache reads without checks of its own) and one that does not (`prefetch`).
    // The cache's copy is damaged: whichever asked first, the bytes read are the object's.
    let dir = cache_dir("shared-checks");
    let records = records(1000);
    let bytes = array_record_file(&records);
    let store = store_with("s.array_record", bytes.clone());
    let config = FetchConfig { cache_dir: Some(dir.clone()), ..FetchConfig::default() };
    read_all_cached(&store, "s.array_record", config.clone(), &records);
    let (start, end) = (100u64, 900u64);
    let range = start..end;
    let chunk = std::slice::from_ref(&range);
    for checking_first in [false, true] {
        // (Damaged again: the first round's refetch mended it, once its copy has landed.)
        let (data, mut cached, at) = settled_segment(&dir, &bytes, 500);
        assert!(at < end as usize);
        cached[at] ^= 0x40;
        std::fs::write(&data, cached).unwrap();
        let source = source_with(&store, "s.array_record", config.clone());
        if checking_first {
            source.will_need(chunk, true);
            source.prefetch(chunk);
        } else {
            source.prefetch(chunk);
            source.will_need(chunk, true);
        }
        let mut got = vec![0; (end - start) as usize];
        let mut filled = 0;
        while filled < got.len() {
            let n = source.read_at(&mut got[filled..], start + filled as u64).unwrap();
            assert!(n > 0);
            filled += n;
        }
        assert!(got == bytes[start as usize..end as usize], "damaged bytes read (checking first: {checking_first})");
        assert!(source.stats().cache_damaged > 0, "checking first: {checking_first}: {:?}", source.stats());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Run by [`two_processes_share_and_evict_one_cache`] in two child processes at once: reads
/// four objects of about 100 KB in turn, each twice, three rounds, through the cache named by
/// `RIEGELI_TEST_CACHE_CHILD`, bounded to 256 KiB (so that both evict all the time).
#[test]
#[ignore = "a child process of two_processes_share_and_evict_one_cache"]
fn cache_child_reader() {
    let Ok(dir) = std::env::var("RIEGELI_TEST_CACHE_CHILD") else { return };
    let records = records(800);
    // Each child's store holds the same bytes with the same ETags: the same objects to the cache.
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let file = array_record_file(&records);
    assert!((50_000..200_000).contains(&file.len()), "{} bytes", file.len());
    for k in 0..4 {
        runtime.block_on(store.put(&Path::from(format!("shared-{k}")), file.clone().into())).unwrap();
    }
    let config = FetchConfig { cache_dir: Some(dir.into()), cache_max_bytes: 256 << 10, ..FetchConfig::default() };
    let mut hits = 0;
    for _ in 0..3 {
        for k in 0..4 {
            for _ in 0..2 {
                hits += read_all_cached(&store, &format!("shared-{k}"), config.clone(), &records).cache_hits;
            }
        }
    }
    assert!(hits > 0);
}

#[test]
fn two_processes_share_and_evict_one_cache() {
    let dir = cache_dir("shared");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(&exe)
                .args(["--exact", "cache_child_reader", "--ignored", "--nocapture"])
                .env("RIEGELI_TEST_CACHE_CHILD", &dir)
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    // Evicted down to the bound (each process may overshoot it by what it wrote since it last
    // looked: a sixteenth of it, and one range).
    let held: u64 = std::fs::read_dir(dir.join("riegeli-cache-v2/data"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(held > 0 && held < 700 << 10, "{held} bytes held");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What [`flaky_server`] does to the first GET of a range in the first half of the object.
#[derive(Clone, Copy)]
enum Flaw {
    /// Holds its answer back this long.
    Stall(std::time::Duration),
    /// Holds back the answer to the very first GET (the opening's, of the object's tail)
    /// this long.
    StallOpening(std::time::Duration),
    /// Flips a byte in the middle of its body.
    Flip,
}

/// A tiny HTTP/1.1 server on loopback serving `bytes` (HEAD, and GET of one range, with an
/// ETag), with `flaw` in its answer to the first GET of a range that begins in the first half
/// of the object (past the opening's requests, which read its end); returns its address.
fn flaky_server(bytes: Vec<u8>, flaw: Flaw) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let bytes = Arc::new(bytes);
    let flawed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (bytes, flawed) = (Arc::clone(&bytes), Arc::clone(&flawed));
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                loop {
                    let mut request = Vec::new();
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        request.push(line.trim_end().to_owned());
                    }
                    let head = request.first().is_some_and(|l| l.starts_with("HEAD"));
                    let size = bytes.len() as u64;
                    let range = request.iter().find_map(|l| {
                        let value = l.to_ascii_lowercase().strip_prefix("range: bytes=")?.to_owned();
                        let (a, b) = value.split_once('-')?;
                        Some(if a.is_empty() {
                            size.saturating_sub(b.parse().ok()?)..size
                        } else {
                            a.parse().ok()?..(b.parse::<u64>().ok()? + 1).min(size)
                        })
                    });
                    let (status, mut body) = match (&range, head) {
                        (_, true) => ("200 OK", Vec::new()),
                        (Some(r), false) => ("206 Partial Content", bytes[r.start as usize..r.end as usize].to_vec()),
                        (None, false) => ("200 OK", bytes.to_vec()),
                    };
                    let first_half = range.as_ref().is_some_and(|r| r.start < size / 2);
                    let opening = matches!(flaw, Flaw::StallOpening(_));
                    if !head && (first_half || opening) && !flawed.swap(true, std::sync::atomic::Ordering::SeqCst) {
                        match flaw {
                            Flaw::Stall(hold) | Flaw::StallOpening(hold) => std::thread::sleep(hold),
                            Flaw::Flip => {
                                let middle = body.len() / 2;
                                body[middle] ^= 1;
                            }
                        }
                    }
                    let length = if head { size } else { body.len() as u64 };
                    let mut answer = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {length}\r\nETag: \"v1\"\r\nLast-Modified: Mon, 01 Jan 2024 00:00:00 GMT\r\nAccept-Ranges: bytes\r\n"
                    );
                    if let (Some(r), false) = (&range, head) {
                        answer.push_str(&format!("Content-Range: bytes {}-{}/{size}\r\n", r.start, r.end - 1));
                    }
                    answer.push_str("\r\n");
                    if stream.write_all(answer.as_bytes()).and_then(|()| stream.write_all(&body)).is_err() {
                        return;
                    }
                }
            });
        }
    });
    address
}

/// Reads records 5, 2999 and 1500 of an ArrayRecord file of 3000 records served by
/// [`flaky_server`] with `flaw`; returns the time taken and the stats.
fn read_from_flaky_server(flaw: Flaw) -> (std::time::Duration, riegeli_object_store::FetchStats) {
    let records = records(3000);
    let address = flaky_server(array_record_file(&records), flaw);
    let store: Arc<dyn ObjectStore> = Arc::new(
        object_store::http::HttpBuilder::new()
            .with_url(format!("http://{address}"))
            .with_client_options(object_store::ClientOptions::new().with_allow_http(true))
            .build()
            .unwrap(),
    );
    let start = std::time::Instant::now();
    let url = format!("http://{address}/x.array_record");
    let config = FetchConfig { cache_dir: None, ..FetchConfig::default() };
    let source = ObjectSource::with_store(store, Path::from("x.array_record"), &url, config).unwrap();
    let counting = source.clone();
    let mut reader =
        ArrayRecordReader::with_options(Location::Object(source), ArrayRecordReaderOptions::default()).unwrap();
    let got = reader.read_batch(&[5, 2999, 1500]).unwrap();
    assert_eq!([&got[0][..], &got[1][..], &got[2][..]], [&records[5][..], &records[2999][..], &records[1500][..]]);
    (start.elapsed(), counting.stats())
}

#[test]
fn a_stalled_response_is_hedged() {
    // Held back 8 s; hedged soon after three times the latency of the opening (the only
    // answer seen), not after the stall.
    let (elapsed, stats) = read_from_flaky_server(Flaw::Stall(std::time::Duration::from_secs(8)));
    assert!(stats.hedges >= 1, "{stats:?}");
    assert!(elapsed < std::time::Duration::from_millis(1800), "{elapsed:?}, {stats:?}");
}

/// Reads a Riegeli file of 3000 records served by [`flaky_server`] with `flaw` from its
/// start (its first windows asked for with the opening); returns the time taken and the stats.
fn read_sequentially_from_flaky_server(flaw: Flaw) -> (std::time::Duration, riegeli_object_store::FetchStats) {
    let records = records(3000);
    let address = flaky_server(riegeli_file(&records), flaw);
    let store: Arc<dyn ObjectStore> = Arc::new(
        object_store::http::HttpBuilder::new()
            .with_url(format!("http://{address}"))
            .with_client_options(object_store::ClientOptions::new().with_allow_http(true))
            .build()
            .unwrap(),
    );
    let start = std::time::Instant::now();
    let url = format!("http://{address}/x.riegeli");
    let config = FetchConfig {
        cache_dir: None,
        read_from_start: true,
        sequential_window: 64 << 10,
        min_fetch: 4 << 10,
        ..FetchConfig::default()
    };
    let source = ObjectSource::with_store(store, Path::from("x.riegeli"), &url, config).unwrap();
    let counting = source.clone();
    let mut reader = RecordReader::new(source);
    let mut n = 0;
    while let Some(record) = reader.read_record().unwrap() {
        assert_eq!(record[..], records[n][..]);
        n += 1;
    }
    assert_eq!(n, records.len());
    (start.elapsed(), counting.stats())
}

#[test]
fn the_openings_requests_are_hedged() {
    // The GET of the tail held back 8 s: hedged after 2 s (no latency seen yet).
    let (elapsed, stats) = read_sequentially_from_flaky_server(Flaw::StallOpening(std::time::Duration::from_secs(8)));
    assert!(stats.hedges >= 1, "{stats:?}");
    assert!(elapsed < std::time::Duration::from_secs(6), "{elapsed:?}, {stats:?}");
    // One of the first windows, asked for with the opening, held back 8 s: hedged as soon as
    // the answers to the others say it is late, well before the 2 s of an object never seen.
    let (elapsed, stats) = read_sequentially_from_flaky_server(Flaw::Stall(std::time::Duration::from_secs(8)));
    assert!(stats.hedges >= 1, "{stats:?}");
    assert!(elapsed < std::time::Duration::from_millis(1500), "{elapsed:?}, {stats:?}");
}

#[test]
fn a_byte_flipped_in_transit_is_fetched_again_not_reported_as_damage() {
    let (_, stats) = read_from_flaky_server(Flaw::Flip);
    assert_eq!(stats.refetches, 1, "{stats:?}");
}
