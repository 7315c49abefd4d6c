//! Links Debian's libmunge, and says how to get it when it is missing.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    const HEADERS: [&str; 2] = ["/usr/include/munge.h", "/usr/local/include/munge.h"];
    // Looked at again when a header comes or goes (its directory changes): a warning
    // from a build before the package was installed is not replayed from cargo's
    // cache ever after. (A path that does not exist would rerun this at every build.)
    for h in HEADERS {
        let p = std::path::Path::new(h);
        if let Some(dir) = p.parent().filter(|d| d.exists()) {
            println!("cargo:rerun-if-changed={}", dir.display());
        }
    }
    let found = HEADERS.iter().any(|p| std::path::Path::new(p).exists());
    if !found {
        println!(
            "cargo:warning=munge.h not found: install MUNGE's development files \
             (Debian/Ubuntu: apt-get install libmunge-dev munge)"
        );
    }
    println!("cargo:rustc-link-lib=munge");
}
