//! Builds the eBPF device filter (`ebpf/program`) and hands the object to the agent,
//! which embeds it. The program needs the nightly toolchain with `rust-src` and
//! `bpf-linker`; without them this fails with the instructions, not a linker error.

use std::path::{Path, PathBuf};
use std::process::Command;

const HOWTO: &str = "install the eBPF toolchain: `cargo xtask setup` (as root), or by hand:
    rustup toolchain install nightly && rustup component add rust-src --toolchain nightly
    apt-get install llvm-22-dev
    PATH=/usr/lib/llvm-22/bin:$PATH cargo install bpf-linker@0.13.0 --locked --no-default-features --features llvm-22";

fn fail(what: &str) -> ! {
    panic!("\n\ncannot build Bulkhead's eBPF device filter: {what}\n\n{HOWTO}\n\n");
}

fn on_path(bin: &str) -> bool {
    let home_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map(|h| h.join("bin"));
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(home_bin)
        .any(|d| d.join(bin).is_file())
}

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let ebpf = manifest_dir.join("../ebpf");
    for p in [
        "program/src",
        "program/Cargo.toml",
        "program/Cargo.lock",
        "common/src",
        "common/Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", ebpf.join(p).display());
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    // One target directory for every profile of the agent: target/ebpf.
    let target_dir = out
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "build"))
        .and_then(Path::parent)
        .and_then(Path::parent)
        .map(|t| t.join("ebpf"))
        .unwrap_or_else(|| out.join("ebpf-target"));

    if !on_path("bpf-linker") {
        fail("bpf-linker is not installed");
    }
    let mut cmd = Command::new("rustup");
    cmd.args([
        "run",
        "nightly",
        "cargo",
        "build",
        "--release",
        "--target",
        "bpfel-unknown-none",
        "-Z",
        "build-std=core",
    ])
    .arg("--manifest-path")
    .arg(ebpf.join("program/Cargo.toml"))
    .arg("--target-dir")
    .arg(&target_dir);
    // The outer build's settings are for the host target: keep them out.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        let drop = (k.starts_with("CARGO") && k != "CARGO_HOME")
            || k.starts_with("RUSTC")
            || k.starts_with("RUSTFLAGS")
            || k.starts_with("RUSTDOC")
            || k == "RUSTUP_TOOLCHAIN";
        if drop {
            cmd.env_remove(&k);
        }
    }
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => fail(&format!("cannot run `rustup run nightly cargo`: {e}")),
    };
    if !status.success() {
        fail(&format!(
            "`cargo +nightly build` of ebpf/program failed ({status}); see the errors above"
        ));
    }
    let obj = target_dir.join("bpfel-unknown-none/release/bulkhead-device-filter");
    if let Err(e) = std::fs::copy(&obj, out.join("bulkhead-device-filter.o")) {
        fail(&format!(
            "the build produced no object at {}: {e}",
            obj.display()
        ));
    }
}
