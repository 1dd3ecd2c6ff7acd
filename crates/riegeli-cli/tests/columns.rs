//! `convert --to parquet`, read back by the `parquet` crate's Arrow reader and
//! compared with the batches `ArrowReader` gives directly; and `cat --format
//! proto-json`, compared with prost-reflect's JSON of the same records.
//!
//! The message types and random messages are riegeli-arrow's test helpers
//! (`crates/riegeli-arrow/tests/common.rs`): a field of every kind.

use std::io::Cursor;
use std::path::Path;

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor, SerializeOptions};
use riegeli_arrow::{ArrowReader, ArrowReaderOptions};
use riegeli_records::{ArrayRecordWriter, ArrayRecordWriterOptions, RecordReader, RecordsMetadata, set_record_type};

use crate::arrow_common::{Rng, files, message, random_message, write_file};
use crate::{assert_one_line_error, riegeli, scratch_dir, text};

/// `count` random records of `desc`, some of them several messages concatenated.
fn records(desc: &MessageDescriptor, seed: u64, count: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng(seed);
    (0..count)
        .map(|_| (0..1 + rng.below(2)).flat_map(|_| random_message(desc, &mut rng, 0).encode_to_vec()).collect())
        .collect()
}

/// Every column of `t.All` but `e` (an empty message: Parquet has no empty groups).
const ALL_BUT_EMPTY: &str = "i32,i64,u32,u64,s32,s64,f32,f64,sf32,sf64,fl,db,b,str,byt,color,opt_i32,opt_str,inner,\
r_i32,r_s64,r_db,r_b,r_str,r_byt,r_color,r_inner,m_si,m_im,m_bs,c_int,c_str,c_msg,r_f32,r_fl,r_unpacked";

fn read_parquet(path: &Path) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap().with_batch_size(1 << 20).build().unwrap();
    reader.collect::<Result<Vec<_>, _>>().unwrap()
}

/// The batches `ArrowReader` reads from `file` with `projection`, as one.
fn read_directly(file: &[u8], projection: Option<&str>) -> RecordBatch {
    let options = ArrowReaderOptions {
        batch_size: 1 << 20,
        projection: projection.map(|p| p.split(',').map(str::to_owned).collect()),
        ..Default::default()
    };
    let mut batches = ArrowReader::new(RecordReader::new(Cursor::new(file)), options)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(batches.len(), 1);
    batches.remove(0)
}

#[track_caller]
fn assert_same(parquet: &[RecordBatch], direct: &RecordBatch) {
    assert_eq!(parquet.len(), 1, "one batch read back");
    let got = &parquet[0];
    assert_eq!(got.schema().fields(), direct.schema().fields());
    assert_eq!(got.num_rows(), direct.num_rows());
    for (i, (a, b)) in got.columns().iter().zip(direct.columns()).enumerate() {
        assert_eq!(a.to_data(), b.to_data(), "column {}", direct.schema().field(i).name());
    }
}

fn convert(args: &[&str]) -> std::process::Output {
    let mut all = vec!["convert"];
    all.extend_from_slice(args);
    riegeli(&all, b"")
}

#[test]
fn riegeli_files_of_every_field_kind_become_the_same_columns_in_parquet() {
    let dir = scratch_dir("parquet-riegeli");
    for (name, columns) in [("t.All", Some(ALL_BUT_EMPTY)), ("t.P2", None), ("t.Inner", None)] {
        let desc = message(name);
        let records = records(&desc, 11, 300);
        for options in ["default", "transpose,zstd:1,chunk_size:4k"] {
            let file = write_file(&desc, &records, options);
            let input = dir.join("in.riegeli");
            std::fs::write(&input, &file).unwrap();
            let out = dir.join("out.parquet");
            for compression in ["zstd", "snappy", "none"] {
                let mut args =
                    vec![input.to_str().unwrap(), out.to_str().unwrap(), "--to", "parquet", "--parquet-compression"];
                args.push(compression);
                if let Some(columns) = columns {
                    args.extend(["--columns", columns]);
                }
                let result = convert(&args);
                assert!(result.status.success(), "{name} {options}: {}", text(&result.stderr));
                assert_same(&read_parquet(&out), &read_directly(&file, columns));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn array_record_files_convert_by_index_with_projected_columns() {
    let dir = scratch_dir("parquet-array-record");
    let desc = message("t.All");
    let records = records(&desc, 12, 250);
    let mut metadata = RecordsMetadata::default();
    set_record_type(&mut metadata, desc.full_name(), &files()).unwrap();
    let options: ArrayRecordWriterOptions = "group_size:40,transpose".parse().unwrap();
    let options = ArrayRecordWriterOptions { metadata: Some(metadata.encode_to_vec()), ..options };
    let mut writer = ArrayRecordWriter::new(Vec::new(), options).unwrap();
    for record in &records {
        writer.write_record(record).unwrap();
    }
    let file = writer.close().unwrap();
    let input = dir.join("in.array_record");
    std::fs::write(&input, &file).unwrap();
    let out = dir.join("out.parquet");
    let (input, out_str) = (input.to_str().unwrap(), out.to_str().unwrap());
    // (A RecordReader reads an ArrayRecord file's records in order, skipping its footer.)
    let result = convert(&[input, out_str, "--to", "parquet", "--columns", ALL_BUT_EMPTY]);
    assert!(result.status.success(), "{}", text(&result.stderr));
    assert_same(&read_parquet(&out), &read_directly(&file, Some(ALL_BUT_EMPTY)));
    // Projected: just these columns, and `inner` with just `s`.
    let result = convert(&[input, out_str, "--to", "parquet", "--columns", "i32,inner.s,m_si"]);
    assert!(result.status.success(), "{}", text(&result.stderr));
    let batches = read_parquet(&out);
    let names: Vec<_> = batches[0].schema().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names, ["i32", "inner", "m_si"]);
    let arrow_schema::DataType::Struct(inner) = batches[0].schema().field(1).data_type().clone() else {
        panic!("inner is a struct")
    };
    assert_eq!(inner.iter().map(|f| f.name().as_str()).collect::<Vec<_>>(), ["s"]);
    assert_same(&batches, &read_directly(&file, Some("i32,inner.s,m_si")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_records_fail_or_are_skipped_and_reported() {
    let dir = scratch_dir("parquet-bad");
    let desc = message("t.P2");
    // The middle record's field 2 (a string) claims 5 bytes and has 1.
    let records = vec![b"\x08\x01\x12\x01a".to_vec(), b"\x12\x05a".to_vec(), b"\x08\x03\x12\x01c".to_vec()];
    let input = dir.join("bad.riegeli");
    std::fs::write(&input, write_file(&desc, &records, "default")).unwrap();
    let out = dir.join("out.parquet");
    let (input, out_str) = (input.to_str().unwrap(), out.to_str().unwrap());
    let result = convert(&[input, out_str, "--to", "parquet"]);
    assert_one_line_error(&result, 1, "record 1");
    assert!(text(&result.stderr).contains("--skip-corrupted"), "{}", text(&result.stderr));
    let result = convert(&[input, out_str, "--to", "parquet", "--skip-corrupted"]);
    assert!(result.status.success(), "{}", text(&result.stderr));
    let stderr = text(&result.stderr);
    assert!(stderr.contains("record 1") && stderr.contains("skipped"), "{stderr}");
    let batches = read_parquet(&out);
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 2);
    let a = batches[0].column(0).as_any().downcast_ref::<arrow_array::Int32Array>().unwrap();
    assert_eq!(a.values().to_vec(), [1, 3]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn usage_errors_of_convert_to_parquet() {
    let dir = scratch_dir("parquet-usage");
    let out = dir.join("out.parquet");
    let out = out.to_str().unwrap();
    // No record type in the metadata.
    let plain = crate::testdata("valid/simple_none.riegeli");
    let plain = plain.to_str().unwrap();
    let result = convert(&[plain, out, "--to", "parquet"]);
    assert_one_line_error(&result, 2, "needs a record type in the file metadata");
    assert!(text(&result.stderr).contains("--example"), "{}", text(&result.stderr));
    // Writer options of Riegeli files, and Parquet's flags without --to parquet.
    let result = convert(&[plain, out, "--to", "parquet", "--options", "zstd"]);
    assert_one_line_error(&result, 2, "--options");
    let result = convert(&[plain, out, "--to", "parquet", "-j", "2"]);
    assert_one_line_error(&result, 2, "--threads");
    let result = convert(&[plain, out, "--columns", "a"]);
    assert_one_line_error(&result, 2, "--columns applies to --to parquet");
    let result = convert(&[plain, out, "--from", "parquet"]);
    assert_one_line_error(&result, 2, "output only");
    // A column that is not a field; a type that contains itself.
    let desc = message("t.P2");
    let input = dir.join("p2.riegeli");
    std::fs::write(&input, write_file(&desc, &records(&desc, 1, 3), "default")).unwrap();
    let result = convert(&[input.to_str().unwrap(), out, "--to", "parquet", "--columns", "a,nope"]);
    assert_one_line_error(&result, 2, "nope");
    let node = message("t.Node");
    std::fs::write(&input, write_file(&node, &[], "default")).unwrap();
    let result = convert(&[input.to_str().unwrap(), out, "--to", "parquet"]);
    assert_one_line_error(&result, 2, "contains itself");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn example_records_become_a_column_per_feature() {
    let dir = scratch_dir("parquet-example");
    // tf.train.Example { features { feature { key: "n" value { int64_list { value: [7] } } } } }
    let entry = [&b"\x0a\x01n\x12\x05"[..], &b"\x1a\x03\x0a\x01\x07"[..]].concat();
    let features = [&[0x0a, entry.len() as u8][..], &entry[..]].concat();
    let example = [&[0x0a, features.len() as u8][..], &features[..]].concat();
    let input = dir.join("examples.riegeli");
    let mut delimited = Vec::new();
    for _ in 0..3 {
        delimited.push(example.len() as u8);
        delimited.extend_from_slice(&example);
    }
    let result = riegeli(&["write", input.to_str().unwrap()], &delimited);
    assert!(result.status.success(), "{}", text(&result.stderr));
    let out = dir.join("out.parquet");
    let result = convert(&[input.to_str().unwrap(), out.to_str().unwrap(), "--to", "parquet", "--example"]);
    assert!(result.status.success(), "{}", text(&result.stderr));
    let batches = read_parquet(&out);
    assert_eq!(batches[0].num_rows(), 3);
    assert_eq!(batches[0].schema().field(0).name(), "n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// prost-reflect's JSON of `record`, on one line or pretty.
fn prost_reflect_json(desc: &MessageDescriptor, record: &[u8], pretty: bool) -> serde_json::Value {
    let message = DynamicMessage::decode(desc.clone(), record).unwrap();
    let mut out = Vec::new();
    if pretty {
        message
            .serialize_with_options(&mut serde_json::Serializer::pretty(&mut out), &SerializeOptions::new())
            .unwrap();
    } else {
        message.serialize_with_options(&mut serde_json::Serializer::new(&mut out), &SerializeOptions::new()).unwrap();
    }
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn cat_proto_json_prints_every_field_kind_as_before() {
    let dir = scratch_dir("parquet-cat-json");
    for name in ["t.All", "t.P2"] {
        let desc = message(name);
        // More records than one batch of the printer.
        let records = records(&desc, 13, 1500);
        let input = dir.join("in.riegeli");
        std::fs::write(&input, write_file(&desc, &records, "transpose")).unwrap();
        let out = riegeli(&["cat", "--format", "proto-json", input.to_str().unwrap()], b"");
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), records.len());
        for (line, record) in lines.iter().zip(&records) {
            let got: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(got, prost_reflect_json(&desc, record, false), "{name}: {record:?}");
        }
        let out = riegeli(&["cat", "--format", "proto-json", "--pretty", "-n", "5", input.to_str().unwrap()], b"");
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let pretty: Vec<&str> = stdout.split("\n\n").collect();
        assert_eq!(pretty.len(), 5);
        for (text, record) in pretty.iter().zip(&records) {
            assert!(text.lines().count() > 1 || text.trim() == "{}", "{text}");
            let got: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(got, prost_reflect_json(&desc, record, true), "{name}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
