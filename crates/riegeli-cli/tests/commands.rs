//! Options of the commands, and bad usage and bad input.

use crate::{assert_one_line_error, riegeli, scratch_dir, testdata, text};

/// Writes `lines` (one record per line) with `options` into `path`.
fn write_lines(path: &str, options: &str, lines: &str) {
    let out = riegeli(&["write", "--options", options, "--input-format", "lines", path], lines.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn cat_from_a_position_with_a_limit() {
    let dir = scratch_dir("cat-from");
    let file = dir.join("ten.riegeli");
    let file = file.to_str().unwrap();
    // chunk_size:40 puts a few records in each chunk, so positions cross chunks.
    write_lines(file, "uncompressed,chunk_size:40", "r0\nr1\nr2\nr3\nr4\nr5\nr6\nr7\nr8\nr9\n");
    let out = riegeli(&["cat", "--format", "json", file], b"");
    let positions: Vec<String> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["pos"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(positions.len(), 10);
    assert!(positions.iter().any(|p| !p.ends_with("/0")), "some chunk holds several records: {positions:?}");
    for start in [0, 3, 4, 9] {
        let from = &positions[start];
        let want: String = (start..10).take(3).map(|i| format!("r{i}\n")).collect();
        let out = riegeli(&["cat", "--from", from, "--limit", "3", file], b"");
        assert_eq!(text(&out.stdout), want, "--from {from}");
        // Standard input cannot seek: the records before the start are skipped.
        let out = riegeli(&["cat", "--from", from, "-n", "3", "-"], &std::fs::read(file).unwrap());
        assert_eq!(text(&out.stdout), want, "--from {from} on stdin");
        // The numeric form of the same position.
        let (chunk, index) = from.split_once('/').unwrap();
        let numeric = (chunk.parse::<u64>().unwrap() + index.parse::<u64>().unwrap()).to_string();
        let out = riegeli(&["cat", "--from", &numeric, "--limit", "3", file], b"");
        assert_eq!(text(&out.stdout), want, "--from {numeric}");
    }
    let out = riegeli(&["cat", "--limit", "0", file], b"");
    assert!(out.status.success() && out.stdout.is_empty());
    // The old spelling still works.
    let out = riegeli(&["cat", "--start", &positions[8], file], b"");
    assert_eq!(text(&out.stdout), "r8\nr9\n");
    let out = riegeli(&["cat", "--from", "1/x", file], b"");
    assert_one_line_error(&out, 2, "--from \"1/x\"");
    let out = riegeli(&["cat", "--from", "abc", file], b"");
    assert_one_line_error(&out, 2, "expected chunk_begin/index or a number");
    // Not a chunk boundary: the text form must come from a real position.
    let out = riegeli(&["cat", "--from", "70/0", file], b"");
    assert_one_line_error(&out, 2, "no chunk begins at 70");
    // Past the end: nothing to print.
    let out = riegeli(&["cat", "--from", "99999999", file], b"");
    assert!(out.status.success() && out.stdout.is_empty(), "{}", text(&out.stderr));
    let out = riegeli(&["cat", "--from", "abc", file], b"");
    assert_one_line_error(&out, 2, "expected chunk_begin/index or a number");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn describe_shows_records_and_their_sizes() {
    let dir = scratch_dir("describe");
    let file = dir.join("three.riegeli");
    let file = file.to_str().unwrap();
    write_lines(file, "zstd:1", "alpha\nbe\n\n");
    let out = riegeli(&["describe", "--show-record-sizes", "--show-records", file], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("    record_sizes: [5, 2, 0]\n"), "{stdout}");
    assert!(stdout.contains("    record: \"alpha\"\n    record: \"be\"\n    record: \"\"\n"), "{stdout}");
    assert!(stdout.contains("    num_records: 3\n"), "{stdout}");
    assert!(stdout.contains("    compression_type: ZSTD\n"), "{stdout}");
    // Standard input, as JSON.
    let out = riegeli(&["describe", "--json", "--show-records", "-"], &std::fs::read(file).unwrap());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let chunk: serde_json::Value = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|c| c["chunk_type"] == "SIMPLE")
        .unwrap();
    assert_eq!(chunk["records"], serde_json::json!(["alpha", "be", ""]));
    assert_eq!(chunk["file"], "<stdin>");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn count_and_verify_read_standard_input() {
    let bytes = std::fs::read(testdata("valid/transposed_snappy.riegeli")).unwrap();
    let out = riegeli(&["count", "-"], &bytes);
    assert_eq!(text(&out.stdout), "700\n");
    let out = riegeli(&["verify", "-"], &bytes);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "<stdin>: OK (7 chunks, 700 records)\n");
    let valid = testdata("valid/simple_none.riegeli");
    let out = riegeli(&["count", valid.to_str().unwrap(), "-"], &bytes);
    assert_eq!(text(&out.stdout), format!("1500 {}\n700 <stdin>\n2200 total\n", valid.display()));
}

#[test]
fn concat_physically_and_record_by_record() {
    let dir = scratch_dir("concat");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    // Padded inputs: the output is the inputs' bytes one after the other.
    write_lines(&path("a.riegeli"), "uncompressed,padding", "a1\na2\n");
    write_lines(&path("b.riegeli"), "uncompressed,padding", "b1\n");
    let (a, b) = (std::fs::read(path("a.riegeli")).unwrap(), std::fs::read(path("b.riegeli")).unwrap());
    assert_eq!(a.len() % 65536, 0, "padding pads to a block boundary");
    let out = riegeli(&["concat", &path("ab.riegeli"), &path("a.riegeli"), &path("b.riegeli")], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read(path("ab.riegeli")).unwrap() == [a, b].concat());
    let out = riegeli(&["cat", &path("ab.riegeli")], b"");
    assert_eq!(text(&out.stdout), "a1\na2\nb1\n");
    // Unpadded inputs (one from standard input): re-encoded record by record.
    write_lines(&path("c.riegeli"), "zstd:1", "c1\nc2\n");
    let c = std::fs::read(path("c.riegeli")).unwrap();
    let out = riegeli(&["concat", &path("abc.riegeli"), &path("ab.riegeli"), "-"], &c);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = riegeli(&["cat", &path("abc.riegeli")], b"");
    assert_eq!(text(&out.stdout), "a1\na2\nb1\nc1\nc2\n");
    let out = riegeli(&["verify", &path("abc.riegeli")], b"");
    assert!(out.status.success(), "{}", text(&out.stdout));
    let out = riegeli(&["concat", &path("x.riegeli"), &path("missing.riegeli")], b"");
    assert_one_line_error(&out, 1, "cannot open");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn write_input_formats_and_their_errors() {
    let dir = scratch_dir("write-inputs");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    // TFRecord in, from a file (--input), zlib-compressed, via convert's output.
    write_lines(&path("src.riegeli"), "default", "x\ny\n");
    let out = riegeli(
        &["convert", &path("src.riegeli"), &path("t.tfrecord"), "--to", "tfrecord", "--tfrecord-compression", "zlib"],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = riegeli(
        &[
            "write",
            "--input-format",
            "tfrecord",
            "--tfrecord-compression",
            "zlib",
            "--input",
            &path("t.tfrecord"),
            &path("t.riegeli"),
        ],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&riegeli(&["cat", &path("t.riegeli")], b"").stdout), "x\ny\n");
    // A plain TFRecord written by hand: length 2, masked CRC-32C of the length, "hi",
    // masked CRC-32C of "hi" (the CRCs computed with TensorFlow's masking formula).
    let mut tf = Vec::new();
    tf.extend_from_slice(&2u64.to_le_bytes());
    tf.extend_from_slice(&masked_crc32c(&2u64.to_le_bytes()).to_le_bytes());
    tf.extend_from_slice(b"hi");
    tf.extend_from_slice(&masked_crc32c(b"hi").to_le_bytes());
    let out = riegeli(&["write", "--input-format", "tfrecord", &path("hi.riegeli")], &tf);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&riegeli(&["cat", &path("hi.riegeli")], b"").stdout), "hi\n");
    // Bad input data: exit 1 and one line.
    let mut bad_crc = tf.clone();
    bad_crc[13] ^= 1;
    let out = riegeli(&["write", "--input-format", "tfrecord", &path("bad.riegeli")], &bad_crc);
    assert_one_line_error(&out, 1, "CRC mismatch");
    let out = riegeli(&["write", "--input-format", "tfrecord", &path("bad.riegeli")], &tf[..15]);
    assert_one_line_error(&out, 1, "truncated");
    let out = riegeli(&["write", "--input-format", "json", &path("bad.riegeli")], b"{\"data\": \"ok\"}\n{not json\n");
    assert_one_line_error(&out, 1, "input line 2");
    let out = riegeli(&["write", "--input-format", "json", &path("bad.riegeli")], b"{\"size\": 3}\n");
    assert_one_line_error(&out, 1, "no \"data\" or \"data_base64\"");
    let out = riegeli(&["write", &path("bad.riegeli")], b"\x05abc");
    assert_one_line_error(&out, 1, "truncated record");
    let out = riegeli(&["write", &path("bad.riegeli")], b"\x80");
    assert_one_line_error(&out, 1, "truncated length varint");
    let out = riegeli(&["write", "--input", &path("missing"), &path("bad.riegeli")], b"");
    assert_one_line_error(&out, 1, "cannot open");
    let out = riegeli(&["write", "--options", "zstd:99", &path("bad.riegeli")], b"");
    assert_one_line_error(&out, 2, "zstd:99");
    let _ = std::fs::remove_dir_all(&dir);
}

/// TensorFlow's masked CRC-32C, with a bitwise CRC-32C (Castagnoli, reflected 0x82f63b78).
fn masked_crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0x82f6_3b78 } else { crc >> 1 };
        }
    }
    let crc = !crc;
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

#[test]
fn bad_usage_and_bad_files_give_one_line_and_the_documented_code() {
    let dir = scratch_dir("bad");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    // Usage errors (clap prints its usage; the code is 2 and nothing panics).
    for args in [
        &["frobnicate"][..],
        &["cat"],
        &["cat", "--format", "yaml", "f"],
        &["cat", "--limit", "-1", "f"],
        &["convert", "only-one"],
        &["convert", "a", "b", "--to", "avro"],
        &["concat", "out"],
        &["write"],
        &["describe", "--bogus", "f"],
    ] {
        let out = riegeli(args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(!text(&out.stderr).contains("panicked"), "{args:?}");
    }
    let out = riegeli(
        &["convert", "--options", "brotli:99", &testdata("valid/empty.riegeli").to_string_lossy(), &path("o")],
        b"",
    );
    assert_one_line_error(&out, 2, "--options");
    // Bad data: exit 1, one line.
    std::fs::write(path("text.riegeli"), b"definitely not a riegeli file, just some text that goes on and on").unwrap();
    std::fs::write(path("empty"), b"").unwrap();
    for command in ["cat", "describe", "verify", "count"] {
        let out = riegeli(&[command, &path("text.riegeli")], b"");
        assert_eq!(out.status.code(), Some(1), "{command}: {}", text(&out.stderr));
        assert!(!text(&out.stderr).contains("panicked"), "{command}");
        let out = riegeli(&[command, &path("nonexistent")], b"");
        assert_one_line_error(&out, 1, "cannot open");
    }
    let out = riegeli(&["cat", &path("text.riegeli")], b"");
    assert_one_line_error(&out, 1, "text.riegeli");
    let out = riegeli(&["cat", "-"], b"definitely not a riegeli file, just some text that goes on");
    assert_one_line_error(&out, 1, "<stdin>");
    let out = riegeli(&["recover", &path("nonexistent"), &path("o")], b"");
    assert_one_line_error(&out, 1, "cannot open");
    let out = riegeli(&["cat", &testdata("corrupt/truncated_mid_chunk.riegeli").to_string_lossy()], b"");
    assert_one_line_error(&out, 1, "truncated_mid_chunk.riegeli");
    let out = riegeli(&["convert", &path("text.riegeli"), &path("o")], b"");
    assert_one_line_error(&out, 1, "TFRecord");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_on_every_command_and_completions() {
    let commands = ["describe", "cat", "count", "write", "convert", "verify", "recover", "concat", "completions"];
    let out = riegeli(&["--help"], b"");
    assert!(out.status.success());
    for command in commands {
        assert!(text(&out.stdout).contains(command), "--help lists {command}");
        let out = riegeli(&["help", command], b"");
        assert!(out.status.success(), "help {command}");
        assert!(text(&out.stdout).contains("Usage: riegeli "), "help {command}: {}", text(&out.stdout));
        let out = riegeli(&[command, "--help"], b"");
        assert!(out.status.success(), "{command} --help");
    }
    let out = riegeli(&["cat", "--help"], b"");
    for option in ["--format", "proto-text", "proto-json", "--from", "--limit", "--skip-corrupted", "--pretty"] {
        assert!(text(&out.stdout).contains(option), "cat --help mentions {option}");
    }
    for shell in ["bash", "zsh", "fish"] {
        let out = riegeli(&["completions", shell], b"");
        assert!(out.status.success(), "{shell}");
        assert!(text(&out.stdout).contains("proto-json"), "{shell} completes --format values");
    }
    let out = riegeli(&["--version"], b"");
    assert!(text(&out.stdout).starts_with("riegeli "));

    // The benchmarks live in xtask (`records_bench`), not in the user's binary.
    let out = riegeli(&["bench", "--megabytes", "1"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unrecognized subcommand"), "{}", text(&out.stderr));
}

#[test]
fn outputs_never_overwrite_inputs() {
    let dir = scratch_dir("overwrite");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    write_lines(&path("a.riegeli"), "uncompressed", "a\n");
    let before = std::fs::read(path("a.riegeli")).unwrap();
    let same = format!("{}/../{}/a.riegeli", dir.display(), dir.file_name().unwrap().to_str().unwrap());
    for args in [
        vec!["convert", &path("a.riegeli"), &same],
        vec!["recover", &path("a.riegeli"), &path("a.riegeli")],
        vec!["concat", &path("a.riegeli"), &path("a.riegeli")],
        vec!["write", "--input", &path("a.riegeli"), &path("a.riegeli")],
    ] {
        let out = riegeli(&args, b"");
        assert_one_line_error(&out, 2, "the output is also an input");
        assert!(std::fs::read(path("a.riegeli")).unwrap() == before, "{args:?} left the input alone");
    }
    // Bad options do not leave an empty output behind.
    let out = riegeli(&["convert", "--options", "zstd:99", &path("a.riegeli"), &path("new.riegeli")], b"");
    assert_one_line_error(&out, 2, "zstd:99");
    assert!(!std::path::Path::new(&path("new.riegeli")).exists());
    // A directory is not a file.
    let out = riegeli(&["describe", dir.to_str().unwrap()], b"");
    assert_one_line_error(&out, 1, "is a directory");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cat_every_format_on_binary_records_and_every_option_set() {
    let dir = scratch_dir("formats");
    let file = dir.join("bin.riegeli");
    let file = file.to_str().unwrap();
    // Records "hello", 00 ff 'a' '\n', and the empty record, as a delimited stream.
    let input = b"\x05hello\x04\x00\xffa\n\x00";
    for options in
        ["default", "uncompressed", "brotli:1", "zstd:1", "snappy", "transpose", "chunk_size:8,parallelism:2"]
    {
        let out = riegeli(&["write", "--options", options, file], input);
        assert!(out.status.success(), "{options}: {}", text(&out.stderr));
        let cat = |format: &str| {
            let out = riegeli(&["cat", "--format", format, file], b"");
            assert!(out.status.success(), "{options} {format}: {}", text(&out.stderr));
            out.stdout
        };
        assert_eq!(text(&cat("text")), "hello\n\\x00\\xffa\\n\n\n", "{options}");
        assert_eq!(text(&cat("hex")), "68656c6c6f\n00ff610a\n\n", "{options}");
        assert_eq!(text(&cat("base64")), "aGVsbG8=\nAP9hCg==\n\n", "{options}");
        assert_eq!(cat("delimited"), input, "{options}");
        let json: Vec<serde_json::Value> =
            text(&cat("json")).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(json.len(), 3);
        assert_eq!((&json[0]["data"], &json[0]["size"]), (&"hello".into(), &5.into()), "{options}");
        assert_eq!((&json[1]["data_base64"], &json[1]["size"]), (&"AP9hCg==".into(), &4.into()), "{options}");
        assert_eq!((&json[2]["data"], &json[2]["size"]), (&"".into(), &0.into()), "{options}");
        // JSON lines go back in unchanged.
        let again = dir.join("again.riegeli");
        let out = riegeli(&["write", "--input-format", "json", again.to_str().unwrap()], &cat("json"));
        assert!(out.status.success(), "{}", text(&out.stderr));
        let out = riegeli(&["cat", "--format", "delimited", again.to_str().unwrap()], b"");
        assert_eq!(out.stdout, input, "{options}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cat_byte_ranges_of_a_partition_print_the_file_once() {
    for name in ["array_record/simple_zstd.array_record", "valid/transposed_zstd.riegeli", "valid/padded.riegeli"] {
        let path = testdata(name);
        let file = path.to_str().unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        for format in ["text", "json", "delimited", "hex"] {
            let whole = riegeli(&["cat", "--format", format, file], b"");
            assert!(whole.status.success() && !whole.stdout.is_empty(), "{name} {format}");
            for cuts in [vec![size / 3, 2 * size / 3], vec![1, 65536, 65537], vec![size.saturating_sub(65536)]] {
                let mut bounds = vec![0];
                bounds.extend(cuts.into_iter().filter(|&c| c > 0 && c < size));
                let mut printed = Vec::new();
                for (i, start) in bounds.iter().enumerate() {
                    // The last range is open-ended.
                    let range = match bounds.get(i + 1) {
                        Some(end) => format!("{start}..{end}"),
                        None => format!("{start}.."),
                    };
                    let out = riegeli(&["cat", "--format", format, "--byte-range", &range, file], b"");
                    assert!(out.status.success(), "{name} {range}: {}", text(&out.stderr));
                    printed.extend(out.stdout);
                }
                assert_eq!(printed, whole.stdout, "{name} {format} {bounds:?}");
            }
        }
    }
    let path = testdata("valid/simple_zstd.riegeli");
    let file = path.to_str().unwrap();
    let out = riegeli(&["cat", "--byte-range", "10", file], b"");
    assert_one_line_error(&out, 2, "expected START..END or START..");
    let out = riegeli(&["cat", "--byte-range", "10..5", file], b"");
    assert_one_line_error(&out, 2, "ends before it begins");
    let out = riegeli(&["cat", "--byte-range", "0..", "-"], &std::fs::read(&path).unwrap());
    assert_one_line_error(&out, 2, "standard input cannot seek");
    let out = riegeli(&["cat", "--byte-range", "0..10", "--records", "1", file], b"");
    assert!(!out.status.success() && out.status.code() == Some(2));
}

/// `cargo xtask objects` serves golden files at `testdata/<path>` of its S3 bucket, its
/// Azure container and its nginx: the commands that read take their URLs and print what they
/// print for the files.
#[test]
#[ignore = "needs the servers of `cargo xtask objects`"]
fn live_commands_read_s3_azure_and_http_urls() {
    let env = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name}: run `cargo xtask objects`"));
    let (bucket, http) = (env("RIEGELI_TEST_S3_BUCKET"), env("RIEGELI_TEST_HTTP_URL"));
    let (container, gs_bucket) = (env("RIEGELI_TEST_AZ_CONTAINER"), env("RIEGELI_TEST_GS_BUCKET"));
    for path in ["array_record/simple_zstd.array_record", "valid/transposed_zstd.riegeli"] {
        let local = testdata(path);
        let local = local.to_str().unwrap();
        let urls = [
            format!("s3://{bucket}/testdata/{path}"),
            format!("az://{container}/testdata/{path}"),
            format!("{http}/testdata/{path}"),
            format!("gs://{gs_bucket}/testdata/{path}"),
        ];
        for url in urls {
            for args in [
                &["cat", "--format", "json"][..],
                &["cat", "--records", "0,17,5..9"],
                &["cat", "--byte-range", "40000.."],
                &["count"],
                &["verify"],
            ] {
                let want = riegeli(&[args, &[local]].concat(), b"");
                let got = riegeli(&[args, &[url.as_str()]].concat(), b"");
                assert!(got.status.success(), "{url} {args:?}: {}", text(&got.stderr));
                assert_eq!(text(&got.stdout).replace(&url, local), text(&want.stdout), "{url} {args:?}");
            }
            let got = riegeli(&["describe", &url], b"");
            assert!(got.status.success() && text(&got.stdout).contains("chunk"), "{url}: {}", text(&got.stderr));
        }
    }
    // One command opens an object once, however many times it reads it (an ArrayRecord
    // file: its trailer detected, then its records read): one GET of its last 64 KiB (the
    // postscript, as a suffix range, which tells its size too), and no HEAD.
    let log = env("RIEGELI_TEST_HTTP_LOG");
    let path = "array_record/simple_zstd.array_record";
    let mark = std::fs::read(&log).unwrap().len();
    let got = riegeli(&["cat", "--format", "json", &format!("{http}/testdata/{path}")], b"");
    assert!(got.status.success(), "{}", text(&got.stderr));
    std::thread::sleep(std::time::Duration::from_millis(200));
    let after = std::fs::read(&log).unwrap();
    let seen = text(&after[mark..]);
    let heads = seen.lines().filter(|l| l.starts_with(&format!("HEAD /testdata/{path} "))).count();
    assert_eq!(heads, 0, "{seen}");
    let tails = seen.lines().filter(|l| l.starts_with("GET ") && l.ends_with("\"bytes=-65536\"")).count();
    assert_eq!(tails, 1, "{seen}");
    let size = std::fs::metadata(testdata(path)).unwrap().len();
    let tail = format!("\"bytes={}-{}\"", size - 65536, size - 1);
    assert!(!seen.contains(&tail), "{seen}");
    // `cat` reads the whole file: its first bytes and the first read-ahead windows are asked
    // for with the tail (those past the end of this file of 128 KiB get nothing), and nothing
    // else is.
    let gets: Vec<&str> = seen.lines().filter(|l| l.starts_with(&format!("GET /testdata/{path} "))).collect();
    assert!(gets.iter().any(|l| l.ends_with(" 206 65536 \"bytes=0-65535\"")), "{seen}");
    let answered: Vec<&&str> = gets.iter().filter(|l| l.contains(" 206 ")).collect();
    assert_eq!(answered.len(), 3, "the tail, the first 64 KiB and what the tail also holds: {seen}");
    // `count` of an ArrayRecord file reads its footer, not its first bytes.
    let mark = std::fs::read(&log).unwrap().len();
    let got = riegeli(&["count", &format!("{http}/testdata/{path}")], b"");
    assert!(got.status.success(), "{}", text(&got.stderr));
    std::thread::sleep(std::time::Duration::from_millis(200));
    let after = std::fs::read(&log).unwrap();
    assert!(!text(&after[mark..]).contains("\"bytes=0-"), "{}", text(&after[mark..]));

    let missing = format!("s3://{bucket}/testdata/no-such-file");
    let out = riegeli(&["count", &missing], b"");
    assert_one_line_error(&out, 1, "no-such-file");
}

#[test]
fn writes_are_parallel_by_default_and_byte_identical_to_serial_ones() {
    let dir = scratch_dir("threads");
    let lines: String = (0..20_000).map(|i| format!("line {i} {}\n", "abc".repeat(i % 40))).collect();
    for options in ["zstd:3,chunk_size:64k", "brotli:6,chunk_size:64k", "snappy", "transpose,zstd:3,chunk_size:64k"] {
        let mut files = Vec::new();
        for threads in [None, Some("1"), Some("3")] {
            let out = dir.join(format!("{}-{}.riegeli", options.replace([',', ':'], "_"), threads.unwrap_or("d")));
            let out = out.to_str().unwrap().to_owned();
            let mut args = vec!["write", "--options", options, "--input-format", "lines", "--metadata-comment", "c"];
            if let Some(threads) = threads {
                args.extend(["-j", threads]);
            }
            args.push(&out);
            let result = riegeli(&args, lines.as_bytes());
            assert!(result.status.success(), "{options} {threads:?}: {}", text(&result.stderr));
            files.push(std::fs::read(&out).unwrap());
        }
        assert!(files.iter().all(|f| f == &files[0]), "{options}: default, -j 1 and -j 3 differ");
        // recover and convert too.
        let input = dir.join("input.riegeli");
        std::fs::write(&input, &files[0]).unwrap();
        let input = input.to_str().unwrap();
        for command in ["recover", "convert"] {
            let outs: Vec<Vec<u8>> = [None, Some("1")]
                .iter()
                .map(|threads| {
                    let out = dir.join(format!("{command}-{}.riegeli", threads.unwrap_or("d")));
                    let out = out.to_str().unwrap().to_owned();
                    let mut args = vec![command, input, &out, "--options", options];
                    if let Some(threads) = threads {
                        args.extend(["-j", threads]);
                    }
                    let result = riegeli(&args, b"");
                    assert!(result.status.success(), "{command}: {}", text(&result.stderr));
                    std::fs::read(&out).unwrap()
                })
                .collect();
            assert_eq!(outs[0], outs[1], "{command} {options}");
        }
    }
    let help = riegeli(&["help", "write"], b"");
    assert!(text(&help.stdout).contains("-j, --threads"), "{}", text(&help.stdout));
}

#[test]
fn cat_records_in_any_order_prints_them_in_the_order_asked() {
    let path = testdata("array_record/simple_zstd.array_record");
    let file = path.to_str().unwrap();
    let whole = riegeli(&["cat", "--format", "hex", file], b"");
    let lines: Vec<String> = text(&whole.stdout).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 1500);
    // More indices than one batch, out of order, with repeats and a descending run.
    let indices: Vec<usize> = (0..6000).map(|i| (i * 7919 + 11) % 1500).collect();
    let list: Vec<String> = indices.iter().map(usize::to_string).chain(["10..20".to_owned()]).collect();
    let out = riegeli(&["cat", "--format", "hex", "--records", &list.join(","), file], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want: Vec<&str> =
        indices.iter().map(|&i| lines[i].as_str()).chain(lines[10..20].iter().map(String::as_str)).collect();
    assert_eq!(text(&out.stdout).lines().collect::<Vec<_>>(), want);
    let out = riegeli(&["cat", "--format", "hex", "--records", &list.join(","), "--limit", "7", file], b"");
    assert_eq!(text(&out.stdout).lines().collect::<Vec<_>>(), want[..7]);
}

#[test]
fn large_records_are_printed_in_pieces_exactly() {
    let dir = scratch_dir("large-records");
    let file = dir.join("large.riegeli");
    let file = file.to_str().unwrap();
    // A 3 MiB record (printed in pieces) between small ones, as delimited input.
    let big: Vec<u8> = (0..3u32 << 20).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let records: Vec<&[u8]> = vec![b"small", &big, b"", b"end"];
    let mut input = Vec::new();
    for record in &records {
        let mut n = record.len();
        while n >= 0x80 {
            input.push((n as u8) | 0x80);
            n >>= 7;
        }
        input.push(n as u8);
        input.extend_from_slice(record);
    }
    assert!(riegeli(&["write", "--options", "zstd:1", file], &input).status.success());
    let out = riegeli(&["cat", "--format", "delimited", file], b"");
    assert_eq!(out.stdout, input);
    let out = riegeli(&["cat", "--format", "hex", file], b"");
    let hex: String = records.iter().map(|r| r.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n").collect();
    assert_eq!(text(&out.stdout), hex);
    let out = riegeli(&["cat", "--format", "base64", file], b"");
    use base64::Engine as _;
    let b64: String = records.iter().map(|r| base64::engine::general_purpose::STANDARD.encode(r) + "\n").collect();
    assert_eq!(text(&out.stdout), b64);

    // JSON: a large record that is not UTF-8 (`data_base64`) and a large text with characters
    // to escape (`data`), printed in pieces as the same lines serde_json makes of small ones.
    let file = dir.join("large-json.riegeli");
    let file = file.to_str().unwrap();
    let text_record: String = (0..120_000).map(|i| format!("\"line\" {i}\t\u{e9}\u{1f600}\n")).collect();
    assert!(text_record.len() > 2 << 20);
    let records: Vec<&[u8]> = vec![b"small", &big, text_record.as_bytes(), b"end"];
    let input: Vec<u8> = records.iter().flat_map(|r| [&varint(r.len())[..], r].concat()).collect();
    assert!(riegeli(&["write", "--options", "zstd:1", file], &input).status.success());
    for args in [&["cat", "--format", "json", file][..], &["cat", "--format", "json", "--records", "0..4", file]] {
        let out = riegeli(args, b"");
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), records.len(), "{args:?}");
        for (line, record) in lines.iter().zip(&records) {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            // Compact, keys in serde_json's order: what it prints of the parsed line.
            assert_eq!(&serde_json::to_string(&value).unwrap(), line, "{args:?}");
            assert_eq!(value["size"], record.len(), "{args:?}");
            let data = match (value["data"].as_str(), value["data_base64"].as_str()) {
                (Some(text), None) => text.as_bytes().to_vec(),
                (None, Some(b64)) => base64::engine::general_purpose::STANDARD.decode(b64).unwrap(),
                _ => panic!("{args:?}: neither data nor data_base64"),
            };
            assert!(data == *record, "{args:?}: record of {} bytes differs", record.len());
            assert!(value.get("pos").is_some() != value.get("index").is_some(), "{args:?}");
        }
    }
}

/// `n` as a LEB128 varint.
fn varint(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out
}

/// The outputs of `write`, `convert`, `concat` and `recover` take `s3://` and `az://` URLs
/// (objects written by multipart upload), and what they write reads back as the local file
/// the same command writes; an `http://` output is refused.
#[test]
#[ignore = "needs the servers of `cargo xtask objects`"]
fn live_commands_write_s3_and_azure_urls() {
    let env = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name}: run `cargo xtask objects`"));
    let (bucket, container, http) =
        (env("RIEGELI_TEST_S3_BUCKET"), env("RIEGELI_TEST_AZ_CONTAINER"), env("RIEGELI_TEST_HTTP_URL"));
    let dir = scratch_dir("live-write");
    let local = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let golden = testdata("valid/transposed_zstd.riegeli");
    let golden = golden.to_str().unwrap();
    let lines: String = (0..5000).map(|i| format!("line {i} {}\n", "x".repeat(i % 300))).collect();
    let run = |args: &[&str], stdin: &[u8]| {
        let out = riegeli(args, stdin);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    };
    let same = |url: &str, path: &str| {
        let want = riegeli(&["cat", "--format", "json", path], b"");
        let got = riegeli(&["cat", "--format", "json", url], b"");
        assert!(got.status.success(), "{url}: {}", text(&got.stderr));
        assert!(!want.stdout.is_empty());
        assert_eq!(text(&got.stdout).replace(url, path), text(&want.stdout), "{url}");
    };
    let run_id = std::process::id();
    for base in [format!("s3://{bucket}/cli-written-{run_id}"), format!("az://{container}/cli-written-{run_id}")] {
        let url = |name: &str| format!("{base}/{name}");
        let write = ["write", "--options", "zstd:3,chunk_size:4k", "--input-format", "lines"];
        run(&[&write[..], &[url("lines.riegeli").as_str()]].concat(), lines.as_bytes());
        run(&[&write[..], &[local("lines.riegeli").as_str()]].concat(), lines.as_bytes());
        same(&url("lines.riegeli"), &local("lines.riegeli"));
        let convert = ["convert", golden];
        run(&[&convert[..], &[url("converted.array_record").as_str(), "--to", "array-record"]].concat(), b"");
        run(&[&convert[..], &[local("converted.array_record").as_str(), "--to", "array-record"]].concat(), b"");
        same(&url("converted.array_record"), &local("converted.array_record"));
        run(&["concat", &url("concat.riegeli"), &url("lines.riegeli"), golden], b"");
        run(&["concat", &local("concat.riegeli"), &local("lines.riegeli"), golden], b"");
        same(&url("concat.riegeli"), &local("concat.riegeli"));
        run(&["recover", &url("concat.riegeli"), &url("recovered.riegeli")], b"");
        run(&["recover", &local("concat.riegeli"), &local("recovered.riegeli")], b"");
        same(&url("recovered.riegeli"), &local("recovered.riegeli"));
    }
    let out = riegeli(&["convert", golden, &format!("{http}/written.riegeli")], b"");
    assert_one_line_error(&out, 1, "http");
}
