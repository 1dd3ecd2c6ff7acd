//! Write then read back, over option combinations and generated records.

use std::io::Cursor;

use proptest::prelude::*;
use riegeli_records::{CompressorOptions, ErrorKind, RecordPosition, RecordReader, RecordWriter, RecordWriterOptions};

use crate::common::{layout, read_all, sample_records, write_file};

const OPTION_SETS: &[&str] = &[
    "uncompressed",
    "uncompressed,chunk_size:1000",
    "brotli:1,chunk_size:20k",
    "zstd:3,chunk_size:30k",
    "zstd:1,window_log:18",
    "snappy,chunk_size:10k",
    "snappy:2",
    "transpose,uncompressed,chunk_size:10k",
    "transpose,zstd:3,chunk_size:20k",
    "transpose,brotli:2,bucket_fraction:0.3",
    "transpose,snappy",
    "uncompressed,padding",
    "zstd,chunk_size:8k,padding:100k",
    "uncompressed,chunk_size:5k,parallelism:2",
    "transpose,zstd,chunk_size:5k,parallelism:3",
    "brotli:0,chunk_size:1",
];

#[test]
fn every_option_set_round_trips() {
    let records = sample_records(600, 1);
    for options in OPTION_SETS {
        let file = write_file(&records, options);
        let mut reader = RecordReader::new(Cursor::new(&file));
        assert_eq!(read_all(&mut reader), records, "options {options}");
        // Framing agrees on how many records the chunks hold.
        let total: u64 = layout(&file).iter().map(|c| c.num_records).sum();
        assert_eq!(total, records.len() as u64, "options {options}");
    }
}

#[test]
fn empty_file_is_just_the_signature() {
    let file = write_file(&[], "uncompressed");
    assert_eq!(file.len(), 64);
    assert_eq!(&file[..8], &[0x83, 0xaf, 0x70, 0xd1, 0x0d, 0x88, 0x4a, 0x3f]);
    let mut reader = RecordReader::new(Cursor::new(&file));
    reader.check_file_format().unwrap();
    assert_eq!(reader.read_record().unwrap(), None);
}

#[test]
fn padded_files_concatenate() {
    let a = sample_records(50, 2);
    let b = sample_records(70, 3);
    let mut file = write_file(&a, "zstd,padding");
    assert_eq!(file.len() % 65536, 0);
    file.extend_from_slice(&write_file(&b, "snappy,padding"));
    let mut reader = RecordReader::new(Cursor::new(&file));
    let all: Vec<Vec<u8>> = a.iter().chain(&b).cloned().collect();
    assert_eq!(read_all(&mut reader), all);
}

#[test]
fn append_mode_adds_records_without_a_second_signature() {
    let a = sample_records(30, 4);
    let b = sample_records(40, 5);
    let file = write_file(&a, "uncompressed");
    let existing = file.len() as u64;
    let mut writer = RecordWriter::append(file, existing, "uncompressed,initial_padding".parse().unwrap()).unwrap();
    for record in &b {
        writer.write_record(record).unwrap();
    }
    let file = writer.close().unwrap();
    let chunks = layout(&file);
    assert_eq!(chunks.iter().filter(|c| c.chunk_type == b's').count(), 1);
    // initial_padding pads the appended part to a 64 KiB boundary, leaving room for a
    // padding chunk header.
    let mut boundary = existing.next_multiple_of(65536);
    if boundary - existing < 40 {
        boundary += 65536;
    }
    let first_appended = chunks.iter().find(|c| c.begin >= existing && c.chunk_type == b'r').unwrap();
    assert_eq!(first_appended.begin, boundary);
    let mut reader = RecordReader::new(Cursor::new(&file));
    let all: Vec<Vec<u8>> = a.iter().chain(&b).cloned().collect();
    assert_eq!(read_all(&mut reader), all);
}

#[test]
fn positions_seek_back_to_the_same_records() {
    let records = sample_records(300, 6);
    for options in ["uncompressed,chunk_size:3k", "transpose,zstd,chunk_size:4k", "snappy,chunk_size:2k,parallelism:2"]
    {
        let mut writer = RecordWriter::new(Vec::new(), options.parse().unwrap()).unwrap();
        let mut written_positions = Vec::new();
        let mut positions_before = Vec::new();
        for record in &records {
            // Not always canonical: it may be the end of the open chunk when the record starts a new one.
            positions_before.push(writer.pos().unwrap());
            writer.write_record(record).unwrap();
            let last = writer.last_pos().unwrap().unwrap();
            assert!(last >= positions_before[positions_before.len() - 1], "{options}");
            written_positions.push(last);
        }
        let file = writer.close().unwrap();
        let mut reader = RecordReader::new(Cursor::new(&file));
        let mut read_positions = Vec::new();
        while reader.read_record().unwrap().is_some() {
            read_positions.push(reader.last_pos().unwrap());
        }
        assert_eq!(read_positions, written_positions, "{options}");
        // Seek to each position (backwards, to defeat sequential luck).
        for (i, pos) in written_positions.iter().enumerate().rev().step_by(7) {
            reader.seek(*pos).unwrap();
            assert_eq!(reader.read_record().unwrap().unwrap(), records[i], "{options} seek {pos}");
            reader.seek_numeric(pos.numeric()).unwrap();
            assert_eq!(reader.pos(), *pos);
            assert_eq!(reader.read_record().unwrap().unwrap(), records[i], "{options} seek_numeric {pos}");
        }
        for (i, pos) in positions_before.iter().enumerate().step_by(11) {
            reader.seek(*pos).unwrap();
            assert_eq!(reader.read_record().unwrap().unwrap(), records[i], "{options} seek to pos() {pos}");
        }
        // Numeric positions between records land on the next record.
        let chunks = layout(&file);
        let second_chunk = chunks.iter().filter(|c| c.num_records > 0).nth(1).unwrap();
        reader.seek_numeric(second_chunk.begin - 1).unwrap();
        assert_eq!(reader.pos(), RecordPosition::new(second_chunk.begin, 0).unwrap());
        // Seeking to the end gives the end; past it is an error, in C++'s words.
        reader.seek_numeric(file.len() as u64).unwrap();
        assert_eq!(reader.read_record().unwrap(), None);
        let size = file.len() as u64;
        for beyond in [size + 1, u64::MAX] {
            let err = reader.seek_numeric(beyond).unwrap_err();
            assert!(matches!(err.kind(), ErrorKind::InvalidArgument(_)), "{err}");
            assert_eq!(err.to_string(), format!("invalid argument: Position {beyond} exceeds file size: {size}"));
            let err = reader.seek(RecordPosition::new(beyond, 0).unwrap()).unwrap_err();
            assert!(err.to_string().ends_with(&format!("Position {beyond} exceeds file size: {size}")), "{err}");
        }
        // The reader is still usable.
        reader.seek(written_positions[0]).unwrap();
        assert_eq!(reader.read_record().unwrap().unwrap(), records[0]);
    }
}

#[test]
fn seek_back_walks_records_backwards() {
    let records = sample_records(200, 7);
    let file = write_file(&records, "uncompressed,chunk_size:2k,padding:10k");
    let mut reader = RecordReader::new(Cursor::new(&file));
    reader.seek_numeric(file.len() as u64).unwrap();
    let mut backwards = Vec::new();
    while reader.seek_back().unwrap() {
        let record = reader.read_record().unwrap().unwrap();
        backwards.push(record.to_vec());
        reader.seek_back().unwrap();
    }
    backwards.reverse();
    assert_eq!(backwards, records);
}

#[test]
fn flush_makes_records_readable() {
    let mut writer = RecordWriter::new(
        Vec::new(),
        RecordWriterOptions { compression: CompressorOptions::zstd(), ..Default::default() },
    )
    .unwrap();
    writer.write_record(b"first").unwrap();
    writer.flush().unwrap();
    writer.write_record(b"second").unwrap();
    let file = writer.close().unwrap();
    let mut reader = RecordReader::new(Cursor::new(&file));
    assert_eq!(read_all(&mut reader), vec![b"first".to_vec(), b"second".to_vec()]);
}

#[test]
fn read_record_ref_and_iterator_agree() {
    let records = sample_records(100, 8);
    let file = write_file(&records, "snappy,chunk_size:3k");
    let mut reader = RecordReader::new(Cursor::new(&file));
    let mut via_ref = Vec::new();
    while let Some(record) = reader.read_record_ref().unwrap() {
        via_ref.push(record.to_vec());
    }
    assert_eq!(via_ref, records);
    let mut reader = RecordReader::new(Cursor::new(&file));
    let via_iter: Vec<Vec<u8>> = reader.by_ref().map(|r| r.unwrap().to_vec()).collect();
    assert_eq!(via_iter, records);
}

#[test]
fn metadata_round_trips() {
    let metadata = riegeli_records::RecordsMetadata {
        file_comment: "test file".into(),
        record_type_name: "pkg.Msg".into(),
        record_writer_options: "zstd".into(),
        num_records: 2,
        ..Default::default()
    };
    let options = RecordWriterOptions {
        compression: CompressorOptions::zstd(),
        metadata: Some(prost::Message::encode_to_vec(&metadata)),
        ..Default::default()
    };
    let mut writer = RecordWriter::new(Vec::new(), options).unwrap();
    writer.write_record(b"a").unwrap();
    writer.write_record(b"b").unwrap();
    let file = writer.close().unwrap();
    assert_eq!(layout(&file)[1].chunk_type, b'm');
    let mut reader = RecordReader::new(Cursor::new(&file));
    assert_eq!(reader.read_metadata().unwrap(), Some(metadata));
    assert_eq!(read_all(&mut reader), vec![b"a".to_vec(), b"b".to_vec()]);
    let plain = write_file(&[b"x".to_vec()], "zstd");
    let mut reader = RecordReader::new(Cursor::new(&plain));
    assert_eq!(reader.read_metadata().unwrap(), None);
    assert_eq!(read_all(&mut reader), vec![b"x".to_vec()]);
}

#[test]
fn messages_round_trip() {
    let metadata = riegeli_records::RecordsMetadata { file_comment: "m".into(), ..Default::default() };
    let mut writer = RecordWriter::new(Vec::new(), "transpose".parse().unwrap()).unwrap();
    writer.write_record(&prost::Message::encode_to_vec(&metadata)).unwrap();
    let file = writer.close().unwrap();
    let mut reader = RecordReader::new(Cursor::new(&file));
    let record = reader.read_record().unwrap().unwrap();
    assert_eq!(<riegeli_records::RecordsMetadata as prost::Message>::decode(record).unwrap(), metadata);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn arbitrary_records_round_trip(
        records in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..3000), 0..80),
        option_index in 0..OPTION_SETS.len(),
    ) {
        let options = OPTION_SETS[option_index];
        let file = write_file(&records, options);
        let mut reader = RecordReader::new(Cursor::new(&file));
        prop_assert_eq!(read_all(&mut reader), records);
    }
}
