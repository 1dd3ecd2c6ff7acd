//! Seed files and the seed-and-patch mutation of the structure-aware fuzz
//! modes (`array_record`, `records`, `recovery`).

use riegeli_records::ArrayRecordWriter;

/// ArrayRecord files for the structure-aware modes to mutate: one per option
/// set, each of `n` records made by `record`.
pub(crate) fn array_record_seeds(options: &[&str], n: u32, record: impl Fn(u32) -> Vec<u8>) -> Vec<Vec<u8>> {
    options
        .iter()
        .map(|options| {
            let options = options.parse().unwrap_or_else(|e| panic!("{options}: {e}"));
            let mut writer = ArrayRecordWriter::new(Vec::new(), options).expect("writer");
            for i in 0..n {
                writer.write_record(&record(i)).expect("write");
            }
            writer.close().expect("close")
        })
        .collect()
}

/// `seed` mutated as `rest` says: when byte 2 is odd, truncated by the
/// little-endian value of bytes 0 and 1; then each 4-byte patch
/// `[offset u24 LE, byte]` of the rest after byte 2 writes `byte` at
/// `offset % len`.
pub(crate) fn mutated(seed: &[u8], rest: &[u8]) -> Vec<u8> {
    let mut file = seed.to_vec();
    if let [low, high, flag, ..] = *rest
        && flag % 2 == 1
    {
        file.truncate(file.len().saturating_sub(usize::from(u16::from_le_bytes([low, high]))));
    }
    for patch in rest.get(3..).unwrap_or_default().chunks_exact(4) {
        if let &[a, b, c, byte] = patch
            && !file.is_empty()
        {
            let offset = usize::from(a) | usize::from(b) << 8 | usize::from(c) << 16;
            let len = file.len();
            if let Some(slot) = file.get_mut(offset % len) {
                *slot = byte;
            }
        }
    }
    file
}
