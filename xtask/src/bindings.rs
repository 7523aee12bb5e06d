//! `cargo xtask bindings [--check]`: turns `include/hsa_subset.h` into the
//! committed Rust files of `hsa-sys`.
//!
//! Two files are produced:
//! - `hsa-sys/src/bindings.rs`: bindgen's types, constants and layout
//!   assertions, with every C prototype rewritten as a function-pointer type
//!   alias `PFN_<name>` (no `extern` block), plus `HSA_FUNCTION_NAMES` and
//!   `HSA_REQUIRED_FUNCTION_NAMES`.
//! - `hsa-sys/src/functions.rs`: one invocation of the `hsa_function_table!`
//!   macro of `hsa-sys/src/table.rs` listing every function with its `PFN_`
//!   type, split into required and optional ones; the macro defines the
//!   `HsaFunctions` table and its loader.
//!
//! With `--check` nothing is written; the command fails if either committed
//! file differs from what the header produces now.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// Path of the bindgen input, relative to the workspace root.
pub const HEADER: &str = "include/hsa_subset.h";
/// Path of the generated bindings, relative to the workspace root.
pub const BINDINGS_OUT: &str = "hsa-sys/src/bindings.rs";
/// Path of the generated function table, relative to the workspace root.
pub const FUNCTIONS_OUT: &str = "hsa-sys/src/functions.rs";
/// Where Debian's libclang-16-dev puts libclang; used when `LIBCLANG_PATH` is
/// not set.
const DEFAULT_LIBCLANG_DIR: &str = "/usr/lib/llvm-16/lib";

/// The functions the plugin calls (`src/`): a runtime lacking any of them
/// is refused (`HsaApi::load` fails and the plugin reports no device). Every
/// other function of the header is optional (`Option` in the table, checked
/// where it is used), so a runtime without, say, `hsa_amd_pointer_info` or
/// `hsa_memory_copy` (which LLVM 16's plugins resolve but we never call)
/// still serves the plugin. Keep this list equal to what the plugin calls.
pub const REQUIRED_FUNCTIONS: &[&str] = &[
    "hsa_init",
    "hsa_shut_down",
    "hsa_status_string",
    "hsa_system_get_info",
    "hsa_iterate_agents",
    "hsa_agent_get_info",
    "hsa_agent_iterate_isas",
    "hsa_isa_get_info_alt",
    "hsa_amd_signal_create",
    "hsa_signal_destroy",
    "hsa_signal_wait_scacquire",
    "hsa_signal_store_relaxed",
    "hsa_signal_store_screlease",
    "hsa_signal_load_scacquire",
    "hsa_signal_subtract_screlease",
    "hsa_amd_signal_async_handler",
    "hsa_queue_create",
    "hsa_queue_destroy",
    "hsa_queue_add_write_index_relaxed",
    "hsa_queue_load_read_index_scacquire",
    "hsa_amd_agent_iterate_memory_pools",
    "hsa_amd_memory_pool_get_info",
    "hsa_amd_memory_pool_allocate",
    "hsa_amd_memory_pool_free",
    "hsa_amd_agents_allow_access",
    "hsa_amd_memory_async_copy",
    "hsa_amd_memory_lock",
    "hsa_amd_memory_unlock",
    "hsa_amd_register_system_event_handler",
    "hsa_code_object_deserialize",
    "hsa_executable_load_code_object",
    "hsa_executable_freeze",
    "hsa_executable_symbol_get_info",
    "hsa_executable_destroy",
    "hsa_code_object_destroy",
    "hsa_executable_create_alt",
    "hsa_executable_validate",
    "hsa_executable_get_symbol_by_name",
];

/// What can go wrong while generating or checking the bindings.
#[derive(Debug, thiserror::Error)]
pub enum BindingsError {
    /// The command line was not understood.
    #[error("{0}\nusage: cargo xtask bindings [--check]")]
    Usage(String),
    /// bindgen (libclang) failed on a header.
    #[error("bindgen failed on {header}: {message} (is libclang-16-dev installed? set LIBCLANG_PATH to its lib directory)")]
    Bindgen {
        /// The header bindgen was run on.
        header: String,
        /// bindgen's error text.
        message: String,
    },
    /// bindgen's output could not be parsed as Rust.
    #[error("cannot parse bindgen output: {0}")]
    Parse(#[from] syn::Error),
    /// The header declares something the generator cannot handle.
    #[error("unsupported declaration: {0}")]
    Unsupported(String),
    /// A required function is missing from the header.
    #[error("required function `{0}` is not declared in {HEADER}")]
    MissingRequired(String),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `--check` found a committed file that differs from the generated one.
    #[error("{0} is stale: run `cargo xtask bindings` and commit the result")]
    Stale(String),
}

/// Entry point of `cargo xtask bindings [--check]`.
///
/// Errors: any [`BindingsError`]; with `--check`, [`BindingsError::Stale`]
/// when a committed file differs from the regenerated text.
pub fn run(args: &[String]) -> Result<(), BindingsError> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => {
            return Err(BindingsError::Usage(format!(
                "unexpected arguments {args:?}"
            )))
        }
    };
    let root = workspace_root();
    let generated = generate(&root)?;
    let outputs = [
        (BINDINGS_OUT, generated.bindings),
        (FUNCTIONS_OUT, generated.functions),
    ];
    for (rel, text) in outputs {
        let path = root.join(rel);
        if check {
            let committed = std::fs::read_to_string(&path).map_err(|source| BindingsError::Io {
                path: path.clone(),
                source,
            })?;
            if committed != text {
                return Err(BindingsError::Stale(rel.to_string()));
            }
            println!("{rel} is up to date");
        } else {
            std::fs::write(&path, text).map_err(|source| BindingsError::Io {
                path: path.clone(),
                source,
            })?;
            println!("wrote {rel}");
        }
    }
    Ok(())
}

/// The workspace root: the parent of this crate's manifest directory.
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The text of both generated files.
pub struct Generated {
    /// Contents for [`BINDINGS_OUT`].
    pub bindings: String,
    /// Contents for [`FUNCTIONS_OUT`].
    pub functions: String,
}

/// Serialises bindgen runs: libclang is loaded and configured process-wide
/// (including the `LIBCLANG_PATH` default below).
static BINDGEN_LOCK: Mutex<()> = Mutex::new(());

/// Runs bindgen with the project's options on `header`, keeping only items
/// declared in files whose path matches the regular expression `allowlist`,
/// and returns its unformatted output.
///
/// Errors: [`BindingsError::Bindgen`] when libclang is missing or the header
/// does not compile.
pub fn run_bindgen(header: &Path, allowlist: &str) -> Result<String, BindingsError> {
    let _guard = BINDGEN_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if std::env::var_os("LIBCLANG_PATH").is_none() && Path::new(DEFAULT_LIBCLANG_DIR).is_dir() {
        // Only this function reads the variable, under BINDGEN_LOCK.
        std::env::set_var("LIBCLANG_PATH", DEFAULT_LIBCLANG_DIR);
    }
    let target = bindgen::RustTarget::stable(80, 0).map_err(|e| BindingsError::Bindgen {
        header: header.display().to_string(),
        message: e.to_string(),
    })?;
    let builder = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .clang_args(["-std=c11", "--target=x86_64-unknown-linux-gnu"])
        .rust_target(target)
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .size_t_is_usize(true)
        .derive_debug(true)
        .derive_copy(true)
        .derive_default(true)
        .derive_partialeq(true)
        .derive_eq(true)
        .derive_hash(true)
        // Function pointers make equality and hashing meaningless.
        .no_partialeq("hsa_ven_amd_loader_1_03_pfn_t")
        .no_hash("hsa_ven_amd_loader_1_03_pfn_t")
        .layout_tests(true)
        .generate_comments(false)
        .merge_extern_blocks(true)
        .formatter(bindgen::Formatter::None)
        .allowlist_file(allowlist);
    let bindings = builder.generate().map_err(|e| BindingsError::Bindgen {
        header: header.display().to_string(),
        message: e.to_string(),
    })?;
    Ok(bindings.to_string())
}

/// Generates both output files from the header under `root`.
///
/// Errors: bindgen failures, a prototype the rewriter does not understand, or
/// a [`REQUIRED_FUNCTIONS`] name the header lacks.
pub fn generate(root: &Path) -> Result<Generated, BindingsError> {
    generate_from(&root.join(HEADER))
}

/// Regular expression selecting the items of our header (not libc's).
pub const OUR_ALLOWLIST: &str = ".*/hsa_subset\\.h";

/// [`generate`] for an explicit header path (its file name must be
/// `hsa_subset.h`).
pub fn generate_from(header: &Path) -> Result<Generated, BindingsError> {
    let raw = run_bindgen(header, OUR_ALLOWLIST)?;
    let mut file: syn::File = syn::parse_str(&raw)?;
    let mut functions = Vec::new();
    let mut items = Vec::with_capacity(file.items.len());
    for item in std::mem::take(&mut file.items) {
        match item {
            syn::Item::ForeignMod(block) => {
                for foreign in block.items {
                    match foreign {
                        syn::ForeignItem::Fn(f) => {
                            let alias = pfn_alias(&f.sig)?;
                            items.push(syn::parse2(alias)?);
                            functions.push(f.sig.ident.to_string());
                        }
                        other => {
                            return Err(BindingsError::Unsupported(quote!(#other).to_string()))
                        }
                    }
                }
            }
            other => items.push(other),
        }
    }
    for required in REQUIRED_FUNCTIONS {
        if !functions.iter().any(|f| f == required) {
            return Err(BindingsError::MissingRequired((*required).to_string()));
        }
    }
    let names = functions.iter().map(String::as_str);
    let required = REQUIRED_FUNCTIONS.iter().copied();
    items.push(syn::parse2(quote! {
        #[doc = " Every function declared by `include/hsa_subset.h`, in header order."]
        pub const HSA_FUNCTION_NAMES: &[&str] = &[#(#names),*];
    })?);
    items.push(syn::parse2(quote! {
        /// The functions the plugin calls: a runtime lacking one is
        /// refused; every other function is optional.
        pub const HSA_REQUIRED_FUNCTION_NAMES: &[&str] = &[#(#required),*];
    })?);
    file.items = items;
    let bindings = with_banner(&prettyplease::unparse(&file));

    let functions = with_banner(&function_table(&functions));
    Ok(Generated {
        bindings,
        functions,
    })
}

/// Prefixes generated text with the do-not-edit notice.
fn with_banner(body: &str) -> String {
    format!(
        "// @generated by `cargo xtask bindings` from {HEADER}. Do not edit:\n\
         // change the header, run `cargo xtask bindings`, commit both.\n\n{body}"
    )
}

/// `pub type PFN_<name> = unsafe extern "C" fn(<params>) -> <ret>;` for one
/// foreign function.
fn pfn_alias(sig: &syn::Signature) -> Result<TokenStream, BindingsError> {
    if sig.variadic.is_some() {
        return Err(BindingsError::Unsupported(format!(
            "variadic function {}",
            sig.ident
        )));
    }
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Typed(pat_type) => {
                let ty = &pat_type.ty;
                match &*pat_type.pat {
                    syn::Pat::Ident(name) => {
                        let ident = &name.ident;
                        params.push(quote!(#ident: #ty));
                    }
                    _ => params.push(quote!(#ty)),
                }
            }
            syn::FnArg::Receiver(_) => {
                return Err(BindingsError::Unsupported(format!(
                    "receiver in {}",
                    sig.ident
                )))
            }
        }
    }
    let alias = format_ident!("PFN_{}", sig.ident);
    let output = &sig.output;
    let doc = format!(
        " Type of `{}` as declared by `include/hsa_subset.h`.",
        sig.ident
    );
    Ok(quote! {
        #[doc = #doc]
        pub type #alias = unsafe extern "C" fn(#(#params),*) #output;
    })
}

/// The text of `functions.rs`: one invocation of `hsa_function_table!`
/// (written by hand in `hsa-sys/src/table.rs`) naming every function and its
/// `PFN_` type, split into required and optional ones.
fn function_table(functions: &[String]) -> String {
    let mut required = String::new();
    let mut optional = String::new();
    for name in functions {
        let list = if REQUIRED_FUNCTIONS.contains(&name.as_str()) {
            &mut required
        } else {
            &mut optional
        };
        list.push_str(&format!("        {name}: PFN_{name},\n"));
    }
    format!(
        "crate::table::hsa_function_table! {{\n    required {{\n{required}    }}\n    \
         optional {{\n{optional}    }}\n}}\n"
    )
}
