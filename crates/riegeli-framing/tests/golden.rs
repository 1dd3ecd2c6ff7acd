//! Golden files written by Google's C++ Riegeli (`testdata/`, see its README).
//!
//! Every file listed in `testdata/MANIFEST.json` is walked chunk by chunk with
//! [`parse_chunk`] from position 0, verifying every data hash. For valid and
//! ArrayRecord files the chunk list must equal the manifest's exactly (the
//! manifest comes from an independent Python walker run over the C++ output);
//! damaged files must stop at the damaged place with the expected error.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use riegeli_framing::{FramingError, FramingErrorKind, parse_chunk};
use serde_json::Value;

/// The first 64 bytes of every Riegeli/records file (spec "File signature").
const FILE_START: [u8; 64] = [
    0x83, 0xaf, 0x70, 0xd1, 0x0d, 0x88, 0x4a, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x91, 0xba, 0xc2, 0x3c, 0x92, 0x87, 0xe1, 0xa9, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe1, 0x9f, 0x13, 0xc0, 0xe9, 0xb1, 0xc3, 0x72, //
    0x73, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
];

/// What a strict walk of a damaged file meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// The walk stops with this error: (kind, what failed), as the manifest names them.
    Error(&'static str, &'static str),
    /// The walk reads to the end, ignoring a block header whose hash fails
    /// inside a chunk (spec: it "must be ignored").
    DamagedBlockHeader,
}

/// Every file in `testdata/corrupt/` and what a strict walk meets there.
/// Positions come from the manifest.
const KNOWN_CORRUPT: &[(&str, Expect)] = &[
    ("block_header_flip.riegeli", Expect::DamagedBlockHeader),
    ("block_header_flip_in_chunk_header.riegeli", Expect::DamagedBlockHeader),
    ("block_header_forged_next.riegeli", Expect::Error("block_header_mismatch", "next_chunk")),
    ("block_header_forged_previous.riegeli", Expect::Error("block_header_mismatch", "previous_chunk")),
    ("chunk_data_flip.riegeli", Expect::Error("hash_mismatch", "chunk data")),
    ("chunk_header_flip.riegeli", Expect::Error("hash_mismatch", "chunk header")),
    ("truncated_at_block_header.riegeli", Expect::Error("incomplete", "chunk")),
    ("truncated_mid_chunk.riegeli", Expect::Error("incomplete", "chunk")),
    ("truncated_mid_chunk_header.riegeli", Expect::Error("incomplete", "chunk header")),
    // The zeroed block header is ignored; the data it held fails the chunk's data hash.
    ("zeroed_block.riegeli", Expect::Error("hash_mismatch", "chunk data")),
];

/// A chunk as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Chunk {
    offset: u64,
    chunk_type: u8,
    data_size: u64,
    num_records: u64,
    decoded_data_size: u64,
    chunk_end: u64,
}

fn testdata_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn manifest() -> Value {
    let path = testdata_dir().join("MANIFEST.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("MANIFEST.json is valid JSON")
}

fn files(manifest: &Value) -> &[Value] {
    manifest["files"].as_array().expect("manifest has a files array")
}

fn u64_field(value: &Value, key: &str) -> u64 {
    value[key].as_u64().unwrap_or_else(|| panic!("{key} is not an integer in {value}"))
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_else(|| panic!("{key} is not a string in {value}"))
}

fn manifest_chunks(entry: &Value) -> Vec<Chunk> {
    let chunks = entry["chunks"].as_array().expect("chunks is an array");
    chunks
        .iter()
        .map(|c| {
            let chunk_type = str_field(c, "chunk_type");
            assert_eq!(chunk_type.len(), 1, "chunk_type {chunk_type:?} is one character");
            Chunk {
                offset: u64_field(c, "offset"),
                chunk_type: chunk_type.as_bytes()[0],
                data_size: u64_field(c, "data_size"),
                num_records: u64_field(c, "num_records"),
                decoded_data_size: u64_field(c, "decoded_data_size"),
                chunk_end: u64_field(c, "chunk_end"),
            }
        })
        .collect()
}

fn read(path: &str) -> Vec<u8> {
    let full = testdata_dir().join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// What [`walk`] found.
struct Walk {
    /// The chunks read, every hash verified.
    chunks: Vec<Chunk>,
    /// The error that stopped the walk before the end of the file.
    error: Option<FramingError>,
    /// Block headers inside the chunks read whose hash failed (ignored).
    damaged_block_headers: Vec<u64>,
}

/// Walks the chunks of `file` from position 0 until its end, verifying every
/// block header, chunk header and data hash.
fn walk(file: &[u8]) -> Walk {
    let mut walk = Walk { chunks: Vec::new(), error: None, damaged_block_headers: Vec::new() };
    let mut pos = 0u64;
    while pos < file.len() as u64 {
        let input = &file[usize::try_from(pos).expect("position fits in usize")..];
        let view = match parse_chunk(input, pos) {
            Ok(view) => view,
            Err(err) => {
                walk.error = Some(err);
                return walk;
            }
        };
        if let Err(err) = view.verify_data_hash() {
            walk.error = Some(err);
            return walk;
        }
        walk.damaged_block_headers.extend_from_slice(view.damaged_block_headers());
        let header = view.header();
        assert!(view.chunk_end() > pos, "chunk at {pos} makes progress");
        walk.chunks.push(Chunk {
            offset: pos,
            chunk_type: header.chunk_type(),
            data_size: header.data_size(),
            num_records: header.num_records(),
            decoded_data_size: header.decoded_data_size(),
            chunk_end: view.chunk_end(),
        });
        pos = view.chunk_end();
    }
    assert_eq!(pos, file.len() as u64, "the last chunk ends at the end of the file");
    walk
}

fn u64_list(value: &Value, key: &str) -> Vec<u64> {
    let list = value[key].as_array().unwrap_or_else(|| panic!("{key} is not an array in {value}"));
    list.iter().map(|v| v.as_u64().unwrap_or_else(|| panic!("{key} holds a non-integer"))).collect()
}

/// The manifest's name for an error: (kind, what).
fn error_name(err: &FramingError) -> (&'static str, &'static str) {
    match err.kind() {
        FramingErrorKind::HashMismatch { what, .. } => ("hash_mismatch", what),
        FramingErrorKind::Incomplete { what, .. } => ("incomplete", what),
        FramingErrorKind::BlockHeaderMismatch { field, .. } => ("block_header_mismatch", field),
        other => panic!("unexpected error kind {other:?}"),
    }
}

#[test]
fn manifest_lists_exactly_the_files_present() {
    let manifest = manifest();
    let listed: BTreeSet<String> = files(&manifest).iter().map(|f| str_field(f, "path").to_owned()).collect();
    let mut present = BTreeSet::new();
    for dir in ["array_record", "valid", "corrupt"] {
        for entry in std::fs::read_dir(testdata_dir().join(dir)).expect("testdata directory exists") {
            let name = entry.expect("directory entry").file_name().into_string().expect("utf-8 file name");
            present.insert(format!("{dir}/{name}"));
        }
    }
    assert_eq!(listed, present);
    for f in files(&manifest) {
        let kind = str_field(f, "kind");
        assert!(str_field(f, "path").starts_with(&format!("{kind}/")), "{f}");
        assert_eq!(read(str_field(f, "path")).len() as u64, u64_field(f, "size"), "{}", str_field(f, "path"));
    }
    let corrupt: BTreeSet<String> =
        present.iter().filter_map(|p| p.strip_prefix("corrupt/")).map(str::to_owned).collect();
    let known: BTreeSet<String> = KNOWN_CORRUPT.iter().map(|(name, _)| (*name).to_owned()).collect();
    assert_eq!(corrupt, known, "KNOWN_CORRUPT lists every file in testdata/corrupt/");
}

#[test]
fn valid_files_match_the_manifest() {
    let manifest = manifest();
    let mut checked = 0;
    for f in files(&manifest) {
        let kind = str_field(f, "kind");
        if kind == "corrupt" {
            continue;
        }
        let path = str_field(f, "path");
        let file = read(path);
        let Walk { chunks, error, damaged_block_headers } = walk(&file);
        assert!(error.is_none(), "{path}: {}", error.map(|e| e.to_string()).unwrap_or_default());
        assert!(damaged_block_headers.is_empty(), "{path}");
        assert_eq!(chunks, manifest_chunks(f), "{path}");
        assert_eq!(file.get(..64), Some(&FILE_START[..]), "{path} begins with the file signature");
        let records: u64 = chunks.iter().filter(|c| matches!(c.chunk_type, b'r' | b't')).map(|c| c.num_records).sum();
        if kind == "valid" {
            assert_eq!(records, u64_field(f, "num_records"), "{path}");
            assert!(chunks.iter().skip(1).all(|c| matches!(c.chunk_type, b'r' | b't' | b'p')), "{path}");
        } else {
            // ArrayRecord: data chunks, then the footer and the postscript (each
            // a simple chunk of records) at the file's last block.
            assert_eq!(kind, "array_record");
            assert_eq!(file.len() % 65_536, 0, "{path}");
            let postscript = chunks.iter().find(|c| c.offset == file.len() as u64 - 65_536);
            assert!(postscript.is_some_and(|c| c.chunk_type == b'r' && c.num_records == 3), "{path}");
            let footer_offset = u64_field(f, "footer_offset");
            let footer = chunks.iter().find(|c| c.offset == footer_offset).expect("footer chunk");
            assert_eq!(footer.chunk_type, b'r', "{path}");
            let data: u64 = chunks
                .iter()
                .filter(|c| c.offset < footer_offset && matches!(c.chunk_type, b'r' | b't'))
                .map(|c| c.num_records)
                .sum();
            assert_eq!(data, u64_field(f, "num_records"), "{path}");
            assert_eq!(records, data + footer.num_records + 3, "{path}");
        }
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} valid and array_record files");
}

#[test]
fn valid_files_are_the_array_record_files_cut_at_the_footer() {
    let manifest = manifest();
    for f in files(&manifest).iter().filter(|f| f["kind"] == "valid") {
        let source = files(&manifest).iter().find(|s| s["path"] == f["source"]).expect("source listed");
        let plain = read(str_field(f, "path"));
        let full = read(str_field(source, "path"));
        assert_eq!(plain.len() as u64, u64_field(source, "footer_offset"));
        assert_eq!(plain[..], full[..plain.len()], "{}", str_field(f, "path"));
    }
}

#[test]
fn corrupt_files_fail_where_the_manifest_says() {
    let manifest = manifest();
    let mut checked = 0;
    for f in files(&manifest).iter().filter(|f| f["kind"] == "corrupt") {
        let path = str_field(f, "path");
        let name = path.strip_prefix("corrupt/").expect("corrupt/ path");
        let &(_, expect) = KNOWN_CORRUPT.iter().find(|(known, _)| *known == name).expect("listed in KNOWN_CORRUPT");
        let file = read(path);
        let walk = walk(&file);
        let source = files(&manifest).iter().find(|s| s["path"] == f["source"]).expect("source listed");
        let source_chunks = manifest_chunks(source);
        let damage = u64_field(&f["damage"], "offset");

        // The chunks read are the source's, and equal the manifest's.
        assert_eq!(walk.chunks, manifest_chunks(f), "{path}");
        assert_eq!(walk.chunks[..], source_chunks[..walk.chunks.len()], "{path}");
        assert_eq!(walk.damaged_block_headers, u64_list(f, "damaged_block_headers"), "{path}");

        match (expect, walk.error) {
            (Expect::DamagedBlockHeader, None) => {
                assert!(f["error"].is_null(), "{path}");
                // The damaged byte lies in the one block header ignored.
                assert_eq!(walk.damaged_block_headers.len(), 1, "{path}");
                let block = walk.damaged_block_headers[0];
                assert!(block <= damage && damage < block + 24, "{path}: damage at {damage}");
            }
            (Expect::Error(kind, what), Some(err)) => {
                let expected = &f["error"];
                assert_eq!((str_field(expected, "kind"), str_field(expected, "what")), (kind, what), "{path}");
                assert_eq!(error_name(&err), (kind, what), "{path}: {err}");
                assert_eq!(err.position(), u64_field(expected, "position"), "{path}: {err}");
                assert_eq!(err.is_corruption(), kind != "incomplete", "{path}");
                match *err.kind() {
                    FramingErrorKind::Incomplete { needed, have, .. } => {
                        assert_eq!(needed, u64_field(expected, "needed"), "{path}");
                        assert_eq!(have, u64_field(expected, "have"), "{path}");
                        assert_eq!(err.position() + have, file.len() as u64, "{path}: the input ends the file");
                    }
                    FramingErrorKind::BlockHeaderMismatch { expected: implied, found, .. } => {
                        assert_eq!(implied, u64_field(expected, "expected"), "{path}");
                        assert_eq!(found, u64_field(expected, "found"), "{path}");
                    }
                    _ => {}
                }
                // The walk stops at the source's chunk that holds the damage.
                let stop = source_chunks.get(walk.chunks.len()).expect("the walk stops before the source's end");
                assert!(stop.offset <= damage && damage < stop.chunk_end, "{path}: stop {stop:?}");
                assert!(err.position() >= stop.offset && err.position() < stop.chunk_end, "{path}: {err}");
            }
            (expect, error) => panic!("{path}: expected {expect:?}, the walk gave {error:?}"),
        }

        // Records a skipping reader returns: sorted indices into the record set,
        // all of those before the damage included.
        let kept = u64_list(f, "expected_records");
        assert!(kept.windows(2).all(|w| w[0] < w[1]), "{path}");
        assert!(kept.iter().all(|&i| i < u64_field(f, "num_records")), "{path}");
        let before: u64 = walk.chunks.iter().map(|c| c.num_records).sum();
        assert_eq!(kept.iter().take_while(|&&i| i < before).count() as u64, before, "{path}: intact prefix kept");
        // The records of the lost chunks are exactly those missing.
        let lost = u64_list(f, "lost_chunks");
        let mut first = 0;
        let mut missing = Vec::new();
        for c in &source_chunks {
            if c.offset < file.len() as u64 && lost.contains(&c.offset) {
                missing.extend(first..first + c.num_records);
            }
            first += c.num_records;
        }
        let present: u64 = source_chunks.iter().filter(|c| c.offset < file.len() as u64).map(|c| c.num_records).sum();
        let expected_missing: Vec<u64> = (0..present).filter(|i| kept.binary_search(i).is_err()).collect();
        assert_eq!(missing, expected_missing, "{path}");
        checked += 1;
    }
    assert_eq!(checked, KNOWN_CORRUPT.len());
}

#[test]
fn record_sets_match_the_manifest() {
    let manifest = manifest();
    let sets = manifest["record_sets"].as_object().expect("record_sets is an object");
    for (name, set) in sets {
        let bytes = read(str_field(set, "path"));
        let (mut count, mut total, mut pos) = (0u64, 0u64, 0usize);
        while pos < bytes.len() {
            let (mut len, mut shift) = (0u64, 0);
            loop {
                let byte = bytes[pos];
                pos += 1;
                len |= u64::from(byte & 0x7f) << shift;
                shift += 7;
                if byte & 0x80 == 0 {
                    break;
                }
            }
            pos += usize::try_from(len).expect("record length fits in usize");
            count += 1;
            total += len;
        }
        assert_eq!(pos, bytes.len(), "{name}: the last record ends the file");
        assert_eq!(count, u64_field(set, "num_records"), "{name}");
        assert_eq!(total, u64_field(set, "total_size"), "{name}");
    }
}
