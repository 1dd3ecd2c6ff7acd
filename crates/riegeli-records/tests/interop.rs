//! Live interop with Google's C++ implementation (array-record 0.8.6 from
//! PyPI): the C++ writer writes, we read. Run by `cargo xtask interop` (part of
//! `cargo xtask ci`), which sets `RIEGELI_ORACLE_PYTHON`.

use std::io::Cursor;
use std::process::Command;

use riegeli_records::{RecordReader, RecordReaderOptions};

use crate::common::read_all;

const SCRIPT: &str = r#"
import sys, random
from array_record.python import array_record_module as m
out, options, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)
def varint(v):
    b = bytearray()
    while v >= 0x80:
        b.append((v & 0x7f) | 0x80); v >>= 7
    b.append(v); return bytes(b)
records = []
for i in range(700):
    kind = rng.randrange(4)
    if kind == 0:
        r = b''
    elif kind == 1:
        words = [rng.choice(['alpha', 'beta', 'gamma', 'delta', 'riegeli']) for _ in range(rng.randrange(1, 60))]
        r = ' '.join(words).encode()
    elif kind == 2:
        name = rng.choice([b'a', b'bb', b'ccc'])
        inner = b'\x08' + varint(rng.randrange(1 << 40)) + b'\x12' + varint(len(name)) + name
        r = b'\x08' + varint(i) + b'\x1a' + varint(len(inner)) + inner + b'\x25' + rng.randbytes(4)
    else:
        r = rng.randbytes(rng.randrange(1, 3000))
    records.append(r)
w = m.ArrayRecordWriter(out, options)
for r in records:
    w.write(r)
w.close()
with open(out + '.delimited', 'wb') as f:
    for r in records:
        f.write(varint(len(r)) + r)
"#;

#[test]
#[ignore = "needs the C++ oracle: cargo xtask interop"]
fn interop_cpp_writes_we_read() {
    let python = std::env::var("RIEGELI_ORACLE_PYTHON").expect("RIEGELI_ORACLE_PYTHON (run cargo xtask interop)");
    let dir = std::env::temp_dir().join(format!("riegeli-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let options = [
        "group_size:1,uncompressed",
        "group_size:64,uncompressed",
        "group_size:100,brotli:6",
        "group_size:100,zstd:3",
        "group_size:100,snappy",
        "group_size:200,transpose,uncompressed",
        "group_size:200,transpose,brotli:5",
        "group_size:200,transpose,zstd:3",
        "group_size:200,transpose,snappy",
        "group_size:50,transpose,transpose_bucket_size:100,zstd:1",
        "group_size:30,pad_to_block_boundary:true,zstd:3",
    ];
    for (seed, option) in options.iter().enumerate() {
        let path = dir.join(format!("f{seed}.array_record"));
        let status = Command::new(&python)
            .args(["-c", SCRIPT, path.to_str().unwrap(), option, &seed.to_string()])
            .status()
            .expect("run the oracle");
        assert!(status.success(), "oracle failed for {option}");
        let file = std::fs::read(&path).unwrap();
        let delimited = std::fs::read(format!("{}.delimited", path.display())).unwrap();
        let mut expected = Vec::new();
        let mut rest = &delimited[..];
        while !rest.is_empty() {
            let (len, used) = riegeli_codec::varint::decode_u64(rest).unwrap();
            expected.push(rest[used..used + len as usize].to_vec());
            rest = &rest[used + len as usize..];
        }
        // The ArrayRecord footer and postscript are skipped by default...
        let mut reader = RecordReader::new(Cursor::new(&file));
        assert_eq!(read_all(&mut reader), expected, "{option}");
        // ...and come after the data when asked for.
        let options = RecordReaderOptions { read_array_record_trailer: true, ..RecordReaderOptions::default() };
        let mut reader = RecordReader::with_options(Cursor::new(&file), options);
        let records = read_all(&mut reader);
        assert!(records.len() > expected.len(), "{option}: footer records follow the data");
        assert_eq!(&records[..expected.len()], &expected[..], "{option}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
