//! Cross-check of `include/hsa_subset.h` against ROCm 5.2's own headers.
//!
//! Method:
//! 1. bindgen parses our header; every item it yields is inventoried:
//!    constants (enumerators and `#define`s), structs with their C-visible
//!    fields (members of anonymous unions included), typedefs and function
//!    prototypes. An item kind the inventory does not understand is an error,
//!    so nothing in the header escapes the check.
//! 2. A C program is generated from the inventory that prints every
//!    constant's value, every type's `sizeof`/`_Alignof` (and signedness for
//!    integer typedefs), and every field's `offsetof` and size. It is compiled
//!    with clang-16 once against our header and once against ROCm's headers
//!    (`/usr/include/hsa`), and the two outputs must be identical. A name
//!    ours declares and ROCm lacks makes the ROCm build fail, which fails the
//!    check.
//! 3. bindgen also parses ROCm's headers; each of our prototypes must have
//!    the same parameter and return types (parameter names ignored) as
//!    ROCm's declaration of that function.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use quote::ToTokens;
use syn::visit_mut::VisitMut;

use crate::bindings::{run_bindgen, OUR_ALLOWLIST};

/// Where Debian's libhsa-runtime-dev installs ROCm 5.2's headers.
pub const ROCM_INCLUDE: &str = "/usr/include/hsa";
/// ROCm headers that together declare everything our header mirrors.
pub const ROCM_HEADERS: &[&str] = &[
    "hsa.h",
    "hsa_ext_finalize.h",
    "hsa_ext_amd.h",
    "amd_hsa_queue.h",
    "amd_hsa_signal.h",
    "hsa_ven_amd_loader.h",
];
/// Items of our header that ROCm does not declare and that are therefore not
/// compared. Deliberately empty: everything we declare exists in ROCm 5.2.
pub const ALLOWED_EXTRA: &[&str] = &[];
/// The C compiler used for the layout programs.
const CC: &str = "clang-16";

/// One C type to measure: its spelling in C and the member designators of its
/// fields (empty for typedefs of scalars, enums, pointers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeItem {
    /// How C names it (`amd_queue_t`, `enum amd_signal_kind_t`).
    pub c_name: String,
    /// Member designators usable in `offsetof` (`value` for a member of an
    /// anonymous union).
    pub fields: Vec<String>,
    /// Whether the Rust side is a primitive integer (then signedness is
    /// compared too).
    pub integer: bool,
}

/// Everything a header declares, as seen through bindgen.
#[derive(Debug, Default)]
pub struct Inventory {
    /// Names of integer constants.
    pub consts: Vec<String>,
    /// Types to measure.
    pub types: Vec<TypeItem>,
    /// Function name -> normalised signature (types only).
    pub functions: BTreeMap<String, String>,
}

/// Clears parameter names inside function-pointer types, so that only types
/// are compared.
struct StripNames;
impl VisitMut for StripNames {
    fn visit_bare_fn_arg_mut(&mut self, arg: &mut syn::BareFnArg) {
        arg.name = None;
        syn::visit_mut::visit_bare_fn_arg_mut(self, arg);
    }
}

/// The types-only spelling of a foreign function's signature.
fn normalised_signature(sig: &syn::Signature) -> String {
    let mut parts = Vec::new();
    for input in &sig.inputs {
        if let syn::FnArg::Typed(pat_type) = input {
            let mut ty = (*pat_type.ty).clone();
            StripNames.visit_type_mut(&mut ty);
            parts.push(ty.to_token_stream().to_string());
        }
    }
    let mut output = sig.output.clone();
    if let syn::ReturnType::Type(_, ty) = &mut output {
        StripNames.visit_type_mut(ty);
    }
    format!(
        "fn({}){}{}",
        parts.join(", "),
        if sig.variadic.is_some() { " ..." } else { "" },
        output.to_token_stream()
    )
}

/// Primitive Rust integer types as bindgen spells them.
fn is_integer_type(ty: &syn::Type) -> bool {
    let syn::Type::Path(path) = ty else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    matches!(
        last.ident.to_string().as_str(),
        "u8" | "u16"
            | "u32"
            | "u64"
            | "i8"
            | "i16"
            | "i32"
            | "i64"
            | "usize"
            | "isize"
            | "c_int"
            | "c_uint"
            | "c_long"
            | "c_ulong"
            | "c_char"
            | "c_schar"
            | "c_uchar"
            | "c_short"
            | "c_ushort"
            | "c_longlong"
            | "c_ulonglong"
    )
}

/// Builds the inventory of bindgen output `raw`. `header_text` is the C
/// source, used to tell enum tags (`enum X { ... };`) from typedef names.
///
/// Errors: an item kind this check does not know how to compare.
pub fn inventory(raw: &str, header_text: &str) -> Result<Inventory, String> {
    let file: syn::File = syn::parse_str(raw).map_err(|e| format!("bindgen output: {e}"))?;
    // Records (structs and unions) by name, for flattening anonymous members.
    let mut records: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for item in &file.items {
        let (name, fields) = match item {
            syn::Item::Struct(s) => (s.ident.to_string(), &s.fields),
            syn::Item::Union(u) => {
                let named = syn::Fields::Named(u.fields.clone());
                records.insert(u.ident.to_string(), record_fields(&named));
                continue;
            }
            _ => continue,
        };
        records.insert(name, record_fields(fields));
    }
    let mut inv = Inventory::default();
    for item in &file.items {
        match item {
            syn::Item::Const(c) => {
                // `const _: () = ...` blocks are bindgen's layout assertions.
                if c.ident != "_" {
                    inv.consts.push(c.ident.to_string());
                }
            }
            syn::Item::Struct(syn::ItemStruct { ident, .. })
            | syn::Item::Union(syn::ItemUnion { ident, .. }) => {
                let name = ident.to_string();
                if name.contains("__bindgen_ty_") {
                    continue; // anonymous member; flattened into its parent
                }
                let mut fields = Vec::new();
                flatten(&records, &name, &mut fields)?;
                inv.types.push(TypeItem {
                    c_name: name,
                    fields,
                    integer: false,
                });
            }
            syn::Item::Type(t) => {
                let name = t.ident.to_string();
                let tag = format!("enum {name} {{");
                let c_name = if header_text.contains(&tag) {
                    format!("enum {name}")
                } else {
                    name
                };
                inv.types.push(TypeItem {
                    c_name,
                    fields: Vec::new(),
                    integer: is_integer_type(&t.ty),
                });
            }
            syn::Item::ForeignMod(block) => {
                for foreign in &block.items {
                    match foreign {
                        syn::ForeignItem::Fn(f) => {
                            inv.functions
                                .insert(f.sig.ident.to_string(), normalised_signature(&f.sig));
                        }
                        other => {
                            return Err(format!(
                                "unsupported foreign item: {}",
                                other.to_token_stream()
                            ))
                        }
                    }
                }
            }
            // Trait impls (Default for unions) carry no C facts.
            syn::Item::Impl(_) => {}
            other => {
                return Err(format!(
                    "cross-check cannot compare item: {}",
                    other.to_token_stream()
                ))
            }
        }
    }
    Ok(inv)
}

/// The Rust spelling bindgen gives each field and typedef, keyed
/// `field <Type>.<member>` (members of anonymous unions under their
/// parent) and `typedef <Name>`, with parameter names inside function
/// pointer types removed. Struct fields appear under the struct's name and
/// under every typedef name aliasing it, so ROCm's tagged structs
/// (`hsa_agent_s` + `typedef ... hsa_agent_t`) line up with our
/// anonymous ones. Comparing these catches what sizes cannot: a wrong
/// parameter of a callback type, a pointer to the wrong type.
///
/// Errors: `raw` is not valid Rust.
pub fn typed_facts(raw: &str) -> Result<BTreeMap<String, String>, String> {
    let file: syn::File = syn::parse_str(raw).map_err(|e| format!("bindgen output: {e}"))?;
    let spell = |ty: &syn::Type| {
        let mut ty = ty.clone();
        StripNames.visit_type_mut(&mut ty);
        ty.to_token_stream().to_string()
    };
    // Record name -> [(field, type spelling, last path segment)].
    let mut records: BTreeMap<String, Vec<(String, String, String)>> = BTreeMap::new();
    // Alias name -> what it stands for.
    let mut aliases: BTreeMap<String, syn::Type> = BTreeMap::new();
    for item in &file.items {
        let (name, fields): (String, Vec<&syn::Field>) = match item {
            syn::Item::Struct(st) => (st.ident.to_string(), st.fields.iter().collect()),
            syn::Item::Union(u) => (u.ident.to_string(), u.fields.named.iter().collect()),
            syn::Item::Type(t) => {
                aliases.insert(t.ident.to_string(), (*t.ty).clone());
                continue;
            }
            syn::Item::Use(u) => {
                // `pub use self::a as b;` is bindgen's spelling of an alias.
                if let syn::UseTree::Path(p) = &u.tree {
                    if let syn::UseTree::Rename(r) = &*p.tree {
                        let target: syn::Type =
                            syn::parse_str(&r.ident.to_string()).map_err(|e| e.to_string())?;
                        aliases.insert(r.rename.to_string(), target);
                    }
                }
                continue;
            }
            _ => continue,
        };
        let list = fields
            .iter()
            .filter_map(|f| {
                let ident = f.ident.as_ref()?.to_string();
                let last = match &f.ty {
                    syn::Type::Path(p) => p
                        .path
                        .segments
                        .last()
                        .map(|s| s.ident.to_string())
                        .unwrap_or_default(),
                    _ => String::new(),
                };
                Some((ident, spell(&f.ty), last))
            })
            .collect();
        records.insert(name, list);
    }
    fn walk(
        records: &BTreeMap<String, Vec<(String, String, String)>>,
        owner: &str,
        record: &str,
        out: &mut BTreeMap<String, String>,
    ) {
        let Some(fields) = records.get(record) else {
            return;
        };
        for (field, ty, last) in fields {
            if field.starts_with("__bindgen_anon_") {
                walk(records, owner, last, out);
            } else {
                out.insert(format!("field {owner}.{field}"), ty.clone());
            }
        }
    }
    let mut out = BTreeMap::new();
    for name in records.keys() {
        if !name.contains("__bindgen_ty_") {
            walk(&records, name, name, &mut out);
        }
    }
    for (alias, target) in &aliases {
        // Follow alias chains to the final spelling.
        let mut ty = target.clone();
        for _ in 0..8 {
            let next = match &ty {
                syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                    aliases.get(&p.path.segments[0].ident.to_string()).cloned()
                }
                _ => None,
            };
            match next {
                Some(n) => ty = n,
                None => break,
            }
        }
        let resolved = spell(&ty);
        if records.contains_key(&resolved) {
            // A typedef of a record: list its fields under the typedef name.
            walk(&records, alias, &resolved, &mut out);
        } else {
            out.insert(format!("typedef {alias}"), resolved);
        }
    }
    Ok(out)
}

/// Name -> normalised signature of every function in bindgen output `raw`.
///
/// Errors: `raw` is not valid Rust.
pub fn functions_of(raw: &str) -> Result<BTreeMap<String, String>, String> {
    let file: syn::File = syn::parse_str(raw).map_err(|e| format!("bindgen output: {e}"))?;
    let mut out = BTreeMap::new();
    for item in &file.items {
        if let syn::Item::ForeignMod(block) = item {
            for foreign in &block.items {
                if let syn::ForeignItem::Fn(f) = foreign {
                    out.insert(f.sig.ident.to_string(), normalised_signature(&f.sig));
                }
            }
        }
    }
    Ok(out)
}

/// (field name, field type's last path segment) of a record.
fn record_fields(fields: &syn::Fields) -> Vec<(String, String)> {
    fields
        .iter()
        .filter_map(|f| {
            let name = f.ident.as_ref()?.to_string();
            let ty = match &f.ty {
                syn::Type::Path(p) => p
                    .path
                    .segments
                    .last()
                    .map(|s| s.ident.to_string())
                    .unwrap_or_default(),
                _ => String::new(),
            };
            Some((name, ty))
        })
        .collect()
}

/// The C member designators of record `name`, descending into anonymous
/// members (`__bindgen_anon_N`), whose own members C reaches directly.
fn flatten(
    records: &BTreeMap<String, Vec<(String, String)>>,
    name: &str,
    out: &mut Vec<String>,
) -> Result<(), String> {
    let fields = records
        .get(name)
        .ok_or_else(|| format!("record {name} not found in bindgen output"))?;
    for (field, ty) in fields {
        if field.starts_with("__bindgen_anon_") {
            flatten(records, ty, out)?;
        } else {
            // bindgen renames C fields that are Rust keywords (`type` -> `type_`).
            let c_field = field.strip_suffix('_').unwrap_or(field);
            out.push(c_field.to_string());
        }
    }
    Ok(())
}

/// The C program that prints every fact of `inv` that can be measured, one
/// per line, each line naming its item.
pub fn layout_program(inv: &Inventory, includes: &[String]) -> String {
    let mut c = String::new();
    for inc in includes {
        let _ = writeln!(c, "#include {inc}");
    }
    c.push_str("#include <stddef.h>\n#include <stdio.h>\n\nint main(void) {\n");
    for name in &inv.consts {
        if ALLOWED_EXTRA.contains(&name.as_str()) {
            continue;
        }
        let _ = writeln!(
            c,
            "  printf(\"const {name} = %lld\\n\", (long long)({name}));"
        );
    }
    for ty in &inv.types {
        if ALLOWED_EXTRA.contains(&ty.c_name.as_str()) {
            continue;
        }
        let t = &ty.c_name;
        let _ = writeln!(
            c,
            "  printf(\"type {t}: size %zu align %zu\\n\", sizeof({t}), _Alignof({t}));"
        );
        if ty.integer {
            let _ = writeln!(
                c,
                "  printf(\"type {t}: signed %d\\n\", (int)(({t})-1 < 0));"
            );
        }
        for f in &ty.fields {
            let _ = writeln!(
                c,
                "  printf(\"field {t}.{f}: offset %zu size %zu\\n\", offsetof({t}, {f}), \
                 sizeof((({t} *)0)->{f}));"
            );
        }
    }
    c.push_str("  return 0;\n}\n");
    c
}

/// Compiles `program` with clang-16 (extra flags appended) in `dir` and
/// returns what it prints.
///
/// Errors: the compiler's diagnostics, or the program's failure.
pub fn compile_and_run(
    dir: &Path,
    stem: &str,
    program: &str,
    flags: &[String],
) -> Result<String, String> {
    let src = dir.join(format!("{stem}.c"));
    let exe = dir.join(stem);
    std::fs::write(&src, program).map_err(|e| format!("{}: {e}", src.display()))?;
    let out = Command::new(CC)
        .args(["-std=c11", "-w", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(flags)
        .output()
        .map_err(|e| format!("cannot run {CC}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{CC} failed on the {stem} layout program:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let run = Command::new(&exe)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if !run.status.success() {
        return Err(format!("{} exited with {}", exe.display(), run.status));
    }
    Ok(String::from_utf8_lossy(&run.stdout).into_owned())
}

/// Outcome of [`compare`].
#[derive(Debug)]
pub struct Comparison {
    /// Every difference, one line each; empty means the headers agree on
    /// every item ours declares.
    pub diffs: Vec<String>,
    /// Number of printed facts (values, sizes, offsets) compared.
    pub facts: usize,
    /// Number of prototypes compared.
    pub functions: usize,
    /// Number of field and typedef type spellings compared.
    pub typed: usize,
}

/// Compares our header with ROCm's.
///
/// Errors: tools missing or failing in a way that prevents the comparison
/// (bindgen, clang-16, ROCm headers absent). A ROCm build failure caused by
/// a name only ours declares is reported as a difference, not an error.
pub fn compare(our_header: &Path, rocm_include: &Path, work: &Path) -> Result<Comparison, String> {
    let header_text = std::fs::read_to_string(our_header)
        .map_err(|e| format!("{}: {e}", our_header.display()))?;
    let ours_raw = run_bindgen(our_header, OUR_ALLOWLIST).map_err(|e| e.to_string())?;
    let ours = inventory(&ours_raw, &header_text)?;

    for h in ROCM_HEADERS {
        let p = rocm_include.join(h);
        if !p.is_file() {
            return Err(format!(
                "{} not found: install libhsa-runtime-dev (cargo xtask setup)",
                p.display()
            ));
        }
    }
    let wrapper = work.join("rocm_all.h");
    let mut wrapper_text = String::new();
    for h in ROCM_HEADERS {
        let _ = writeln!(
            wrapper_text,
            "#include \"{}\"",
            rocm_include.join(h).display()
        );
    }
    std::fs::write(&wrapper, &wrapper_text).map_err(|e| format!("{}: {e}", wrapper.display()))?;
    let rocm_dir = rocm_include.display().to_string();
    let rocm_allow = format!("{}/.*\\.h", regex_escape(&rocm_dir));
    let rocm_raw = run_bindgen(&wrapper, &rocm_allow).map_err(|e| e.to_string())?;
    let rocm_functions = functions_of(&rocm_raw)?;

    let mut diffs = Vec::new();

    // Prototypes.
    for (name, sig) in &ours.functions {
        if ALLOWED_EXTRA.contains(&name.as_str()) {
            continue;
        }
        match rocm_functions.get(name) {
            None => diffs.push(format!("function {name}: not declared by ROCm")),
            Some(theirs) if theirs != sig => {
                diffs.push(format!("function {name}: ours {sig} != ROCm {theirs}"))
            }
            Some(_) => {}
        }
    }

    // Spelled types of fields and typedefs.
    let our_types = typed_facts(&ours_raw)?;
    let rocm_types = typed_facts(&rocm_raw)?;
    for (key, ty) in &our_types {
        match rocm_types.get(key) {
            None => diffs.push(format!("{key}: not declared by ROCm")),
            Some(theirs) if theirs != ty => {
                diffs.push(format!("{key}: ours {ty} != ROCm {theirs}"))
            }
            Some(_) => {}
        }
    }

    // Values and layouts.
    let our_prog = layout_program(&ours, &[format!("\"{}\"", our_header.display())]);
    let rocm_prog = layout_program(&ours, &[format!("\"{}\"", wrapper.display())]);
    let our_out = compile_and_run(work, "ours", &our_prog, &[])?;
    match compile_and_run(work, "rocm", &rocm_prog, &[format!("-I{rocm_dir}")]) {
        Err(e) => diffs.push(format!("ROCm headers lack something ours declares: {e}")),
        Ok(rocm_out) => {
            let a: Vec<&str> = our_out.lines().collect();
            let b: Vec<&str> = rocm_out.lines().collect();
            if a.len() != b.len() {
                diffs.push(format!(
                    "layout programs printed {} vs {} lines",
                    a.len(),
                    b.len()
                ));
            }
            for (x, y) in a.iter().zip(b.iter()) {
                if x != y {
                    diffs.push(format!("ours `{x}` != ROCm `{y}`"));
                }
            }
        }
    }
    Ok(Comparison {
        diffs,
        facts: our_out.lines().count(),
        functions: ours.functions.len(),
        typed: our_types.len(),
    })
}

/// Escapes regular-expression metacharacters of a path.
fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if "\\.+*?()|[]{}^$".contains(c) {
                vec!['\\', c]
            } else {
                vec![c]
            }
        })
        .collect()
}

/// Path of our header in the workspace.
pub fn our_header() -> PathBuf {
    crate::bindings::workspace_root().join(crate::bindings::HEADER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rocm() -> &'static Path {
        Path::new(ROCM_INCLUDE)
    }

    /// The committed generated files equal what the header produces now.
    #[test]
    fn committed_bindings_are_fresh() {
        let root = crate::bindings::workspace_root();
        let generated = crate::bindings::generate(&root).unwrap();
        let committed = std::fs::read_to_string(root.join(crate::bindings::BINDINGS_OUT)).unwrap();
        assert!(
            committed == generated.bindings,
            "hsa-sys/src/bindings.rs is stale: run `cargo xtask bindings`"
        );
        let committed = std::fs::read_to_string(root.join(crate::bindings::FUNCTIONS_OUT)).unwrap();
        assert!(
            committed == generated.functions,
            "hsa-sys/src/functions.rs is stale: run `cargo xtask bindings`"
        );
    }

    /// Every constant, layout and prototype of our header matches ROCm 5.2.
    #[test]
    fn header_matches_rocm() {
        let work = tempfile::tempdir().unwrap();
        let cmp = compare(&our_header(), rocm(), work.path()).unwrap();
        assert!(
            cmp.diffs.is_empty(),
            "differences:\n{}",
            cmp.diffs.join("\n")
        );
        // Not vacuous: every declared function was compared, and hundreds of
        // values and layout facts.
        let declared = std::fs::read_to_string(
            crate::bindings::workspace_root().join(crate::bindings::BINDINGS_OUT),
        )
        .unwrap()
        .matches("pub type PFN_")
        .count();
        assert_eq!(cmp.functions, declared);
        assert!(cmp.facts > 500, "only {} facts compared", cmp.facts);
        assert!(
            cmp.typed > 150,
            "only {} type spellings compared",
            cmp.typed
        );
        println!(
            "{} facts, {} type spellings and {} prototypes compared",
            cmp.facts, cmp.typed, cmp.functions
        );
    }

    /// The inventory covers the items the brief names, so the comparison
    /// above is not vacuous.
    #[test]
    fn inventory_covers_key_items() {
        let text = std::fs::read_to_string(our_header()).unwrap();
        let raw = run_bindgen(&our_header(), OUR_ALLOWLIST).unwrap();
        let inv = inventory(&raw, &text).unwrap();
        let ty = |n: &str| inv.types.iter().find(|t| t.c_name == n).cloned();
        let signal = ty("amd_signal_t").unwrap();
        assert!(signal.fields.contains(&"value".to_string()));
        assert!(signal.fields.contains(&"queue_ptr".to_string()));
        // The 21 members of ROCm's amd_queue_s.
        assert_eq!(ty("amd_queue_t").unwrap().fields.len(), 21);
        assert!(ty("enum amd_signal_kind_t").unwrap().integer);
        assert!(ty("hsa_status_t").unwrap().integer);
        // 0x1026 = the last core status code.
        assert!(inv.consts.iter().any(|c| c == "HSA_STATUS_ERROR_FATAL"));
        // 3 loads + 5 stores + 7 orders x (exchange, cas, add, subtract,
        // and, or, xor) + 3 waits = 60 signal value functions.
        let signal_ops = inv
            .functions
            .keys()
            .filter(|f| {
                f.starts_with("hsa_signal_")
                    && !matches!(f.as_str(), "hsa_signal_create" | "hsa_signal_destroy")
            })
            .count();
        assert_eq!(signal_ops, 60);
        // 6 loads + 6 stores + 7 cas + 7 add = 26 queue index functions.
        let queue_ops = inv
            .functions
            .keys()
            .filter(|f| f.contains("_index_"))
            .count();
        assert_eq!(queue_ops, 26);
    }

    /// A deliberately wrong copy of the header is caught: a constant value, a
    /// field type, a prototype's const-ness and a name ROCm lacks.
    #[test]
    fn compare_catches_typos() {
        let text = std::fs::read_to_string(our_header()).unwrap();
        let edits = [
            (
                "HSA_STATUS_ERROR_FATAL = 0x1026",
                "HSA_STATUS_ERROR_FATAL = 0x1027",
            ),
            ("  uint32_t grid_size_y;", "  uint64_t grid_size_y;"),
            (
                "hsa_status_t hsa_amd_memory_fill(void *ptr,",
                "hsa_status_t hsa_amd_memory_fill(const void *ptr,",
            ),
            // Same size, different callback type: only the spelled-type
            // comparison sees it.
            (
                "typedef bool (*hsa_amd_signal_handler)(hsa_signal_value_t value, void *arg);",
                "typedef bool (*hsa_amd_signal_handler)(hsa_signal_value_t value, const void *arg);",
            ),
        ];
        let mut bad = text.clone();
        for (from, to) in edits {
            assert_eq!(bad.matches(from).count(), 1, "edit target {from:?}");
            bad = bad.replace(from, to);
        }
        let work = tempfile::tempdir().unwrap();
        let header = work.path().join("hsa_subset.h");
        std::fs::write(&header, &bad).unwrap();
        let diffs = compare(&header, rocm(), work.path()).unwrap().diffs;
        let joined = diffs.join("\n");
        assert!(
            diffs
                .iter()
                .any(|d| d.contains("HSA_STATUS_ERROR_FATAL = 4135")),
            "{joined}"
        );
        assert!(
            diffs
                .iter()
                .any(|d| d.contains("hsa_kernel_dispatch_packet_t.grid_size_y: offset 16 size 8")),
            "{joined}"
        );
        assert!(
            diffs
                .iter()
                .any(|d| d.starts_with("function hsa_amd_memory_fill:")),
            "{joined}"
        );
        assert!(
            diffs
                .iter()
                .any(|d| d.starts_with("typedef hsa_amd_signal_handler:")),
            "{joined}"
        );
        // Nothing else differs.
        assert!(
            diffs.iter().all(|d| {
                d.contains("HSA_STATUS_ERROR_FATAL")
                    || d.contains("hsa_kernel_dispatch_packet_t")
                    || d.starts_with("function hsa_amd_memory_fill:")
                    || d.starts_with("typedef hsa_amd_signal_handler:")
            }),
            "{joined}"
        );

        // A name ROCm does not have fails the ROCm build.
        let extra = text.replace(
            "HSA_STATUS_ERROR_FATAL = 0x1026",
            "HSA_STATUS_ERROR_FATAL = 0x1026,\n  HSA_STATUS_ERROR_MADE_UP = 0x1027",
        );
        std::fs::write(&header, &extra).unwrap();
        let diffs = compare(&header, rocm(), work.path()).unwrap().diffs;
        assert!(
            diffs
                .iter()
                .any(|d| d.contains("ROCm headers lack") && d.contains("HSA_STATUS_ERROR_MADE_UP")),
            "{}",
            diffs.join("\n")
        );
    }
}
