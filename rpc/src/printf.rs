//! Host-side `printf` for the PRINTF_TO_* opcodes.
//!
//! The device sends the format string and then a block of argument bytes
//! whose size the host computes from the format (LLVM 19 `rpc_server.cpp`,
//! `DummyArgList` / `StructArgList` in `libc/src/__support/arg_list.h`):
//! each conversion pulls one value of its C type, aligned to its size unless
//! the opcode is a PACKED one. The format is parsed here with the same rules
//! as LLVM libc's `printf_core::Parser` (flags, `*` width and precision,
//! length modifiers incl. C23 `wN`/`wfN`, unknown conversions printed as
//! written); each number and pointer is then rendered by the host C
//! library's `snprintf` (one call into a stack buffer, the directive built
//! on the stack), so the output follows C's rules exactly, and `%s`, `%c`
//! and `%%` are copied with glibc's padding rules (a 1 MiB `%s` is one
//! copy, not two `snprintf` passes over a `CString` copy). Written here rather
//! than taken from a crate because the argument block's layout is the RPC
//! protocol's own, and no Rust formatting crate reproduces C's `printf`
//! byte for byte.

use std::ffi::{c_char, c_int};

/// A source of argument values: the sizing pass counts, the formatting pass
/// reads the device's bytes.
pub(crate) trait ArgSource {
    /// The next value of a `size`-byte integer type, zero-extended; all ones
    /// (the C type's `-1`) past the end of the arguments.
    fn next_int(&mut self, size: usize) -> u64;
    /// The next `double`; `-1.0` past the end.
    fn next_f64(&mut self) -> f64;
    /// The byte offset in the argument block where the next value of a
    /// `size`-byte type starts (after alignment).
    fn next_offset(&self, size: usize) -> u64;
}

/// Counts the bytes the arguments of a format occupy.
pub(crate) struct ArgCounter {
    pub(crate) packed: bool,
    pub(crate) count: u64,
}

impl ArgSource for ArgCounter {
    fn next_int(&mut self, size: usize) -> u64 {
        let size = size as u64;
        if !self.packed {
            self.count = self.count.div_ceil(size) * size;
        }
        self.count += size;
        self.count
    }
    fn next_f64(&mut self) -> f64 {
        self.next_int(8) as f64
    }
    fn next_offset(&self, size: usize) -> u64 {
        let size = size as u64;
        if self.packed {
            self.count
        } else {
            self.count.div_ceil(size) * size
        }
    }
}

/// Reads argument values from the bytes the device sent.
pub(crate) struct ArgBytes<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
    pub(crate) packed: bool,
}

impl ArgSource for ArgBytes<'_> {
    fn next_int(&mut self, size: usize) -> u64 {
        if !self.packed {
            self.pos = self.pos.div_ceil(size) * size;
        }
        let all_ones = if size >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * size)) - 1
        };
        let Some(end) = self.pos.checked_add(size) else {
            return all_ones;
        };
        let Some(src) = self.bytes.get(self.pos..end) else {
            self.pos = end;
            return all_ones;
        };
        let mut b = [0u8; 8];
        b[..size].copy_from_slice(src);
        self.pos = end;
        u64::from_le_bytes(b)
    }
    fn next_f64(&mut self) -> f64 {
        let before = self.pos;
        let bits = self.next_int(8);
        let aligned = if self.packed {
            before
        } else {
            before.div_ceil(8) * 8
        };
        if aligned
            .checked_add(8)
            .is_some_and(|e| e <= self.bytes.len())
        {
            f64::from_bits(bits)
        } else {
            -1.0
        }
    }
    fn next_offset(&self, size: usize) -> u64 {
        if self.packed {
            self.pos as u64
        } else {
            self.pos.div_ceil(size) as u64 * size as u64
        }
    }
}

/// C length modifiers (C23 `wN`/`wfN` carry a bit width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Length {
    None,
    Hh,
    H,
    L,
    Ll,
    BigL,
    J,
    Z,
    T,
    W(u32),
}

const LEFT: u8 = 1;
const PLUS: u8 = 2;
const SPACE: u8 = 4;
const ALT: u8 = 8;
const ZERO: u8 = 16;

/// One conversion, with its value pulled from the arguments.
#[derive(Debug, Clone)]
pub(crate) struct Conversion {
    flags: u8,
    width: i64,
    precision: i64,
    length: Length,
    /// The conversion character.
    pub(crate) conv: u8,
    value: Value,
    /// Where the conversion's value starts in the argument block, in bytes
    /// (the pointer of a `%n`).
    offset: u64,
}

#[derive(Debug, Clone, Copy)]
enum Value {
    None,
    Int(u64),
    Float(f64),
    /// `%s`, `%p`, `%n`: a device address.
    Ptr(u64),
}

/// A piece of a format string.
#[derive(Debug, Clone)]
pub(crate) enum Section<'f> {
    /// Bytes printed as written (text, or a conversion LLVM does not know).
    Raw(&'f [u8]),
    /// A conversion.
    Conv(Conversion),
}

impl Conversion {
    /// The device address a `%s` conversion names, if non-NULL.
    pub(crate) fn string_address(&self) -> Option<u64> {
        match (self.conv, self.value) {
            (b's', Value::Ptr(p)) if p != 0 => Some(p),
            _ => None,
        }
    }

    /// For a `%n` with a non-NULL pointer: the pointer's byte offset in the
    /// argument block and the size of the integer it points to (C's `int`,
    /// or the length modifier's type: `hh` 1, `h` 2, `l`/`ll`/`j`/`z`/`t`
    /// 8, `wN` N/8).
    pub(crate) fn count_store(&self) -> Option<(u64, u8)> {
        let (b'n', Value::Ptr(p)) = (self.conv, self.value) else {
            return None;
        };
        if p == 0 {
            return None;
        }
        let size = match self.length {
            Length::Hh => 1,
            Length::H => 2,
            Length::None => 4,
            Length::L | Length::Ll | Length::J | Length::Z | Length::T | Length::BigL => 8,
            Length::W(bits @ (8 | 16 | 32 | 64)) => (bits / 8) as u8,
            Length::W(_) => return None,
        };
        Some((self.offset, size))
    }
}

/// The format up to its first NUL.
pub(crate) fn c_string(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

fn parse_int(s: &[u8], pos: &mut usize) -> i64 {
    let mut v: i64 = 0;
    while let Some(d) = s.get(*pos).filter(|c| c.is_ascii_digit()) {
        v = (v * 10 + i64::from(d - b'0')).min(i64::from(i32::MAX));
        *pos += 1;
    }
    v
}

/// Splits `format` (no NUL) into sections, pulling each conversion's
/// arguments from `args` in order.
pub(crate) fn parse<'f>(format: &'f [u8], args: &mut dyn ArgSource) -> Vec<Section<'f>> {
    let at = |i: usize| format.get(i).copied().unwrap_or(0);
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < format.len() {
        let start = pos;
        if at(pos) != b'%' {
            while pos < format.len() && at(pos) != b'%' {
                pos += 1;
            }
            out.push(Section::Raw(&format[start..pos]));
            continue;
        }
        pos += 1;
        // A positional `%N$` conversion is not supported: printed as written.
        let mut probe = pos;
        if at(probe).is_ascii_digit() {
            parse_int(format, &mut probe);
            if at(probe) == b'$' {
                pos = probe + 1;
                while pos < format.len() && at(pos) != b'%' {
                    pos += 1;
                }
                out.push(Section::Raw(&format[start..pos]));
                continue;
            }
        }
        let mut flags = 0u8;
        loop {
            let f = match at(pos) {
                b'-' => LEFT,
                b'+' => PLUS,
                b' ' => SPACE,
                b'#' => ALT,
                b'0' => ZERO,
                _ => break,
            };
            flags |= f;
            pos += 1;
        }
        let mut width: i64 = 0;
        if at(pos) == b'*' {
            pos += 1;
            width = i64::from(args.next_int(4) as u32 as i32);
        } else if at(pos).is_ascii_digit() {
            width = parse_int(format, &mut pos);
        }
        if width < 0 {
            width = -width;
            flags |= LEFT;
        }
        let mut precision: i64 = -1;
        if at(pos) == b'.' {
            pos += 1;
            precision = 0;
            if at(pos) == b'*' {
                pos += 1;
                precision = i64::from(args.next_int(4) as u32 as i32);
            } else if at(pos).is_ascii_digit() {
                precision = parse_int(format, &mut pos);
            }
        }
        let length = match at(pos) {
            b'l' if at(pos + 1) == b'l' => {
                pos += 2;
                Length::Ll
            }
            b'l' => {
                pos += 1;
                Length::L
            }
            b'h' if at(pos + 1) == b'h' => {
                pos += 2;
                Length::Hh
            }
            b'h' => {
                pos += 1;
                Length::H
            }
            b'L' => {
                pos += 1;
                Length::BigL
            }
            b'j' => {
                pos += 1;
                Length::J
            }
            b'z' => {
                pos += 1;
                Length::Z
            }
            b't' => {
                pos += 1;
                Length::T
            }
            b'w' => {
                pos += if at(pos + 1) == b'f' { 2 } else { 1 };
                Length::W(parse_int(format, &mut pos).max(0) as u32)
            }
            _ => Length::None,
        };
        let conv = at(pos);
        let offset = args.next_offset(8);
        let value = match conv {
            b'%' => Some(Value::None),
            b'c' => Some(Value::Int(args.next_int(4))),
            b'd' | b'i' | b'o' | b'x' | b'X' | b'u' | b'b' | b'B' => match length {
                Length::Hh | Length::H | Length::None => Some(Value::Int(args.next_int(4))),
                Length::W(0) => None,
                Length::W(bits) if bits <= 32 => Some(Value::Int(args.next_int(4))),
                _ => Some(Value::Int(args.next_int(8))),
            },
            b'f' | b'F' | b'e' | b'E' | b'a' | b'A' | b'g' | b'G' => {
                Some(Value::Float(args.next_f64()))
            }
            b'n' | b'p' | b's' => Some(Value::Ptr(args.next_int(8))),
            _ => None,
        };
        if conv != 0 {
            pos += 1;
        }
        match value {
            Some(value) => out.push(Section::Conv(Conversion {
                flags,
                width,
                precision,
                length,
                conv,
                value,
                offset,
            })),
            None => out.push(Section::Raw(&format[start..pos])),
        }
    }
    out
}

/// Bytes of a directive's buffer: `%`, five flags, a width and a
/// precision of at most 20 digits each, `.`, `ll`, the conversion and the
/// NUL need at most 51.
const DIRECTIVE_BYTES: usize = 64;

/// The C directive of one conversion, NUL-terminated on the stack: `%`,
/// flags, width, precision, a length (`ll` or none) and the conversion
/// character. No heap allocation per conversion.
struct Directive {
    bytes: [u8; DIRECTIVE_BYTES],
    len: usize,
}

impl Directive {
    /// The directive of `c` with `extra_flags` added, `length` and `conv`.
    fn new(c: &Conversion, extra_flags: u8, length: &[u8], conv: u8) -> Directive {
        let mut d = Directive {
            bytes: [0; DIRECTIVE_BYTES],
            len: 0,
        };
        d.push(b'%');
        let flags = c.flags | extra_flags;
        for (bit, ch) in [
            (LEFT, b'-'),
            (PLUS, b'+'),
            (SPACE, b' '),
            (ALT, b'#'),
            (ZERO, b'0'),
        ] {
            if flags & bit != 0 {
                d.push(ch);
            }
        }
        if c.width > 0 {
            d.number(c.width.unsigned_abs());
        }
        if c.precision >= 0 {
            d.push(b'.');
            d.number(c.precision.unsigned_abs());
        }
        for &b in length {
            d.push(b);
        }
        d.push(conv);
        d
    }

    /// Appends a byte, always leaving the last byte of the buffer NUL.
    fn push(&mut self, b: u8) {
        if let Some(slot) = self
            .bytes
            .get_mut(self.len)
            .filter(|_| self.len + 1 < DIRECTIVE_BYTES)
        {
            *slot = b;
            self.len += 1;
        }
    }

    /// Appends `v` in decimal.
    fn number(&mut self, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut n = 0;
        loop {
            digits[n] = b'0' + (v % 10) as u8;
            n += 1;
            v /= 10;
            if v == 0 || n == digits.len() {
                break;
            }
        }
        for &d in digits[..n].iter().rev() {
            self.push(d);
        }
    }
}

/// Output of one conversion that fits on the stack; longer output (a wide
/// field, a `%f` of a huge value) is written by a second `snprintf` into
/// the output vector itself.
const STACK_OUTPUT: usize = 128;

/// Appends `snprintf(directive, arg)` to `out`. `None` (nothing appended)
/// when the C library reports an error or the output would exceed `limit`
/// bytes.
fn c_format(d: &Directive, arg: CArg, limit: u64, out: &mut Vec<u8>) -> Option<()> {
    let fmt = d.bytes.as_ptr() as *const c_char;
    let call = |buf: *mut c_char, n: usize| -> c_int {
        // SAFETY: `fmt` is a NUL-terminated directive (the buffer's last
        // byte is never written) with exactly one conversion whose C type
        // matches the variant passed; `buf` is a writable buffer of `n`
        // bytes.
        unsafe {
            match arg {
                CArg::I64(v) => libc::snprintf(buf, n, fmt, v as libc::c_longlong),
                CArg::U64(v) => libc::snprintf(buf, n, fmt, v as libc::c_ulonglong),
                CArg::F64(v) => libc::snprintf(buf, n, fmt, v),
            }
        }
    };
    let mut stack = [0u8; STACK_OUTPUT];
    let len = call(stack.as_mut_ptr() as *mut c_char, stack.len());
    if len < 0 || len as u64 > limit {
        return None;
    }
    let len = len as usize;
    if let Some(bytes) = stack.get(..len).filter(|_| len < STACK_OUTPUT) {
        out.extend_from_slice(bytes);
        return Some(());
    }
    let start = out.len();
    out.resize(start + len + 1, 0);
    let written = call(out[start..].as_mut_ptr() as *mut c_char, len + 1);
    if usize::try_from(written).ok() != Some(len) {
        out.truncate(start);
        return None;
    }
    out.truncate(start + len);
    Some(())
}

#[derive(Clone, Copy)]
enum CArg {
    I64(i64),
    U64(u64),
    F64(f64),
}

/// Appends `text` padded with spaces to the conversion's width (after it
/// with the `-` flag), as glibc prints `%s` and `%c`: the `0`, `+`, space
/// and `#` flags change nothing there. `None` when the field would exceed
/// `limit` bytes or C's `int` result.
fn padded(c: &Conversion, text: &[u8], limit: u64, out: &mut Vec<u8>) -> Option<()> {
    let width = usize::try_from(c.width).unwrap_or(0);
    let fill = width.saturating_sub(text.len());
    let total = (text.len() + fill) as u64;
    if total > limit || total > i32::MAX as u64 {
        return None;
    }
    if c.flags & LEFT == 0 {
        out.resize(out.len() + fill, b' ');
    }
    out.extend_from_slice(text);
    if c.flags & LEFT != 0 {
        out.resize(out.len() + fill, b' ');
    }
    Some(())
}

/// A `%s` field's bytes: up to the first NUL, at most `precision` of them.
fn string_field(c: &Conversion, text: &[u8]) -> usize {
    let text = c_string(text);
    match usize::try_from(c.precision) {
        Ok(p) => text.len().min(p),
        Err(_) => text.len(),
    }
}

/// Appends one conversion's output to `out`. `string` is the text a `%s`
/// prints (`None`: NULL, printed as `(null)`). `None` (nothing appended)
/// means the conversion failed (LLVM's `-1`).
///
/// `%s`, `%c` and `%%` are copied here, byte for byte what glibc's
/// `snprintf` prints for them (the padding of [`padded`]); numbers and
/// pointers go through `snprintf` with one directive built on the stack.
pub(crate) fn render(
    c: &Conversion,
    string: Option<&[u8]>,
    limit: u64,
    out: &mut Vec<u8>,
) -> Option<()> {
    if c.width as u64 > limit || (c.precision > 0 && c.precision as u64 > limit) {
        return None;
    }
    match (c.conv, c.value) {
        (b'%', _) => {
            out.push(b'%');
            Some(())
        }
        (b'n', _) => Some(()),
        (b'c', Value::Int(v)) => padded(c, &[v as u8], limit, out),
        (b's', _) => {
            let text = string.unwrap_or(b"(null)");
            padded(c, &text[..string_field(c, text)], limit, out)
        }
        (b'p', Value::Ptr(0)) => {
            let text: &[u8] = b"(nullptr)";
            padded(c, &text[..string_field(c, text)], limit, out)
        }
        (b'p', Value::Ptr(p)) => c_format(
            &Directive::new(c, ALT, b"ll", b'x'),
            CArg::U64(p),
            limit,
            out,
        ),
        (conv, Value::Int(raw)) => {
            let bits = match c.length {
                Length::Hh => 8,
                Length::H => 16,
                Length::None => 32,
                Length::W(b) => b.min(64),
                _ => 64,
            };
            let signed = matches!(conv, b'd' | b'i');
            let d = Directive::new(c, 0, b"ll", conv);
            let mask = if bits >= 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            if signed {
                // As LLVM libc's int converter: the sign comes from the
                // value as read (int or 64-bit), the magnitude is then
                // masked by the length modifier (so `%hhd` of 200 prints
                // 200, of -56 prints -56).
                let read_bits = match c.length {
                    Length::Hh | Length::H | Length::None => 32,
                    Length::W(b) if b <= 32 => 32,
                    _ => 64,
                };
                let shift = 64 - read_bits;
                let v = ((raw << shift) as i64) >> shift;
                let magnitude = v.unsigned_abs() & mask;
                let value = if v < 0 {
                    (magnitude as i64).wrapping_neg()
                } else {
                    magnitude as i64
                };
                c_format(&d, CArg::I64(value), limit, out)
            } else {
                c_format(&d, CArg::U64(raw & mask), limit, out)
            }
        }
        (conv, Value::Float(v)) => {
            c_format(&Directive::new(c, 0, b"", conv), CArg::F64(v), limit, out)
        }
        _ => Some(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fmt: &[u8], args: &[u8], strings: &[&[u8]]) -> Vec<u8> {
        let mut a = ArgBytes {
            bytes: args,
            pos: 0,
            packed: true,
        };
        let mut strs = strings.iter();
        let mut out = Vec::new();
        for s in parse(fmt, &mut a) {
            match s {
                Section::Raw(r) => out.extend_from_slice(r),
                Section::Conv(c) => {
                    let st = if c.conv == b's' {
                        strs.next().copied()
                    } else {
                        None
                    };
                    let _ = render(&c, st, 1 << 20, &mut out);
                }
            }
        }
        out
    }

    #[test]
    fn sizes_follow_alignment_rules() {
        let mut n = ArgCounter {
            packed: false,
            count: 0,
        };
        parse(b"%d %ld %c %f %s %hhd %*d", &mut n);
        // int@0, long@8, int@16, double@24, ptr@32, int@40, int@44, int@48
        assert_eq!(n.count, 52);
        let mut p = ArgCounter {
            packed: true,
            count: 0,
        };
        parse(b"%d %ld %c %f %s %hhd %*d", &mut p);
        assert_eq!(p.count, 4 + 8 + 4 + 8 + 8 + 4 + 4 + 4);
    }

    #[test]
    fn renders_like_c() {
        let mut args = Vec::new();
        args.extend_from_slice(&200i32.to_le_bytes());
        args.extend_from_slice(&(-5i64).to_le_bytes());
        args.extend_from_slice(&1.5f64.to_le_bytes());
        args.extend_from_slice(&0u64.to_le_bytes());
        args.extend_from_slice(&0x1000u64.to_le_bytes());
        let out = run(b"[%hhd][%5ld][%.3f][%p][%p][%q]", &args, &[]);
        assert_eq!(out, b"[200][   -5][1.500][(nullptr)][0x1000][%q]");
        assert_eq!(run(b"100%%", &[], &[]), b"100%");
        assert_eq!(run(b"tail %", &[], &[]), b"tail %");
    }

    /// `%s`, `%c` and a NULL `%p` are copied, not formatted by the C
    /// library: every flag, width and precision gives glibc's bytes.
    #[test]
    fn copied_conversions_match_snprintf() {
        let flag_sets: [&str; 8] = ["", "-", "0", "-0", "+", " ", "#", "-+ #0"];
        let widths = ["", "1", "3", "7", "12"];
        let precisions = ["", ".", ".0", ".2", ".5", ".20"];
        let strings: [&[u8]; 4] = [b"", b"ab", b"hello world", b"stop\0after"];
        for flags in flag_sets {
            for width in widths {
                for precision in precisions {
                    for (conv, arg) in [("s", 0), ("c", 1), ("p", 2)] {
                        let fmt = format!("%{flags}{width}{precision}{conv}");
                        for s in strings {
                            let text = c_string(s);
                            let cs = std::ffi::CString::new(text).unwrap();
                            let cfmt = std::ffi::CString::new(fmt.replace('p', "s")).unwrap();
                            let (args, expected_arg): (Vec<u8>, &std::ffi::CStr) = match arg {
                                0 => (0x1000u64.to_le_bytes().to_vec(), &cs),
                                2 => (0u64.to_le_bytes().to_vec(), c"(nullptr)"),
                                _ => ((b'q' as i32).to_le_bytes().to_vec(), c""),
                            };
                            let mut buf = [0u8; 64];
                            // SAFETY: a NUL-terminated directive with one
                            // conversion of the type passed; 64 bytes.
                            let n = unsafe {
                                if arg == 1 {
                                    let cfmt = std::ffi::CString::new(fmt.clone()).unwrap();
                                    libc::snprintf(
                                        buf.as_mut_ptr() as *mut c_char,
                                        64,
                                        cfmt.as_ptr(),
                                        b'q' as c_int,
                                    )
                                } else {
                                    libc::snprintf(
                                        buf.as_mut_ptr() as *mut c_char,
                                        64,
                                        cfmt.as_ptr(),
                                        expected_arg.as_ptr(),
                                    )
                                }
                            };
                            let expected = &buf[..n as usize];
                            assert_eq!(
                                run(fmt.as_bytes(), &args, &[s]),
                                expected,
                                "{fmt} of {s:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn random_formats_and_arguments_never_panic() {
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        let mut rand = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet = b"%%%%-+ #0123456789.*lhLjztwfdiouxXbBcspnaAeEfFgG%qy";
        for _ in 0..3000 {
            let len = (rand() % 24) as usize;
            let fmt: Vec<u8> = (0..len)
                .map(|_| alphabet[(rand() % alphabet.len() as u64) as usize])
                .collect();
            let args: Vec<u8> = (0..(rand() % 40)).map(|_| rand() as u8).collect();
            let mut counter = ArgCounter {
                packed: rand() % 2 == 0,
                count: 0,
            };
            parse(&fmt, &mut counter);
            let mut src = ArgBytes {
                bytes: &args,
                pos: 0,
                packed: counter.packed,
            };
            for s in parse(&fmt, &mut src) {
                if let Section::Conv(c) = s {
                    let _ = render(&c, Some(b"abc"), 1 << 16, &mut Vec::new());
                }
            }
        }
    }
}
