//! Every command on the golden files of `testdata/` (written by the C++
//! implementation), against `testdata/MANIFEST.json`.

use serde_json::Value;

use crate::{assert_one_line_error, riegeli, scratch_dir, testdata, text};

pub(crate) fn manifest() -> Value {
    serde_json::from_slice(&std::fs::read(testdata("MANIFEST.json")).unwrap()).unwrap()
}

/// Splits a varint-length-delimited stream (independent of the binary's own parser).
pub(crate) fn split_delimited(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut records = Vec::new();
    while !bytes.is_empty() {
        let (mut len, mut shift) = (0usize, 0);
        loop {
            let b = bytes[0];
            bytes = &bytes[1..];
            len |= usize::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                break;
            }
        }
        records.push(bytes[..len].to_vec());
        bytes = &bytes[len..];
    }
    records
}

pub(crate) fn record_set(manifest: &Value, name: &str) -> Vec<Vec<u8>> {
    let path = manifest["record_sets"][name]["path"].as_str().unwrap();
    let records = split_delimited(&std::fs::read(testdata(path)).unwrap());
    assert_eq!(records.len() as u64, manifest["record_sets"][name]["num_records"].as_u64().unwrap());
    records
}

pub(crate) fn files<'a>(manifest: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    manifest["files"].as_array().unwrap().iter().filter(move |f| f["kind"] == kind)
}

#[test]
fn every_command_on_the_valid_files() {
    let manifest = manifest();
    let dir = scratch_dir("golden-valid");
    let mut seen = 0;
    for file in files(&manifest, "valid") {
        seen += 1;
        let path = testdata(file["path"].as_str().unwrap());
        let path = path.to_str().unwrap();
        let expected = record_set(&manifest, file["records"].as_str().unwrap());

        let out = riegeli(&["cat", "--format", "delimited", path], b"");
        assert!(out.status.success(), "{path}: {}", text(&out.stderr));
        assert!(split_delimited(&out.stdout) == expected, "{path}: cat differs from the record set");

        // The same from standard input, and with no or more decoding threads.
        let out = riegeli(&["cat", "--format", "delimited", "-"], &std::fs::read(path).unwrap());
        assert!(split_delimited(&out.stdout) == expected, "{path}: cat - differs");
        for threads in ["0", "3"] {
            let out = riegeli(&["cat", "-j", threads, "--format", "delimited", path], b"");
            assert!(split_delimited(&out.stdout) == expected, "{path}: cat -j {threads} differs");
        }

        let out = riegeli(&["count", path], b"");
        assert_eq!(text(&out.stdout).trim(), file["num_records"].to_string(), "{path}");

        let out = riegeli(&["verify", path], b"");
        assert!(out.status.success(), "{path}: {}", text(&out.stdout));
        assert!(text(&out.stdout).contains("OK"), "{path}");

        // describe --json lists the chunks the manifest lists.
        let out = riegeli(&["describe", "--json", "--show-record-sizes", path], b"");
        assert!(out.status.success(), "{path}: {}", text(&out.stderr));
        let chunks: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        if let Some(want) = file["chunks"].as_array() {
            assert_eq!(chunks.len(), want.len(), "{path}");
            for (got, want) in chunks.iter().zip(want) {
                let name = match want["chunk_type"].as_str().unwrap() {
                    "s" => "FILE_SIGNATURE",
                    "m" => "FILE_METADATA",
                    "p" => "PADDING",
                    "r" => "SIMPLE",
                    "t" => "TRANSPOSED",
                    other => panic!("chunk type {other}"),
                };
                assert_eq!(got["chunk_begin"], want["offset"], "{path}");
                assert_eq!(got["chunk_type"], name, "{path}");
                for key in ["data_size", "num_records", "decoded_data_size"] {
                    assert_eq!(got[key], want[key], "{path}: {key}");
                }
            }
        }
        let sizes: Vec<u64> = chunks
            .iter()
            .flat_map(|c| c["record_sizes"].as_array().cloned().unwrap_or_default())
            .map(|s| s.as_u64().unwrap())
            .collect();
        assert_eq!(sizes, expected.iter().map(|r| r.len() as u64).collect::<Vec<_>>(), "{path}: record sizes");

        // convert to TFRecord (gzip) and back keeps every record.
        let tf = dir.join("x.tfrecord.gz");
        let back = dir.join("back.riegeli");
        let out = riegeli(
            &["convert", path, tf.to_str().unwrap(), "--to", "tfrecord", "--tfrecord-compression", "gzip"],
            b"",
        );
        assert!(out.status.success(), "{path}: {}", text(&out.stderr));
        let out = riegeli(
            &[
                "convert",
                tf.to_str().unwrap(),
                back.to_str().unwrap(),
                "--from",
                "tfrecord",
                "--tfrecord-compression",
                "gzip",
            ],
            b"",
        );
        assert!(out.status.success(), "{path}: {}", text(&out.stderr));
        let out = riegeli(&["cat", "--format", "delimited", back.to_str().unwrap()], b"");
        assert!(split_delimited(&out.stdout) == expected, "{path}: TFRecord round trip differs");
    }
    assert!(seen >= 10, "the manifest lists the valid files");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_command_on_the_corrupt_files() {
    let manifest = manifest();
    let dir = scratch_dir("golden-corrupt");
    let mut seen = 0;
    for file in files(&manifest, "corrupt") {
        seen += 1;
        let path = testdata(file["path"].as_str().unwrap());
        let path = path.to_str().unwrap();
        let all = record_set(&manifest, file["records"].as_str().unwrap());
        let expected: Vec<Vec<u8>> = file["expected_records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| all[i.as_u64().unwrap() as usize].clone())
            .collect();
        let loses = !file["lost_chunks"].as_array().unwrap().is_empty();

        let out = riegeli(&["cat", "--format", "delimited", "--skip-corrupted", path], b"");
        assert_eq!(out.status.code(), Some(0), "{path}: {}", text(&out.stderr));
        assert!(split_delimited(&out.stdout) == expected, "{path}: skip-corrupted records differ");
        let stderr = text(&out.stderr);
        assert_eq!(loses, !stderr.is_empty(), "{path}: {stderr}");
        for line in stderr.lines() {
            assert!(line.starts_with("riegeli: ") && line.contains("skipped"), "{path}: {line}");
        }

        let out = riegeli(&["cat", "-j", "3", "--format", "delimited", "--skip-corrupted", path], b"");
        assert!(split_delimited(&out.stdout) == expected, "{path}: cat -j 3 --skip-corrupted differs");

        let out = riegeli(&["cat", "--format", "delimited", path], b"");
        if loses {
            assert_one_line_error(&out, 1, file["path"].as_str().unwrap());
        } else {
            assert!(out.status.success(), "{path}");
        }

        let out = riegeli(&["verify", path], b"");
        assert_eq!(out.status.code(), Some(1), "{path}: verify finds the damage");
        let stdout = text(&out.stdout);
        assert!(stdout.contains("problem(s)"), "{path}: {stdout}");
        let position = file["error"]["position"].as_u64().or_else(|| file["damaged_block_headers"][0].as_u64());
        if let Some(position) = position {
            assert!(stdout.contains(&position.to_string()), "{path}: verify names {position}: {stdout}");
        }

        let out = riegeli(&["describe", path], b"");
        assert_eq!(out.status.code(), Some(if loses { 1 } else { 0 }), "{path}");
        assert!(!text(&out.stderr).contains("panicked"));

        let fixed = dir.join("fixed.riegeli");
        let out = riegeli(&["recover", path, fixed.to_str().unwrap()], b"");
        assert!(out.status.success(), "{path}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(&format!("recovered {} records", expected.len())), "{path}");
        let out = riegeli(&["verify", fixed.to_str().unwrap()], b"");
        assert!(out.status.success(), "{path}: the recovered file is valid: {}", text(&out.stdout));
        let out = riegeli(&["cat", "--format", "delimited", fixed.to_str().unwrap()], b"");
        assert!(split_delimited(&out.stdout) == expected, "{path}: recovered records differ");
    }
    assert!(seen >= 10, "the manifest lists the corrupt files");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `describe`'s text output as JSON-like entries: the file's name and size, then one object
/// per `chunk { ... }` block or top-level `# FILE CORRUPTED` line, with the keys of
/// `describe --json` (independent of the binary's own code).
fn describe_text_entries(stdout: &str) -> (Value, Vec<Value>) {
    let mut file = serde_json::Map::new();
    let mut entries = Vec::new();
    let mut chunk: Option<serde_json::Map<String, Value>> = None;
    for line in stdout.lines() {
        if line == "  chunk {" {
            chunk = Some(serde_json::Map::new());
        } else if line == "  }" {
            entries.push(Value::Object(chunk.take().expect("a chunk block")));
        } else if let Some(c) = chunk.as_mut() {
            let line = line.strip_prefix("    ").expect("indented inside a chunk");
            if let Some(block) = line.strip_prefix("# DAMAGED BLOCK HEADER (ignored) at ") {
                let blocks = c.entry("damaged_block_headers").or_insert_with(|| Value::Array(Vec::new()));
                blocks.as_array_mut().unwrap().push(Value::from(block.parse::<u64>().unwrap()));
            } else if let Some(problem) = line.strip_prefix("# FILE CORRUPTED: ") {
                c.insert("corrupted".to_owned(), Value::from(problem));
            } else {
                let (key, value) = line.split_once(": ").expect("key: value");
                let value = if let Some(list) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                    list.split(", ").filter(|s| !s.is_empty()).map(|s| Value::from(s.parse::<u64>().unwrap())).collect()
                } else {
                    value.parse::<u64>().map_or_else(|_| Value::from(value), Value::from)
                };
                c.insert(key.to_owned(), value);
            }
        } else if let Some(problem) = line.strip_prefix("  # FILE CORRUPTED: ") {
            entries.push(serde_json::json!({ "corrupted": problem }));
        } else if let Some(name) = line.strip_prefix("  filename: ") {
            file.insert("file".to_owned(), serde_json::from_str(name).unwrap());
        } else if let Some(size) = line.strip_prefix("  file_size: ") {
            file.insert("file_size".to_owned(), Value::from(size.parse::<u64>().unwrap()));
        } else {
            assert!(line == "file {" || line == "}", "unexpected line {line:?}");
        }
    }
    (Value::Object(file), entries)
}

#[test]
fn describe_says_the_same_as_text_and_as_json_of_damaged_files() {
    let manifest = manifest();
    let mut damaged_block_headers_seen = 0;
    for file in files(&manifest, "corrupt") {
        let path = testdata(file["path"].as_str().unwrap());
        let path = path.to_str().unwrap();
        let as_text = riegeli(&["describe", "--show-record-sizes", path], b"");
        let as_json = riegeli(&["describe", "--json", "--show-record-sizes", path], b"");
        assert_eq!(as_text.status.code(), as_json.status.code(), "{path}");
        let (file_facts, text_entries) = describe_text_entries(&text(&as_text.stdout));
        let mut json_entries = Vec::new();
        for line in text(&as_json.stdout).lines() {
            let mut entry: Value = serde_json::from_str(line).unwrap();
            let object = entry.as_object_mut().unwrap();
            // Every line names its file, as the text's header does once.
            for key in ["file", "file_size"] {
                assert_eq!(object.remove(key).as_ref(), file_facts.get(key), "{path}: {key} of {line}");
            }
            json_entries.push(entry);
        }
        assert_eq!(text_entries, json_entries, "{path}: text and JSON differ");
        assert!(!json_entries.is_empty(), "{path}");
        // The damaged block headers the manifest lists, in both.
        let want = &file["damaged_block_headers"];
        let got: Vec<Value> = json_entries
            .iter()
            .flat_map(|e| e["damaged_block_headers"].as_array().cloned().unwrap_or_default())
            .collect();
        assert_eq!(&Value::Array(got), want, "{path}: damaged block headers");
        damaged_block_headers_seen += want.as_array().unwrap().len();
    }
    assert!(damaged_block_headers_seen >= 2, "the manifest lists files with damaged block headers");
}
