//! Binary search over records.

use std::cmp::Ordering;
use std::io::Cursor;

use riegeli_records::RecordReader;

use crate::common::write_file;

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i * 2).into_bytes()
}

fn compare_to(target: &[u8]) -> impl FnMut(&bytes::Bytes) -> Option<Ordering> + '_ {
    move |record: &bytes::Bytes| Some(record.as_ref().cmp(target))
}

/// A search test that reads the record and judges its bytes with `test`
/// (Python's `search_for_record`).
fn by_record<R: std::io::Read>(
    mut test: impl FnMut(&bytes::Bytes) -> Option<Ordering>,
) -> impl FnMut(&mut RecordReader<R>) -> riegeli_records::Result<Option<Ordering>> {
    move |reader| Ok(reader.read_record()?.and_then(|record| test(&record)))
}

#[test]
fn finds_equal_greater_and_end() {
    let records: Vec<Vec<u8>> = (0..3000).map(key).collect();
    for options in ["uncompressed,chunk_size:1k", "zstd,chunk_size:4k", "transpose,snappy,chunk_size:2k,padding:20k"] {
        let file = write_file(&records, options);
        let mut reader = RecordReader::new(Cursor::new(&file));
        for i in [0u32, 1, 17, 1500, 2998, 2999] {
            assert_eq!(reader.search(by_record(compare_to(&key(i)))).unwrap(), Some(Ordering::Equal), "{options} {i}");
            assert_eq!(reader.read_record().unwrap().unwrap(), key(i), "{options} {i}");
            // Odd numbers are missing: the next even key follows.
            let missing = format!("key{:08}", i * 2 + 1).into_bytes();
            let found = reader.search(by_record(compare_to(&missing))).unwrap();
            if i == 2999 {
                assert_eq!(found, Some(Ordering::Less), "{options}: past the last key");
                assert_eq!(reader.read_record().unwrap(), None);
            } else {
                assert_eq!(found, Some(Ordering::Greater), "{options} {i}");
                assert_eq!(reader.read_record().unwrap().unwrap(), key(i + 1), "{options} {i}");
            }
        }
        assert_eq!(reader.search(by_record(|_| None)).unwrap(), None, "all unordered");
        assert_eq!(reader.search(by_record(compare_to(b"a"))).unwrap(), Some(Ordering::Greater));
        assert_eq!(reader.read_record().unwrap().unwrap(), key(0));
    }
}

#[test]
fn search_calls_test_logarithmically_often() {
    let records: Vec<Vec<u8>> = (0..20_000).map(key).collect();
    let file = write_file(&records, "uncompressed,chunk_size:1k");
    let mut reader = RecordReader::new(Cursor::new(&file));
    let mut calls = 0;
    let target = key(12_345);
    let found = reader
        .search(by_record(|record| {
            calls += 1;
            Some(record.as_ref().cmp(&target[..]))
        }))
        .unwrap();
    assert_eq!(found, Some(Ordering::Equal));
    // ~1300 chunks: about 11 chunk probes plus a binary search inside one chunk.
    assert!(calls < 60, "{calls} calls");
}

/// Sorted keys 0, 2, 4, ... as `u64` messages (field 1), every fifth record
/// followed by one that does not parse (an invalid wire type).
fn message_file(options: &str) -> Vec<u8> {
    let mut records = Vec::new();
    for i in 0..2000u64 {
        records.push(prost::Message::encode_to_vec(&(i * 2)));
        if i % 5 == 0 {
            records.push(b"\x0f\xff\xff".to_vec());
        }
    }
    write_file(&records, options)
}

/// A record parsed as a `u64` message, `None` if it does not parse (Python's
/// `search_for_message` skips such records).
fn parse_key(record: &[u8]) -> Option<u64> {
    <u64 as prost::Message>::decode(record).ok()
}

/// The next record parsed as a `u64` message (`None` at the end).
fn read_key<R: std::io::Read>(reader: &mut RecordReader<R>) -> Option<u64> {
    reader.read_record().unwrap().map(|record| parse_key(&record).expect("a key"))
}

#[test]
fn search_parsing_skips_records_that_do_not_parse() {
    for options in ["uncompressed,chunk_size:1k", "zstd,chunk_size:4k", "transpose,snappy,chunk_size:2k"] {
        let file = message_file(options);
        let mut reader = RecordReader::new(Cursor::new(&file));
        for i in [0u64, 1, 5, 777, 1998, 1999] {
            let found = reader.search(by_record(|record| parse_key(record).map(|key| key.cmp(&(i * 2))))).unwrap();
            assert_eq!(found, Some(Ordering::Equal), "{options} {i}");
            assert_eq!(read_key(&mut reader), Some(i * 2), "{options} {i}");
            let found = reader.search(by_record(|record| parse_key(record).map(|key| key.cmp(&(i * 2 + 1))))).unwrap();
            if i == 1999 {
                assert_eq!(found, Some(Ordering::Less), "{options}");
                assert_eq!(reader.read_record().unwrap(), None);
            } else {
                assert_eq!(found, Some(Ordering::Greater), "{options} {i}");
                // The earliest greater record parses: the one after a bad record is not skipped to.
                assert_eq!(read_key(&mut reader), Some(i * 2 + 2), "{options} {i}");
            }
        }
        // Every parsed record said "cannot tell": the end, as with no ordered record.
        assert_eq!(reader.search(by_record(|record| parse_key(record).and(None))).unwrap(), None);
        assert_eq!(reader.read_record().unwrap(), None);
    }
}

#[test]
fn search_lets_the_test_read_the_record() {
    for options in ["uncompressed,chunk_size:1k", "zstd,chunk_size:4k", "transpose,snappy,chunk_size:2k"] {
        let file = message_file(options);
        let mut reader = RecordReader::new(Cursor::new(&file));
        for target in [0u64, 1, 10, 1555, 3998, 3999] {
            let mut judged = std::collections::HashSet::new();
            let found = reader
                .search(|reader| {
                    assert!(judged.insert(reader.pos()), "{options}: a record judged twice");
                    let key = reader.read_record()?.and_then(|record| parse_key(&record));
                    // Read ahead past the record, across chunk ends and to the end of the file.
                    for _ in 0..3 {
                        let _ = reader.read_record()?;
                    }
                    Ok(key.map(|key| key.cmp(&target)))
                })
                .unwrap();
            let want = match target {
                3999 => Some(Ordering::Less),
                t if t % 2 == 0 => Some(Ordering::Equal),
                _ => Some(Ordering::Greater),
            };
            assert_eq!(found, want, "{options} {target}");
            let next = read_key(&mut reader);
            let want_next = if target == 3999 { None } else { Some(target.next_multiple_of(2)) };
            assert_eq!(next, want_next, "{options} {target}");
        }
        // An error of the test ends the search with it.
        let error =
            reader.search(|_| Err(riegeli_records::Error::from(std::io::Error::other("from the test")))).unwrap_err();
        assert!(error.to_string().contains("from the test"), "{error}");
    }
}
