//! ArrayRecord files: every command on the golden files of the C++ writer
//! (`testdata/array_record/`, checked against the manifest's record sets),
//! `write --array-record` and `convert --to array-record` against C++ bytes
//! and layout facts of the spec, damaged footers, and bad usage.

use serde_json::Value;

use crate::golden::{files, manifest, record_set, split_delimited};
use crate::{assert_one_line_error, riegeli, scratch_dir, testdata, text};

/// `varint(len) bytes` for each record (independent of the binary).
fn delimited(records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for record in records {
        push_varint(&mut out, record.len() as u64);
        out.extend_from_slice(record);
    }
    out
}

fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A serialized `RiegeliPostscript` (array-record.md §2).
fn postscript_record(footer_offset: u64) -> Vec<u8> {
    let mut record = vec![0x08];
    push_varint(&mut record, footer_offset);
    record.extend_from_slice(&[0x10, 0xde, 0xc0, 0xeb, 0xfe, 0x84, 0xce, 0xc3, 0xc9, 0x71]);
    record
}

fn json_lines(bytes: &[u8]) -> Vec<Value> {
    text(bytes).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// `describe --json`: the ArrayRecord summary (if any) and the chunks.
fn describe_json(path: &str) -> (Option<Value>, Vec<Value>) {
    let out = riegeli(&["describe", "--json", path], b"");
    assert!(out.status.success(), "{path}: {}", text(&out.stderr));
    let lines = json_lines(&out.stdout);
    let summary =
        lines.iter().find(|l| l.get("array_record").is_some_and(Value::is_object)).map(|l| l["array_record"].clone());
    let chunks = lines.into_iter().filter(|l| l.get("chunk_begin").is_some()).collect();
    (summary, chunks)
}

#[test]
fn every_command_on_the_cpp_array_record_files() {
    let manifest = manifest();
    let mut seen = 0;
    for file in files(&manifest, "array_record") {
        seen += 1;
        let path = testdata(file["path"].as_str().unwrap());
        let path = path.to_str().unwrap();
        let expected = record_set(&manifest, file["records"].as_str().unwrap());
        let n = expected.len() as u64;
        let size = file["size"].as_u64().unwrap();
        let footer_offset = file["footer_offset"].as_u64().unwrap();
        let want_chunks = file["chunks"].as_array().unwrap();
        let footer_records =
            want_chunks.iter().find(|c| c["offset"] == footer_offset).unwrap()["num_records"].as_u64().unwrap();

        // cat shows the data records only, from a file and from standard input.
        let out = riegeli(&["cat", "--format", "delimited", path], b"");
        assert!(out.status.success(), "{path}: {}", text(&out.stderr));
        assert!(split_delimited(&out.stdout) == expected, "{path}: cat differs from the record set");
        assert!(out.stderr.is_empty(), "{path}: {}", text(&out.stderr));
        let out = riegeli(&["cat", "--format", "delimited", "-"], &std::fs::read(path).unwrap());
        assert!(split_delimited(&out.stdout) == expected, "{path}: cat - differs");

        // --plain shows the footer and the three postscript copies as records.
        let out = riegeli(&["cat", "--plain", "--format", "delimited", path], b"");
        assert!(out.status.success(), "{path}: {}", text(&out.stderr));
        let plain = split_delimited(&out.stdout);
        assert_eq!(plain.len() as u64, n + footer_records + 3, "{path}: --plain");
        assert!(plain[..expected.len()] == expected[..], "{path}: --plain data records");
        for copy in &plain[plain.len() - 3..] {
            assert_eq!(copy, &postscript_record(footer_offset), "{path}: postscript record");
        }

        // count: the footer's num_records; --plain counts the trailer too.
        let out = riegeli(&["count", path], b"");
        assert_eq!(text(&out.stdout).trim(), n.to_string(), "{path}");
        let out = riegeli(&["count", "--plain", path], b"");
        assert_eq!(text(&out.stdout).trim(), (n + footer_records + 3).to_string(), "{path}");
        // Standard input cannot seek to the footer: the chunk headers are counted, the trailer recognised.
        let out = riegeli(&["count", "-"], &std::fs::read(path).unwrap());
        assert_eq!(text(&out.stdout).trim(), n.to_string(), "{path}: count -");

        // verify also reads every record through the footer.
        let out = riegeli(&["verify", path], b"");
        assert!(out.status.success(), "{path}: {}", text(&out.stdout));
        let num_data_chunks = want_chunks
            .iter()
            .filter(|c| {
                matches!(c["chunk_type"].as_str(), Some("r" | "t")) && c["offset"].as_u64() < Some(footer_offset)
            })
            .count();
        assert!(
            text(&out.stdout)
                .contains(&format!("{n} records; ArrayRecord, the footer indexes {num_data_chunks} chunks")),
            "{path}: {}",
            text(&out.stdout)
        );

        let out = riegeli(&["verify", "-"], &std::fs::read(path).unwrap());
        assert!(out.status.success(), "{path}: {}", text(&out.stdout));
        assert!(text(&out.stdout).contains(&format!(" {n} records; an ArrayRecord trailer")), "{}", text(&out.stdout));

        // describe: the summary, and the chunks of the manifest with the trailer marked.
        let (summary, chunks) = describe_json(path);
        let summary = summary.unwrap_or_else(|| panic!("{path}: no ArrayRecord summary"));
        assert_eq!(summary["num_records"], n, "{path}");
        assert_eq!(summary["num_chunks"], num_data_chunks, "{path}");
        assert_eq!(summary["footer_offset"], footer_offset, "{path}");
        assert_eq!(summary["postscript_offset"], size - 65536, "{path}");
        assert_eq!(summary["index_source"], "footer", "{path}");
        let options = file["options"].as_str().unwrap();
        let group: u64 = options.split(',').find_map(|o| o.strip_prefix("group_size:")).unwrap().parse().unwrap();
        if n > 0 {
            assert_eq!(summary["group_size"], group, "{path}");
            let stated = summary["writer_options"].as_str().unwrap();
            assert!(stated.starts_with(&format!("group_size:{group},")), "{path}: {stated}");
        }
        assert_eq!(chunks.len(), want_chunks.len(), "{path}");
        for (got, want) in chunks.iter().zip(want_chunks) {
            assert_eq!(got["chunk_begin"], want["offset"], "{path}");
            for key in ["data_size", "num_records", "decoded_data_size"] {
                assert_eq!(got[key], want[key], "{path}: {key}");
            }
            let role = match want["offset"].as_u64().unwrap() {
                o if o == footer_offset => Value::from("FOOTER"),
                o if o == size - 65536 => Value::from("POSTSCRIPT"),
                _ => Value::Null,
            };
            assert_eq!(got["array_record"], role, "{path}: chunk at {}", want["offset"]);
        }
        let out = riegeli(&["describe", path], b"");
        let stdout = text(&out.stdout);
        assert!(stdout.contains("  array_record {\n") && stdout.contains("    index_source: footer\n"), "{stdout}");
        assert!(stdout.contains("    array_record: FOOTER\n") && stdout.contains("    array_record: POSTSCRIPT\n"));
        // On standard input the postscript is known by its records.
        let out = riegeli(&["describe", "--json", "-"], &std::fs::read(path).unwrap());
        let marked: Vec<Value> = json_lines(&out.stdout)
            .iter()
            .filter(|c| !c["array_record"].is_null())
            .map(|c| c["chunk_begin"].clone())
            .collect();
        assert_eq!(marked, [Value::from(size - 65536)], "{path}: describe -");
        let out = riegeli(&["describe", "--plain", "--json", path], b"");
        assert!(!text(&out.stdout).contains("\"array_record\":"), "{path}: --plain");

        // Random access by index.
        if n > 0 {
            let (a, b) = (n / 3, (n / 3 + 5).min(n));
            let list = format!("{},0,{a}..{b},{}", n - 1, n / 2);
            let mut want = vec![expected[n as usize - 1].clone(), expected[0].clone()];
            want.extend(expected[a as usize..b as usize].iter().cloned());
            want.push(expected[n as usize / 2].clone());
            let out = riegeli(&["cat", "--records", &list, "--format", "delimited", path], b"");
            assert!(out.status.success(), "{path}: {}", text(&out.stderr));
            assert!(split_delimited(&out.stdout) == want, "{path}: --records {list}");
            let out = riegeli(&["cat", "--records", &format!("0..{n}"), "--limit", "3", "--format", "json", path], b"");
            let lines = json_lines(&out.stdout);
            assert_eq!(lines.len() as u64, n.min(3), "{path}");
            for (i, line) in lines.iter().enumerate() {
                assert_eq!(line["index"], i, "{path}");
                assert_eq!(line["size"], expected[i].len(), "{path}");
            }
        }
        let out = riegeli(&["cat", "--records", &n.to_string(), path], b"");
        assert_one_line_error(&out, 2, "out of range");
    }
    assert_eq!(seen, 13, "the manifest lists the ArrayRecord files");
}

#[test]
fn write_array_record_is_byte_identical_to_cpp() {
    // array-record.md §9: the C++ writer with `group_size:2,uncompressed` on `hello`, ``, `world!!`.
    let dir = scratch_dir("ar-write-vector");
    let file = dir.join("vector.array_record");
    let file = file.to_str().unwrap();
    let out = riegeli(
        &["write", "--array-record", "--options", "group_size:2,uncompressed", "--input-format", "lines", file],
        b"hello\n\nworld!!\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let bytes = std::fs::read(file).unwrap();
    assert_eq!(bytes.len(), 131072);
    let mut h = Sha256Lite::default();
    h.update(&bytes);
    assert_eq!(h.hex(), "378f363d7d311f43e73466475871ab523ec8739c870e5d583a3de92833e1d668");
    // The same to standard output.
    let out = riegeli(
        &["write", "--array-record", "--options", "group_size:2,uncompressed", "--input-format", "lines", "-"],
        b"hello\n\nworld!!\n",
    );
    assert!(out.stdout == bytes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn write_array_record_layout_and_stored_options() {
    let dir = scratch_dir("ar-write");
    let records: Vec<Vec<u8>> = (0..100u32)
        .map(|i| if i % 10 == 3 { Vec::new() } else { format!("record {i} {}", "x".repeat(i as usize)).into_bytes() })
        .collect();
    // C++ `Options::ToString()` of each option string (array-record.md §6), written out by hand.
    let cases = [
        (
            "group_size:2,uncompressed",
            2,
            "group_size:2,transpose:false,pad_to_block_boundary:false,uncompressed,max_parallelism:1",
        ),
        (
            "default",
            1,
            "group_size:1,transpose:false,pad_to_block_boundary:false,zstd:3,window_log:20,max_parallelism:1",
        ),
        (
            "transpose,zstd:5,group_size:10",
            10,
            "group_size:10,transpose:true,pad_to_block_boundary:false,transpose_bucket_size:256,zstd:5,window_log:20,max_parallelism:1",
        ),
        (
            "brotli:3,pad_to_block_boundary:true,group_size:30",
            30,
            "group_size:30,transpose:false,pad_to_block_boundary:true,brotli:3,max_parallelism:1",
        ),
        ("snappy,group_size:7", 7, "group_size:7,transpose:false,pad_to_block_boundary:false,snappy,max_parallelism:1"),
        // A bare pad_to_block_boundary means false, as in C++.
        (
            "group_size:64,pad_to_block_boundary,uncompressed",
            64,
            "group_size:64,transpose:false,pad_to_block_boundary:false,uncompressed,max_parallelism:1",
        ),
    ];
    for (options, group, stored) in cases {
        let file = dir.join("out.array_record");
        let file = file.to_str().unwrap();
        let out = riegeli(&["write", "--array-record", "--options", options, file], &delimited(&records));
        assert!(out.status.success(), "{options}: {}", text(&out.stderr));
        let bytes = std::fs::read(file).unwrap();
        assert_eq!(bytes.len() % 65536, 0, "{options}: file size {}", bytes.len());
        // The postscript at size - 65536 (block header, chunk header, then the data
        // `00 03 len len len` and three copies), parsed here: it names the footer.
        let ps = &bytes[bytes.len() - 65536 + 64..];
        assert_eq!(ps[0], 0, "{options}: the postscript is uncompressed");
        assert_eq!(ps[1], 3, "{options}");
        let len = usize::from(ps[2]);
        let record = &ps[5..5 + len];
        let (mut footer_offset, mut shift) = (0u64, 0);
        for &b in &record[1..] {
            footer_offset |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                break;
            }
        }
        assert_eq!(record, postscript_record(footer_offset), "{options}");
        let (summary, chunks) = describe_json(file);
        let summary = summary.unwrap();
        assert_eq!(summary["writer_options"], stored, "{options}");
        assert_eq!(summary["footer_offset"], footer_offset, "{options}");
        assert_eq!(summary["num_records"], 100, "{options}");
        assert_eq!(summary["group_size"], group, "{options}");
        let data_chunks: Vec<&Value> = chunks
            .iter()
            .filter(|c| {
                matches!(c["chunk_type"].as_str(), Some("SIMPLE" | "TRANSPOSED")) && c["array_record"].is_null()
            })
            .collect();
        assert_eq!(data_chunks.len() as u64, 100u64.div_ceil(group), "{options}");
        for (k, chunk) in data_chunks.iter().enumerate() {
            let want = if k + 1 == data_chunks.len() { 100 - group * k as u64 } else { group };
            assert_eq!(chunk["num_records"], want, "{options}: chunk {k}");
        }
        let footer = chunks.iter().find(|c| c["array_record"] == "FOOTER").unwrap();
        assert_eq!(footer["chunk_begin"], footer_offset, "{options}");
        assert_eq!(footer["chunk_type"], "SIMPLE", "{options}: the footer is never transposed");
        assert_eq!(footer["num_records"], data_chunks.len() + 1, "{options}");
        // Read back: in order, and by index through the footer.
        let out = riegeli(&["cat", "--format", "delimited", file], b"");
        assert!(split_delimited(&out.stdout) == records, "{options}");
        let out = riegeli(&["cat", "--records", "99,0,42..45", "--format", "delimited", file], b"");
        let want: Vec<Vec<u8>> = [99, 0, 42, 43, 44].iter().map(|&i| records[i].clone()).collect();
        assert!(split_delimited(&out.stdout) == want, "{options}: {}", text(&out.stderr));
        let out = riegeli(&["verify", file], b"");
        assert!(out.status.success(), "{options}: {}", text(&out.stdout));
    }
    // Metadata goes into a metadata chunk after the signature.
    let file = dir.join("meta.array_record");
    let file = file.to_str().unwrap();
    let out =
        riegeli(&["write", "--array-record", "--metadata-comment", "made by a test", "-f", "lines", file], b"a\nb\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (_, chunks) = describe_json(file);
    assert_eq!(chunks[1]["chunk_type"], "FILE_METADATA");
    assert_eq!(chunks[1]["chunk_begin"], 64);
    let out = riegeli(&["describe", "--show-records-metadata", file], b"");
    assert!(text(&out.stdout).contains("file_comment: \"made by a test\""), "{}", text(&out.stdout));
    let out = riegeli(&["cat", file], b"");
    assert_eq!(text(&out.stdout), "a\nb\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn convert_to_array_record_rebuilds_the_cpp_files() {
    // valid/N.riegeli is N.array_record cut at its footer; converting it back copies every
    // chunk. These cases are rebuilt byte for byte; the others hold options that a plain
    // file does not show (transpose_bucket_size, a compression level, the group size of
    // an empty file) or a snappy footer that our encoder compresses differently.
    const IDENTICAL: [&str; 8] = [
        "simple_none",
        "simple_zstd",
        "simple_brotli",
        "transposed_none",
        "transposed_zstd",
        "transposed_snappy",
        "boundaries",
        "padded",
    ];
    let manifest = manifest();
    let dir = scratch_dir("ar-convert");
    let out_path = dir.join("out.array_record");
    let out_file = out_path.to_str().unwrap();
    let mut identical = 0;
    for file in files(&manifest, "valid") {
        let Some(source) = file["source"].as_str() else { continue };
        let path = testdata(file["path"].as_str().unwrap());
        let path = path.to_str().unwrap();
        let stem = std::path::Path::new(source).file_stem().unwrap().to_str().unwrap();
        let expected = record_set(&manifest, file["records"].as_str().unwrap());
        let data_chunks = file["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| matches!(c["chunk_type"].as_str(), Some("r" | "t")))
            .count();
        let out = riegeli(&["convert", path, out_file, "--to", "array-record"], b"");
        assert!(out.status.success(), "{path}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(&format!("copied {data_chunks} chunks")), "{path}: {}", text(&out.stderr));
        let original = std::fs::read(testdata(source)).unwrap();
        let rebuilt = std::fs::read(out_file).unwrap();
        if IDENTICAL.contains(&stem) {
            assert!(rebuilt == original, "{path}: not byte-identical to {source}");
            identical += 1;
        }
        let out = riegeli(&["cat", "--format", "delimited", out_file], b"");
        assert!(split_delimited(&out.stdout) == expected, "{path}");
        let out = riegeli(&["verify", out_file], b"");
        assert!(out.status.success(), "{path}: {}", text(&out.stdout));
        // Converting an ArrayRecord file drops its old trailer.
        let again = dir.join("again.array_record");
        let out = riegeli(
            &["convert", testdata(source).to_str().unwrap(), again.to_str().unwrap(), "--to", "array-record"],
            b"",
        );
        assert!(out.status.success(), "{source}: {}", text(&out.stderr));
        if !expected.is_empty() {
            assert!(text(&out.stderr).contains("dropped the old footer and postscript"), "{}", text(&out.stderr));
        }
        // Its footer states its options: all but the snappy footer come back byte for byte.
        if stem != "simple_snappy" {
            assert!(std::fs::read(&again).unwrap() == original, "{source}: converting an ArrayRecord file keeps it");
        }
    }
    assert_eq!(identical, IDENTICAL.len());

    // To standard output.
    let words = testdata("valid/simple_none.riegeli");
    let out = riegeli(&["convert", words.to_str().unwrap(), "-", "--to", "array-record"], b"");
    assert!(out.status.success());
    assert!(out.stdout == std::fs::read(testdata("array_record/simple_none.array_record")).unwrap());

    // With options every record is encoded again.
    let expected = record_set(&manifest, "words");
    let out = riegeli(
        &["convert", words.to_str().unwrap(), out_file, "--to", "array-record", "--options", "group_size:7,brotli:3"],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("re-encoded 1500 records in groups of 7"), "{}", text(&out.stderr));
    let (summary, _) = describe_json(out_file);
    assert_eq!(summary.as_ref().unwrap()["num_chunks"], 1500usize.div_ceil(7));
    assert_eq!(
        summary.unwrap()["writer_options"],
        "group_size:7,transpose:false,pad_to_block_boundary:false,brotli:3,max_parallelism:1"
    );
    let out = riegeli(&["cat", "--format", "delimited", out_file], b"");
    assert!(split_delimited(&out.stdout) == expected);
    // ... also from standard input.
    let out = riegeli(
        &["convert", "-", out_file, "--to", "array-record", "--options", "group_size:100"],
        &std::fs::read(&words).unwrap(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = riegeli(&["count", out_file], b"");
    assert_eq!(text(&out.stdout).trim(), "1500");

    // From TFRecord; and ArrayRecord to Riegeli drops the trailer.
    let tf = dir.join("words.tfrecord");
    let out = riegeli(&["convert", words.to_str().unwrap(), tf.to_str().unwrap(), "--to", "tfrecord"], b"");
    assert!(out.status.success());
    let out = riegeli(
        &["convert", tf.to_str().unwrap(), out_file, "--to", "array-record", "--options", "group_size:50,uncompressed"],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        std::fs::read(out_file).unwrap() == std::fs::read(testdata("array_record/simple_none.array_record")).unwrap(),
        "TFRecord to ArrayRecord as C++ writes it"
    );
    let plain = dir.join("plain.riegeli");
    let out = riegeli(&["convert", out_file, plain.to_str().unwrap()], b"");
    assert!(out.status.success());
    let out = riegeli(&["cat", "--plain", "--format", "delimited", plain.to_str().unwrap()], b"");
    assert!(split_delimited(&out.stdout) == expected);

    // Bad usage: one line, exit 2.
    let out = riegeli(&["convert", "-", out_file, "--to", "array-record"], &std::fs::read(&words).unwrap());
    assert_one_line_error(&out, 2, "standard input cannot seek");
    let out = riegeli(
        &["convert", words.to_str().unwrap(), out_file, "--to", "array-record", "--options", "group_size:0"],
        b"",
    );
    assert_one_line_error(&out, 2, "group_size:0");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn damaged_footer_fails_or_with_skip_corrupted_gives_one_notice_and_every_record() {
    let manifest = manifest();
    let file = files(&manifest, "array_record").find(|f| f["path"] == "array_record/simple_none.array_record").unwrap();
    let footer_offset = file["footer_offset"].as_u64().unwrap() as usize;
    let expected = record_set(&manifest, "words");
    let dir = scratch_dir("ar-damaged");
    let mut bytes = std::fs::read(testdata("array_record/simple_none.array_record")).unwrap();
    // A byte of the footer's data (the footer is uncompressed and within one block).
    assert!(footer_offset % 65536 + 100 < 65536);
    bytes[footer_offset + 40 + 5] ^= 0xff;
    let damaged = dir.join("damaged.array_record");
    std::fs::write(&damaged, &bytes).unwrap();
    let damaged = damaged.to_str().unwrap();

    // As any damage: an error without --skip-corrupted (nothing printed: it is known at once).
    let out = riegeli(&["cat", "--format", "delimited", damaged], b"");
    assert_one_line_error(&out, 1, &format!("ArrayRecord footer unusable: corrupt file at position {footer_offset}"));
    assert!(text(&out.stderr).contains("--skip-corrupted"));
    assert!(out.stdout.is_empty());
    let out = riegeli(&["cat", "--records", "1499,0", "--format", "delimited", damaged], b"");
    assert_one_line_error(&out, 1, "ArrayRecord footer unusable");
    let out = riegeli(&["count", damaged], b"");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout).trim(), "1500", "the records a scan finds");
    assert_eq!(text(&out.stderr).lines().count(), 1, "{}", text(&out.stderr));

    // With it, one notice and every record.
    let out = riegeli(&["cat", "--skip-corrupted", "--format", "delimited", damaged], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(split_delimited(&out.stdout) == expected, "every record");
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("riegeli: ") && stderr.contains("footer") && stderr.contains(&footer_offset.to_string()),
        "{stderr}"
    );

    let out = riegeli(&["count", "--skip-corrupted", damaged], b"");
    assert!(out.status.success());
    assert_eq!(text(&out.stdout).trim(), "1500");
    assert_eq!(text(&out.stderr).lines().count(), 1, "{}", text(&out.stderr));

    let out = riegeli(&["cat", "--skip-corrupted", "--records", "1499,0", "--format", "delimited", damaged], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(split_delimited(&out.stdout) == [expected[1499].clone(), expected[0].clone()]);
    assert_eq!(text(&out.stderr).lines().count(), 1, "{}", text(&out.stderr));

    let out = riegeli(&["describe", "--json", damaged], b"");
    assert_eq!(out.status.code(), Some(1), "describe reports the damaged footer chunk");
    let summary = json_lines(&out.stdout).into_iter().find(|l| l["array_record"].is_object()).unwrap();
    assert_eq!(summary["array_record"]["index_source"], "scanned");
    assert!(summary["array_record"]["fallback_reason"].as_str().unwrap().contains("hash mismatch"));

    let out = riegeli(&["verify", damaged], b"");
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&format!("footer (at {footer_offset}) unusable")), "{stdout}");

    // A damaged data chunk is still an error unless --skip-corrupted.
    let mut bytes = std::fs::read(testdata("array_record/simple_none.array_record")).unwrap();
    bytes[64 + 40 + 10] ^= 0xff;
    let data = dir.join("data.array_record");
    std::fs::write(&data, &bytes).unwrap();
    let data = data.to_str().unwrap();
    let out = riegeli(&["cat", data], b"");
    assert_one_line_error(&out, 1, "data.array_record");
    let out = riegeli(&["cat", "--skip-corrupted", "--format", "delimited", data], b"");
    assert!(out.status.success());
    assert!(split_delimited(&out.stdout) == expected[50..], "the first chunk of 50 records is lost");
    let out = riegeli(&["cat", "--records", "0", data], b"");
    assert_one_line_error(&out, 1, "position 64");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where the footer of the intact ArrayRecord file at `path` begins and ends,
/// as `describe` marks it.
fn footer_extent(path: &str) -> (usize, usize) {
    let (_, chunks) = describe_json(path);
    let at = chunks.iter().position(|c| c["array_record"] == "FOOTER").expect("a footer");
    (chunks[at]["chunk_begin"].as_u64().unwrap() as usize, chunks[at + 1]["chunk_begin"].as_u64().unwrap() as usize)
}

#[test]
fn cut_array_record_files_fail_every_command_unless_skip_corrupted() {
    let manifest = manifest();
    let dir = scratch_dir("ar-cut");
    // Written by C++, and by `write --array-record`.
    let words = record_set(&manifest, "words");
    let cpp = std::fs::read(testdata("array_record/simple_none.array_record")).unwrap();
    let ours_path = dir.join("ours.array_record");
    let out = riegeli(
        &["write", "--array-record", "--options", "group_size:20,zstd:3", ours_path.to_str().unwrap()],
        &delimited(&words),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ours = std::fs::read(&ours_path).unwrap();
    let cpp_path = testdata("array_record/simple_none.array_record");
    for (who, file, whole) in [("C++", &cpp, cpp_path.to_str().unwrap()), ("ours", &ours, ours_path.to_str().unwrap())]
    {
        let (footer, footer_end) = footer_extent(whole);
        let postscript = file.len() - 65536;
        for (cut, at, problem) in [
            ("mid-chunk", footer / 2 + 7, "incomplete chunk"),
            ("inside the footer", (footer + footer_end) / 2, "incomplete chunk"),
            ("just after the footer", footer_end, "without its postscript"),
            ("the postscript block missing", postscript, "without its postscript"),
        ] {
            let what = format!("{who}, cut {cut}");
            let path = dir.join("cut.array_record");
            std::fs::write(&path, &file[..at]).unwrap();
            let path = path.to_str().unwrap();
            let out = riegeli(&["verify", path], b"");
            assert_eq!(out.status.code(), Some(1), "{what}: verify");
            assert!(text(&out.stdout).contains(problem), "{what}: {}", text(&out.stdout));
            let out = riegeli(&["describe", path], b"");
            assert_eq!(out.status.code(), Some(1), "{what}: describe");
            assert!(text(&out.stdout).contains("# FILE CORRUPTED: "), "{what}");
            assert!(text(&out.stdout).contains(problem), "{what}: {}", text(&out.stdout));
            if problem == "without its postscript" {
                assert!(text(&out.stdout).contains(&format!("ArrayRecord footer at {footer}")), "{what}");
            }
            // Every record is printed before the cut is found; the file fails.
            let out = riegeli(&["cat", "--format", "delimited", path], b"");
            assert_eq!(out.status.code(), Some(1), "{what}: cat");
            assert!(text(&out.stderr).contains(problem), "{what}: {}", text(&out.stderr));
            let printed = split_delimited(&out.stdout);
            assert!(printed[..] == words[..printed.len()], "{what}: cat prints records in order");
            let out = riegeli(&["count", path], b"");
            assert_eq!(out.status.code(), Some(1), "{what}: count");
            assert!(text(&out.stderr).contains(problem), "{what}: {}", text(&out.stderr));
            let out = riegeli(&["cat", "--records", "0", path], b"");
            assert_eq!(out.status.code(), Some(1), "{what}: cat --records");
            // With --skip-corrupted, the records there are, and one line telling of the cut.
            let out = riegeli(&["cat", "--skip-corrupted", "--format", "delimited", path], b"");
            assert!(out.status.success(), "{what}: {}", text(&out.stderr));
            assert_eq!(text(&out.stderr).lines().count(), 1, "{what}: {}", text(&out.stderr));
            let printed = split_delimited(&out.stdout);
            assert!(printed[..] == words[..printed.len()], "{what}");
            if at >= footer_end {
                assert_eq!(printed.len(), words.len(), "{what}: every record is before the footer");
            }
            let out = riegeli(&["count", "--skip-corrupted", path], b"");
            assert!(out.status.success(), "{what}: {}", text(&out.stderr));
            assert_eq!(text(&out.stdout).trim(), printed.len().to_string(), "{what}");
            let out = riegeli(&["cat", "--skip-corrupted", "--records", "0", "--format", "delimited", path], b"");
            assert!(out.status.success(), "{what}: {}", text(&out.stderr));
            assert!(split_delimited(&out.stdout) == words[..1], "{what}");
        }
        // The file whole: no problem anywhere.
        let out = riegeli(&["verify", whole], b"");
        assert!(out.status.success(), "{who}: {}", text(&out.stdout));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn recover_and_concat_do_not_copy_the_trailer() {
    let manifest = manifest();
    let dir = scratch_dir("ar-recover");
    let words = record_set(&manifest, "words");
    let protos = record_set(&manifest, "protos");
    let a = testdata("array_record/simple_zstd.array_record");
    let b = testdata("array_record/transposed_none.array_record");
    let out_path = dir.join("out.riegeli");
    let out_file = out_path.to_str().unwrap();

    let out = riegeli(&["recover", a.to_str().unwrap(), out_file], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = riegeli(&["cat", "--plain", "--format", "delimited", out_file], b"");
    assert!(split_delimited(&out.stdout) == words, "recover copies the data records only");

    let out = riegeli(&["concat", out_file, a.to_str().unwrap(), b.to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = riegeli(&["cat", "--plain", "--format", "delimited", out_file], b"");
    let mut both = words.clone();
    both.extend(protos);
    assert!(split_delimited(&out.stdout) == both, "concat copies the data records only");
    let out = riegeli(&["count", "--plain", out_file], b"");
    assert_eq!(text(&out.stdout).trim(), "2200");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn records_of_a_plain_file_by_index() {
    // A plain Riegeli/records file has no footer: it is indexed by a scan, quietly.
    let manifest = manifest();
    let expected = record_set(&manifest, "words");
    let file = testdata("valid/simple_brotli.riegeli");
    let out = riegeli(&["cat", "--records", "1499,3,1..3", "--format", "delimited", file.to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let want: Vec<Vec<u8>> = [1499, 3, 1, 2].iter().map(|&i| expected[i].clone()).collect();
    assert!(split_delimited(&out.stdout) == want);
}

#[test]
fn array_record_usage_errors() {
    let file = testdata("array_record/simple_none.array_record");
    let file = file.to_str().unwrap();
    let out = riegeli(&["write", "--array-record", "--options", "group_size:0", "/dev/null"], b"");
    assert_one_line_error(&out, 2, "group_size:0");
    let out = riegeli(&["write", "--array-record", "--options", "chunk_size:1M", "/dev/null"], b"");
    assert_one_line_error(&out, 2, "chunk_size:1M");
    let out = riegeli(&["write", "--array-record", "--options", "snappy,window_log:12", "/dev/null"], b"");
    assert_one_line_error(&out, 2, "window_log");
    let out = riegeli(&["cat", "--records", "1,x", file], b"");
    assert_one_line_error(&out, 2, "\"x\"");
    let out = riegeli(&["cat", "--records", "9..3", file], b"");
    assert_one_line_error(&out, 2, "ends before it begins");
    let out = riegeli(&["cat", "--records", "1", "-"], &std::fs::read(file).unwrap());
    assert_one_line_error(&out, 2, "standard input");
    let out = riegeli(&["cat", "--records", "0..1501", file], b"");
    assert_one_line_error(&out, 2, "index 1500 out of range");
}

/// The C++ reader (array-record 0.8.6 through `RIEGELI_ORACLE_PYTHON`) checks that a
/// file holds the records of a delimited file through every read path; prints `ok`.
const ORACLE_READ: &str = r#"
import sys
from array_record.python import array_record_module as m
def records_of(path):
    data = open(path, 'rb').read()
    out, i = [], 0
    while i < len(data):
        n, shift = 0, 0
        while True:
            b = data[i]; i += 1
            n |= (b & 0x7f) << shift; shift += 7
            if b < 0x80: break
        out.append(data[i:i + n]); i += n
    return out
expected = records_of(sys.argv[2])
r = m.ArrayRecordReader(sys.argv[1])
assert r.ok(), 'reader not ok'
assert r.num_records() == len(expected), (r.num_records(), len(expected))
assert list(r.read_all()) == expected, 'read_all'
n = len(expected)
if n:
    idx = [(i * 7919) % n for i in range(min(n * 2, 500))]
    assert list(r.read(idx)) == [expected[i] for i in idx], 'read(indices)'
    for a, b in [(0, n), (n // 3, n // 2 + 1), (n - 1, n)]:
        assert list(r.read(a, b)) == expected[a:b], ('read(range)', a, b)
print('ok')
"#;

#[test]
#[ignore = "needs the C++ oracle: RIEGELI_ORACLE_PYTHON with array-record==0.8.6 (cargo xtask interop)"]
fn interop_cpp_reads_what_the_cli_writes() {
    let python = std::env::var("RIEGELI_ORACLE_PYTHON").expect("RIEGELI_ORACLE_PYTHON");
    let dir = scratch_dir("ar-interop");
    let records: Vec<Vec<u8>> = (0..500u32)
        .map(|i| match i % 7 {
            0 => Vec::new(),
            1 => vec![0x08, (i % 128) as u8, 0x12, 2, b'h', b'i'],
            _ => format!("record {i} {}", "y".repeat((i * 37 % 300) as usize)).into_bytes(),
        })
        .collect();
    let input = dir.join("records.delimited");
    std::fs::write(&input, delimited(&records)).unwrap();
    let check = |file: &str, what: &str| {
        let out = std::process::Command::new(&python)
            .arg("-c")
            .arg(ORACLE_READ)
            .arg(file)
            .arg(&input)
            .output()
            .expect("run the oracle");
        assert!(out.status.success() && text(&out.stdout).trim() == "ok", "{what}: {}", text(&out.stderr));
    };
    let file = dir.join("out.array_record");
    let file = file.to_str().unwrap();
    for options in [
        "default",
        "group_size:2,uncompressed",
        "group_size:64,transpose,zstd:5",
        "group_size:100,brotli:4,pad_to_block_boundary:true",
        "group_size:33,snappy,max_parallelism:3",
    ] {
        let out =
            riegeli(&["write", "--array-record", "--options", options, "--input", input.to_str().unwrap(), file], b"");
        assert!(out.status.success(), "{options}: {}", text(&out.stderr));
        check(file, options);
    }
    // A plain file written by `riegeli write`, indexed by `convert --to array-record`.
    let plain = dir.join("plain.riegeli");
    let out = riegeli(
        &["write", "--options", "zstd,chunk_size:4k", "--input", input.to_str().unwrap(), plain.to_str().unwrap()],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = riegeli(&["convert", plain.to_str().unwrap(), file, "--to", "array-record"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    check(file, "convert --to array-record");
    let _ = std::fs::remove_dir_all(&dir);
}

/// SHA-256 (the `sha2` crate), to compare files with C++'s published digests.
#[derive(Default)]
struct Sha256Lite {
    hasher: sha2::Sha256,
}

impl Sha256Lite {
    fn update(&mut self, bytes: &[u8]) {
        sha2::Digest::update(&mut self.hasher, bytes);
    }

    fn hex(&self) -> String {
        let digest = sha2::Digest::finalize(self.hasher.clone());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}
