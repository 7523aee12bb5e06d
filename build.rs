//! Links the plugin with `exports.map`, so that only the `__tgt_rtl_*` entry
//! points are exported, and with `-Bsymbolic`, so that the plugin's internal
//! references bind to itself even when libomptarget loads it with global
//! symbol visibility next to other plugins.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    println!("cargo:rerun-if-changed=exports.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/exports.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic");
}
