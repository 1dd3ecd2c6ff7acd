//! `ArrayRecordArrowReader` and `ArrowStream`: records by index, and batches
//! as an Arrow `RecordBatchReader`, checked against prost-reflect's decoding
//! and against `ProtoDecoder` fed by hand.

use std::io::Cursor;
use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchReader};
use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor};
use riegeli_arrow::{
    ArrayRecordArrowReader, ArrowReader, ArrowReaderOptions, ArrowStream, BadRecords, ErrorKind, ProtoDecoder,
    RecordFormat, RecordSelection, RecordsByIndex,
};
use riegeli_records::{
    ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordShards, ArrayRecordWriter, FieldProjection, RecordReader,
};

use crate::common::{Rng, check_batch, message, random_message, write_file};

const PROJECTION: &[&str] = &["i32", "str", "inner.s", "r_inner.a", "m_im", "c_int"];

fn records(desc: &MessageDescriptor, seed: u64, count: usize) -> (Vec<Vec<u8>>, Vec<DynamicMessage>) {
    let mut rng = Rng(seed);
    let records: Vec<Vec<u8>> = (0..count).map(|_| random_message(desc, &mut rng, 0).encode_to_vec()).collect();
    let messages = records.iter().map(|r| DynamicMessage::decode(desc.clone(), r.as_slice()).unwrap()).collect();
    (records, messages)
}

fn array_record_file(records: &[Vec<u8>], options: &str) -> Vec<u8> {
    let mut writer = ArrayRecordWriter::new(Vec::new(), options.parse().unwrap()).unwrap();
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.close().unwrap()
}

fn proto_options(desc: &MessageDescriptor, batch_size: usize, projection: Option<&[&str]>) -> ArrowReaderOptions {
    ArrowReaderOptions {
        batch_size,
        projection: projection.map(|p| p.iter().map(|s| s.to_string()).collect()),
        format: RecordFormat::Proto(desc.clone()),
        ..Default::default()
    }
}

/// An ArrayRecordReader over `file`, opened with the projection given, which
/// is also noted in `seen`.
fn opener(
    file: &[u8],
    seen: &Arc<Mutex<Option<FieldProjection>>>,
) -> impl FnOnce(FieldProjection) -> riegeli_records::Result<ArrayRecordReader<Cursor<Vec<u8>>>> {
    let (file, seen) = (file.to_vec(), Arc::clone(seen));
    move |field_projection| {
        *seen.lock().unwrap() = Some(field_projection.clone());
        ArrayRecordReader::with_options(
            Cursor::new(file),
            ArrayRecordReaderOptions { field_projection, ..Default::default() },
        )
    }
}

fn decode_all(desc: &MessageDescriptor, records: &[&Vec<u8>], projection: Option<&[&str]>) -> RecordBatch {
    let mut decoder = ProtoDecoder::new(desc, projection, BadRecords::Fail).unwrap();
    for record in records {
        decoder.push(record, None).unwrap();
    }
    decoder.flush().unwrap()
}

#[test]
fn array_record_selections_give_the_records_asked_for() {
    let desc = message("t.All");
    let (records, messages) = records(&desc, 21, 300);
    for options in ["group_size:40", "group_size:40,transpose", "group_size:1,uncompressed"] {
        let file = array_record_file(&records, options);
        let seen = Arc::new(Mutex::new(None));
        let selections = [
            (RecordSelection::All, (0..300).collect::<Vec<u64>>()),
            (RecordSelection::Range(35..171), (35..171).collect()),
            (RecordSelection::Indices(vec![299, 0, 41, 41, 120, 7]), vec![299, 0, 41, 41, 120, 7]),
            (RecordSelection::Range(5..5), vec![]),
        ];
        for (selection, indices) in selections {
            let reader =
                ArrayRecordArrowReader::new(proto_options(&desc, 32, None), selection.clone(), opener(&file, &seen))
                    .unwrap();
            let batches = reader.collect::<Result<Vec<_>, _>>().unwrap();
            assert!(batches.iter().all(|b| b.num_rows() <= 32 && b.num_rows() > 0));
            let mut offset = 0;
            for batch in &batches {
                let expected: Vec<DynamicMessage> =
                    indices[offset..offset + batch.num_rows()].iter().map(|&i| messages[i as usize].clone()).collect();
                check_batch(batch, &expected);
                let raw: Vec<&Vec<u8>> =
                    indices[offset..offset + batch.num_rows()].iter().map(|&i| &records[i as usize]).collect();
                assert_eq!(batch, &decode_all(&desc, &raw, None), "{options} {selection:?}");
                offset += batch.num_rows();
            }
            assert_eq!(offset, indices.len(), "{options} {selection:?}");
            assert!(seen.lock().unwrap().as_ref().unwrap().includes_all());
        }
    }
}

#[test]
fn array_record_projection_is_pushed_to_the_reader() {
    let desc = message("t.All");
    let (records, _) = records(&desc, 22, 250);
    let all: Vec<&Vec<u8>> = records.iter().collect();
    let expected = decode_all(&desc, &all, Some(PROJECTION));
    for options in ["group_size:30", "group_size:30,transpose"] {
        let file = array_record_file(&records, options);
        let seen = Arc::new(Mutex::new(None));
        let reader = ArrayRecordArrowReader::new(
            proto_options(&desc, 1000, Some(PROJECTION)),
            RecordSelection::All,
            opener(&file, &seen),
        )
        .unwrap();
        let batches = reader.collect::<Result<Vec<_>, _>>().unwrap();
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0], expected, "{options}");
        let decoder = ProtoDecoder::new(&desc, Some(PROJECTION), BadRecords::Fail).unwrap();
        assert_eq!(seen.lock().unwrap().as_ref(), Some(decoder.field_projection()));
        assert!(!decoder.field_projection().includes_all());
    }
}

#[test]
fn array_record_selections_out_of_range_are_refused() {
    let desc = message("t.All");
    let (records, _) = records(&desc, 23, 10);
    let file = array_record_file(&records, "group_size:4");
    let seen = Arc::new(Mutex::new(None));
    #[allow(clippy::reversed_empty_ranges)]
    for selection in
        [RecordSelection::Range(3..11), RecordSelection::Indices(vec![1, 10]), RecordSelection::Range(4..2)]
    {
        let error =
            ArrayRecordArrowReader::new(proto_options(&desc, 8, None), selection, opener(&file, &seen)).unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::OutOfRange(_)), "{error}");
    }
    // The type must be given: ArrayRecord readers do not read the metadata.
    let error = ArrayRecordArrowReader::new(ArrowReaderOptions::default(), RecordSelection::All, opener(&file, &seen))
        .unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::Type(_)), "{error}");
}

#[test]
fn array_record_bad_records_name_their_index_and_reading_goes_on() {
    let desc = message("t.All");
    let (mut records, messages) = records(&desc, 24, 40);
    // A truncated varint: not a message.
    records[13] = vec![0x08, 0x80];
    records[30] = vec![0x0a, 0x05, 0x01];
    let file = array_record_file(&records, "group_size:8");
    let seen = Arc::new(Mutex::new(None));
    let good: Vec<DynamicMessage> = (0..40).filter(|i| *i != 13 && *i != 30).map(|i| messages[i].clone()).collect();

    let mut reader =
        ArrayRecordArrowReader::new(proto_options(&desc, 16, None), RecordSelection::All, opener(&file, &seen))
            .unwrap();
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    loop {
        match reader.next_batch() {
            Ok(None) => break,
            Ok(Some(batch)) => rows.push(batch),
            Err(error) => match error.kind() {
                ErrorKind::BadRecord { index, .. } => failed.push(*index),
                _ => panic!("{error}"),
            },
        }
    }
    assert_eq!(failed, [13, 30]);
    let mut offset = 0;
    for batch in &rows {
        check_batch(batch, &good[offset..offset + batch.num_rows()]);
        offset += batch.num_rows();
    }
    assert_eq!(offset, 38);

    // Indices given: the index in the file is named.
    let options = proto_options(&desc, 16, None);
    let selection = RecordSelection::Indices(vec![2, 30, 1]);
    let mut reader = ArrayRecordArrowReader::new(options, selection, opener(&file, &seen)).unwrap();
    let error = reader.next_batch().unwrap_err();
    assert!(error.to_string().starts_with("record 30"), "{error}");

    let options = ArrowReaderOptions { bad_records: BadRecords::Skip, ..proto_options(&desc, 16, None) };
    let mut stream = ArrowStream::new(
        ArrayRecordArrowReader::new(options, RecordSelection::All, opener(&file, &seen)).unwrap(),
        None,
    )
    .unwrap();
    let batches = stream.by_ref().collect::<Result<Vec<_>, _>>().unwrap();
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 38);
    assert_eq!(stream.skipped().count, 2);
    assert!(stream.skipped().first_errors[0].starts_with("record 13"), "{:?}", stream.skipped());
}

#[test]
fn shards_are_records_by_key() {
    let desc = message("t.All");
    let (records, messages) = records(&desc, 25, 60);
    let files = [array_record_file(&records[..25], "group_size:10"), array_record_file(&records[25..], "group_size:7")];
    // Shard 0: records 5..25 of the first file, shard 1: all of the second.
    let open_files = files.clone();
    let shards =
        ArrayRecordShards::new(vec![5..25, 0..35], move |i| ArrayRecordReader::new(Cursor::new(open_files[i].clone())))
            .unwrap();
    assert_eq!(RecordsByIndex::num_records(&shards), 55);
    let keys = vec![54, 0, 19, 20, 21, 3];
    let expected: Vec<DynamicMessage> = [59, 5, 24, 25, 26, 8].iter().map(|&i| messages[i].clone()).collect();
    let mut shards = Some(shards);
    let reader = ArrayRecordArrowReader::new(proto_options(&desc, 4, None), RecordSelection::Indices(keys), |_| {
        Ok(shards.take().unwrap())
    })
    .unwrap();
    let batches = reader.collect::<Result<Vec<_>, _>>().unwrap();
    assert_eq!(batches.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(), [4, 2]);
    check_batch(&batches[0], &expected[..4]);
    check_batch(&batches[1], &expected[4..]);
}

#[test]
fn streams_know_their_schema_first_and_stop_at_the_limit() {
    let desc = message("t.All");
    let (records, messages) = records(&desc, 26, 100);
    let file = write_file(&desc, &records, "transpose,chunk_size:4k");
    for limit in [None, Some(0), Some(1), Some(37), Some(100), Some(1000)] {
        let options = ArrowReaderOptions { batch_size: 16, ..Default::default() };
        let reader = ArrowReader::new(RecordReader::new(Cursor::new(&file)), options).unwrap();
        let stream = ArrowStream::new(reader, limit).unwrap();
        let schema = RecordBatchReader::schema(&stream);
        assert_eq!(schema, ProtoDecoder::new(&desc, None::<&[&str]>, BadRecords::Fail).unwrap().schema());
        let batches = stream.collect::<Result<Vec<_>, _>>().unwrap();
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows as u64, limit.unwrap_or(100).min(100), "{limit:?}");
        assert!(batches.iter().all(|b| b.num_rows() <= 16 && b.schema() == schema));
        let mut offset = 0;
        for batch in &batches {
            check_batch(batch, &messages[offset..offset + batch.num_rows()]);
            offset += batch.num_rows();
        }
    }
}

#[test]
fn a_limited_stream_reads_no_further_than_it_needs() {
    let desc = message("t.All");
    let (records, _) = records(&desc, 27, 50);
    let file = write_file(&desc, &records, "uncompressed");
    let options = ArrowReaderOptions { batch_size: 16, ..Default::default() };
    let reader = ArrowReader::new(RecordReader::new(Cursor::new(&file)), options).unwrap();
    let mut stream = ArrowStream::new(reader, Some(20)).unwrap();
    assert_eq!(stream.by_ref().map(|b| b.unwrap().num_rows()).collect::<Vec<_>>(), [16, 4]);
    // The record reader is at record 20: it goes on from there.
    let mut rest = stream.into_inner().into_inner();
    assert_eq!(rest.read_record().unwrap().as_deref(), Some(records[20].as_slice()));
}

#[test]
fn example_streams_infer_their_schema_from_the_first_batch() {
    // Empty file: a schema without fields.
    let empty = write_file(&message("t.All"), &[], "uncompressed");
    let options = ArrowReaderOptions { format: RecordFormat::Example(None), ..Default::default() };
    let reader = ArrowReader::new(RecordReader::new(Cursor::new(&empty)), options.clone()).unwrap();
    let mut stream = ArrowStream::new(reader, None).unwrap();
    assert_eq!(RecordBatchReader::schema(&stream).fields().len(), 0);
    assert!(stream.next().is_none());

    // Records that are not Examples: the first error ends the stream.
    let bad = write_file(&message("t.All"), &[vec![0x0a, 0x09], vec![]], "uncompressed");
    let reader = ArrowReader::new(RecordReader::new(Cursor::new(&bad)), options).unwrap();
    let error = ArrowStream::new(reader, None).unwrap_err();
    assert!(error.is_bad_record(), "{error}");
}
