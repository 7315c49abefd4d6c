//! Links `bh` with libgcc's unwinder archive (`libgcc_eh.a`, as `gcc -static-libgcc`
//! does) instead of the shared `libgcc_s.so.1` that rustc asks for on GNU targets.
//!
//! `bh` runs once per command (Slurm's `sbatch`, `squeue`, ... are links to it), so
//! what its start costs every user pays at every call: loading `libgcc_s.so.1` and
//! running its constructor (`__cpu_indicator_init`, whose `cpuid` instructions a
//! virtual machine traps) was a fifth of `bh --version` here. The unwinder is the only
//! thing `bh` takes from it (Rust's panics), and nothing in `bh` unwinds through
//! another library's frames (libmunge and glibc are C), so one private copy is enough.
//!
//! How: rustc passes `-lgcc_s`; a linker script of that name, found first in a
//! directory given to the `bh` link only, says "`-lgcc_eh`" instead. The daemons, which
//! load libzmq (C++, unwinding through libgcc_s), are left as they are.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = |k: &str| std::env::var(k).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") != "linux" || target("CARGO_CFG_TARGET_ENV") != "gnu" {
        return;
    }
    let dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("static-libgcc");
    std::fs::create_dir_all(&dir).expect("creating the linker script's directory");
    std::fs::write(
        dir.join("libgcc_s.so"),
        "/* bh: libgcc's unwinder linked in (cli/build.rs) */\nINPUT(-lgcc_eh)\n",
    )
    .expect("writing the libgcc_s linker script");
    println!("cargo:rustc-link-arg-bin=bh=-L{}", dir.display());
    // Its relative relocations packed (DT_RELR, glibc 2.36 and binutils 2.38 on):
    // 8,400 entries of 24 bytes (200 KB read at every start) become 1.3 KB;
    // `perf stat -r 200 bh --version`: 250 → 240 page faults (its CPU time within
    // the noise).
    println!("cargo:rustc-link-arg-bin=bh=-Wl,-z,pack-relative-relocs");
}
