//! Links Debian's libmunge, and says how to get it when it is missing.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    const HEADERS: [&str; 2] = ["/usr/include/munge.h", "/usr/local/include/munge.h"];
    let found = HEADERS.iter().any(|p| std::path::Path::new(p).exists());
    // Looked at again when the header changes, or, while it is missing, when its
    // directories do: a warning from a build before the package was installed is not
    // replayed from cargo's cache ever after. (A path that does not exist would rerun
    // this at every build; a directory is scanned whole, so only while it matters.)
    for h in HEADERS {
        let p = std::path::Path::new(h);
        let watched = if found { Some(p) } else { p.parent() };
        if let Some(w) = watched.filter(|w| w.exists()) {
            println!("cargo:rerun-if-changed={}", w.display());
        }
    }
    if !found {
        println!(
            "cargo:warning=munge.h not found: install MUNGE's development files \
             (Debian/Ubuntu: apt-get install libmunge-dev munge)"
        );
    }
    println!("cargo:rustc-link-lib=munge");
}
