//! [`ChunkStream`]: a file's chunks in order, as the sequential readers get
//! them. Without threads each chunk is read and hash-checked on the calling
//! thread; with `parallelism > 0` chunks are read ahead and data chunks
//! hash-checked and decoded on the decode stream ([`ReadAhead`]), their
//! outcomes handed back in file order with the chunk. Either way the
//! results, positions and damage are those of reading one chunk after the
//! other. [`RecordReader`](crate::RecordReader) is a cursor, a trailer filter
//! and seek/search over one; [`ChunkReader`](crate::ChunkReader) is one with
//! decoding optional.

use std::io::{self, Read};

use bytes::Bytes;
use riegeli_codec::{DecodedRecords, FieldProjection};

use crate::chunk_reader::{Pending, RawChunk, ReadError, read_chunk};
use crate::decode::ChunkDecoder;
use crate::error::Result;
use crate::options::RecordReaderOptions;
use crate::pool::Plug;
use crate::read_ahead::{Fetched, ReadAhead, skip_damage_ahead};
use crate::skipped_region::SkippedRegion;
use crate::source::Source;
use crate::stream::{ChunkDecodeFn, DecodeWorker};

/// A file's chunks in order: the source, the read-ahead (with
/// `parallelism > 0`) and the decoder of the calling thread.
pub(crate) struct ChunkStream<R> {
    source: Source<R>,
    /// Chunk limits, hash checks, threads, the projection.
    options: RecordReaderOptions,
    /// With `parallelism > 0`: chunks read ahead, decoded on the decode stream.
    ahead: Option<ReadAhead>,
    /// Decodes on the calling thread.
    decoder: ChunkDecoder,
}

impl<R> std::fmt::Debug for ChunkStream<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkStream").field("pos", &self.pos()).field("ahead", &self.ahead).finish_non_exhaustive()
    }
}

impl<R> ChunkStream<R> {
    /// The chunks of `source` from its position on.
    pub(crate) fn new(source: Source<R>, options: RecordReaderOptions) -> Self {
        Self::with_plug(source, options, Plug::default())
    }

    /// [`new`](Self::new), the read-ahead's decoding workers running in what
    /// `plug` makes of them (see [`DecodeStream::new`](crate::stream::DecodeStream::new)).
    pub(crate) fn with_plug(source: Source<R>, options: RecordReaderOptions, plug: Plug<DecodeWorker>) -> Self {
        let projection = options.field_projection.clone();
        let ahead = (options.parallelism > 0)
            .then(|| ReadAhead::with_plug(options.parallelism, &options.chunks, projection.clone(), plug));
        let decoder = ChunkDecoder::with_projection(&options.chunks, projection);
        Self { source, options, ahead, decoder }
    }

    pub(crate) fn options(&self) -> &RecordReaderOptions {
        &self.options
    }

    /// Where the next chunk [`next`](Self::next) returns begins (or where
    /// reading ends, if it returns none).
    pub(crate) fn pos(&self) -> u64 {
        self.ahead.as_ref().and_then(ReadAhead::front_begin).unwrap_or(self.source.pos())
    }

    /// The source; its position is not [`pos`](Self::pos) while chunks are
    /// read ahead.
    pub(crate) fn source(&self) -> &Source<R> {
        &self.source
    }

    /// The source, to position it or look for chunk boundaries in it: what
    /// was read ahead is forgotten first.
    pub(crate) fn source_mut(&mut self) -> &mut Source<R> {
        self.discard();
        &mut self.source
    }

    /// Forgets the chunks read ahead (chunks being decoded finish in the
    /// background and are dropped; the threads stay).
    pub(crate) fn discard(&mut self) {
        if let Some(ahead) = &mut self.ahead {
            ahead.discard();
        }
    }

    /// Reads ahead no chunk that begins at `pos` or later (it is read only
    /// when asked for).
    pub(crate) fn stop_at(&mut self, pos: u64) {
        if let Some(ahead) = &mut self.ahead {
            ahead.stop_at(pos);
        }
    }

    /// Decodes later chunks with `projection`; chunks already handed to the
    /// threads come back undecoded, to be decoded here.
    pub(crate) fn set_projection(&mut self, projection: FieldProjection) {
        if let Some(ahead) = &mut self.ahead {
            ahead.set_projection(projection.clone());
        }
        self.decoder.set_field_projection(projection.clone());
        self.options.field_projection = projection;
    }

    /// Hands the transposed chunks read ahead from now on to `decode` on the
    /// decoding threads (`None`: decoded into records), reading ahead on
    /// `parallelism` threads if the stream did not read ahead yet (0: as it is).
    pub(crate) fn set_chunk_decode(&mut self, decode: Option<ChunkDecodeFn>, parallelism: usize) {
        if self.ahead.is_none() && parallelism > 0 && decode.is_some() {
            let projection = self.options.field_projection.clone();
            self.ahead = Some(ReadAhead::with_plug(parallelism, &self.options.chunks, projection, Plug::default()));
            self.options.parallelism = parallelism;
        }
        if let Some(ahead) = &mut self.ahead {
            ahead.set_chunk_decode(decode);
        }
    }

    /// Decodes `chunk` on the calling thread (checking its data hash if the
    /// options ask for it): its records, or `None` for a chunk without any.
    pub(crate) fn decode(&mut self, chunk: &RawChunk) -> Result<Option<DecodedRecords>> {
        self.decoder.checked_decode(chunk, self.options.chunks.verify_hashes)
    }

    /// The serialized `RecordsMetadata` of a metadata chunk.
    pub(crate) fn metadata(&mut self, chunk: &RawChunk) -> Result<Bytes> {
        self.decoder.metadata(chunk)
    }
}

impl<R: Read> ChunkStream<R> {
    /// The next chunk (`None` at the end of the file): read here, its hash
    /// checked, or taken from the read-ahead with the decode stream's outcome
    /// (see [`Fetched`]). Damage is an error; [`skip`](Self::skip) moves past it.
    pub(crate) fn next(&mut self) -> std::result::Result<Option<Fetched>, ReadError> {
        match &mut self.ahead {
            Some(ahead) => ahead.fetch(&mut self.source, &self.options),
            None => read_chunk(&mut self.source, &self.options.chunks).map(|chunk| chunk.map(Fetched::serial)),
        }
    }

    /// Reads the chunk at the source's position on the calling thread, past
    /// the read-ahead (which is forgotten): for seek and search.
    pub(crate) fn read_here(&mut self) -> std::result::Result<Option<RawChunk>, ReadError> {
        self.discard();
        read_chunk(&mut self.source, &self.options.chunks)
    }

    /// Moves past the damage `pending` describes; returns the region skipped.
    pub(crate) fn skip(&mut self, pending: Pending) -> Result<SkippedRegion> {
        skip_damage_ahead(self.ahead.as_mut(), &mut self.source, pending)
    }
}

impl<R: Read + io::Seek> ChunkStream<R> {
    /// Moves to chunk boundary `pos`, forgetting what was read ahead.
    pub(crate) fn seek(&mut self, pos: u64) -> io::Result<()> {
        self.source_mut().seek(pos)
    }

    /// The size of the file.
    pub(crate) fn size(&mut self) -> io::Result<u64> {
        self.source.size()
    }
}
