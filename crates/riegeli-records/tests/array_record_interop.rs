//! Live ArrayRecord interop with Google's C++ implementation (array-record
//! 0.8.6 from PyPI): C++ writes and we read, we write and C++ reads, byte
//! identity of uncompressed files, and damaged files. Run by `cargo xtask
//! interop` (part of `cargo xtask ci`), which sets `RIEGELI_ORACLE_PYTHON`.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::Command;

use riegeli_records::{ArrayRecordReader, ArrayRecordWriter, IndexSource, RecordReader, Selection};

use crate::array_record::check_every_path;
use crate::common::{read_all, sample_records};

/// `write OUT OPTIONS IN.delimited`: the C++ writer writes the records of IN.
/// `read PATH EXPECTED.delimited`: the C++ reader checks every read path, exits 1 on a mismatch.
/// `status PATH`: prints `ok=<bool> records=<n> read_all=<ok|error: ...>`.
const SCRIPT: &str = r#"
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
mode = sys.argv[1]
if mode == 'write':
    w = m.ArrayRecordWriter(sys.argv[2], sys.argv[3])
    for r in records_of(sys.argv[4]):
        w.write(r)
    w.close()
elif mode == 'read':
    expected = records_of(sys.argv[3])
    r = m.ArrayRecordReader(sys.argv[2])
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
elif mode == 'status':
    r = m.ArrayRecordReader(sys.argv[2])
    try:
        got = 'ok %d' % len(r.read_all())
    except Exception as e:
        got = 'error: %s' % e
    print('ok=%s records=%d read_all=%s' % (r.ok(), r.num_records(), got))
"#;

fn python() -> String {
    std::env::var("RIEGELI_ORACLE_PYTHON").expect("RIEGELI_ORACLE_PYTHON (run cargo xtask interop)")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("riegeli-ar-interop-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn oracle(args: &[&str]) -> String {
    let output = Command::new(python()).arg("-c").arg(SCRIPT).args(args).output().expect("run the oracle");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "oracle {args:?} failed: {}{stdout}", String::from_utf8_lossy(&output.stderr));
    stdout
}

fn write_delimited(path: &Path, records: &[Vec<u8>]) {
    let mut out = Vec::new();
    for r in records {
        riegeli_codec::varint::encode_u64(r.len() as u64, &mut out);
        out.extend_from_slice(r);
    }
    std::fs::write(path, out).unwrap();
}

/// C++ writes `records` with `options`; returns the file.
fn cpp_write(dir: &Path, name: &str, options: &str, records: &[Vec<u8>]) -> Vec<u8> {
    let input = dir.join(format!("{name}.delimited"));
    let path = dir.join(format!("{name}.array_record"));
    write_delimited(&input, records);
    oracle(&["write", path.to_str().unwrap(), options, input.to_str().unwrap()]);
    std::fs::read(&path).unwrap()
}

fn ours(options: &str, records: &[Vec<u8>]) -> Vec<u8> {
    let mut writer = ArrayRecordWriter::new(Vec::new(), options.parse().unwrap()).unwrap();
    for r in records {
        writer.write_record(r).unwrap();
    }
    writer.close().unwrap()
}

/// Record sets: varied sizes, proto-like, records over 64 KiB, none.
fn record_sets() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let mut large = sample_records(20, 4);
    large.push(vec![b'x'; 300_000]);
    large.push(Vec::new());
    large.push((0..70_000u32).map(|i| (i % 251) as u8).collect());
    let protos: Vec<Vec<u8>> = (0..400u64)
        .map(|i| {
            let mut r = vec![0x08];
            riegeli_codec::varint::encode_u64(i * 1_000_003, &mut r);
            r.extend_from_slice(&[0x12, 3, b'a', b'b', b'c', 0x1a, 2, 0x08, (i % 100) as u8]);
            if i % 5 == 0 {
                r = b"not a proto".to_vec();
            }
            r
        })
        .collect();
    vec![("mixed", sample_records(500, 1)), ("protos", protos), ("large", large), ("none", Vec::new())]
}

const CPP_OPTIONS: &[&str] = &[
    "group_size:1,uncompressed",
    "group_size:7,uncompressed",
    "group_size:100,brotli:6",
    "group_size:100,zstd:3",
    "group_size:7,snappy",
    "group_size:100,transpose,uncompressed",
    "group_size:7,transpose,brotli:3",
    "group_size:100,transpose,zstd:1",
    "group_size:100,transpose,snappy",
    "group_size:50,transpose,transpose_bucket_size:100,zstd:5",
    "group_size:30,pad_to_block_boundary:true,zstd:3",
    "",
];

#[test]
#[ignore = "needs the C++ oracle: cargo xtask interop"]
fn interop_array_record_cpp_writes_we_read() {
    let dir = temp_dir("cpp-writes");
    for (set, records) in record_sets() {
        for (i, options) in CPP_OPTIONS.iter().enumerate() {
            if set == "large" && options.contains("group_size:1,") {
                continue; // covered by group_size:7
            }
            let file = cpp_write(&dir, &format!("{set}{i}"), options, &records);
            check_every_path(&file, &records, &format!("{set} {options:?}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs the C++ oracle: cargo xtask interop"]
fn interop_array_record_we_write_cpp_reads() {
    let dir = temp_dir("we-write");
    let extra = ["group_size:16,transpose,zstd:3,max_parallelism:2", "group_size:3,brotli:0,window_log:18"];
    for (set, records) in record_sets() {
        for (i, options) in CPP_OPTIONS.iter().chain(&extra).enumerate() {
            let path = dir.join(format!("{set}{i}.array_record"));
            let expected = dir.join(format!("{set}{i}.delimited"));
            std::fs::write(&path, ours(options, &records)).unwrap();
            write_delimited(&expected, &records);
            let out = oracle(&["read", path.to_str().unwrap(), expected.to_str().unwrap()]);
            assert_eq!(out.trim(), "ok", "{set} {options:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs the C++ oracle: cargo xtask interop"]
fn interop_array_record_uncompressed_files_are_byte_identical() {
    let dir = temp_dir("identical");
    let options = [
        "group_size:2,uncompressed",
        "group_size:1,uncompressed",
        "group_size:7,uncompressed",
        "group_size:100,uncompressed",
        "group_size:3,pad_to_block_boundary:true,uncompressed",
        "group_size:64,transpose,uncompressed",
        "group_size:10,transpose,transpose_bucket_size:1k,uncompressed,pad_to_block_boundary:true",
    ];
    let mut compared = 0;
    for (set, records) in record_sets() {
        for (i, option) in options.iter().enumerate() {
            let cpp = cpp_write(&dir, &format!("{set}{i}"), option, &records);
            let rust = ours(option, &records);
            assert_eq!(cpp.len(), rust.len(), "{set} {option}");
            let first_difference = cpp.iter().zip(&rust).position(|(a, b)| a != b);
            assert_eq!(first_difference, None, "{set} {option}: files differ");
            compared += 1;
        }
    }
    assert_eq!(compared, 28);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs the C++ oracle: cargo xtask interop"]
fn interop_array_record_damaged_files() {
    let dir = temp_dir("damaged");
    let records = sample_records(200, 17);
    let file = cpp_write(&dir, "base", "group_size:10,uncompressed", &records);
    let postscript = file.len() - 65536;
    // The footer: the last record-bearing chunk before the postscript.
    let chunks = crate::common::layout(&file);
    let footer = chunks.iter().rfind(|c| c.num_records > 0 && (c.begin as usize) < postscript).unwrap().begin as usize;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("footer data byte", {
            let mut f = file.clone();
            f[footer + 50] ^= 1;
            f
        }),
        ("first postscript copy", {
            let mut f = file.clone();
            f[postscript + 24 + 40 + 5 + 2] ^= 1;
            f
        }),
        ("postscript block cut off", file[..postscript].to_vec()),
        ("one byte appended", {
            let mut f = file.clone();
            f.push(0);
            f
        }),
    ];
    for (what, damaged) in cases {
        let path = dir.join("damaged.array_record");
        std::fs::write(&path, &damaged).unwrap();
        let status = oracle(&["status", path.to_str().unwrap()]);
        // C++ cannot use the file: not ok, or read_all fails or returns nothing.
        assert!(
            status.contains("ok=False") || status.contains("read_all=error") || status.contains("read_all=ok 0"),
            "{what}: C++ says {status}"
        );
        // We refuse it too unless a postscript copy survives; with scan_fallback we read
        // every record, through the footer when a postscript copy survives.
        let opened = ArrayRecordReader::new(Cursor::new(&damaged));
        assert_eq!(opened.is_ok(), what == "first postscript copy", "{what}: {:?}", opened.err());
        let options = riegeli_records::ArrayRecordReaderOptions { scan_fallback: true, ..Default::default() };
        let mut reader = ArrayRecordReader::with_options(Cursor::new(&damaged), options).unwrap();
        let source = reader.index().index_source;
        assert_eq!(reader.read_batch(Selection::All).unwrap(), records, "{what}");
        if what == "first postscript copy" {
            assert_eq!(source, IndexSource::Footer, "{what}");
        } else {
            assert_eq!(source, IndexSource::Scanned, "{what}");
        }
        let mut plain = RecordReader::new(Cursor::new(&damaged));
        plain.set_recovery(|_| true);
        assert_eq!(&read_all(&mut plain)[..records.len()], &records[..], "{what}: plain reader");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs the C++ oracle: cargo xtask interop"]
fn interop_array_record_indexed_plain_files_read_by_cpp() {
    let dir = temp_dir("indexed");
    let uniform: Vec<Vec<u8>> = (0..900u32).map(|i| format!("{i:06}").repeat(5).into_bytes()).collect();
    let uneven = sample_records(300, 5);
    for (what, records, writer_options) in
        [("copied", &uniform, "zstd:3,chunk_size:3000"), ("re-encoded", &uneven, "brotli:2,chunk_size:20000")]
    {
        let plain = crate::common::write_file(records, writer_options);
        let (file, report) = riegeli_records::index_riegeli_file(
            Cursor::new(&plain),
            Vec::new(),
            "group_size:20,zstd:3".parse().unwrap(),
        )
        .unwrap();
        assert_eq!(report.copied_chunks > 0, what == "copied", "{report:?}");
        let path = dir.join(format!("{what}.array_record"));
        let expected = dir.join(format!("{what}.delimited"));
        std::fs::write(&path, &file).unwrap();
        write_delimited(&expected, records);
        assert_eq!(oracle(&["read", path.to_str().unwrap(), expected.to_str().unwrap()]).trim(), "ok", "{what}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
