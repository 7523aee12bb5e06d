//! Links the plugin with `exports.map`, so that only the `__tgt_rtl_*` entry
//! points are exported; with `-Bsymbolic`, so that the plugin's internal
//! references bind to itself even when libomptarget loads it with global
//! symbol visibility next to other plugins; and with `-z nodelete`, as
//! LLVM's own plugins are (their dynamic section carries `FLAGS_1 NODELETE`):
//! libomptarget keeps pointers to the entry points for the life of the
//! process and still calls them from destructors (`__tgt_unregister_lib` of a
//! dlopened offloading library) after LLVM's `DynamicLibrary` handle set has
//! dlclosed the plugin at exit. A plugin that can be unmapped turns that
//! call into a jump to nowhere; the loader must keep it mapped.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    println!("cargo:rerun-if-changed=exports.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/exports.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
}
