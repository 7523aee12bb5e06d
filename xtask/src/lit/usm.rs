//! The unified shared memory part of `cargo xtask lit`: LLVM 16's
//! `unified_shared_memory/` tests, and the other tests that require the
//! feature (`mapping/present/unified_shared_memory.c`), with XNACK on in the
//! virtual gfx90a.
//!
//! LLVM 16's `lit.cfg` never declares the `unified_shared_memory` feature for
//! amdgcn (no LLVM 16 plugin offers unified memory on AMD GPUs), and three of
//! the seven tests name `amdgcn-amd-amdhsa` in an `UNSUPPORTED` line ("GPU
//! Memory Error", "amdgpu runtime crash"), one in an `XFAIL` line. With
//! `HSA_XNACK=1` kernels reach host memory, so for each plugin this module
//!
//! 1. runs lit over those tests with a site configuration of its
//!    own (`target/lit/<plugin>-usm/`) that sets `HSA_XNACK=1` and declares
//!    the feature, telling lit (`--xfail-not`) to ignore the `XFAIL` lines that
//!    name our target: those tests must pass now;
//! 2. runs every test that lit still reports `UNSUPPORTED` because a line of
//!    its own names our target by hand ([`run_by_hand`]): its `RUN` lines are
//!    expanded as LLVM 16's `lit.cfg` expands them (only the
//!    `%libomptarget-compile[xx|opt]-[run-and-check|and-run]-*` forms these
//!    tests use; another form is an error), the program is compiled through
//!    the same compile cache, run with the same environment and checked with
//!    FileCheck against the test's own `CHECK` lines. Nothing in the fetched
//!    sources is changed. These programs are linked with the project's
//!    `libcgpu.a` (`cargo xtask stage` builds it), since two of the tests
//!    print from target regions, which LLVM 16 cannot do on AMDGPU.
//!
//! Each test gives one row: `TEST [HSA_XNACK=1]` for lit's own outcome, or
//! `TEST [HSA_XNACK=1, RUN/CHECK by xtask]` for a test run by hand.

use super::{library_path, write_cache_wrapper, write_site_config, LitRun, Outcome, TARGET};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The suite's directory of unified shared memory tests.
const DIR: &str = "unified_shared_memory";

/// Suffix of the row of a test lit ran with XNACK on.
const LIT_ROW: &str = " [HSA_XNACK=1]";
/// Suffix of the row of a test run by hand with XNACK on.
const HAND_ROW: &str = " [HSA_XNACK=1, RUN/CHECK by xtask]";

/// Whether `row` is a row of this module's run.
pub(super) fn is_row(row: &str) -> bool {
    row.ends_with(LIT_ROW) || row.ends_with(HAND_ROW)
}

/// The note the table prints beside `row`.
pub(super) fn note(row: &str) -> &'static str {
    if row.ends_with(HAND_ROW) {
        "  (its UNSUPPORTED line names amdgcn; ours must pass)"
    } else if row.ends_with(LIT_ROW) {
        "  (unified_shared_memory feature declared; ours must pass)"
    } else {
        ""
    }
}

/// The unified shared memory tests (paths under the suite, sorted) and
/// their sources: every test of [`DIR`], and every other test that
/// `REQUIRES: unified_shared_memory`.
fn tests(suite: &Path) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        let dir = suite.join(&rel);
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
        for e in entries.filter_map(Result::ok) {
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            let path = rel.join(&name);
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(path);
                continue;
            }
            if !(name.ends_with(".c") || name.ends_with(".cpp")) {
                continue;
            }
            let source = std::fs::read_to_string(e.path())
                .map_err(|err| format!("reading {}: {err}", e.path().display()))?;
            let test = path.display().to_string();
            let requires = directive(&source, "REQUIRES");
            if test.starts_with(&format!("{DIR}/"))
                || requires.iter().any(|r| r == "unified_shared_memory")
            {
                out.push((test, source));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The targets listed by the test's directive lines of kind `key` (`XFAIL`,
/// `UNSUPPORTED`): `// XFAIL: a, b` gives `a` and `b`.
fn directive(source: &str, key: &str) -> Vec<String> {
    let tag = format!("{key}:");
    source
        .lines()
        .filter_map(|l| l.split_once(&tag).map(|(_, rest)| rest))
        .flat_map(|rest| rest.split(','))
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

/// Runs this part for one plugin; returns its rows (test row name, outcome).
/// `filter` is lit's `--filter` regex of the whole run.
pub(super) fn run(
    suite: &Path,
    ours: bool,
    filter: Option<&str>,
) -> Result<Vec<(String, Outcome)>, String> {
    let mut xfail_not = Vec::new();
    let mut hand = Vec::new();
    let mut only = Vec::new();
    for (t, source) in tests(suite)? {
        if directive(&source, "XFAIL").iter().any(|x| x == TARGET) {
            xfail_not.push(t.clone());
        }
        if directive(&source, "UNSUPPORTED")
            .iter()
            .any(|x| x == TARGET)
        {
            hand.push(t.clone());
        }
        only.push(t);
    }
    let mut lit = super::ensure_lit()?;
    let lit_run = LitRun {
        ours,
        usm: true,
        only: &only,
        filter,
        xfail_not: &xfail_not,
    };
    let mut rows = Vec::new();
    for (test, outcome) in super::run_suite(&mut lit, suite, &lit_run)? {
        if outcome == "UNSUPPORTED" && hand.contains(&test) {
            let passed = run_by_hand(suite, &test, ours)?;
            let outcome = if passed { "PASS" } else { "FAIL" };
            eprintln!(
                "lit ({}, HSA_XNACK=1, by hand): {outcome} {test}",
                if ours { "ours" } else { "LLVM's" }
            );
            rows.push((format!("{test}{HAND_ROW}"), outcome.to_string()));
        } else {
            rows.push((format!("{test}{LIT_ROW}"), outcome));
        }
    }
    Ok(rows)
}

/// One step of an expanded `RUN` line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// `%libomptarget-compile*`: C (`cxx` false) or C++, `-O3` when `opt`.
    Compile {
        /// clang++ instead of clang.
        cxx: bool,
        /// `-O3` (the `compileopt` forms).
        opt: bool,
    },
    /// Run the program; with `check`, pipe its stdout into FileCheck with
    /// the test as the check file.
    Run {
        /// `run-and-check` rather than `and-run`.
        check: bool,
    },
}

/// Expands one `RUN` command of the forms LLVM 16's `lit.cfg` defines for
/// compiling and running a test (`%libomptarget-compile-run-and-check-generic`
/// and its `compilexx`, `compileopt`, `compileoptxx` and `and-run` siblings,
/// `-generic` or naming a target). `Ok(None)`: a form naming another
/// target, which lit expands to `echo ignored-command`.
///
/// Errors: any other command (this runner does not speak lit's shell).
fn expand(command: &str) -> Result<Option<Vec<Step>>, String> {
    let c = command.trim();
    let rest = c
        .strip_prefix("%libomptarget-")
        .ok_or_else(|| format!("RUN line not understood: {c:?}"))?;
    let forms = [
        ("compileoptxx-", true, true),
        ("compileopt-", false, true),
        ("compilexx-", true, false),
        ("compile-", false, false),
    ];
    for (prefix, cxx, opt) in forms {
        let Some(rest) = rest.strip_prefix(prefix) else {
            continue;
        };
        let (check, target) = if let Some(t) = rest.strip_prefix("run-and-check-") {
            (true, t)
        } else if let Some(t) = rest.strip_prefix("and-run-") {
            (false, t)
        } else {
            break;
        };
        if target != "generic" && target != TARGET {
            if super::ALL_TARGETS.contains(&target) {
                return Ok(None);
            }
            break;
        }
        return Ok(Some(vec![Step::Compile { cxx, opt }, Step::Run { check }]));
    }
    Err(format!("RUN line not understood: {c:?}"))
}

/// The test's `RUN` commands, continuation lines (`\` at the end) joined.
fn run_lines(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in source.lines() {
        let Some((_, rest)) = line.split_once("RUN:") else {
            continue;
        };
        let rest = rest.trim();
        if let Some(head) = rest.strip_suffix('\\') {
            // lit drops the backslash and joins the lines as they stand.
            pending.push_str(head);
        } else {
            pending.push_str(rest);
            out.push(std::mem::take(&mut pending));
        }
    }
    out
}

/// The compile flags LLVM 16's `lit.cfg` gives `%clang-<target>` with the
/// site configuration of [`write_site_config`], in its order:
/// `%openmp_flags %cuda_flags %flags -fopenmp-targets=TARGET`.
fn compile_flags(suite: &Path) -> Vec<String> {
    use crate::run::{DEVICE_LIBS, LLVM_LIB};
    let mut f: Vec<String> = vec!["-fopenmp".into(), "-pthread".into()];
    f.extend(["-I".into(), suite.display().to_string()]);
    f.extend([
        "-I".into(),
        "/usr/lib/llvm-16/lib/clang/16/include".into(),
        "-L".into(),
        LLVM_LIB.into(),
        "-L".into(),
        LLVM_LIB.into(),
        "-fno-openmp-implicit-rpath".into(),
    ]);
    for _ in 0..3 {
        f.push(format!("-Wl,-rpath,{LLVM_LIB}"));
    }
    f.push(format!("--libomptarget-nvptx-bc-path={LLVM_LIB}"));
    f.push(format!("-Xopenmp-target={TARGET}"));
    f.push(format!("-march={}", super::ARCH));
    f.push(format!("--rocm-device-lib-path={DEVICE_LIBS}"));
    f.push(format!("-fopenmp-targets={TARGET}"));
    f
}

/// Runs test `test` (a path under the suite) as lit would, bypassing its
/// `UNSUPPORTED` lines: every `RUN` command expanded ([`expand`]), each
/// program compiled (through the compile cache) and linked with `libcgpu.a`,
/// run with `OMP_TARGET_OFFLOAD=MANDATORY`, `HSA_XNACK=1` and the plugin's
/// library path under `timeout`, its stdout checked by FileCheck. Failure
/// details go to stderr. Returns whether every step succeeded.
///
/// Errors: the test cannot be read, a `RUN` line is not understood, a tool
/// cannot be started.
fn run_by_hand(suite: &Path, test: &str, ours: bool) -> Result<bool, String> {
    use crate::run::LLVM_BIN;
    let src = suite.join(test);
    let source =
        std::fs::read_to_string(&src).map_err(|e| format!("reading {}: {e}", src.display()))?;
    let obj = write_site_config(suite, ours, true)?;
    let out_dir: PathBuf = obj.join("by-hand").join(DIR);
    crate::cmd::mkdir(&out_dir)?;
    let name = Path::new(test)
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{test} has no file name"))?;
    let binary = out_dir.join(format!("{name}.tmp"));
    let wrapper = write_cache_wrapper()?;
    let cache = super::lit_dir().join("cache");
    let path_env = format!(
        "{LLVM_BIN}:{}",
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
    );
    let mut steps = Vec::new();
    for line in run_lines(&source) {
        if let Some(s) = expand(&line)? {
            steps.extend(s);
        }
    }
    if steps.is_empty() {
        eprintln!("{test}: no RUN line to run");
        return Ok(false);
    }
    for step in steps {
        match step {
            Step::Compile { cxx, opt } => {
                let mut cc = Command::new("python3");
                cc.arg(&wrapper)
                    .arg(&cache)
                    .arg(if cxx { "clang++-16" } else { "clang-16" })
                    .args(compile_flags(suite));
                if opt {
                    cc.arg("-O3");
                }
                cc.arg(&src)
                    .arg("-o")
                    .arg(&binary)
                    .args(crate::run::cgpu_link_flags())
                    .env("PATH", &path_env)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let out = cc
                    .output()
                    .map_err(|e| format!("cannot run the compiler: {e}"))?;
                if !out.status.success() {
                    eprintln!(
                        "{test}: compile failed ({}):\n{}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                    );
                    return Ok(false);
                }
            }
            Step::Run { check } => {
                let out = Command::new("timeout")
                    .arg(super::RUN_TIMEOUT_S.to_string())
                    .arg(&binary)
                    .current_dir(&out_dir)
                    .env("OMP_TARGET_OFFLOAD", "MANDATORY")
                    .env("HSA_XNACK", "1")
                    .env("LD_LIBRARY_PATH", library_path(ours))
                    .env("PATH", &path_env)
                    .stdin(Stdio::null())
                    .output()
                    .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
                if !out.status.success() {
                    eprintln!(
                        "{test}: the program failed ({}); stderr:\n{}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                    );
                    return Ok(false);
                }
                if check && !file_check(&src, &out.stdout)? {
                    eprintln!(
                        "{test}: FileCheck failed; stderr of the program:\n{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

/// Pipes `stdout` into `FileCheck <src>` (LLVM 16's); returns whether it
/// passed, after printing FileCheck's complaint when not.
///
/// Errors: FileCheck cannot be started or fed.
fn file_check(src: &Path, stdout: &[u8]) -> Result<bool, String> {
    use std::io::Write;
    let mut child = Command::new(format!("{}/FileCheck", crate::run::LLVM_BIN))
        .arg(src)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run FileCheck: {e}"))?;
    if let Some(mut input) = child.stdin.take() {
        input
            .write_all(stdout)
            .map_err(|e| format!("feeding FileCheck: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("waiting for FileCheck: {e}"))?;
    if !out.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(out.status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_lines_expand_as_lit_cfg_does() {
        assert_eq!(
            expand("%libomptarget-compile-run-and-check-generic").unwrap(),
            Some(vec![
                Step::Compile {
                    cxx: false,
                    opt: false
                },
                Step::Run { check: true }
            ])
        );
        assert_eq!(
            expand("%libomptarget-compileoptxx-and-run-amdgcn-amd-amdhsa").unwrap(),
            Some(vec![
                Step::Compile {
                    cxx: true,
                    opt: true
                },
                Step::Run { check: false }
            ])
        );
        assert_eq!(
            expand("%libomptarget-compile-run-and-check-nvptx64-nvidia-cuda").unwrap(),
            None
        );
        assert!(expand("%libomptarget-compile-generic && %not %t").is_err());
        assert!(expand("echo hi").is_err());
    }

    #[test]
    fn directives_and_run_lines_are_read_from_the_source() {
        let src = "// RUN: %libomptarget-compile-run-and-check-generic\n\
                   // RUN: %libomptarget-compile-and-run-\\\n\
                   // RUN: generic\n\
                   // UNSUPPORTED: clang-6, clang-7\n\
                   // UNSUPPORTED: amdgcn-amd-amdhsa\n\
                   // XFAIL: nvptx64-nvidia-cuda\n";
        assert_eq!(
            run_lines(src),
            vec![
                "%libomptarget-compile-run-and-check-generic".to_string(),
                "%libomptarget-compile-and-run-generic".to_string()
            ]
        );
        assert_eq!(
            directive(src, "UNSUPPORTED"),
            vec!["clang-6", "clang-7", "amdgcn-amd-amdhsa"]
        );
        assert_eq!(directive(src, "XFAIL"), vec!["nvptx64-nvidia-cuda"]);
        assert!(is_row(
            "unified_shared_memory/api.c [HSA_XNACK=1, RUN/CHECK by xtask]"
        ));
        assert!(is_row("unified_shared_memory/close_manual.c [HSA_XNACK=1]"));
        assert!(!is_row("unified_shared_memory/close_manual.c"));
    }
}
