//! `bh-cred SOCKET`: a MUNGE credential for the bytes on standard input, made through
//! `munged` at SOCKET as whoever runs it, printed on standard output. The tests use it
//! to hold a credential of another user (the VM has no `munge` command).

use std::io::{Read, Write};

fn main() {
    let Some(socket) = std::env::args().nth(1) else {
        eprintln!("usage: bh-cred SOCKET < PAYLOAD");
        std::process::exit(2);
    };
    let mut payload = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut payload) {
        eprintln!("bh-cred: cannot read the payload: {e}");
        std::process::exit(1);
    }
    match bulkhead_munge::Munge::new(Some(std::path::Path::new(&socket))).encode(&payload) {
        Ok(cred) => {
            let _ = std::io::stdout().write_all(&cred);
        }
        Err(e) => {
            eprintln!("bh-cred: {e}");
            std::process::exit(1);
        }
    }
}
