//! Commands on an `http://` URL served here (ranges, on loopback): each command opens its
//! input once, however many ways it reads it (an ArrayRecord file's trailer found, its index
//! and metadata read, then its records), and prints what it prints for the local file.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use crate::{riegeli, testdata, text};

/// A server of `bytes` at every path, answering GETs of ranges (`bytes=A-B`, `bytes=A-`,
/// `bytes=-N`) and HEADs; notes each request as `METHOD range` (`-` without one).
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn serving(bytes: Vec<u8>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/file.array_record", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (noted, bytes) = (Arc::clone(&seen), Arc::new(bytes));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (noted, bytes) = (Arc::clone(&noted), Arc::clone(&bytes));
                std::thread::spawn(move || serve(stream, &bytes, &noted));
            }
        });
        Self { url, seen }
    }

    /// The requests since the last call.
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// The version every answer names (the bytes served never change).
const ETAG: &str = "v1";

/// Answers the requests of one connection until it closes.
fn serve(stream: TcpStream, bytes: &[u8], noted: &Mutex<Vec<String>>) {
    let size = bytes.len() as u64;
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut head = Vec::new();
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 2 {
            head.push(std::mem::take(&mut line).trim_end().to_owned());
        }
        let Some(request) = head.first() else { return };
        let method = request.split(' ').next().unwrap_or_default().to_owned();
        let range = head.iter().find_map(|h| h.to_ascii_lowercase().strip_prefix("range: bytes=").map(str::to_owned));
        noted.lock().unwrap().push(format!("{method} {}", range.as_deref().unwrap_or("-")));
        let length = head.iter().find_map(|h| h.to_ascii_lowercase().strip_prefix("content-length: ")?.parse().ok());
        let _ = (&mut reader).take(length.unwrap_or(0)).read_to_end(&mut Vec::new());
        let (start, end) = match range.as_deref().and_then(|r| r.split_once('-')) {
            Some(("", n)) => (size.saturating_sub(n.parse().unwrap()), size),
            Some((a, "")) => (a.parse().unwrap(), size),
            Some((a, b)) => (a.parse().unwrap(), size.min(b.parse::<u64>().unwrap() + 1)),
            None => (0, size),
        };
        let reply = if method == "HEAD" {
            format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nETag: \"{ETAG}\"\r\n\r\n").into_bytes()
        } else if start >= end {
            format!("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{size}\r\nContent-Length: 0\r\n\r\n")
                .into_bytes()
        } else {
            let mut reply = format!(
                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {start}-{}/{size}\r\nContent-Length: {}\r\nETag: \"{ETAG}\"\r\n\r\n",
                end - 1,
                end - start
            )
            .into_bytes();
            reply.extend_from_slice(&bytes[start as usize..end as usize]);
            reply
        };
        if stream.write_all(&reply).is_err() {
            return;
        }
    }
}

#[test]
fn each_command_opens_its_input_once() {
    let path = testdata("array_record/simple_zstd.array_record");
    let local = path.to_str().unwrap();
    let server = Server::serving(std::fs::read(&path).unwrap());
    for args in [
        &["cat", "--records", "0,17,5..9", "--format", "json"][..],
        &["cat", "--format", "json"],
        &["cat", "--byte-range", "40000.."],
        &["count"],
        &["describe"],
        &["verify"],
    ] {
        let want = riegeli(&[args, &[local]].concat(), b"");
        server.take();
        let got = riegeli(&[args, &[server.url.as_str()]].concat(), b"");
        assert!(got.status.success(), "{args:?}: {}", text(&got.stderr));
        assert_eq!(text(&got.stdout).replace(&server.url, local), text(&want.stdout), "{args:?}");
        // Opening an object is one request: its last 64 KiB, which tell its size too. A
        // second opening would ask for them again (or for the size, by a HEAD).
        let seen = server.take();
        let openings = seen.iter().filter(|r| r.starts_with("HEAD") || r.ends_with(" -65536")).count();
        assert_eq!(openings, 1, "{args:?}: {seen:?}");
    }
}

#[test]
fn a_second_run_reads_from_the_cache_what_the_first_fetched() {
    // An ArrayRecord file of 40 chunks of about 25 KiB that do not compress. `cat --records`
    // of one record of a chunk fetches that chunk (past the object's last 64 KiB, fetched with
    // its opening) and keeps it in the cache on a thread of its own: the process waits for
    // that write before it exits, or the next run fetches the chunk again.
    let dir = crate::scratch_dir("second-run-cache");
    let mut state = 1u64;
    let lines: String = (0..4000)
        .map(|_| {
            (0..32)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    format!("{:016x}", state >> 1)
                })
                .collect::<String>()
                + "\n"
        })
        .collect();
    let path = dir.join("file.array_record");
    let path = path.to_str().unwrap();
    let written = riegeli(
        &["write", "--array-record", "-o", "group_size:100,uncompressed", "-f", "lines", path],
        lines.as_bytes(),
    );
    assert!(written.status.success(), "{}", text(&written.stderr));
    let server = Server::serving(std::fs::read(path).unwrap());
    let cache = dir.join("cache");
    let cache = cache.to_str().unwrap();
    let records = ["50", "1050", "2050", "3050"];
    for record in records {
        let got = riegeli(&["--cache-dir", cache, "cat", "--records", record, server.url.as_str()], b"");
        assert!(got.status.success(), "{}", text(&got.stderr));
        assert_eq!(text(&got.stdout), lines.lines().nth(record.parse().unwrap()).unwrap().to_owned() + "\n");
    }
    server.take();
    for record in records {
        let got = riegeli(&["--cache-dir", cache, "--stats", "cat", "--records", record, server.url.as_str()], b"");
        assert!(got.status.success(), "{}", text(&got.stderr));
        // One HEAD, which checks that the object is the version cached.
        let (seen, stats) = (server.take(), text(&got.stderr));
        assert_eq!(seen, ["HEAD -"], "record {record}: {stats}");
        assert!(stats.contains(" 0 bytes fetched") && stats.contains(" 0 misses"), "{stats}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
