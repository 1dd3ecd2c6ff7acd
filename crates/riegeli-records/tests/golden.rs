//! Golden files written by Google's C++ implementation (testdata/, see its README):
//! every record read exactly, through any buffering, and recovery from each
//! damaged file returns exactly the records the format promises.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use riegeli_records::{RecordReader, RecordReaderOptions};

use crate::common::{OneByteReader, read_all};

pub(crate) fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

pub(crate) fn manifest() -> serde_json::Value {
    let text = std::fs::read_to_string(testdata().join("MANIFEST.json")).expect("testdata/MANIFEST.json");
    serde_json::from_str(&text).expect("manifest parses")
}

/// Parses a delimited record set (varint length, then bytes, per record).
pub(crate) fn record_set(name: &str) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(testdata().join(format!("records/{name}.delimited"))).expect("record set");
    let mut records = Vec::new();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let (len, used) = riegeli_codec::varint::decode_u64(rest).expect("varint");
        rest = &rest[used..];
        records.push(rest[..len as usize].to_vec());
        rest = &rest[len as usize..];
    }
    records
}

/// The records a damaged manifest file keeps: its `expected_records` of its record set.
pub(crate) fn expected_records(file: &serde_json::Value) -> Vec<Vec<u8>> {
    let set = record_set(file["records"].as_str().unwrap());
    file["expected_records"].as_array().unwrap().iter().map(|i| set[i.as_u64().unwrap() as usize].clone()).collect()
}

pub(crate) fn files(kind: &str) -> Vec<serde_json::Value> {
    manifest()["files"].as_array().unwrap().iter().filter(|f| f["kind"] == kind).cloned().collect()
}

#[test]
fn valid_files_read_exactly() {
    let valid = files("valid");
    assert!(valid.len() >= 13);
    for file in valid {
        let path = file["path"].as_str().unwrap();
        let bytes = std::fs::read(testdata().join(path)).unwrap();
        let expected = record_set(file["records"].as_str().unwrap());
        let mut reader = RecordReader::new(Cursor::new(&bytes));
        reader.check_file_format().unwrap();
        assert_eq!(read_all(&mut reader), expected, "{path}");
        let mut reader = RecordReader::new(OneByteReader(Cursor::new(&bytes)));
        assert_eq!(read_all(&mut reader), expected, "{path} one byte at a time");
        // Positions: numeric positions strictly increase and seek back to the same record.
        let mut reader = RecordReader::new(Cursor::new(&bytes));
        let mut positions = Vec::new();
        while reader.read_record().unwrap().is_some() {
            positions.push(reader.last_pos().unwrap());
        }
        assert!(positions.windows(2).all(|w| w[0].numeric() < w[1].numeric()), "{path}");
        for (i, pos) in positions.iter().enumerate().rev().step_by(37) {
            reader.seek(*pos).unwrap();
            assert_eq!(reader.read_record().unwrap().unwrap(), expected[i], "{path} seek {pos}");
            reader.seek_numeric(pos.numeric()).unwrap();
            assert_eq!(reader.read_record().unwrap().unwrap(), expected[i], "{path} seek_numeric {pos}");
        }
    }
}

#[test]
fn array_record_files_read_as_plain_riegeli() {
    for file in files("array_record") {
        let path = file["path"].as_str().unwrap();
        let bytes = std::fs::read(testdata().join(path)).unwrap();
        let expected = record_set(file["records"].as_str().unwrap());
        // By default the ArrayRecord footer and postscript are recognised and skipped,
        // also when the bytes come one at a time (no Seek, no look at the file size).
        let mut reader = RecordReader::new(Cursor::new(&bytes));
        assert_eq!(read_all(&mut reader), expected, "{path}");
        let mut reader = RecordReader::new(OneByteReader(Cursor::new(&bytes)));
        assert_eq!(read_all(&mut reader), expected, "{path} one byte at a time");
        // Reading backwards from the end meets the trailer first: skipped too.
        let mut reader = RecordReader::new(Cursor::new(&bytes));
        reader.seek_numeric(bytes.len() as u64).unwrap();
        let mut backwards = Vec::new();
        while reader.seek_back().unwrap() {
            backwards.push(reader.read_record().unwrap().unwrap().to_vec());
            reader.seek_back().unwrap();
        }
        backwards.reverse();
        assert_eq!(backwards, expected, "{path} backwards");

        // Asked for, the trailer comes as records: data records first, then the footer
        // (metadata + one entry per data chunk) and 3 postscripts.
        let options = RecordReaderOptions { read_array_record_trailer: true, ..RecordReaderOptions::default() };
        let mut reader = RecordReader::with_options(Cursor::new(&bytes), options);
        let records = read_all(&mut reader);
        assert_eq!(&records[..expected.len()], &expected[..], "{path}");
        let data_chunks = file["chunks"].as_array().unwrap().iter().filter(|c| c["num_records"] != 0).count() - 2;
        assert_eq!(records.len() - expected.len(), data_chunks + 1 + 3, "{path}");
    }
}

#[test]
fn corrupt_files_recover_exactly_what_the_format_promises() {
    let corrupt = files("corrupt");
    assert!(corrupt.len() >= 10);
    for file in corrupt {
        let path = file["path"].as_str().unwrap();
        let bytes = std::fs::read(testdata().join(path)).unwrap();
        let expected = expected_records(&file);
        let mut reader = RecordReader::new(Cursor::new(bytes.clone()));
        reader.set_recovery(|_| true);
        assert_eq!(read_all(&mut reader), expected, "{path}");
        // Without recovery the damage is an error (unless it is a block header the spec says to ignore).
        let mut reader = RecordReader::new(Cursor::new(bytes));
        let mut result = Ok(());
        loop {
            match reader.read_record() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        let lost = file["lost_chunks"].as_array().is_some_and(|l| !l.is_empty());
        let truncated = path.contains("truncated");
        assert_eq!(result.is_err(), lost || truncated, "{path}: {result:?}");
    }
}

#[test]
fn borrowed_records_are_the_records_with_their_positions() {
    for file in files("valid").into_iter().chain(files("array_record")) {
        let path = file["path"].as_str().unwrap();
        let bytes = std::fs::read(testdata().join(path)).unwrap();
        let expected = record_set(file["records"].as_str().unwrap());
        let mut positions = Vec::new();
        let mut reader = RecordReader::new(Cursor::new(&bytes));
        while reader.read_record().unwrap().is_some() {
            positions.push(reader.last_pos());
        }
        let mut reader = RecordReader::new(Cursor::new(&bytes));
        let mut i = 0;
        while let Some(record) = reader.read_record_ref().unwrap() {
            assert_eq!(record, &expected[i][..], "{path} record {i}");
            assert_eq!(reader.last_pos(), positions[i], "{path} record {i}");
            i += 1;
        }
        assert_eq!(i, expected.len(), "{path}");
        assert_eq!(reader.last_pos(), None, "{path}: at the end");
    }
}
