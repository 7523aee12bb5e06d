//! `printf`, `malloc` and `free` in OpenMP target regions: programs of
//! `tests/cgpu_programs/` linked with the staged `libcgpu.a`
//! (`-Ltarget/stage/device/lib -lcgpu`) and run through our plugin on the
//! virtual gfx90a with `OMP_TARGET_OFFLOAD=MANDATORY` and our plugin's
//! announcement checked (so neither a host fallback nor another plugin can
//! pass). The oracle is the host run of the same binary
//! (`OMP_TARGET_OFFLOAD=DISABLED`); for the fallback, LLVM 16's behaviour
//! without a server, through LLVM's C++ plugin.
//!
//! Needs `cargo xtask stage` (which `cargo xtask test` runs): the stage is
//! `$OMPTARGET_STAGE_DIR` or `target/stage`.

mod common;

use common::{announcement, command, compile_linked, run, run_llvm_plugin, texts, Hsa};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn stage_lib_dir() -> PathBuf {
    let dir = std::env::var_os("OMPTARGET_STAGE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/stage"))
        .join("device/lib");
    assert!(
        dir.join("libcgpu.a").exists(),
        "{} is missing: run `cargo xtask stage` first",
        dir.join("libcgpu.a").display()
    );
    dir
}

/// `tests/cgpu_programs/<name>.c` linked with `-lcgpu`.
fn build(name: &str) -> PathBuf {
    let l = format!("-L{}", stage_lib_dir().display());
    compile_linked(
        &format!("../cgpu_programs/{name}.c"),
        false,
        &[],
        &[&l, "-lcgpu"],
    )
}

/// Through our plugin on one virtual GPU; checks the announcement.
fn ours(bin: &Path) -> Output {
    let out = run(&mut command(bin, Hsa::Sim(1)), 600);
    let (_, stderr) = texts(&out);
    assert!(
        stderr.contains(&announcement(1)),
        "not our plugin: {stderr}"
    );
    out
}

/// The host run (`OMP_TARGET_OFFLOAD=DISABLED`): the oracle.
fn host(bin: &Path) -> Output {
    let mut cmd = Command::new(bin);
    cmd.env("OMP_TARGET_OFFLOAD", "DISABLED")
        .env("LD_LIBRARY_PATH", "/usr/lib/llvm-16/lib");
    run(&mut cmd, 600)
}

fn sorted_lines(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text.lines().collect();
    v.sort_unstable();
    v
}

/// Whether `s` is a `%p` rendering: `0x` and hex digits.
fn is_pointer(s: &str) -> bool {
    s.strip_prefix("0x")
        .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn printf_from_one_thread_every_conversion_and_return_value() {
    let bin = build("printf_conversions");
    let dev = ours(&bin);
    let hst = host(&bin);
    assert!(
        dev.status.success() && hst.status.success(),
        "{:?}",
        texts(&dev)
    );
    let (d, _) = texts(&dev);
    let (h, _) = texts(&hst);
    let d_lines: Vec<&str> = d.lines().collect();
    let h_lines: Vec<&str> = h.lines().collect();
    assert_eq!(d_lines.len(), h_lines.len(), "device:\n{d}\nhost:\n{h}");
    assert!(d_lines.len() > 20, "{d}");
    let mut pointer_line_len = None;
    for (dl, hl) in d_lines.iter().zip(&h_lines) {
        if dl.starts_with("P ") {
            // Device addresses differ from the host's: same shape only.
            let fields = |l: &str| -> Vec<String> {
                l.split_whitespace()
                    .map(|w| match w.split_once('=') {
                        Some((k, v)) if is_pointer(v) => format!("{k}=PTR"),
                        _ => w.to_string(),
                    })
                    .collect()
            };
            assert_eq!(fields(dl), fields(hl), "pointer line {dl:?} vs {hl:?}");
            assert!(fields(dl).iter().filter(|f| f.ends_with("=PTR")).count() == 2);
            pointer_line_len = Some(dl.len() + 1);
        } else if let Some(v) = dl.strip_prefix("pret=") {
            // printf's return value for the %p line: its length.
            assert_eq!(Some(v.parse::<usize>().unwrap()), pointer_line_len, "{d}");
        } else {
            // Text and return values (ret[i]=...) equal to the host's.
            assert_eq!(dl, hl, "device:\n{d}\nhost:\n{h}");
        }
    }
}

#[test]
fn printf_from_64_lanes_with_per_lane_arguments() {
    let bin = build("printf_lanes");
    let dev = ours(&bin);
    let hst = host(&bin);
    assert!(dev.status.success(), "{:?}", texts(&dev));
    let (d, _) = texts(&dev);
    let (h, _) = texts(&hst);
    assert_eq!(sorted_lines(&d), sorted_lines(&h));
    assert_eq!(
        d.lines().filter(|l| l.starts_with("lane ")).count(),
        64 + 22
    );
    // The host's output after the region comes after every device line.
    assert!(d
        .trim_end()
        .lines()
        .last()
        .unwrap()
        .starts_with("sum of return values"));
}

#[test]
fn printf_from_100_teams_of_256_threads() {
    let bin = build("printf_teams");
    let dev = ours(&bin);
    let hst = host(&bin);
    assert!(dev.status.success(), "{:?}", texts(&dev));
    let (d, _) = texts(&dev);
    let (h, _) = texts(&hst);
    assert_eq!(d.lines().count(), 25_601);
    assert!(
        sorted_lines(&d) == sorted_lines(&h),
        "line multisets differ"
    );
    assert!(d
        .trim_end()
        .lines()
        .last()
        .unwrap()
        .starts_with("total bytes"));
}

#[test]
fn malloc_free_calloc_realloc_in_64_teams_of_256_threads() {
    let bin = build("malloc_teams");
    let dev = ours(&bin);
    let hst = host(&bin);
    assert!(dev.status.success(), "{:?}", texts(&dev));
    let (d, _) = texts(&dev);
    let (h, _) = texts(&hst);
    assert_eq!(d, h);
    assert!(
        d.contains("allocated 16384 bad malloc 0 calloc 0 realloc 0"),
        "{d}"
    );
}

#[test]
fn a_failing_assert_prints_its_message_and_the_region_fails() {
    let bin = build("assert_fail");
    let dev = ours(&bin);
    let hst = host(&bin);
    let (d_out, d_err) = texts(&dev);
    let (_, h_err) = texts(&hst);
    // glibc's host message: "<program>: <file>:<line>: <function>: Assertion
    // `<expr>' failed."; the device's is the same without the program name.
    let host_msg = h_err
        .lines()
        .find(|l| l.contains("Assertion"))
        .and_then(|l| l.split_once(": ").map(|(_, m)| m.to_string()))
        .expect("host assert message");
    assert!(host_msg.contains("assert_fail.c:11:") && host_msg.contains("`x == 3'"));
    assert!(d_err.lines().any(|l| l == host_msg), "{d_err}");
    assert!(!dev.status.success(), "the region must fail");
    assert!(
        d_out.contains("before") && !d_out.contains("after"),
        "{d_out}"
    );
}

#[test]
fn without_our_server_printf_is_minus_one_and_malloc_null() {
    let bin = build("fallback");
    let out = run_llvm_plugin(&bin, 600);
    let (o, e) = texts(&out);
    assert!(out.status.success(), "{e}");
    assert_eq!(o, "printf=-1 puts_nonnegative=0 malloc_null=1\n");
    // Ours serves the same binary as the host runs it.
    let dev = ours(&bin);
    assert_eq!(texts(&dev).0, texts(&host(&bin)).0);
}

#[test]
fn host_output_after_completion_follows_every_device_line() {
    let bin = build("printf_order");
    let dev = ours(&bin);
    let hst = host(&bin);
    assert!(dev.status.success(), "{:?}", texts(&dev));
    let (d, _) = texts(&dev);
    let (h, _) = texts(&hst);
    assert_eq!(sorted_lines(&d), sorted_lines(&h));
    let lines: Vec<&str> = d.lines().collect();
    let at = |m: &str| lines.iter().position(|l| *l == m).expect(m);
    let (one, two) = (at("host: after phase 1"), at("host: after phase 2"));
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("phase 1") {
            assert!(i < one, "{l} after the host's line");
        } else if l.starts_with("phase 2") {
            assert!(one < i && i < two, "{l} out of its phase");
        }
    }
    assert_eq!(lines.len(), 128 + 256 + 2);
}
