//! `ArrayRecordWriter`: Riegeli/records with a footer that indexes every chunk.

use std::io::Write;

use riegeli_codec::{ChunkType, CompressorOptions, SimpleChunkEncoder};
use riegeli_framing::ChunkHeader;

use super::options::ArrayRecordWriterOptions;
use crate::chunker::{Chunker, EncoderConfig, Layout, Tuning};
use crate::error::{EncodeError, Error, ErrorKind, Result};
use crate::sink::{ChunkSink, Dest, encode_error};
use crate::trailer::{ArrayRecordMetadata, FooterEntry, FooterMetadata, POSTSCRIPT_COPIES, VERSION, encode_postscript};
use crate::write_behind::WriteBehind;
use crate::writer::start_file;

/// The ArrayRecord layout: every data chunk is remembered for the footer,
/// and padded after if asked.
#[derive(Debug)]
struct Indexed {
    /// Every data chunk written, in file order: its footer entry.
    written: Vec<FooterEntry>,
    pad_to_block_boundary: bool,
}

impl Layout for Indexed {
    fn chunk_written<W: Write>(
        &mut self,
        sink: &mut ChunkSink<W>,
        _: u64,
        begin: u64,
        header: &ChunkHeader,
    ) -> Result<()> {
        self.written.push(FooterEntry {
            chunk_offset: Some(begin),
            decoded_data_size: Some(header.decoded_data_size()),
            num_records: Some(header.num_records()),
        });
        if self.pad_to_block_boundary {
            sink.pad_to_block_boundary()?;
        }
        Ok(())
    }
}

/// Writes an ArrayRecord file: records in chunks of `group_size`, then a
/// footer chunk indexing the chunks and a postscript pointing at the footer,
/// so that [`ArrayRecordReader`](crate::ArrayRecordReader) (or C++'s) can read
/// any record by its index.
///
/// The layout is exactly C++'s (`array_record_writer.cc`, array-record
/// 0.8.6): for uncompressed data the files are byte-identical to the C++
/// writer's for the same records and options. [`close`](Self::close) writes
/// the footer and the postscript and reports every error; dropping the
/// writer closes it too but can only ignore errors.
///
/// With [`parallelism`](ArrayRecordWriterOptions::parallelism) `Some(N)`
/// (`max_parallelism:N+1`) chunks are encoded on N background threads and
/// the caller's, and written in order; at most about N + 1 chunks are in memory.
///
/// ```
/// use std::io::Cursor;
/// use riegeli_records::{ArrayRecordReader, ArrayRecordWriter};
///
/// let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:2,uncompressed".parse()?)?;
/// for record in [&b"hello"[..], b"", b"world!!"] {
///     writer.write_record(record)?;
/// }
/// let file = writer.close()?;
/// assert_eq!(file.len(), 131072);
///
/// let mut reader = ArrayRecordReader::new(Cursor::new(file))?;
/// assert_eq!(reader.num_records(), 3);
/// assert_eq!(reader.read(2)?, &b"world!!"[..]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ArrayRecordWriter<W: Write> {
    chunker: Chunker<W, Indexed>,
    options: ArrayRecordWriterOptions,
    num_records: u64,
    /// Set by `close` (or a failure of it): nothing more is written.
    closed: bool,
}

impl<W: Write> std::fmt::Debug for ArrayRecordWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayRecordWriter")
            .field("options", &self.options.to_string())
            .field("num_records", &self.num_records)
            .finish_non_exhaustive()
    }
}

impl<W: Write + Send + 'static> ArrayRecordWriter<W> {
    /// [`new`](Self::new), writing to `dest` on a thread of its own (see
    /// [`RecordWriter::with_io_thread`](crate::RecordWriter::with_io_thread)).
    pub fn with_io_thread(dest: W, options: ArrayRecordWriterOptions) -> Result<Self> {
        Self::start(Dest::Behind(WriteBehind::new(dest)?), options)
    }
}

impl<W: Write> ArrayRecordWriter<W> {
    /// Starts a new file: writes the file signature and, if the options carry
    /// metadata, the metadata chunk.
    pub fn new(dest: W, options: ArrayRecordWriterOptions) -> Result<Self> {
        Self::start(Dest::Direct(dest), options)
    }

    fn start(dest: Dest<W>, options: ArrayRecordWriterOptions) -> Result<Self> {
        options.validate()?;
        let compressor = options.compressor();
        let mut sink = ChunkSink::new(dest, 0);
        start_file(&mut sink, options.metadata.as_deref(), compressor, 0)?;
        let config =
            EncoderConfig { transpose: options.transpose, compressor, bucket_size: options.transpose_bucket_size };
        let threads = options.threads();
        let layout = Indexed { written: Vec::new(), pad_to_block_boundary: options.pad_to_block_boundary };
        // Chunks hold `group_size` records: their size is unknown here.
        let chunker = Chunker::new(sink, layout, config, threads, 0, Tuning::default());
        Ok(Self { chunker, options, num_records: 0, closed: false })
    }

    /// The options.
    pub(crate) fn options(&self) -> &ArrayRecordWriterOptions {
        &self.options
    }

    /// The number of records written so far.
    pub(crate) fn num_records(&self) -> u64 {
        self.num_records
    }

    fn check_open(&self) -> Result<()> {
        if self.closed {
            return Err(Error::new(ErrorKind::Usage("writer already closed")));
        }
        Ok(())
    }

    /// Writes one record; it gets the next index.
    pub fn write_record(&mut self, record: &[u8]) -> Result<()> {
        self.check_open()?;
        self.chunker.add_record(record)?;
        self.num_records += 1;
        if self.chunker.num_records() >= self.options.group_size {
            self.chunker.close_chunk()?;
        }
        Ok(())
    }

    /// Writes an already encoded data chunk (simple or transposed, with its
    /// verified header), without re-encoding it. The records written so far
    /// must fill whole groups, and the chunk must hold 1 to `group_size`
    /// records; after a chunk of fewer than `group_size` records nothing more
    /// can be written.
    pub(crate) fn write_encoded_chunk(&mut self, header: &ChunkHeader, data: &[u8]) -> Result<()> {
        self.check_open()?;
        let group_size = self.options.group_size;
        if !self.num_records.is_multiple_of(group_size) {
            return Err(Error::new(ErrorKind::Usage("a copied chunk must begin a group")));
        }
        if !(1..=group_size).contains(&header.num_records()) {
            return Err(ErrorKind::InvalidArgument(format!(
                "a copied chunk holds {} records, not 1 to group_size {group_size}",
                header.num_records()
            ))
            .into());
        }
        self.chunker.write_encoded_chunk(header, data)?;
        self.num_records += header.num_records();
        Ok(())
    }

    /// Writes a metadata chunk copied from another file; only before any record.
    pub(crate) fn write_metadata_chunk(&mut self, header: &ChunkHeader, data: &[u8]) -> Result<()> {
        self.check_open()?;
        if self.num_records > 0 {
            return Err(Error::new(ErrorKind::Usage("a metadata chunk must come before the records")));
        }
        self.chunker.sink.write_chunk(header, data).map(|_| ())
    }

    /// Finishes the file (last chunk, footer, padding, postscript, padding),
    /// flushes the destination and returns it.
    pub fn close(mut self) -> Result<W> {
        self.finish()
    }

    fn finish(&mut self) -> Result<W> {
        self.check_open()?;
        self.closed = true;
        let result = self.write_trailer();
        if result.is_err() {
            self.chunker.sink.fail();
        }
        result?;
        self.chunker.sink.flush()?;
        self.chunker.sink.take_dest()
    }

    fn write_trailer(&mut self) -> Result<()> {
        self.chunker.finish_data()?;
        let sink = &mut self.chunker.sink;
        let footer_offset = sink.pos();
        let chunks = &self.chunker.layout.written;
        // As C++: the stored options say how many threads encoded the chunks.
        let stored = ArrayRecordWriterOptions { parallelism: Some(self.options.threads()), ..self.options.clone() };
        let metadata = FooterMetadata {
            array_record_metadata: Some(ArrayRecordMetadata {
                version: Some(VERSION),
                num_chunks: Some(chunks.len() as u64),
                num_records: Some(chunks.iter().filter_map(|c| c.num_records).sum()),
                writer_options: Some(stored.to_string()),
            }),
        };
        let mut footer = SimpleChunkEncoder::new(self.options.compressor());
        footer.add_record(&prost::Message::encode_to_vec(&metadata));
        for entry in chunks {
            footer.add_record(&prost::Message::encode_to_vec(entry));
        }
        write_simple_chunk(sink, &mut footer)?;
        sink.pad_to_block_boundary()?;
        let mut postscript = SimpleChunkEncoder::new(CompressorOptions::uncompressed());
        let record = encode_postscript(footer_offset);
        for _ in 0..POSTSCRIPT_COPIES {
            postscript.add_record(&record);
        }
        write_simple_chunk(sink, &mut postscript)?;
        sink.pad_to_block_boundary()
    }
}

/// Encodes and writes the records of `encoder` as one simple chunk.
fn write_simple_chunk<W: Write>(sink: &mut ChunkSink<W>, encoder: &mut SimpleChunkEncoder) -> Result<()> {
    let (num_records, decoded) = (encoder.num_records(), encoder.decoded_data_size());
    let mut data = Vec::new();
    encoder.encode(&mut data).map_err(|e| encode_error(sink.pos(), EncodeError::Codec(e)))?;
    sink.write_new_chunk(ChunkType::Simple, &data, num_records, decoded).map(|_| ())
}

impl<W: Write> Drop for ArrayRecordWriter<W> {
    fn drop(&mut self) {
        if !self.closed && self.chunker.sink.is_open() {
            // Best effort: errors can only be reported by `close`.
            let _ = self.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sha256 of a byte string (the `sha2` crate: independent of the code under test).
    fn sha256(data: &[u8]) -> [u8; 32] {
        use sha2::Digest;
        sha2::Sha256::digest(data).into()
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha256_is_right() {
        assert_eq!(hex(&sha256(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(hex(&sha256(b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    /// The byte-exact vector of the spec (§9), written by the C++ writer.
    #[test]
    fn cpp_vector_is_byte_identical() {
        let options: ArrayRecordWriterOptions = "group_size:2,uncompressed".parse().unwrap();
        let mut writer = ArrayRecordWriter::new(Vec::new(), options).unwrap();
        for record in [&b"hello"[..], b"", b"world!!"] {
            writer.write_record(record).unwrap();
        }
        let file = writer.close().unwrap();
        assert_eq!(file.len(), 131072);
        // The first data chunk's data at 64 + 40, and the postscript's records.
        assert_eq!(&file[104..113], b"\x00\x02\x05\x00hello");
        let postscript = b"\x08\xa3\x01\x10\xde\xc0\xeb\xfe\x84\xce\xc3\xc9\x71";
        let at = 65536 + 24 + 40 + 5;
        assert_eq!(&file[at - 5..at], b"\x00\x03\x0d\x0d\x0d");
        assert_eq!(&file[at..at + 13], postscript);
        assert_eq!(hex(&sha256(&file)), "378f363d7d311f43e73466475871ab523ec8739c870e5d583a3de92833e1d668");
    }

    #[test]
    fn parallel_encoding_writes_the_same_chunks() {
        let records: Vec<Vec<u8>> =
            (0..500u32).map(|i| format!("record {i} {}", "x".repeat((i % 97) as usize)).into_bytes()).collect();
        let write = |options: &str| {
            let mut writer = ArrayRecordWriter::new(Vec::new(), options.parse().unwrap()).unwrap();
            for r in &records {
                writer.write_record(r).unwrap();
            }
            writer.close().unwrap()
        };
        let serial = write("group_size:7,transpose,zstd:1,max_parallelism:1");
        let parallel = write("group_size:7,transpose,zstd:1,max_parallelism:3");
        // Only the stored max_parallelism differs (and so the footer chunk and what follows).
        assert_eq!(serial.len(), parallel.len());
        let footer = serial.iter().zip(&parallel).position(|(a, b)| a != b).unwrap();
        let mut reader = crate::ArrayRecordReader::new(std::io::Cursor::new(&parallel)).unwrap();
        assert_eq!(
            reader.index().writer_options.as_deref().unwrap(),
            "group_size:7,transpose:true,pad_to_block_boundary:false,transpose_bucket_size:256,zstd:1,window_log:20,max_parallelism:3"
        );
        // The postscript chunk's data: 00 03 L L L, then the records.
        let at = serial.len() - 65536 + 24 + 40;
        let len = usize::from(serial[at + 2]);
        let footer_offset = crate::trailer::parse_postscript(&serial[at + 5..at + 5 + len]).unwrap();
        assert!(footer_offset > 1000);
        assert!(footer as u64 >= footer_offset, "data chunks differ at {footer}, footer at {footer_offset}");
        let all = reader.read_batch(crate::Selection::All).unwrap();
        assert_eq!(all.len(), records.len());
        assert!(all.iter().zip(&records).all(|(a, b)| a == b));
    }

    #[test]
    fn close_reports_write_errors_and_drop_writes_a_file() {
        #[derive(Debug)]
        struct Failing;
        impl Write for Failing {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk full"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut writer = ArrayRecordWriter::new(Failing, ArrayRecordWriterOptions::default()).unwrap();
        writer.write_record(b"x").unwrap();
        let err = writer.close().unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");

        let mut file = Vec::new();
        {
            let mut writer = ArrayRecordWriter::new(&mut file, ArrayRecordWriterOptions::default()).unwrap();
            writer.write_record(b"x").unwrap();
        }
        assert_eq!(file.len(), 131072);
        let mut reader = crate::ArrayRecordReader::new(std::io::Cursor::new(&file)).unwrap();
        assert_eq!(reader.read(0).unwrap(), &b"x"[..]);
    }
}
