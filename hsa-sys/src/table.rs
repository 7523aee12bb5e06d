//! The HSA runtime opened with `dlopen` and its functions resolved into a
//! typed table ([`HsaApi`]), in the manner of `ash::Entry`.
//!
//! The list of functions, and which ones are required, is generated into
//! `functions.rs` by `cargo xtask bindings`; the macro below turns that list
//! into the [`HsaFunctions`](crate::HsaFunctions) struct and its loader.

use std::ffi::{OsStr, OsString};
use std::ops::Deref;
use std::sync::Arc;

/// Library names tried after the caller's explicit path: the SONAME of ROCm's
/// runtime, then the development symlink (the name LLVM's plugins dlopen).
pub const DEFAULT_LIBRARY_NAMES: &[&str] = &["libhsa-runtime64.so.1", "libhsa-runtime64.so"];

/// Why [`HsaApi::load`] failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// No candidate library could be opened. `tried` holds one
    /// `"<name>: <dlopen error>"` entry per candidate, in the order tried.
    #[error("cannot open the HSA runtime; tried: {}", tried.join("; "))]
    Open {
        /// Each candidate with the loader's error for it.
        tried: Vec<String>,
    },
    /// A library was opened but does not export a function that is required
    /// (see [`HSA_REQUIRED_FUNCTION_NAMES`](crate::HSA_REQUIRED_FUNCTION_NAMES)).
    #[error("the HSA runtime does not export required function `{symbol}`")]
    MissingSymbol {
        /// The missing function's name.
        symbol: String,
    },
}

/// Resolves a required function.
///
/// Errors: [`LoadError::MissingSymbol`] naming `name` if `lib` lacks it.
///
/// # Safety
/// `T` must be the function-pointer type of the symbol `name` exports.
pub(crate) unsafe fn required<T: Copy>(
    lib: &libloading::Library,
    name: &str,
) -> Result<T, LoadError> {
    // SAFETY: the caller guarantees that `T` is the symbol's real type.
    match unsafe { lib.get::<T>(name.as_bytes()) } {
        Ok(symbol) => Ok(*symbol),
        Err(_) => Err(LoadError::MissingSymbol {
            symbol: name.to_string(),
        }),
    }
}

/// Resolves an optional function: `None` if `lib` lacks it.
///
/// # Safety
/// `T` must be the function-pointer type of the symbol `name` exports.
pub(crate) unsafe fn optional<T: Copy>(lib: &libloading::Library, name: &str) -> Option<T> {
    // SAFETY: the caller guarantees that `T` is the symbol's real type.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .ok()
        .map(|symbol| *symbol)
}

/// Defines `HsaFunctions` and its loader from the generated name lists:
/// `required { name: PFN_name, ... } optional { name: PFN_name, ... }`.
macro_rules! hsa_function_table {
    (
        required { $($rname:ident: $rpfn:ident,)* }
        optional { $($oname:ident: $opfn:ident,)* }
    ) => {
        /// Every function of `include/hsa_subset.h`, resolved from one loaded
        /// HSA runtime library. Required functions (those in
        /// [`HSA_REQUIRED_FUNCTION_NAMES`](crate::HSA_REQUIRED_FUNCTION_NAMES))
        /// are plain function pointers; every other one is `None` when the
        /// library does not export it.
        ///
        /// The pointers are valid only while the library stays loaded; reach
        /// them through [`HsaApi`](crate::HsaApi), which keeps it loaded.
        #[derive(Clone, Copy, Debug)]
        pub struct HsaFunctions {
            $(
                #[doc = concat!("`", stringify!($rname), "` (required).")]
                pub $rname: crate::$rpfn,
            )*
            $(
                #[doc = concat!(
                    "`", stringify!($oname), "`, or `None` when the library does not export it."
                )]
                pub $oname: Option<crate::$opfn>,
            )*
        }

        impl HsaFunctions {
            /// Resolves every function from `lib`, required ones first, each
            /// group in header order.
            ///
            /// Errors: [`LoadError::MissingSymbol`](crate::LoadError) for
            /// the first required function `lib` does not export.
            ///
            /// # Safety
            /// `lib` must export each function with the C type declared by
            /// `include/hsa_subset.h` (ROCm 5.2's prototypes).
            pub(crate) unsafe fn load(
                lib: &libloading::Library,
            ) -> Result<Self, crate::LoadError> {
                $(
                    // SAFETY: `PFN_<name>` was generated from the prototype
                    // of `<name>`, and the caller vouches for `lib`.
                    let $rname = unsafe {
                        crate::table::required::<crate::$rpfn>(lib, stringify!($rname))?
                    };
                )*
                Ok(Self {
                    $($rname,)*
                    $(
                        // SAFETY: as above.
                        $oname: unsafe {
                            crate::table::optional::<crate::$opfn>(lib, stringify!($oname))
                        },
                    )*
                })
            }
        }
    };
}
pub(crate) use hsa_function_table;

/// An HSA runtime library opened with `dlopen` and its function table.
///
/// Dereferences to [`HsaFunctions`](crate::HsaFunctions): `api.hsa_init` is
/// a required function, `api.hsa_signal_add_relaxed` an `Option`. The
/// library stays loaded as long as any clone of this value exists (it is
/// held in an `Arc`), so the pointers are valid while the `HsaApi` they were
/// read from is alive; do not keep copies of them beyond that.
#[derive(Clone, Debug)]
pub struct HsaApi {
    fns: crate::HsaFunctions,
    name: OsString,
    // Declared last: dropped after `fns`, though pointers need no drop.
    _library: Arc<libloading::Library>,
}

impl HsaApi {
    /// Opens the HSA runtime and resolves its functions. Candidates, in
    /// order: `explicit_path` when given (typically the value of an
    /// environment variable the caller reads), then
    /// [`DEFAULT_LIBRARY_NAMES`]. The first candidate that opens is used.
    ///
    /// Errors: [`LoadError::Open`] when no candidate opens;
    /// [`LoadError::MissingSymbol`] when the opened library lacks a
    /// required function (later candidates are then not tried).
    ///
    /// # Safety
    /// Opening a library runs its initialisers, and its exported `hsa_*`
    /// functions are trusted to have ROCm 5.2's C signatures. Only pass
    /// libraries that implement the HSA runtime API.
    pub unsafe fn load(explicit_path: Option<&OsStr>) -> Result<Self, LoadError> {
        let mut candidates: Vec<&OsStr> = Vec::new();
        candidates.extend(explicit_path);
        candidates.extend(DEFAULT_LIBRARY_NAMES.iter().map(OsStr::new));
        // SAFETY: forwarded from this function's contract.
        unsafe { Self::load_from(&candidates) }
    }

    /// Like [`HsaApi::load`], with exactly the given candidates (paths or
    /// names the dynamic loader searches for), tried in order.
    ///
    /// Errors: as [`HsaApi::load`]; an empty list gives [`LoadError::Open`].
    ///
    /// # Safety
    /// As [`HsaApi::load`].
    pub unsafe fn load_from<S: AsRef<OsStr>>(candidates: &[S]) -> Result<Self, LoadError> {
        let mut tried = Vec::new();
        for candidate in candidates {
            let name = candidate.as_ref();
            // SAFETY: the caller vouches that the candidates are HSA
            // runtimes whose initialisers are safe to run.
            match unsafe { libloading::Library::new(name) } {
                Ok(library) => {
                    // SAFETY: the caller vouches for the functions' types.
                    let fns = unsafe { crate::HsaFunctions::load(&library)? };
                    return Ok(Self {
                        fns,
                        name: name.to_os_string(),
                        _library: Arc::new(library),
                    });
                }
                Err(e) => tried.push(format!("{}: {e}", name.to_string_lossy())),
            }
        }
        Err(LoadError::Open { tried })
    }

    /// The resolved functions (also reachable through `Deref`).
    pub fn functions(&self) -> &crate::HsaFunctions {
        &self.fns
    }

    /// The candidate (path or name) that was opened.
    pub fn library_name(&self) -> &OsStr {
        &self.name
    }
}

impl Deref for HsaApi {
    type Target = crate::HsaFunctions;

    fn deref(&self) -> &Self::Target {
        &self.fns
    }
}
