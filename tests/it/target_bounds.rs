//! The built-in target stays bounded when exposed (`h2load-rs serve`): out-of-range route
//! arguments are 400s, idle connections of every protocol close, connections are capped with one
//! rate-limited log line, and uploads to `/echo` that are never read hold bounded memory.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use h2load_rs::proto::h2::{self as h2frame, FrameHead};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

/// Longest any wait in these tests may take: generous, for a busy machine.
const PATIENCE: Duration = Duration::from_secs(20);

/// `h2load-rs serve` in a process of its own (its memory and stderr are its own), stopped when dropped.
struct Serve {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Serve {
    /// Starts `serve --port 0` with `flags`, once it says where it listens.
    fn start(flags: &[&str]) -> Serve {
        let mut child = Command::new(BIN)
            .args(["serve", "--port", "0"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let lines = stderr.clone();
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .split_whitespace()
            .find_map(|word| {
                word.strip_prefix("http://")
                    .or(word.strip_prefix("https://"))
            })
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .parse()
            .unwrap();
        Serve {
            child,
            addr,
            stderr,
        }
    }

    /// Its resident memory, from /proc.
    fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        kib * 1024
    }

    /// Still running, and nothing panicked.
    fn assert_alive(&mut self) {
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "serve exited: {:?}",
            self.stderr()
        );
        assert!(
            !self.stderr().iter().any(|line| line.contains("panicked")),
            "{:?}",
            self.stderr()
        );
    }

    fn stderr(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` over HTTP/1.1 on a new connection: the status code and the body.
fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(PATIENCE))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: target\r\nconnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("no complete response: {response:?}")))?;
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status in {head:?}")))?;
    Ok((code, body.to_owned()))
}

#[test]
fn out_of_range_route_arguments_are_400_and_the_target_stays_up() {
    let mut serve = Serve::start(&[]);
    for path in [
        "/delay/1e22",
        "/delay/18446744073709551615",
        "/delay/2592000001",
        "/delay/-1",
        "/delay/inf",
        "/delay/NaN",
        "/delay/",
        "/bytes/-1",
        "/bytes/18446744073709551616",
        "/bytes/1e3",
        "/status/99999",
        "/status/0x200",
    ] {
        let (code, body) = get(serve.addr, path).unwrap_or_else(|error| panic!("{path}: {error}"));
        assert_eq!(code, 400, "{path}: {body}");
    }
    // The largest delay allowed is accepted (not waited for here: the request is abandoned).
    let mut long = TcpStream::connect(serve.addr).unwrap();
    write!(long, "GET /delay/2592000000 HTTP/1.1\r\nhost: t\r\n\r\n").unwrap();
    assert_eq!(get(serve.addr, "/ping").unwrap(), (200, "pong".to_owned()));
    drop(long);
    std::thread::sleep(Duration::from_millis(200));
    serve.assert_alive();
}
