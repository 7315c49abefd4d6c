//! Links Debian's libmunge, and says how to get it when it is missing.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let found = ["/usr/include/munge.h", "/usr/local/include/munge.h"]
        .iter()
        .any(|p| std::path::Path::new(p).exists());
    if !found {
        println!(
            "cargo:warning=munge.h not found: install MUNGE's development files \
             (Debian/Ubuntu: apt-get install libmunge-dev munge)"
        );
    }
    println!("cargo:rustc-link-lib=munge");
}
