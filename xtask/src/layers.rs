//! The import graph of a crate's modules, and its cycles: the check behind the
//! rule "each module imports only the modules below it" (ARCHITECTURE.md).
//!
//! Every `.rs` file under a crate's `src/` is a module (`lib.rs` and `main.rs`
//! the root, `a/mod.rs` and `a.rs` the module `a`, `a/b.rs` the module `a::b`).
//! A module imports another when its code (outside `#[cfg(test)]` items, which
//! may use any test helper of the crate) names an item of it: a `use` tree, a
//! path in an expression, type or pattern, or a `crate::…` / `super::…` path
//! inside a macro's tokens. Paths are resolved to the longest module they
//! name; a name the crate root re-exports (`pub use a::b::Item`) counts as an
//! import of the module it comes from, and inline modules belong to their
//! file's module. Declaring a child module (`mod x;`) is not an import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// Module path (`"a::b"`, `""` for the crate root) → the modules it imports.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// Reads every module of the crate whose source root is `src` and builds its
/// import graph.
///
/// # Errors
/// A file that cannot be read or parsed, named with the parser's message.
pub fn module_graph(src: &Path) -> Result<Graph, String> {
    let mut files = Vec::new();
    collect_rs(src, &mut files)?;
    let mut parsed = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(src).map_err(|e| e.to_string())?;
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let ast = syn::parse_file(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        parsed.push((module_of(rel), ast));
    }
    let modules: BTreeSet<String> = parsed.iter().map(|(m, _)| m.clone()).collect();
    // Names each module brings in with `use` (re-exports and private imports,
    // which its descendants see too): `(module, name)` → the module the name
    // comes from, so that `super::Item` and `crate::Item` count as imports of
    // where `Item` lives.
    let mut aliases = Aliases::new();
    for (module, ast) in &parsed {
        let here = split(module);
        for item in &ast.items {
            if let syn::Item::Use(u) = item {
                if is_test_cfg(&u.attrs) {
                    continue;
                }
                let mut bound = Vec::new();
                bindings(&u.tree, &mut Vec::new(), &mut bound);
                for (p, last) in bound {
                    // `None`: a name from another crate (no edge through it).
                    let target = resolve(&modules, &Aliases::new(), &here, &p);
                    if target.as_ref() != Some(module) {
                        aliases.insert((module.clone(), last), target);
                    }
                }
            }
        }
    }
    let mut graph = Graph::new();
    for (module, ast) in &parsed {
        let mut v = Collector::default();
        v.visit_file(ast);
        let here: Vec<String> = split(module);
        let mut deps = BTreeSet::new();
        for path in v.paths {
            if let Some(t) = resolve(&modules, &aliases, &here, &path) {
                if t != *module && !t.is_empty() {
                    deps.insert(t);
                }
            }
        }
        graph.insert(module.clone(), deps);
    }
    Ok(graph)
}

/// The cycles of `graph`: its strongly connected components of more than one
/// module, each sorted, in a stable order.
pub fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    // Tarjan's algorithm, iteratively: (node, next edge index) frames.
    let nodes: Vec<&String> = graph.keys().collect();
    let index_of: BTreeMap<&String, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let edges: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            graph[*n]
                .iter()
                .filter_map(|d| index_of.get(d).copied())
                .collect()
        })
        .collect();
    let n = nodes.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut next, mut out) = (Vec::new(), 0, Vec::new());
    for start in 0..n {
        if index[start] != usize::MAX {
            continue;
        }
        let mut frames = vec![(start, 0usize)];
        index[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on[start] = true;
        while let Some(&mut (v, ref mut k)) = frames.last_mut() {
            if let Some(&w) = edges[v].get(*k) {
                *k += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on[w] = true;
                    frames.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    component.push(nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    out.push(component);
                }
            }
        }
    }
    out.sort();
    out
}

/// Every `.rs` file under `dir`, sorted.
fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect_rs(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    Ok(())
}

/// The module a file relative to `src/` is.
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if !matches!(stem, "lib" | "main" | "mod") {
            parts.push(stem.to_string());
        }
    }
    parts.join("::")
}

fn split(module: &str) -> Vec<String> {
    if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(str::to_string).collect()
    }
}

/// The longest module among `modules` that `segments` starts with.
fn longest_module(modules: &BTreeSet<String>, segments: &[String]) -> Option<String> {
    (0..=segments.len())
        .rev()
        .map(|k| segments[..k].join("::"))
        .find(|m| modules.contains(m))
}

/// `(module, name)` → the module a name brought in by `use` comes from (`None`
/// for a name from another crate).
type Aliases = BTreeMap<(String, String), Option<String>>;

/// The module a path written in module `here` names, if it names one of the crate's.
fn resolve(
    modules: &BTreeSet<String>,
    aliases: &Aliases,
    here: &[String],
    path: &[String],
) -> Option<String> {
    let (first, rest) = path.split_first()?;
    let absolute: Vec<String> = match first.as_str() {
        "crate" => rest.to_vec(),
        "self" => here.iter().chain(rest).cloned().collect(),
        "super" => {
            let mut base = here.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            base.into_iter().chain(rest.iter().cloned()).collect()
        }
        // A child module of `here` named without `self::`.
        name => {
            let child: Vec<String> = here.iter().chain([&name.to_string()]).cloned().collect();
            if !modules.contains(&child.join("::")) {
                return None;
            }
            here.iter().chain(path).cloned().collect()
        }
    };
    let module = longest_module(modules, &absolute)?;
    // `module::Name` where `module` only brought `Name` in: where it comes from.
    let depth = split(&module).len();
    if let Some(name) = absolute.get(depth) {
        if let Some(source) = aliases.get(&(module.clone(), name.clone())) {
            return source.clone();
        }
    }
    Some(module)
}

/// The paths a file names outside `#[cfg(test)]` items.
#[derive(Default)]
struct Collector {
    paths: Vec<Vec<String>>,
}

fn is_test_cfg(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().split_whitespace().any(|t| t == "test"))
    })
}

/// The names a `use` tree binds, each with the path it names (`use a::B as C`
/// binds `C` to `a::B`); globs bind nothing by name.
fn bindings(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            bindings(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut p = prefix.clone();
            p.push(n.ident.to_string());
            out.push((p, n.ident.to_string()));
        }
        syn::UseTree::Rename(r) => {
            let mut p = prefix.clone();
            p.push(r.ident.to_string());
            out.push((p, r.rename.to_string()));
        }
        syn::UseTree::Glob(_) => {}
        syn::UseTree::Group(g) => {
            for t in &g.items {
                bindings(t, prefix, out);
            }
        }
    }
}

/// Every path a `use` tree names (a glob names its prefix).
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut p = prefix.clone();
            p.push(n.ident.to_string());
            out.push(p);
        }
        syn::UseTree::Rename(r) => {
            let mut p = prefix.clone();
            p.push(r.ident.to_string());
            out.push(p);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs = match i {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Trait(t) => &t.attrs,
            syn::Item::Type(t) => &t.attrs,
            syn::Item::Macro(m) => &m.attrs,
            _ => return syn::visit::visit_item(self, i),
        };
        if !is_test_cfg(attrs) {
            syn::visit::visit_item(self, i);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test_cfg(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        use_paths(&u.tree, &mut Vec::new(), &mut self.paths);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.paths.push(segments);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // `crate::a::b` and `super::a` sequences among the tokens.
        let tokens: Vec<proc_macro2::TokenTree> = flatten(m.tokens.clone());
        let mut i = 0;
        while i < tokens.len() {
            if let proc_macro2::TokenTree::Ident(id) = &tokens[i] {
                let s = id.to_string();
                if s == "crate" || s == "super" {
                    let mut path = vec![s];
                    let mut j = i + 1;
                    while j + 2 < tokens.len() + 1 {
                        let colons = matches!((&tokens.get(j), &tokens.get(j + 1)),
                            (Some(proc_macro2::TokenTree::Punct(a)), Some(proc_macro2::TokenTree::Punct(b)))
                                if a.as_char() == ':' && b.as_char() == ':');
                        match (colons, tokens.get(j + 2)) {
                            (true, Some(proc_macro2::TokenTree::Ident(next))) => {
                                path.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    if path.len() > 1 {
                        self.paths.push(path);
                    }
                    i = j;
                    continue;
                }
            }
            i += 1;
        }
        syn::visit::visit_macro(self, m);
    }
}

/// The tokens of `stream`, groups opened (their delimiters dropped).
fn flatten(stream: proc_macro2::TokenStream) -> Vec<proc_macro2::TokenTree> {
    let mut out = Vec::new();
    for t in stream {
        match t {
            proc_macro2::TokenTree::Group(g) => out.extend(flatten(g.stream())),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    fn check(crate_src: &str) {
        let graph = module_graph(&workspace().join(crate_src)).unwrap();
        assert!(graph.len() > 3, "{crate_src}: modules found: {graph:?}");
        let found = cycles(&graph);
        assert!(
            found.is_empty(),
            "{crate_src}: modules that import each other (each must import only modules below it): {found:#?}"
        );
    }

    #[test]
    fn the_isa_engine_has_no_import_cycle() {
        check("isa/src");
    }

    #[test]
    fn the_virtual_device_has_no_import_cycle() {
        check("sim/src");
    }

    #[test]
    fn the_plugin_has_no_import_cycle() {
        check("src");
    }

    #[test]
    fn cycles_are_found_through_uses_paths_macros_and_reexports() {
        let dir = tempfile::tempdir().unwrap();
        let w = |p: &str, s: &str| {
            let f = dir.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, s).unwrap();
        };
        w("lib.rs", "mod a; mod b; mod c; mod d; pub use d::Thing;");
        w("a.rs", "use crate::b::X; fn f() { crate::c::g(); }");
        w("b.rs", "pub struct X; fn h() { some_macro!(crate::a::y); }");
        w(
            "c.rs",
            "fn g() -> crate::Thing { todo!() } #[cfg(test)] mod t { use crate::a::Z; }",
        );
        w("d/mod.rs", "mod e; pub struct Thing; use e::F;");
        w("d/e.rs", "fn k(_: super::Thing) {}");
        let g = module_graph(dir.path()).unwrap();
        assert_eq!(g["a"], ["b", "c"].iter().map(|s| s.to_string()).collect());
        assert_eq!(
            g["c"],
            ["d"].iter().map(|s| s.to_string()).collect(),
            "test code is not counted"
        );
        assert_eq!(
            cycles(&g),
            vec![
                vec!["a".to_string(), "b".to_string()],
                vec!["d".to_string(), "d::e".to_string()]
            ]
        );
    }
}
