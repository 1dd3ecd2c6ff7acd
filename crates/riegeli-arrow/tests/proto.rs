//! Protobuf records as columns, checked against prost-reflect's decoding.

use std::io::Cursor;

use arrow_array::{Array, RecordBatch, StructArray};
use proptest::prelude::*;
use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor};
use riegeli_arrow::{ArrowReader, ArrowReaderOptions, BadRecords, ErrorKind, ProtoDecoder, RecordFormat};
use riegeli_records::{RecordReader, RecordReaderOptions};

use crate::common::{Rng, check_batch, doubling, message, random_message, restrict, write_file, write_file_of};

/// `count` records, each 1 to `parts` random messages concatenated (so that
/// singular fields occur several times, messages merge, lists concatenate,
/// maps and oneofs are overwritten), and prost-reflect's decoding of each.
fn records(desc: &MessageDescriptor, seed: u64, count: usize, parts: u64) -> (Vec<Vec<u8>>, Vec<DynamicMessage>) {
    let mut rng = Rng(seed);
    let records: Vec<Vec<u8>> = (0..count)
        .map(|_| (0..1 + rng.below(parts)).flat_map(|_| random_message(desc, &mut rng, 0).encode_to_vec()).collect())
        .collect();
    let messages = records.iter().map(|r| DynamicMessage::decode(desc.clone(), r.as_slice()).unwrap()).collect();
    (records, messages)
}

fn decode_all(desc: &MessageDescriptor, records: &[Vec<u8>], projection: Option<&[&str]>) -> RecordBatch {
    let mut decoder = ProtoDecoder::new(desc, projection, BadRecords::Fail).unwrap();
    for record in records {
        decoder.push(record, None).unwrap();
    }
    decoder.flush().unwrap()
}

fn read_file(file: &[u8], options: ArrowReaderOptions) -> Vec<RecordBatch> {
    let reader = RecordReader::new(Cursor::new(file));
    ArrowReader::new(reader, options).unwrap().collect::<Result<Vec<_>, _>>().unwrap()
}

#[test]
fn every_field_kind_matches_prost_reflect() {
    for name in ["t.All", "t.P2"] {
        let desc = message(name);
        let (records, messages) = records(&desc, 1, 300, 1);
        let batch = decode_all(&desc, &records, None);
        assert_eq!(batch.num_columns(), desc.fields().len());
        check_batch(&batch, &messages);
    }
}

#[test]
fn repeated_occurrences_merge_as_protobuf_does() {
    for name in ["t.All", "t.P2"] {
        let desc = message(name);
        let (records, messages) = records(&desc, 2, 300, 4);
        check_batch(&decode_all(&desc, &records, None), &messages);
    }
}

#[test]
fn hand_made_wire_cases() {
    let desc = message("t.All");
    let cases: Vec<Vec<u8>> = vec![
        // i32 twice: the last wins.
        vec![0x08, 0x01, 0x08, 0x02],
        // r_i32 unpacked and packed, mixed.
        vec![0xa0, 0x01, 0x05, 0xa2, 0x01, 0x02, 0x06, 0x07, 0xa0, 0x01, 0x08],
        // r_unpacked (declared not packed) given packed.
        vec![0xa2, 0x02, 0x02, 0x01, 0x02],
        // c_int, then c_str, then c_int: c_int 9 only.
        vec![0xf8, 0x01, 0x05, 0x82, 0x02, 0x01, b'x', 0xf8, 0x01, 0x09],
        // c_msg {a: 1}, c_int 2, c_msg {s: "y"}: c_msg {s: "y"} only.
        vec![0x8a, 0x02, 0x02, 0x08, 0x01, 0xf8, 0x01, 0x02, 0x8a, 0x02, 0x03, 0x12, 0x01, b'y'],
        // inner {a: 1, r: [1]}, inner {s: "z", r: [2]}: merged.
        vec![0x9a, 0x01, 0x04, 0x08, 0x01, 0x18, 0x01, 0x9a, 0x01, 0x05, 0x12, 0x01, b'z', 0x18, 0x02],
        // m_si {"k": 1}, {"k": 2}, {"j": 3}: k -> 2, j -> 3.
        vec![
            0xe2, 0x01, 0x05, 0x0a, 0x01, b'k', 0x10, 0x01, 0xe2, 0x01, 0x05, 0x0a, 0x01, b'k', 0x10, 0x02, 0xe2, 0x01,
            0x05, 0x0a, 0x01, b'j', 0x10, 0x03,
        ],
        // m_im entry with no key and no value; an entry with the value twice.
        vec![0xea, 0x01, 0x00, 0xea, 0x01, 0x08, 0x08, 0x05, 0x12, 0x02, 0x08, 0x01, 0x12, 0x00],
        // Unknown fields of every wire type, a group among them.
        vec![
            0xc8, 0x3e, 0x01, 0xc9, 0x3e, 0, 0, 0, 0, 0, 0, 0, 0, 0xca, 0x3e, 0x01, 0xff, 0xcd, 0x3e, 0, 0, 0, 0, 0xcb,
            0x3e, 0x08, 0x01, 0xcc, 0x3e, 0x08, 0x07,
        ],
        // Defaults written explicitly (proto3 allows it).
        vec![0x08, 0x00, 0x72, 0x00, 0x88, 0x01, 0x00],
        // Empty record.
        vec![],
    ];
    let messages: Vec<DynamicMessage> =
        cases.iter().map(|r| DynamicMessage::decode(desc.clone(), r.as_slice()).unwrap()).collect();
    check_batch(&decode_all(&desc, &cases, None), &messages);
}

#[test]
fn many_map_entries_keep_the_last_of_each_key() {
    let desc = message("t.All");
    // m_si with 40 entries of 7 keys, and m_bs with 20 entries of 2 keys.
    let mut record = Vec::new();
    for i in 0..40u8 {
        record.extend([0xe2, 0x01, 0x06, 0x0a, 0x02, b'k', b'0' + i % 7, 0x10, i]);
    }
    for i in 0..20u8 {
        record.extend([0xf2, 0x01, 0x05, 0x08, i % 2, 0x12, 0x01, b'a' + i]);
    }
    // More entries than the walker compares key by key, and fewer.
    let records = vec![record.clone(), record[..9 * 12].to_vec()];
    let messages: Vec<DynamicMessage> =
        records.iter().map(|r| DynamicMessage::decode(desc.clone(), r.as_slice()).unwrap()).collect();
    check_batch(&decode_all(&desc, &records, None), &messages);
}

#[test]
fn simple_and_transposed_files_give_the_same_batches() {
    let desc = message("t.All");
    let (records, messages) = records(&desc, 3, 500, 2);
    let mut reference: Option<Vec<RecordBatch>> = None;
    for options in ["uncompressed", "transpose", "transpose,uncompressed,chunk_size:4k", "zstd,chunk_size:10k"] {
        let file = write_file(&desc, &records, options);
        let batches = read_file(&file, ArrowReaderOptions { batch_size: 64, ..Default::default() });
        assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 500, "{options}");
        assert!(batches.iter().all(|b| b.num_rows() <= 64));
        match &reference {
            None => {
                check_batches(&batches, &messages);
                reference = Some(batches);
            }
            Some(reference) => assert_eq!(&batches, reference, "{options}"),
        }
    }
}

/// Checks consecutive batches against the messages of their rows.
fn check_batches(batches: &[RecordBatch], messages: &[DynamicMessage]) {
    let mut offset = 0;
    for batch in batches {
        check_batch(batch, &messages[offset..offset + batch.num_rows()]);
        offset += batch.num_rows();
    }
    assert_eq!(offset, messages.len());
}

const PROJECTION: &[&str] =
    &["i32", "str", "color", "inner.s", "inner.deep.u", "r_inner.a", "m_im", "c_int", "opt_str", "r_fl"];

#[test]
fn projected_columns_equal_the_unprojected_ones() {
    let desc = message("t.All");
    let (records, messages) = records(&desc, 4, 400, 3);
    let full = StructArray::from(decode_all(&desc, &records, None));
    let check = |projected: &RecordBatch| {
        let names: Vec<String> = projected.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["i32", "str", "color", "opt_str", "inner", "r_inner", "m_im", "c_int", "r_fl"]);
        for (field, column) in projected.schema().fields().iter().zip(projected.columns()) {
            let expected = restrict(full.column_by_name(field.name()).unwrap(), field.data_type());
            assert_eq!(&expected.to_data(), &column.to_data(), "{}", field.name());
        }
        check_batch(projected, &messages);
    };
    let projected = decode_all(&desc, &records, Some(PROJECTION));
    check(&projected);
    // Through files, the transposed ones decoding only the projected buckets.
    for options in ["uncompressed", "transpose", "transpose,brotli,chunk_size:3k"] {
        let file = write_file(&desc, &records, options);
        let read = ArrowReaderOptions {
            batch_size: 1000,
            projection: Some(PROJECTION.iter().map(|p| p.to_string()).collect()),
            ..Default::default()
        };
        let batches = read_file(&file, read);
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0], projected, "{options}");
    }
}

#[test]
fn projection_reaches_the_transposed_decoder() {
    let desc = message("t.All");
    let (records, _) = records(&desc, 5, 200, 1);
    let file = write_file(&desc, &records, "transpose");
    let decoder = ProtoDecoder::new(&desc, Some(&["i32"]), BadRecords::Fail).unwrap();
    let options = RecordReaderOptions { field_projection: decoder.field_projection().clone(), ..Default::default() };
    let mut reader = RecordReader::with_options(Cursor::new(&file), options);
    let (mut projected, mut whole) = (0, 0);
    while let Some(record) = reader.read_record().unwrap() {
        projected += record.len();
    }
    let mut reader = RecordReader::new(Cursor::new(&file));
    while let Some(record) = reader.read_record().unwrap() {
        whole += record.len();
    }
    assert!(projected * 10 < whole, "projected {projected} bytes of {whole}");
}

#[test]
fn array_record_files_decode_through_a_proto_decoder() {
    use riegeli_records::{ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordWriter, Selection};
    let desc = message("t.All");
    let (records, messages) = records(&desc, 10, 300, 2);
    let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:50,transpose".parse().unwrap()).unwrap();
    for record in &records {
        writer.write_record(record).unwrap();
    }
    let file = writer.close().unwrap();
    let mut decoder = ProtoDecoder::new(&desc, Some(PROJECTION), BadRecords::Fail).unwrap();
    let options =
        ArrayRecordReaderOptions { field_projection: decoder.field_projection().clone(), ..Default::default() };
    let mut reader = ArrayRecordReader::with_options(Cursor::new(&file), options).unwrap();
    for record in reader.read_batch(Selection::All).unwrap() {
        decoder.push(&record, None).unwrap();
    }
    let batch = decoder.flush().unwrap();
    check_batch(&batch, &messages);
    assert_eq!(batch, decode_all(&desc, &records, Some(PROJECTION)));
}

#[test]
fn damage_to_the_file_is_the_record_readers_business() {
    let desc = message("t.All");
    let (records, messages) = records(&desc, 13, 3000, 1);
    let mut file = write_file(&desc, &records, "uncompressed,chunk_size:8k");
    // Damage the middle of the file: a chunk or two is lost.
    let middle = file.len() / 2;
    file[middle..middle + 100].fill(0xaa);
    // Failing: a corruption error, not a bad record; recover() goes on past it.
    let mut reader = ArrowReader::new(RecordReader::new(Cursor::new(&file)), ArrowReaderOptions::default()).unwrap();
    let mut rows = 0;
    let mut errors = 0;
    loop {
        match reader.next_batch() {
            Ok(Some(batch)) => rows += batch.num_rows(),
            Ok(None) => break,
            Err(e) => {
                assert!(!e.is_bad_record() && matches!(e.kind(), ErrorKind::Records(r) if r.is_corruption()), "{e}");
                errors += 1;
                assert!(reader.get_mut().recover().unwrap().is_some());
            }
        }
    }
    assert_eq!(errors, 1);
    assert!(rows < 3000 && rows > 2500, "{rows}");
    // Skipping damage with the reader's recovery: the same rows, no error;
    // the records before the damage are those of the file.
    let mut inner = RecordReader::new(Cursor::new(&file));
    inner.set_recovery(|_| true);
    let options = ArrowReaderOptions { batch_size: 100_000, ..Default::default() };
    let batches: Vec<RecordBatch> = ArrowReader::new(inner, options).unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(batches[0].num_rows(), rows);
    check_batch(&batches[0].slice(0, 1000), &messages[..1000]);
}

#[test]
fn the_type_comes_from_the_metadata_or_is_given() {
    let desc = message("t.P2");
    let (records, messages) = records(&desc, 6, 50, 2);
    let file = write_file(&desc, &records, "");
    // From the metadata.
    let batches = read_file(&file, ArrowReaderOptions::default());
    check_batch(&batches[0], &messages);
    // Given.
    let given = ArrowReaderOptions { format: RecordFormat::Proto(desc.clone()), ..Default::default() };
    let mut writer = riegeli_records::RecordWriter::new(Vec::new(), Default::default()).unwrap();
    for record in &records {
        writer.write_record(record).unwrap();
    }
    let plain = writer.close().unwrap();
    assert_eq!(read_file(&plain, given)[0], batches[0]);
    // Neither.
    let err = ArrowReader::new(RecordReader::new(Cursor::new(&plain)), ArrowReaderOptions::default()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Type(_)), "{err}");
    assert!(err.to_string().contains("no message type"), "{err}");
}

#[test]
fn plans_refuse_what_has_no_columns() {
    let desc = message("t.All");
    let err = |paths: &[&str]| ProtoDecoder::new(&desc, Some(paths), BadRecords::Fail).unwrap_err().to_string();
    assert!(err(&["nope"]).contains("has no field \"nope\""), "{}", err(&["nope"]));
    assert!(err(&["inner.nope"]).contains("in inner"), "{}", err(&["inner.nope"]));
    assert!(err(&["i32.x"]).contains("not a message field"), "{}", err(&["i32.x"]));
    assert!(err(&["m_im.key"]).contains("maps are selected whole"), "{}", err(&["m_im.key"]));
    assert!(err(&["a..b"]).contains("not a field path"));
    // A path and a longer one: the shorter selects all.
    let decoder = ProtoDecoder::new(&desc, Some(&["inner.s", "inner"]), BadRecords::Fail).unwrap();
    let arrow_schema::DataType::Struct(fields) = decoder.schema().field(0).data_type().clone() else { panic!() };
    assert_eq!(fields.len(), 5);
}

#[test]
fn recursive_types_need_a_projection() {
    let desc = message("t.Node");
    let err = ProtoDecoder::new(&desc, None::<&[&str]>, BadRecords::Fail).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Type(_)), "{err}");
    assert!(err.to_string().contains("field next: message type t.Node contains itself"), "{err}");
    let paths = ["v", "next.v", "next.next.v", "kids.v", "kids.kids.v", "kids.next.v"];
    let (records, messages) = records(&desc, 9, 200, 3);
    let batch = decode_all(&desc, &records, Some(&paths));
    check_batch(&batch, &messages);
    let file = write_file(&desc, &records, "transpose");
    let options = ArrowReaderOptions { projection: Some(paths.map(String::from).to_vec()), ..Default::default() };
    assert_eq!(read_file(&file, options), [batch]);
}

#[test]
fn a_plan_of_more_than_65536_fields_in_all_is_a_type_error() {
    // 2^16 leaves under 2^17 - 2 message fields: no type contains itself.
    let big = riegeli_arrow::message_type(vec![doubling(16)], "d.L0").unwrap();
    // (Not `unwrap_err`: a decoder's Debug would print every field.)
    let Err(err) = ProtoDecoder::new(&big, None::<&[&str]>, BadRecords::Fail) else { panic!("planned") };
    assert!(matches!(err.kind(), ErrorKind::Type(_)), "{err}");
    assert!(err.to_string().contains("d.L0: the columns have more than 65536 fields in all"), "{err}");
    // A projection of it plans what it selects; a type of 3,070 fields in all plans whole.
    let deep = format!("{}x", "a.".repeat(16));
    let decoder = ProtoDecoder::new(&big, Some(&[deep.as_str(), "b"]), BadRecords::Fail);
    let decoder = decoder.map(|d| d.schema().fields().len());
    assert!(decoder.as_ref().is_err_and(|e| e.to_string().contains("more than 65536")), "{decoder:?}");
    let decoder = ProtoDecoder::new(&big, Some(&[deep.as_str(), "b.b.b.b.b.b.b.b.b.b.b.b.b.b.b.b"]), BadRecords::Fail);
    assert_eq!(decoder.unwrap().schema().fields().len(), 2);
    let small = riegeli_arrow::message_type(vec![doubling(10)], "d.L0").unwrap();
    let decoder = ProtoDecoder::new(&small, None::<&[&str]>, BadRecords::Fail).unwrap();
    assert_eq!(decoder.schema().fields().len(), 2);
    // Through a file that names the type in its metadata, as the CLI reads it.
    let file = write_file_of(&[doubling(16)], "d.L0", &[], "transpose");
    let Err(err) = ArrowReader::new(RecordReader::new(Cursor::new(file)), ArrowReaderOptions::default()) else {
        panic!("planned")
    };
    assert!(err.to_string().contains("more than 65536 fields"), "{err}");
}

#[test]
fn plans_nest_at_most_100_deep() {
    let desc = message("t.Node");
    let path = |depth: usize| format!("{}v", "next.".repeat(depth));
    let err = ProtoDecoder::new(&desc, Some(&[path(101)]), BadRecords::Fail).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Type(_)) && err.to_string().contains("deeper than 100"), "{err}");
    let decoder = ProtoDecoder::new(&desc, Some(&[path(99)]), BadRecords::Fail).unwrap();
    // A record nested as deep as the plan decodes; prost-reflect agrees.
    let mut record = vec![0x08, 0x07];
    for _ in 0..99 {
        let mut outer = vec![0x12];
        outer.extend(varint(record.len() as u64));
        outer.extend(&record);
        record = outer;
    }
    let message = DynamicMessage::decode(desc.clone(), record.as_slice()).unwrap();
    let mut decoder = decoder;
    decoder.push(&record, None).unwrap();
    check_batch(&decoder.flush().unwrap(), &[message]);
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// A record with the given problem, and the words its error must contain.
fn bad_cases() -> Vec<(Vec<u8>, &'static str)> {
    let mut deep = Vec::new();
    for _ in 0..120 {
        deep.push(0xcb); // start group 1001
        deep.push(0x3e);
    }
    vec![
        (vec![0x08, 0x80], "truncated varint"),
        (vec![0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], "longer than 10"),
        (vec![0x0a, 0x01, 0x00], "field i32: wire type 2 where int32 has wire type 0"),
        (vec![0x72, 0x05, b'a'], "runs past the end"),
        (vec![0x9a, 0x01, 0x03, 0x12, 0x05, b'a'], "runs past the end"),
        (vec![0x72, 0x02, 0xc3, 0x28], "field str: invalid UTF-8"),
        (vec![0x9a, 0x01, 0x03, 0x12, 0x01, 0xff], "field inner.s: invalid UTF-8"),
        (deep, "deeper than 100"),
        (vec![0x00], "invalid field number 0"),
        (vec![0x0f], "field i32: wire type 7 where int32"),
        (vec![0xcf, 0x3e], "invalid wire type 7 (field 1001)"),
        (vec![0x41, 0x00], "fixed64 value of 8 bytes runs past"),
    ]
}

#[test]
fn bad_records_fail_by_default_and_name_the_record() {
    let desc = message("t.All");
    let (good, messages) = records(&desc, 7, 3, 1);
    for (bad, words) in bad_cases() {
        assert!(DynamicMessage::decode(desc.clone(), bad.as_slice()).is_err(), "prost-reflect accepts {bad:?}");
        let mut decoder = ProtoDecoder::new(&desc, None::<&[&str]>, BadRecords::Fail).unwrap();
        decoder.push(&good[0], None).unwrap();
        let err = decoder.push(&bad, None).unwrap_err();
        assert!(err.is_bad_record());
        let ErrorKind::BadRecord { index, .. } = err.kind() else { panic!() };
        assert_eq!(*index, 1);
        assert!(err.to_string().contains(words), "{err} lacks {words:?}");
        assert!(err.to_string().starts_with("record 1: "), "{err}");
        // The bad record left nothing behind; decoding goes on.
        decoder.push(&good[1], None).unwrap();
        decoder.push(&good[2], None).unwrap();
        check_batch(&decoder.flush().unwrap(), &messages);
    }
}

#[test]
fn bad_records_can_be_skipped_and_counted() {
    let desc = message("t.All");
    let (good, messages) = records(&desc, 8, 40, 2);
    let cases = bad_cases();
    let mut mixed = Vec::new();
    for (i, record) in good.iter().enumerate() {
        mixed.push(record.clone());
        if let Some((bad, _)) = cases.get(i) {
            mixed.push(bad.clone());
        }
    }
    for transpose in ["", "transpose"] {
        let file = write_file(&desc, &mixed, transpose);
        let options = ArrowReaderOptions { bad_records: BadRecords::Skip, batch_size: 16, ..Default::default() };
        let mut reader = ArrowReader::new(RecordReader::new(Cursor::new(&file)), options).unwrap();
        let mut batches = Vec::new();
        while let Some(batch) = reader.next_batch().unwrap() {
            batches.push(batch);
        }
        assert!(batches.iter().all(|b| b.num_rows() <= 16));
        check_batches(&batches, &messages);
        let skipped = reader.skipped();
        assert_eq!(skipped.count, cases.len() as u64, "{transpose}");
        assert_eq!(skipped.first_errors.len(), 10);
        // Record 1 is the first bad one; its position in the file is named.
        assert!(skipped.first_errors[0].starts_with("record 1 (at "), "{}", skipped.first_errors[0]);
        assert!(skipped.first_errors[0].contains("truncated varint"));

        // Failing: each bad record is an error, after which reading goes on.
        let mut reader =
            ArrowReader::new(RecordReader::new(Cursor::new(&file)), ArrowReaderOptions::default()).unwrap();
        let (mut rows, mut errors) = (Vec::new(), 0);
        loop {
            match reader.next_batch() {
                Ok(Some(batch)) => rows.push(batch),
                Ok(None) => break,
                Err(e) => {
                    assert!(e.is_bad_record(), "{e}");
                    errors += 1;
                }
            }
        }
        assert_eq!(errors, cases.len());
        check_batches(&rows, &messages);
    }
}

/// `record` changed at random: bytes flipped, cut, inserted or repeated.
fn mutate(record: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = record.to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = if out.is_empty() { 0 } else { rng.below(out.len() as u64) as usize };
        match rng.below(5) {
            0 if !out.is_empty() => out[at] ^= 1 << rng.below(8),
            1 if !out.is_empty() => out[at] = rng.next() as u8,
            2 => out.truncate(at),
            3 => out.splice(at..at, (0..1 + rng.below(4)).map(|_| rng.next() as u8)).for_each(drop),
            _ => {
                let end = (at + 1 + rng.below(8) as usize).min(out.len());
                let copy = out[at..end].to_vec();
                out.splice(at..at, copy).for_each(drop);
            }
        }
    }
    out
}

/// Damaged records: the decoder fails exactly when prost-reflect does, and
/// otherwise gives its values.
fn check_damaged(name: &str, seed: u64, count: usize) {
    let desc = message(name);
    let (records, _) = records(&desc, seed, count, 2);
    let mut rng = Rng(seed ^ 0x5555);
    let mut decoder = ProtoDecoder::new(&desc, None::<&[&str]>, BadRecords::Fail).unwrap();
    let mut accepted = Vec::new();
    for record in &records {
        let damaged = mutate(record, &mut rng);
        let ours = decoder.push(&damaged, None);
        match DynamicMessage::decode(desc.clone(), damaged.as_slice()) {
            Ok(message) => match ours {
                Ok(()) => accepted.push(message),
                // prost-reflect reads a map entry whatever its wire type.
                Err(e) if e.to_string().contains(": wire type ") && e.to_string().contains("field m_") => {}
                Err(e) => panic!("{name}: {damaged:?} refused: {e}"),
            },
            Err(theirs) => assert!(ours.is_err(), "{name}: {damaged:?} accepted; prost-reflect: {theirs}"),
        }
    }
    check_batch(&decoder.flush().unwrap(), &accepted);
}

#[test]
fn damaged_records_fail_exactly_when_prost_reflect_fails() {
    check_damaged("t.All", 11, 2000);
    check_damaged("t.P2", 12, 2000);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Damaged records fail exactly when prost-reflect fails.
    #[test]
    fn damaged_random_messages(seed in any::<u64>(), p2 in any::<bool>()) {
        check_damaged(if p2 { "t.P2" } else { "t.All" }, seed, 30);
    }

    /// Random messages, concatenated (merged), decode to prost-reflect's
    /// values, whole and projected.
    #[test]
    fn random_messages_match_prost_reflect(seed in any::<u64>(), parts in 1u64..4, p2 in any::<bool>()) {
        let desc = message(if p2 { "t.P2" } else { "t.All" });
        let (records, messages) = records(&desc, seed, 20, parts);
        check_batch(&decode_all(&desc, &records, None), &messages);
        if !p2 {
            check_batch(&decode_all(&desc, &records, Some(PROJECTION)), &messages);
        }
    }
}
