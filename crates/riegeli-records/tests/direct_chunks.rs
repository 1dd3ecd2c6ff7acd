//! `RecordReader::decode_next_chunk_with`: transposed chunks handed to the
//! caller, the others (and the ones it declines) decoded as usual, damage
//! reported or skipped exactly as for `read_record`.

use std::io::Cursor;
use std::sync::{Arc, Mutex};

use riegeli_codec::{DecodeLimits, TransposedChunkDecoder};
use riegeli_records::{RecordReader, RecordReaderOptions};

use crate::common::{layout, record_ranges, sample_records, write_file};

/// Reads every record through `decode_next_chunk_with`, the hook taking the
/// transposed chunks `take` says to (decoding them itself), the reader the
/// others. Returns the records in order and the beginnings of the chunks taken.
fn read_direct<R: std::io::Read>(
    reader: &mut RecordReader<R>,
    take: impl Fn(u64) -> bool,
) -> riegeli_records::Result<(Vec<Vec<u8>>, Vec<u64>)> {
    let mut records = Vec::new();
    let mut taken = Vec::new();
    let mut decoder = TransposedChunkDecoder::new();
    loop {
        let mut direct = Vec::new();
        let left = reader.decode_next_chunk_with(|chunk, options, _| {
            if !take(chunk.begin) {
                return false;
            }
            let limits = DecodeLimits {
                max_decoded_size: options.chunks.max_decoded_size,
                max_num_records: options.chunks.max_num_records,
            };
            let header = &chunk.header;
            let Ok(decoded) = decoder.decode(
                chunk.data.clone(),
                header.num_records(),
                header.decoded_data_size(),
                &limits,
                &options.field_projection,
            ) else {
                return false;
            };
            direct.extend(decoded.iter().map(|r| r.to_vec()));
            taken.push(chunk.begin);
            true
        })?;
        let Some(left) = left else { break };
        records.append(&mut direct);
        for _ in 0..left {
            records.push(reader.read_record()?.expect("a record counted").to_vec());
        }
    }
    Ok((records, taken))
}

fn transposed_file() -> (Vec<Vec<u8>>, Vec<u8>) {
    let records = sample_records(600, 5);
    (records.clone(), write_file(&records, "transpose,uncompressed,chunk_size:8k"))
}

/// The beginnings of the chunks of `file` with records (more than 4).
fn data_chunk_begins(file: &[u8]) -> Vec<u64> {
    let begins: Vec<u64> = layout(file).iter().filter(|c| c.num_records > 0).map(|c| c.begin).collect();
    assert!(begins.len() > 4);
    begins
}

#[test]
fn transposed_chunks_go_to_the_hook_and_the_rest_are_read_as_usual() {
    let (records, file) = transposed_file();
    let data = data_chunk_begins(&file);
    for parallelism in [0, 2] {
        let options = RecordReaderOptions { parallelism, parallel_min_chunk_size: 0, ..Default::default() };
        // All taken; every other one taken; none taken.
        for modulo in [1, 2, u64::MAX] {
            let take =
                |begin: u64| data.iter().position(|&b| b == begin).is_some_and(|i| (i as u64).is_multiple_of(modulo));
            let mut reader = RecordReader::with_options(Cursor::new(&file), options.clone());
            let (got, taken) = read_direct(&mut reader, take).unwrap();
            assert_eq!(got, records, "parallelism {parallelism}, modulo {modulo}");
            let want: Vec<u64> = data.iter().copied().filter(|&b| take(b)).collect();
            assert_eq!(taken, want);
            assert_eq!(reader.read_record().unwrap(), None);
        }
    }
    // A simple chunk never goes to the hook.
    let simple = write_file(&records, "uncompressed,chunk_size:8k");
    let mut reader = RecordReader::new(Cursor::new(&simple));
    let (got, taken) = read_direct(&mut reader, |_| true).unwrap();
    assert_eq!((got, taken), (records, vec![]));
}

#[test]
fn records_left_in_the_chunk_are_counted_and_a_taken_chunk_counts_as_read() {
    let (records, file) = transposed_file();
    let chunks = layout(&file);
    let first = chunks.iter().find(|c| c.num_records > 1).unwrap();
    let mut reader = RecordReader::new(Cursor::new(&file));
    assert_eq!(reader.read_record().unwrap().as_deref(), Some(&records[0][..]));
    let left = reader.decode_next_chunk_with(|_, _, _| panic!("records are left")).unwrap();
    assert_eq!(left, Some(first.num_records as usize - 1));
    for record in &records[1..first.num_records as usize] {
        assert_eq!(reader.read_record().unwrap().as_deref(), Some(&record[..]));
    }
    // The next chunk taken: its records count as read.
    let second = chunks.iter().filter(|c| c.num_records > 0).nth(1).unwrap();
    assert_eq!(reader.decode_next_chunk_with(|chunk, _, _| chunk.begin == second.begin).unwrap(), Some(0));
    let last = reader.last_pos().unwrap();
    assert_eq!((last.chunk_begin(), last.record_index()), (second.begin, second.num_records - 1));
    let after = record_ranges(&chunks).into_iter().zip(&chunks).find(|(_, c)| c.begin == second.begin).unwrap().0.end;
    assert_eq!(reader.read_record().unwrap().as_deref(), Some(&records[after][..]));
}

#[test]
fn a_damaged_chunk_is_never_given_to_the_hook_and_fails_or_is_skipped_as_usual() {
    let (records, file) = transposed_file();
    let chunks = layout(&file);
    let ranges = record_ranges(&chunks);
    for (victim, range) in chunks.iter().zip(&ranges).filter(|(c, _)| c.num_records > 0).step_by(3) {
        let mut damaged = file.clone();
        damaged[victim.data_end as usize - 1] ^= 0x55;
        let want: Vec<Vec<u8>> =
            records.iter().enumerate().filter(|(i, _)| !range.contains(i)).map(|(_, r)| r.clone()).collect();
        for parallelism in [0, 2] {
            let options = RecordReaderOptions { parallelism, parallel_min_chunk_size: 0, ..Default::default() };
            // Without recovery: the error names the chunk; recover() goes on.
            let mut reader = RecordReader::with_options(Cursor::new(&damaged), options.clone());
            let err = read_direct(&mut reader, |begin| {
                assert_ne!(begin, victim.begin, "a damaged chunk given to the hook");
                true
            })
            .unwrap_err();
            assert!(err.is_corruption());
            assert_eq!(err.position(), Some(victim.begin));
            assert_eq!(reader.recover().unwrap().unwrap().begin, victim.begin);
            let (rest, _) = read_direct(&mut reader, |_| true).unwrap();
            assert_eq!(rest, want[range.start..]);
            // With recovery: skipped and reported.
            let regions = Arc::new(Mutex::new(Vec::new()));
            let sink = Arc::clone(&regions);
            let mut reader = RecordReader::with_options(Cursor::new(&damaged), options);
            reader.set_recovery(move |region| {
                sink.lock().unwrap().push((region.begin, region.end));
                true
            });
            let (got, taken) = read_direct(&mut reader, |_| true).unwrap();
            assert_eq!(got, want);
            assert!(!taken.contains(&victim.begin));
            assert_eq!(*regions.lock().unwrap(), [(victim.begin, victim.end)]);
        }
    }
}

#[test]
fn unchecked_hashes_give_a_damaged_chunk_to_the_hook_and_its_decline_to_the_usual_error() {
    let (_, file) = transposed_file();
    let chunks = layout(&file);
    let victim = chunks.iter().filter(|c| c.num_records > 0).nth(1).unwrap();
    let mut damaged = file.clone();
    // A byte of the data, well inside the chunk: the decoder fails on it.
    let at = (victim.begin + 40 + 2) as usize;
    damaged[at] ^= 0xff;
    let mut options = RecordReaderOptions::default();
    options.chunks.verify_hashes = false;
    let mut reader = RecordReader::with_options(Cursor::new(&damaged), options);
    let offered = std::cell::Cell::new(false);
    let result = read_direct(&mut reader, |begin| {
        offered.set(offered.get() || begin == victim.begin);
        true
    });
    if let Err(err) = result {
        assert!(err.is_corruption());
        assert_eq!(err.position(), Some(victim.begin));
    }
    assert!(offered.get());
}

/// What the decoding threads make with `set_chunk_decode`: (the chunk's
/// begin, its records decoded), or declined for the chunks `decline` names.
fn chunk_decode(
    decline: impl Fn(u64) -> bool + Send + Sync + 'static,
    calls: Arc<Mutex<Vec<u64>>>,
) -> riegeli_records::ChunkDecodeFn {
    Arc::new(move |chunk, options| {
        calls.lock().unwrap().push(chunk.begin);
        if decline(chunk.begin) {
            return None;
        }
        let limits =
            DecodeLimits { max_decoded_size: options.max_decoded_size, max_num_records: options.max_num_records };
        let header = &chunk.header;
        let decoded = TransposedChunkDecoder::new()
            .decode(
                chunk.data.clone(),
                header.num_records(),
                header.decoded_data_size(),
                &limits,
                &riegeli_records::FieldProjection::all(),
            )
            .ok()?;
        let records: Vec<Vec<u8>> = decoded.iter().map(|r| r.to_vec()).collect();
        Some(Box::new((chunk.begin, records)) as riegeli_records::Made)
    })
}

#[test]
fn chunks_decoded_on_the_threads_come_to_the_hook_in_order() {
    let (records, file) = transposed_file();
    let data_chunks = data_chunk_begins(&file);
    let declined = data_chunks[2];
    let calls = Arc::new(Mutex::new(Vec::new()));
    // A reader without threads of its own starts reading ahead on one.
    let options = RecordReaderOptions { parallel_min_chunk_size: 0, ..Default::default() };
    let mut reader = RecordReader::with_options(Cursor::new(&file), options);
    reader.set_chunk_decode(Some(chunk_decode(move |begin| begin == declined, Arc::clone(&calls))), 1);
    let mut got = Vec::new();
    let mut made_for = Vec::new();
    loop {
        let mut made_records = None;
        let left = reader
            .decode_next_chunk_with(|chunk, _, made| {
                let Some(made) = made else { return false };
                let (begin, records) = *made.downcast::<(u64, Vec<Vec<u8>>)>().unwrap();
                assert_eq!(begin, chunk.begin, "made of another chunk");
                made_for.push(begin);
                made_records = Some(records);
                true
            })
            .unwrap();
        let Some(left) = left else { break };
        got.extend(made_records.unwrap_or_default());
        for _ in 0..left {
            got.push(reader.read_record().unwrap().unwrap().to_vec());
        }
    }
    assert_eq!(got, records);
    // Every data chunk went to the function, on the threads; the one it
    // declined was read as records, the others came made, in file order.
    let mut called = calls.lock().unwrap().clone();
    called.sort_unstable();
    assert_eq!(called, data_chunks);
    let want: Vec<u64> = data_chunks.iter().copied().filter(|&b| b != declined).collect();
    assert_eq!(made_for, want);
}

#[test]
fn records_of_a_chunk_made_on_the_threads_are_decoded_here_when_read_as_records() {
    let (records, file) = transposed_file();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let options = RecordReaderOptions { parallelism: 1, parallel_min_chunk_size: 0, ..Default::default() };
    let mut reader = RecordReader::with_options(Cursor::new(&file), options);
    reader.set_chunk_decode(Some(chunk_decode(|_| false, Arc::clone(&calls))), 0);
    let mut got = Vec::new();
    while let Some(record) = reader.read_record().unwrap() {
        got.push(record.to_vec());
    }
    assert_eq!(got, records);
    assert!(!calls.lock().unwrap().is_empty(), "chunks went to the function");
    // And with the function taken away, chunks are decoded as records again.
    reader.set_chunk_decode(None, 0);
    reader.seek(riegeli_records::RecordPosition::new(0, 0).unwrap()).unwrap();
    let before = calls.lock().unwrap().len();
    assert_eq!(reader.read_record().unwrap().as_deref(), Some(&records[0][..]));
    while reader.read_record().unwrap().is_some() {}
    assert_eq!(calls.lock().unwrap().len(), before);
}
