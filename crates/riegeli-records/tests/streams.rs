//! Results must not depend on how the input arrives.

use std::io::Cursor;

use riegeli_records::RecordReader;

use crate::common::{InterruptingReader, OneByteReader, read_all, sample_records, write_file};

#[test]
fn one_byte_reads_and_interruptions_give_the_same_records() {
    let records = sample_records(150, 11);
    for options in
        ["uncompressed,chunk_size:3k", "zstd,chunk_size:10k", "transpose,snappy,chunk_size:5k", "brotli:3,padding"]
    {
        let file = write_file(&records, options);
        let mut reader = RecordReader::new(OneByteReader(Cursor::new(&file)));
        assert_eq!(read_all(&mut reader), records, "{options} one byte at a time");
        let mut reader = RecordReader::new(InterruptingReader { inner: Cursor::new(&file), flip: false });
        assert_eq!(read_all(&mut reader), records, "{options} with interruptions");
    }
}

#[test]
fn truncated_stream_gives_complete_chunks_then_an_error() {
    let records = sample_records(100, 12);
    let file = write_file(&records, "uncompressed,chunk_size:2k");
    let cut = &file[..file.len() - 10];
    let mut reader = RecordReader::new(OneByteReader(Cursor::new(cut)));
    let mut got = 0;
    let err = loop {
        match reader.read_record() {
            Ok(Some(_)) => got += 1,
            Ok(None) => panic!("a truncated file must not end cleanly"),
            Err(e) => break e,
        }
    };
    assert!(got > 0 && got < records.len());
    assert!(
        matches!(
            err.kind(),
            riegeli_records::ErrorKind::Corrupt { cause: riegeli_records::Corruption::Truncated { .. }, .. }
        ),
        "{err}"
    );
}
