//! Links LLVM 19's own RPC server (Debian's libllvmlibc-19-dev) into the
//! `llvm_oracle` test when it is installed, so the test can compare our
//! server's output with LLVM's byte for byte; the library is not used by
//! the crate itself.

fn main() {
    let dir = "/usr/lib/llvm-19/lib";
    let lib = format!("{dir}/libllvmlibc_rpc_server.a");
    println!("cargo:rerun-if-changed={lib}");
    println!("cargo:rustc-check-cfg=cfg(llvm_rpc_server)");
    if std::path::Path::new(&lib).exists() {
        println!("cargo:rustc-cfg=llvm_rpc_server");
        println!("cargo:rustc-link-arg-tests={lib}");
        println!("cargo:rustc-link-arg-tests=-lstdc++");
    }
}
