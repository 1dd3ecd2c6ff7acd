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

#[test]
fn finds_equal_greater_and_end() {
    let records: Vec<Vec<u8>> = (0..3000).map(key).collect();
    for options in ["uncompressed,chunk_size:1k", "zstd,chunk_size:4k", "transpose,snappy,chunk_size:2k,padding:20k"] {
        let file = write_file(&records, options);
        let mut reader = RecordReader::new(Cursor::new(&file));
        for i in [0u32, 1, 17, 1500, 2998, 2999] {
            assert_eq!(reader.search(compare_to(&key(i))).unwrap(), Some(Ordering::Equal), "{options} {i}");
            assert_eq!(reader.read_record().unwrap().unwrap(), key(i), "{options} {i}");
            // Odd numbers are missing: the next even key follows.
            let missing = format!("key{:08}", i * 2 + 1).into_bytes();
            let found = reader.search(compare_to(&missing)).unwrap();
            if i == 2999 {
                assert_eq!(found, Some(Ordering::Less), "{options}: past the last key");
                assert_eq!(reader.read_record().unwrap(), None);
            } else {
                assert_eq!(found, Some(Ordering::Greater), "{options} {i}");
                assert_eq!(reader.read_record().unwrap().unwrap(), key(i + 1), "{options} {i}");
            }
        }
        assert_eq!(reader.search(|_| None).unwrap(), None, "all unordered");
        assert_eq!(reader.search(compare_to(b"a")).unwrap(), Some(Ordering::Greater));
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
        .search(|record| {
            calls += 1;
            Some(record.as_ref().cmp(&target[..]))
        })
        .unwrap();
    assert_eq!(found, Some(Ordering::Equal));
    // ~1300 chunks: about 11 chunk probes plus a binary search inside one chunk.
    assert!(calls < 60, "{calls} calls");
}
