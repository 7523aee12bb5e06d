//! Host-side `printf` for the PRINTF_TO_* opcodes.
//!
//! The device sends the format string and then a block of argument bytes
//! whose size the host computes from the format (LLVM 19 `rpc_server.cpp`,
//! `DummyArgList` / `StructArgList` in `libc/src/__support/arg_list.h`):
//! each conversion pulls one value of its C type, aligned to its size unless
//! the opcode is a PACKED one. The format is parsed here with the same rules
//! as LLVM libc's `printf_core::Parser` (flags, `*` width and precision,
//! length modifiers incl. C23 `wN`/`wfN`, unknown conversions printed as
//! written); each conversion is then rendered by the host C library's
//! `snprintf`, so the output follows C's rules exactly. Written here rather
//! than taken from a crate because the argument block's layout is the RPC
//! protocol's own, and no Rust formatting crate reproduces C's `printf`
//! byte for byte.

use std::ffi::{c_char, c_int, CString};

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

/// The printf directive (without length) for a conversion: `%`, flags,
/// width, precision.
fn directive(c: &Conversion, extra_flags: u8) -> String {
    let flags = c.flags | extra_flags;
    let mut s = String::from("%");
    for (bit, ch) in [
        (LEFT, '-'),
        (PLUS, '+'),
        (SPACE, ' '),
        (ALT, '#'),
        (ZERO, '0'),
    ] {
        if flags & bit != 0 {
            s.push(ch);
        }
    }
    if c.width > 0 {
        s.push_str(&c.width.to_string());
    }
    if c.precision >= 0 {
        s.push('.');
        s.push_str(&c.precision.to_string());
    }
    s
}

/// Runs `snprintf(buf, n, fmt, arg)` twice (measure, then write) and
/// returns the bytes, or `None` when the C library reports an error or the
/// output would exceed `limit` bytes.
fn c_format(fmt: &str, arg: CArg<'_>, limit: u64) -> Option<Vec<u8>> {
    let cfmt = CString::new(fmt).ok()?;
    let call = |buf: *mut c_char, n: usize| -> c_int {
        // SAFETY: `cfmt` is a NUL-terminated directive with exactly one
        // conversion whose C type matches the variant passed; `buf` is NULL
        // with n = 0, or a writable buffer of `n` bytes.
        unsafe {
            match arg {
                CArg::I64(v) => libc::snprintf(buf, n, cfmt.as_ptr(), v as libc::c_longlong),
                CArg::U64(v) => libc::snprintf(buf, n, cfmt.as_ptr(), v as libc::c_ulonglong),
                CArg::Int(v) => libc::snprintf(buf, n, cfmt.as_ptr(), v),
                CArg::F64(v) => libc::snprintf(buf, n, cfmt.as_ptr(), v),
                CArg::Str(s) => libc::snprintf(buf, n, cfmt.as_ptr(), s.as_ptr()),
            }
        }
    };
    let len = call(std::ptr::null_mut(), 0);
    if len < 0 || len as u64 > limit {
        return None;
    }
    let mut buf = vec![0u8; len as usize + 1];
    let written = call(buf.as_mut_ptr() as *mut c_char, buf.len());
    if written != len {
        return None;
    }
    buf.truncate(len as usize);
    Some(buf)
}

#[derive(Clone, Copy)]
enum CArg<'a> {
    I64(i64),
    U64(u64),
    Int(c_int),
    F64(f64),
    Str(&'a CString),
}

/// Renders one conversion. `string` is the text a `%s` prints (`None`:
/// NULL). `None` means the conversion failed (LLVM's `-1`).
pub(crate) fn render(c: &Conversion, string: Option<&[u8]>, limit: u64) -> Option<Vec<u8>> {
    if c.width as u64 > limit || (c.precision > 0 && c.precision as u64 > limit) {
        return None;
    }
    match (c.conv, c.value) {
        (b'%', _) => Some(b"%".to_vec()),
        (b'n', _) => Some(Vec::new()),
        (b'c', Value::Int(v)) => c_format(
            &format!("{}c", directive(c, 0)),
            CArg::Int(v as u32 as i32),
            limit,
        ),
        (b's', _) => {
            let text = CString::new(c_string(string.unwrap_or(b"(null)"))).ok()?;
            c_format(&format!("{}s", directive(c, 0)), CArg::Str(&text), limit)
        }
        (b'p', Value::Ptr(0)) => {
            let text = CString::new("(nullptr)").ok()?;
            c_format(&format!("{}s", directive(c, 0)), CArg::Str(&text), limit)
        }
        (b'p', Value::Ptr(p)) => {
            c_format(&format!("{}llx", directive(c, ALT)), CArg::U64(p), limit)
        }
        (conv, Value::Int(raw)) => {
            let bits = match c.length {
                Length::Hh => 8,
                Length::H => 16,
                Length::None => 32,
                Length::W(b) => b.min(64),
                _ => 64,
            };
            let signed = matches!(conv, b'd' | b'i');
            let fmt = format!("{}ll{}", directive(c, 0), conv as char);
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
                c_format(&fmt, CArg::I64(value), limit)
            } else {
                c_format(&fmt, CArg::U64(raw & mask), limit)
            }
        }
        (conv, Value::Float(v)) => c_format(
            &format!("{}{}", directive(c, 0), conv as char),
            CArg::F64(v),
            limit,
        ),
        _ => Some(Vec::new()),
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
                    out.extend(render(&c, st, 1 << 20).unwrap_or_default());
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
                    let _ = render(&c, Some(b"abc"), 1 << 16);
                }
            }
        }
    }
}
