//! `WriteBehind`: a `Write` adapter whose writes to the destination happen
//! on a background thread.

use std::io::{self, Write};

use crate::flush::{SyncWrite, flush_and_sync};
use crate::fork::ProcessBound;
use crate::sync::mpsc::{Receiver, Sender, SyncSender, TryRecvError, channel, sync_channel};
use crate::sync::thread::{self, JoinHandle};

/// Default size of each buffer handed to the background thread.
const DEFAULT_BUFFER: usize = 1 << 20;
/// Buffers queued for the background thread at most (besides the one it is
/// writing and the one being filled).
const QUEUED: usize = 2;

/// What the caller sends to the I/O thread.
enum Message<W> {
    /// Bytes to write.
    Data(Vec<u8>),
    /// Run this on the destination (flush it, or flush and sync it) and
    /// answer; its error, like any other, is sent on the error channel.
    Call(fn(&mut W) -> io::Result<()>, SyncSender<Option<io::Error>>),
}

/// Writes to `W` on a background thread.
///
/// Bytes are gathered into buffers of [`capacity`](Self::with_capacity)
/// bytes (1 MiB by default) that a thread of its own writes to the
/// destination, so that the kernel's work of writing a file happens beside
/// the caller's rather than after it. At most a few buffers wait at a time
/// (memory stays bounded: a slow destination makes `write` wait).
///
/// A failed write is reported by a later `write`, or by
/// [`flush`](Write::flush), which waits until every byte given so far is
/// written and the destination flushed. After a failure nothing more is
/// written. [`into_inner`](Self::into_inner) flushes and returns the
/// destination; dropping a `WriteBehind` flushes too but can only ignore
/// errors (as `std::io::BufWriter` does).
///
/// The thread belongs to the process that started it: in a child forked
/// since, where it does not exist, every call fails and dropping the
/// `WriteBehind` writes nothing and waits for nothing (what the parent gave
/// the thread is the parent's to write).
///
/// [`RecordWriter::with_io_thread`](crate::RecordWriter::with_io_thread)
/// and [`ArrayRecordWriter::with_io_thread`](crate::ArrayRecordWriter::with_io_thread)
/// write through one, which takes the file writes off the thread that adds
/// records.
pub(crate) struct WriteBehind<W> {
    /// The buffer being filled.
    buffer: Vec<u8>,
    capacity: usize,
    /// The thread and its channels, of the process that started it.
    link: ProcessBound<Link<W>>,
    /// Set once an error was seen: nothing more is written.
    failed: bool,
    /// Whether bytes were given since the last flush.
    unflushed: bool,
    /// `Write::flush` of the destination (kept here so that `Write` and
    /// `Drop` need no bound on `W`).
    flush_dest: fn(&mut W) -> io::Result<()>,
}

/// The I/O thread and the channels to and from it.
struct Link<W> {
    to_thread: Option<SyncSender<Message<W>>>,
    /// Buffers the thread has written, to fill again.
    spare: Receiver<Vec<u8>>,
    /// The thread's first write error, sent once.
    errors: Receiver<io::Error>,
    thread: Option<JoinHandle<W>>,
}

/// Why a `WriteBehind` fails in a forked child.
const FORKED: &str = "the write-behind thread belongs to the process that started it, not to this forked child";

impl<W> std::fmt::Debug for WriteBehind<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBehind")
            .field("buffered", &self.buffer.len())
            .field("capacity", &self.capacity)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl<W: Write + Send + 'static> WriteBehind<W> {
    /// Writes to `dest` on a new thread, in buffers of 1 MiB. Fails if the
    /// thread cannot be started (`dest` is then dropped).
    pub(crate) fn new(dest: W) -> io::Result<Self> {
        Self::with_capacity(DEFAULT_BUFFER, dest)
    }

    /// Writes to `dest` on a new thread, in buffers of `capacity` bytes (at
    /// least 1). Fails if the thread cannot be started (`dest` is then dropped).
    pub(crate) fn with_capacity(capacity: usize, dest: W) -> io::Result<Self> {
        let capacity = capacity.max(1);
        let (to_thread, messages) = sync_channel::<Message<W>>(QUEUED);
        let (spare_tx, spare) = channel::<Vec<u8>>();
        let (error_tx, errors) = channel::<io::Error>();
        let thread = thread::Builder::new()
            .name("riegeli-write".into())
            .spawn(move || run(dest, &messages, &spare_tx, &error_tx))?;
        Ok(Self {
            buffer: Vec::with_capacity(capacity),
            capacity,
            link: ProcessBound::new(Link { to_thread: Some(to_thread), spare, errors, thread: Some(thread) }),
            failed: false,
            unflushed: false,
            flush_dest: <W as Write>::flush,
        })
    }
}

impl<W> WriteBehind<W> {
    /// Hands a filled buffer to the thread without copying it, and returns
    /// an empty one to fill next (one the thread is done with, when there is
    /// one). Bytes given to [`write`](Write::write) before are written first.
    pub(crate) fn write_buffer(&mut self, buffer: Vec<u8>) -> io::Result<Vec<u8>> {
        self.check()?;
        self.send_buffer()?;
        let next = self.link()?.empty_buffer(buffer.capacity());
        if !buffer.is_empty() {
            self.unflushed = true;
            self.send(Message::Data(buffer))?;
        }
        Ok(next)
    }

    /// Flushes everything (unless nothing was given since the last flush)
    /// and returns the destination, or the first error.
    pub(crate) fn into_inner(mut self) -> io::Result<W> {
        if self.unflushed {
            self.flush()?;
        }
        self.check()?;
        self.stop().ok_or_else(|| io::Error::other("the write-behind thread panicked"))
    }

    /// Stops the thread and takes the destination back (nothing in a forked child).
    fn stop(&mut self) -> Option<W> {
        let link = self.link.get_mut()?;
        link.to_thread = None;
        link.thread.take()?.join().ok()
    }

    /// The thread and its channels; an error in a forked child (where they
    /// are not used: the writer fails).
    fn link(&mut self) -> io::Result<&mut Link<W>> {
        match self.link.get_mut() {
            Some(link) => Ok(link),
            None => {
                self.failed = true;
                Err(io::Error::other(FORKED))
            }
        }
    }

    /// The thread's error, if it reported one (then nothing more is written).
    fn check(&mut self) -> io::Result<()> {
        if self.failed {
            return Err(io::Error::other("an earlier write-behind write failed"));
        }
        match self.link()?.errors.try_recv() {
            Ok(e) => {
                self.failed = true;
                Err(e)
            }
            Err(TryRecvError::Empty) => Ok(()),
            Err(TryRecvError::Disconnected) => {
                self.failed = true;
                Err(io::Error::other("the write-behind thread stopped"))
            }
        }
    }

    /// Hands the buffer to the thread and takes an empty one.
    fn send_buffer(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let capacity = self.capacity;
        let next = self.link()?.empty_buffer(capacity);
        let full = std::mem::replace(&mut self.buffer, next);
        self.send(Message::Data(full))
    }

    fn send(&mut self, message: Message<W>) -> io::Result<()> {
        let sent = self.link()?.to_thread.as_ref().is_some_and(|tx| tx.send(message).is_ok());
        if !sent {
            self.failed = true;
            return Err(io::Error::other("the write-behind thread stopped"));
        }
        Ok(())
    }
}

impl<W> Link<W> {
    /// A buffer the thread is done with, or a new one of `capacity` bytes.
    fn empty_buffer(&self, capacity: usize) -> Vec<u8> {
        match self.spare.try_recv() {
            Ok(mut spare) => {
                spare.clear();
                spare
            }
            Err(_) => Vec::with_capacity(capacity),
        }
    }
}

/// The background thread: writes what arrives until the sender goes away.
fn run<W: Write>(
    mut dest: W,
    messages: &Receiver<Message<W>>,
    spare: &Sender<Vec<u8>>,
    errors: &Sender<io::Error>,
) -> W {
    // After the first error (sent once to the caller) nothing more is written.
    let mut failed = false;
    while let Ok(message) = messages.recv() {
        let (result, reply) = match message {
            Message::Data(buffer) => {
                let result = if failed { Ok(()) } else { dest.write_all(&buffer) };
                let _ = spare.send(buffer);
                (result, None)
            }
            Message::Call(call, reply) => (if failed { Ok(()) } else { call(&mut dest) }, Some(reply)),
        };
        let mut refused = None;
        match result {
            // A call the destination refuses (a sync it cannot make) fails that call only:
            // nothing was lost, and writing goes on.
            Err(e) if reply.is_some() && e.kind() == io::ErrorKind::Unsupported => refused = Some(e),
            Err(e) => {
                failed = true;
                let _ = errors.send(e);
            }
            Ok(()) => {}
        }
        // After this answer the caller reads `errors`: an error of this flush is reported there.
        if let Some(reply) = reply {
            let _ = reply.send(refused);
        }
    }
    dest
}

impl<W> WriteBehind<W> {
    /// Hands over the buffer, has the thread run `call` on the destination
    /// after everything before it, and waits for it: its error, or an
    /// earlier one, is returned. An [`io::ErrorKind::Unsupported`] error of
    /// the call (a sync the destination cannot make) fails that call only.
    fn call(&mut self, call: fn(&mut W) -> io::Result<()>) -> io::Result<()> {
        self.check()?;
        self.send_buffer()?;
        let (reply_tx, reply) = sync_channel(1);
        self.send(Message::Call(call, reply_tx))?;
        let refused = match reply.recv() {
            Ok(refused) => refused,
            Err(_) => {
                self.failed = true;
                return Err(io::Error::other("the write-behind thread stopped"));
            }
        };
        self.check()?;
        if let Some(refused) = refused {
            return Err(refused);
        }
        self.unflushed = false;
        Ok(())
    }
}

impl<W> Write for WriteBehind<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.check()?;
        let room = self.capacity - self.buffer.len();
        let taken = data.len().min(room);
        self.unflushed |= taken > 0;
        self.buffer.extend_from_slice(data.get(..taken).unwrap_or_default());
        if self.buffer.len() >= self.capacity {
            self.send_buffer()?;
        }
        Ok(taken)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.call(self.flush_dest)
    }
}

impl<W: SyncWrite> SyncWrite for WriteBehind<W> {
    /// Waits until every byte given so far is written, then flushes and
    /// syncs the destination on its thread.
    fn sync(&mut self) -> io::Result<()> {
        self.call(flush_and_sync::<W>)
    }
}

impl<W> Drop for WriteBehind<W> {
    fn drop(&mut self) {
        if !self.failed && self.unflushed {
            let _ = self.flush();
        }
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A destination shared with the test, failing after `limit` bytes.
    #[derive(Clone)]
    struct Shared {
        bytes: Arc<Mutex<Vec<u8>>>,
        limit: usize,
        flushes: Arc<Mutex<usize>>,
    }

    impl Shared {
        fn new(limit: usize) -> Self {
            Self { bytes: Arc::default(), limit, flushes: Arc::default() }
        }
        fn bytes(&self) -> Vec<u8> {
            self.bytes.lock().unwrap().clone()
        }
    }

    impl Write for Shared {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            let mut bytes = self.bytes.lock().unwrap();
            if bytes.len() + data.len() > self.limit {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "full"));
            }
            bytes.extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            *self.flushes.lock().unwrap() += 1;
            Ok(())
        }
    }

    impl SyncWrite for Shared {
        /// Counts as a flush too, noting the bytes written by then.
        fn sync(&mut self) -> io::Result<()> {
            *self.flushes.lock().unwrap() += 1000;
            self.bytes.lock().unwrap().push(b'!');
            Ok(())
        }
    }

    #[test]
    fn sync_runs_on_the_thread_after_every_byte() {
        let dest = Shared::new(usize::MAX);
        let mut writer = WriteBehind::with_capacity(4, dest.clone()).unwrap();
        writer.write_all(b"0123456789").unwrap();
        writer.sync().unwrap();
        assert_eq!(dest.bytes(), b"0123456789!");
        assert_eq!(*dest.flushes.lock().unwrap(), 1001, "flushed, then synced");
        // Nothing given since: `into_inner` does not flush again.
        assert_eq!(*writer.into_inner().unwrap().flushes.lock().unwrap(), 1001);
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn writes_everything_in_order() {
        let dest = Shared::new(usize::MAX);
        let mut writer = WriteBehind::with_capacity(100, dest.clone()).unwrap();
        let data = pattern(10_000);
        // Pieces smaller than, equal to and larger than a buffer.
        for piece in data.chunks(1).take(50).chain(data[50..].chunks(333)) {
            writer.write_all(piece).unwrap();
        }
        writer.flush().unwrap();
        assert_eq!(dest.bytes(), data);
        assert_eq!(*dest.flushes.lock().unwrap(), 1);
        writer.write_all(b"tail").unwrap();
        let back = writer.into_inner().unwrap();
        assert_eq!(*back.flushes.lock().unwrap(), 2, "into_inner flushes what was written since");
        assert_eq!(back.bytes().len(), 10_004);
        assert_eq!(&back.bytes()[10_000..], b"tail");
    }

    #[test]
    fn handed_over_buffers_keep_their_place() {
        let dest = Shared::new(usize::MAX);
        let mut writer = WriteBehind::with_capacity(100, dest.clone()).unwrap();
        writer.write_all(b"first ").unwrap();
        let next = writer.write_buffer(b"second ".to_vec()).unwrap();
        assert!(next.is_empty());
        writer.write_all(b"third").unwrap();
        let empty = writer.write_buffer(Vec::new()).unwrap();
        assert!(empty.is_empty());
        writer.flush().unwrap();
        assert_eq!(dest.bytes(), b"first second third");
    }

    #[test]
    fn drop_writes_what_was_buffered() {
        let dest = Shared::new(usize::MAX);
        let mut writer = WriteBehind::new(dest.clone()).unwrap();
        writer.write_all(b"kept").unwrap();
        drop(writer);
        assert_eq!(dest.bytes(), b"kept");
    }

    #[test]
    fn an_error_is_reported_and_writing_stops() {
        let dest = Shared::new(250);
        let mut writer = WriteBehind::with_capacity(100, dest.clone()).unwrap();
        // The third buffer does not fit: the thread fails on it.
        let error = writer.write_all(&pattern(300)).and_then(|()| writer.flush()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::StorageFull);
        // Later calls keep failing, and nothing more reaches the destination.
        assert!(writer.write_all(b"more").is_err());
        assert!(writer.flush().is_err());
        assert!(writer.into_inner().is_err());
        assert_eq!(dest.bytes(), pattern(200));
    }

    #[test]
    fn memory_stays_bounded_with_a_slow_destination() {
        /// Writes only when the test allows it.
        struct Gate(Receiver<()>, Arc<Mutex<usize>>);
        impl Write for Gate {
            fn write(&mut self, data: &[u8]) -> io::Result<usize> {
                self.0.recv().map_err(io::Error::other)?;
                *self.1.lock().unwrap() += data.len();
                Ok(data.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let (open, gate) = channel();
        let written = Arc::new(Mutex::new(0));
        let mut writer = WriteBehind::with_capacity(10, Gate(gate, Arc::clone(&written))).unwrap();
        let done = Arc::new(Mutex::new(0usize));
        let done_in_thread = Arc::clone(&done);
        let producer = std::thread::spawn(move || {
            for _ in 0..20 {
                writer.write_all(&[1; 10]).unwrap();
                *done_in_thread.lock().unwrap() += 1;
            }
            writer
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        // One buffer held by the blocked thread, QUEUED waiting, then `write` blocks.
        let accepted = *done.lock().unwrap();
        assert!(accepted <= QUEUED + 2, "{accepted} buffers accepted with the destination blocked");
        for _ in 0..20 {
            open.send(()).unwrap();
        }
        let writer = producer.join().unwrap();
        writer.into_inner().unwrap();
        assert_eq!(*written.lock().unwrap(), 200);
    }
}
