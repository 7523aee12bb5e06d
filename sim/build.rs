//! Gives the virtual device's cdylib the identity of ROCm's runtime: SONAME
//! `libhsa-runtime64.so.1` and every exported `hsa_*` symbol under the ELF
//! version `ROCR_1`, so programs linked against ROCm's library also bind to it.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    println!("cargo:rerun-if-changed=exports.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/exports.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhsa-runtime64.so.1");
}
