//! `ReadHints`: what a reader tells its source of the reads to come, so that a
//! source that fetches ahead (an object in object storage) fetches what will
//! be read and not what will not, and what the source offers the reader's
//! threads. Every method has a default that does nothing; reading gives the
//! same records whatever a source does with them.

use std::fs::File;
use std::io::{BufReader, Cursor};
use std::ops::Range;
use std::sync::Arc;

use crate::positional::{self, PositionalFile, ReadAt};

/// What a [`RecordReader`](crate::RecordReader) tells its source of the
/// reads to come (today: [`set_byte_range`](crate::RecordReader::set_byte_range)
/// tells it which bytes a reader of one byte range of a file reads).
///
/// Sources that read only what they are asked for (files, memory) need do
/// nothing: every method has a default that does nothing, and the standard
/// sources implement the trait with those defaults. A source that fetches
/// ahead of the reads (an object in object storage, read by ranged requests)
/// uses them to fetch the bytes that will be read, and no others.
///
/// The methods take `&self`: a hint changes nothing a reader can observe, so
/// a source that acts on one keeps what it learns behind interior mutability.
pub trait ReadHints {
    /// Reading will stop about `end` (a file position; `u64::MAX`: no
    /// limit): bytes past it are read at most to finish a chunk that crosses
    /// it, and not in order from there on. Reads may come before `end` in any
    /// order (the reader is looking for where it starts).
    fn will_stop_at(&self, end: u64) {
        let _ = end;
    }

    /// The reader is about to read the bytes of `range` in order, from
    /// `range.start` (where it reads the source next: a chunk boundary, or
    /// past the bytes of it the reader holds already), and past `range.end`
    /// at most what finishes a chunk that crosses it (as
    /// [`will_stop_at`](Self::will_stop_at) says).
    fn will_read(&self, range: Range<u64>) {
        let _ = range;
    }

    /// A view of the same bytes that several threads can read at offsets at
    /// once, if the source has one: the decoding threads of an
    /// [`ArrayRecordReader`](crate::ArrayRecordReader)'s parallel reads then
    /// read their chunks themselves through it, instead of the calling thread
    /// reading every chunk, and its [`will_need`](ReadAt::will_need) is told
    /// which chunks a read is about to read. A [`PositionalFile`]
    /// offers itself (where the platform reads at offsets), an object in
    /// object storage its shared cache; the default offers nothing.
    fn positional(&self) -> Option<Arc<dyn ReadAt>> {
        None
    }
}

/// A local file reads what it is asked for: hints change nothing.
/// The file itself is read at offsets by other threads (the decoding threads
/// of an [`ArrayRecordReader`](crate::ArrayRecordReader)'s parallel reads),
/// where the platform reads at an offset in one call (Unix's `pread`,
/// Windows' `seek_read`).
impl ReadHints for PositionalFile {
    fn positional(&self) -> Option<Arc<dyn ReadAt>> {
        if positional::POSITIONAL { Some(Arc::new(self.clone())) } else { None }
    }
}

impl ReadHints for File {}

impl ReadHints for &[u8] {}

impl<T> ReadHints for Cursor<T> {}

impl<R: ReadHints> ReadHints for BufReader<R> {
    fn will_stop_at(&self, end: u64) {
        self.get_ref().will_stop_at(end);
    }

    fn will_read(&self, range: Range<u64>) {
        self.get_ref().will_read(range);
    }

    fn positional(&self) -> Option<Arc<dyn ReadAt>> {
        self.get_ref().positional()
    }
}

impl<R: ReadHints + ?Sized> ReadHints for &mut R {
    fn will_stop_at(&self, end: u64) {
        (**self).will_stop_at(end);
    }

    fn will_read(&self, range: Range<u64>) {
        (**self).will_read(range);
    }

    fn positional(&self) -> Option<Arc<dyn ReadAt>> {
        (**self).positional()
    }
}

impl<R: ReadHints + ?Sized> ReadHints for Box<R> {
    fn will_stop_at(&self, end: u64) {
        (**self).will_stop_at(end);
    }

    fn will_read(&self, range: Range<u64>) {
        (**self).will_read(range);
    }

    fn positional(&self) -> Option<Arc<dyn ReadAt>> {
        (**self).positional()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::io::{self, Read, Seek, SeekFrom};

    use super::*;
    use crate::{RecordReader, RecordWriter};

    /// A file in memory that notes the hints it is given.
    struct Noting<'a> {
        bytes: Cursor<&'a [u8]>,
        hints: RefCell<Vec<String>>,
    }

    impl Read for Noting<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.bytes.read(buf)
        }
    }

    impl Seek for Noting<'_> {
        fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
            self.bytes.seek(pos)
        }
    }

    impl ReadHints for Noting<'_> {
        fn will_stop_at(&self, end: u64) {
            self.hints.borrow_mut().push(format!("stop at {end}"));
        }

        fn will_read(&self, range: Range<u64>) {
            // Where the source stands: what the reader reads next.
            let at = self.bytes.position();
            self.hints.borrow_mut().push(format!("read {range:?} at {at}"));
        }
    }

    #[test]
    fn a_byte_range_tells_the_source_where_reading_stops_then_what_it_reads() {
        let mut writer = RecordWriter::new(Vec::new(), "uncompressed,chunk_size:1k".parse().unwrap()).unwrap();
        for i in 0..20_000 {
            writer.write_record(format!("record {i:05} {}", "x".repeat(20)).as_bytes()).unwrap();
        }
        let file = writer.close().unwrap();
        assert!(file.len() > 3 * 65536, "{} bytes", file.len());
        let source = Noting { bytes: Cursor::new(&file[..]), hints: RefCell::default() };
        let mut reader = RecordReader::new(source);
        reader.set_byte_range(70_000..140_000).unwrap();
        let first = reader.pos().chunk_begin();
        assert!((70_000..72_000).contains(&first), "first chunk at {first}");
        // Reading stops at the range's end while the first chunk is looked for; the reader
        // then reads on to the range's end, from where the source stands (past the block
        // read to find the first chunk, which the reader holds).
        let hints = reader.get_ref().hints.borrow().clone();
        assert_eq!(hints.len(), 2, "{hints:?}");
        assert_eq!(hints[0], "stop at 140000");
        let (range, at) = hints[1].strip_prefix("read ").unwrap().split_once(" at ").unwrap();
        let next: u64 = at.parse().unwrap();
        assert!(next > first, "{hints:?}");
        assert_eq!(range, format!("{next}..{}", next.max(140_000)));
        // Every record from the first chunk on, until the range's end.
        let record = reader.read_record().unwrap().unwrap();
        assert_eq!(reader.last_pos().unwrap().chunk_begin(), first);
        assert!(record.starts_with(b"record "), "{record:?}");
        // A range holding no chunk boundary: nothing to read, an empty range from where
        // reading would begin.
        let source = Noting { bytes: Cursor::new(&file[..]), hints: RefCell::default() };
        let mut reader = RecordReader::new(source);
        reader.set_byte_range(70_001..70_002).unwrap();
        assert_eq!(reader.read_record().unwrap(), None);
        let hints = reader.get_ref().hints.borrow().clone();
        assert_eq!(hints[0], "stop at 70002");
        let (range, at) = hints[1].strip_prefix("read ").unwrap().split_once(" at ").unwrap();
        assert_eq!(range, format!("{at}..{at}"), "{hints:?}");
    }
}
