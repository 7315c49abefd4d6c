//! `bh-peek SOCKET`: connects to a Unix socket and says what came of it, for the
//! tests of who may talk to a job's supervisor (run as a test user). Prints one line:
//! `refused ERRNO` (the connection failed), `eof` (accepted, then closed without a
//! word), or `data N` (N bytes came within 2 s).

use std::io::Read;
use std::time::Duration;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: bh-peek SOCKET");
        std::process::exit(2);
    };
    match std::os::unix::net::UnixStream::connect(&path) {
        Err(e) => println!("refused {}", e.raw_os_error().unwrap_or(0)),
        Ok(mut s) => {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 4096];
            match s.read(&mut buf) {
                Ok(0) => println!("eof"),
                Ok(n) => println!("data {n}"),
                Err(e) => println!("silent {}", e.raw_os_error().unwrap_or(0)),
            }
        }
    }
}
