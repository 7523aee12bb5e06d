//! Planned LDS instructions: the plain DS loads and stores of 4 and 8 bytes (one or
//! two addresses: `ds_read_b32/b64`, `ds_read2[st64]_b32/b64` and the matching
//! writes) and `ds_bpermute_b32`, with every register resolved at decode time.
//!
//! LLVM 16's OpenMP device runtime touches the team state in LDS several times per
//! loop chunk (a lane-0 write, a broadcast read of the same word by every lane, a
//! per-lane slot array), so these forms sit on the hot path of every `teams
//! distribute parallel for`. The plan runs them in one function compiled for AVX2
//! where the host has it, without the general path's per-lane tables:
//!
//! - the address shape is found first (with every lane active: one address for
//!   all, or consecutive elements), the highest active address from it or, for
//!   other shapes, in one more pass; every address the instruction touches is
//!   checked against the LDS size before anything is read or written; an access
//!   outside the LDS (or an empty EXEC) returns false with no effect, so that the
//!   general path runs and reports the faulting lane;
//! - with every lane active, a load from one address for all lanes is one read and
//!   a splat, a run of consecutive elements is one pass over the bytes, and a store
//!   to one address keeps only the last lane's data (lane order, as the general
//!   path writes);
//! - otherwise the active lanes are visited in lane order.
//!
//! The effects (and their order: each address slot's lanes in lane order, slot 0
//! before slot 1) are those of `WaveState::exec_ds`'s general path; the unit tests below
//! compare the two on every planned op over uniform, consecutive, scattered,
//! overlapping and out-of-range addresses under several EXEC masks.

#![allow(clippy::needless_range_loop)] // lane loops index several per-lane arrays

use crate::arch::{VReg, WAVE_SIZE};
use crate::generated::opcodes::DsOp;
use crate::inst::Ds;
use crate::simd::lane_masks;
use crate::state::reg_base;
use crate::state::WaveState;

/// What a planned DS instruction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// LDS to registers.
    Load,
    /// Registers to LDS.
    Store,
    /// `ds_bpermute_b32`: lane l reads the data of lane `(addr[l] + offset) / 4 % 64`.
    Bpermute,
}

/// A DS instruction with its registers resolved to vector-file indices.
#[derive(Clone, Debug)]
pub(crate) struct LdsPlan {
    kind: Kind,
    /// The address register.
    addr: usize,
    /// The first register of DATA0 and DATA1 (stores, bpermute's data).
    data: [usize; 2],
    /// The first destination register (loads, bpermute).
    dst: usize,
    /// Byte offset of each address slot.
    offs: [u32; 2],
    /// Address slots: 1, or 2 for the `2`/`2st64` forms.
    slots: usize,
    /// Bytes per lane and slot: 4 or 8.
    bytes: usize,
}

impl LdsPlan {
    /// The plan of `i`, for the forms this module runs with register operands.
    pub(crate) fn of(i: &Ds) -> Option<Self> {
        use DsOp as O;
        if i.gds {
            return None;
        }
        // (kind, bytes, two-address unit)
        let (kind, bytes, unit): (Kind, usize, Option<u32>) = match i.op {
            O::DsReadB32 => (Kind::Load, 4, None),
            O::DsReadB64 => (Kind::Load, 8, None),
            O::DsRead2B32 => (Kind::Load, 4, Some(4)),
            O::DsRead2st64B32 => (Kind::Load, 4, Some(256)),
            O::DsRead2B64 => (Kind::Load, 8, Some(8)),
            O::DsRead2st64B64 => (Kind::Load, 8, Some(512)),
            O::DsWriteB32 => (Kind::Store, 4, None),
            O::DsWriteB64 => (Kind::Store, 8, None),
            O::DsWrite2B32 => (Kind::Store, 4, Some(4)),
            O::DsWrite2st64B32 => (Kind::Store, 4, Some(256)),
            O::DsWrite2B64 => (Kind::Store, 8, Some(8)),
            O::DsWrite2st64B64 => (Kind::Store, 8, Some(512)),
            O::DsBpermuteB32 => (Kind::Bpermute, 4, None),
            _ => return None,
        };
        let reg = |o: Option<&crate::operand::Operand>| o.and_then(reg_base).map(|(r, _)| r);
        let addr = reg(i.addr.as_ref())?;
        let (offs, slots) = match unit {
            Some(u) => ([u32::from(i.offset0) * u, u32::from(i.offset1) * u], 2),
            None => ([u32::from(i.offset()); 2], 1),
        };
        let dwords = bytes / 4;
        let (data, dst) = match kind {
            Kind::Load => ([0, 0], reg(i.vdst.as_ref())?),
            Kind::Store => {
                let d0 = reg(i.data0.as_ref())?;
                let d1 = if slots == 2 {
                    reg(i.data1.as_ref())?
                } else {
                    0
                };
                ([d0, d1], 0)
            }
            Kind::Bpermute => ([reg(i.data0.as_ref())?, 0], reg(i.vdst.as_ref())?),
        };
        // Every register the plan touches must exist (the general path decides what
        // an operand past the file means).
        let last_dst = dst + slots * dwords;
        let last_data = data[0].max(data[1]) + dwords;
        let file = crate::arch::AGPR_BASE * 2;
        if addr >= file || last_dst > file || last_data > file {
            return None;
        }
        Some(Self {
            kind,
            addr,
            data,
            dst,
            offs,
            slots,
            bytes,
        })
    }
}

/// A planned DS load or store as a fused run (`valu::jit`) takes it: the address
/// register, the registers of the data, and each dword's byte offset from the
/// address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LdsFusion {
    /// Registers to LDS (else LDS to registers).
    pub(crate) store: bool,
    /// The address register.
    pub(crate) addr: u16,
    /// The first destination register (a load: dword i goes to `regs + i`) or the
    /// data register (a store).
    pub(crate) regs: u16,
    /// Byte offset from the lane's address of each dword (`words[..n]`): slot 0's
    /// dwords, then slot 1's.
    pub(crate) words: [u32; 4],
    /// Dwords per lane (1 to 4).
    pub(crate) n: usize,
    /// Whether lanes may address consecutive dwords (lane l at `addr[0] + 4l`): the
    /// one-dword forms (`ds_read_b32`, `ds_write_b32`). Every load may also have one
    /// address for all lanes; a store must be consecutive.
    pub(crate) consecutive: bool,
}

impl LdsPlan {
    /// The plan as a fused run takes it: the loads, and the one-dword stores
    /// (`ds_write_b32`); `None` for the other stores and `ds_bpermute_b32`.
    pub(crate) fn fusion(&self) -> Option<LdsFusion> {
        let dwords = self.bytes / 4;
        let one = self.slots == 1 && dwords == 1;
        let mut words = [0u32; 4];
        for (i, w) in words.iter_mut().take(self.slots * dwords).enumerate() {
            *w = self.offs[i / dwords] + 4 * (i % dwords) as u32;
        }
        let (store, regs) = match self.kind {
            Kind::Load => (false, self.dst),
            Kind::Store if one => (true, self.data[0]),
            _ => return None,
        };
        Some(LdsFusion {
            store,
            addr: u16::try_from(self.addr).ok()?,
            regs: u16::try_from(regs).ok()?,
            words,
            n: self.slots * dwords,
            consecutive: one,
        })
    }
}

/// A `ds_bpermute_b32` as a fused run (`valu::jit`) takes it: lane l of `dst`
/// becomes lane `((addr[l] + offset) >> 2) % 64` of `data`. The run does it only
/// with every lane active (else it stops before it, and [`run_lds_plan`] runs it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BpermuteFusion {
    /// Vector-file index of the address register (bytes; bits 7:2 name the lane).
    pub(crate) addr: u16,
    /// Vector-file index of the register read across lanes.
    pub(crate) data: u16,
    /// Vector-file index of the destination (it may be either source).
    pub(crate) dst: u16,
    /// The instruction's byte offset, added to every lane's address.
    pub(crate) offset: u32,
}

impl LdsPlan {
    /// The plan as a fused run takes it when it is a `ds_bpermute_b32`; `None`
    /// for the other DS forms.
    pub(crate) fn bpermute(&self) -> Option<BpermuteFusion> {
        if self.kind != Kind::Bpermute {
            return None;
        }
        Some(BpermuteFusion {
            addr: u16::try_from(self.addr).ok()?,
            data: u16::try_from(self.data[0]).ok()?,
            dst: u16::try_from(self.dst).ok()?,
            offset: self.offs[0],
        })
    }
}

/// Runs `p` on `w` over the workgroup's `lds`. Returns false, having changed
/// nothing, when a load or store has an empty EXEC or an active lane's access
/// leaves the LDS (the general path then runs and reports the lane).
#[inline]
pub(crate) fn run_lds_plan(w: &mut WaveState, p: &LdsPlan, lds: &mut [u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::arch::host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        return unsafe { run_avx2(w, p, lds) };
    }
    run_portable(w, p, lds)
}

/// `run_body` for hosts without AVX2 (out of line, so that the dispatch above keeps
/// a small frame).
#[inline(never)]
fn run_portable(w: &mut WaveState, p: &LdsPlan, lds: &mut [u8]) -> bool {
    run_body(w, p, lds)
}

/// `run_body` compiled with AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2(w: &mut WaveState, p: &LdsPlan, lds: &mut [u8]) -> bool {
    run_body(w, p, lds)
}

/// A bpermute's address and data rows and its destination row, when the
/// destination is neither source and lies above or below both (`None` otherwise,
/// or when a row is outside `file`).
#[inline(always)]
fn sources_and_destination<'a>(
    file: &'a mut [VReg],
    p: &LdsPlan,
) -> Option<(&'a VReg, &'a VReg, &'a mut VReg)> {
    let (a, d, o) = (p.addr, p.data[0], p.dst);
    if o >= file.len() {
        return None;
    }
    if o > a && o > d {
        let (below, from) = file.split_at_mut(o);
        Some((below.get(a)?, below.get(d)?, from.first_mut()?))
    } else if o < a && o < d {
        let (to, above) = file.split_at_mut(o + 1);
        let base = o + 1;
        Some((above.get(a - base)?, above.get(d - base)?, to.last_mut()?))
    } else {
        None
    }
}

/// Writes `vals` into register `r` in the lanes of `exec`: `WaveState::vwrite`'s rule
/// for a register index, inlined so that it is compiled with the plan's AVX2 (the
/// shared `vwrite` costs the hot LDS loads about a third more, by `inst_cost`).
#[inline(always)]
fn write_masked(w: &mut WaveState, r: usize, vals: &VReg, exec: u64) {
    let Some(dst) = w.vgpr.get_mut(r) else { return };
    if exec == u64::MAX {
        *dst = *vals;
        return;
    }
    let on = lane_masks(exec);
    for l in 0..WAVE_SIZE {
        dst[l] = (vals[l] & on[l]) | (dst[l] & !on[l]);
    }
}

/// `ds_bpermute_b32`: lane l reads the lane named by bits 7:2 of its address plus
/// `off`; inactive source lanes read 0. (Only those bits matter, so the sum is taken
/// modulo 2^32.)
#[inline(always)]
fn bpermute(addr: &VReg, off: u32, exec: u64, data: &VReg, out: &mut VReg) {
    if exec == u64::MAX {
        permute(addr, off, data, out);
        return;
    }
    let on = lane_masks(exec);
    let mut masked = [0u32; WAVE_SIZE];
    for s in 0..WAVE_SIZE {
        masked[s] = data[s] & on[s];
    }
    permute(addr, off, &masked, out);
}

/// `out[l] = src[((addr[l] + off) >> 2) % 64]` for every lane l.
#[inline(always)]
fn permute(addr: &VReg, off: u32, src: &VReg, out: &mut VReg) {
    #[cfg(target_arch = "x86_64")]
    if crate::arch::host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        unsafe { permute_avx2(addr, off, src, out) };
        return;
    }
    for l in 0..WAVE_SIZE {
        out[l] = src[((addr[l].wrapping_add(off) >> 2) & (WAVE_SIZE as u32 - 1)) as usize];
    }
}

/// [`permute`] with AVX2, 8 lanes at a time: when their 8 source lanes are
/// consecutive and in order (LLVM's reductions shift down by 32, 16, ... 1 lanes:
/// every group but at most one is), one load of the 8 source dwords; else VPGATHERDD
/// reading each from `src`.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn permute_avx2(addr: &VReg, off: u32, src: &VReg, out: &mut VReg) {
    use std::arch::x86_64::{
        _mm256_add_epi32, _mm256_and_si256, _mm256_broadcastd_epi32, _mm256_castsi256_ps,
        _mm256_castsi256_si128, _mm256_cmpeq_epi32, _mm256_cvtsi256_si32, _mm256_i32gather_epi32,
        _mm256_loadu_si256, _mm256_movemask_ps, _mm256_set1_epi32, _mm256_setr_epi32,
        _mm256_srli_epi32, _mm256_storeu_si256,
    };
    let off_v = _mm256_set1_epi32(off as i32);
    let lanes = _mm256_set1_epi32(WAVE_SIZE as i32 - 1);
    let iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for g in 0..WAVE_SIZE / 8 {
        // SAFETY: lanes 8g..8g + 8 of the 64-lane rows are in bounds (g < 8); every
        // gathered index is masked to 0..64, inside `src`; a whole-group load starts
        // at a source lane of at most 56, so its 8 dwords are inside `src`.
        unsafe {
            let a = _mm256_loadu_si256(addr.as_ptr().add(8 * g).cast());
            let from = _mm256_and_si256(_mm256_srli_epi32::<2>(_mm256_add_epi32(a, off_v)), lanes);
            // The group's first source lane, taken from the vector (in a register and
            // broadcast there, rather than computed again from memory).
            let first = _mm256_cvtsi256_si32(from) as usize;
            let run = _mm256_add_epi32(_mm256_broadcastd_epi32(_mm256_castsi256_si128(from)), iota);
            let same = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(from, run)));
            let v = if same == 0xFF && first <= WAVE_SIZE - 8 {
                _mm256_loadu_si256(src.as_ptr().add(first).cast())
            } else {
                _mm256_i32gather_epi32::<4>(src.as_ptr().cast(), from)
            };
            _mm256_storeu_si256(out.as_mut_ptr().add(8 * g).cast(), v);
        }
    }
}

/// The little-endian dword at byte `o` of `lds` (0 past the end; callers check the
/// range first).
#[inline(always)]
fn word(lds: &[u8], o: usize) -> u32 {
    lds.get(o..o + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[inline(always)]
fn run_body(w: &mut WaveState, p: &LdsPlan, lds: &mut [u8]) -> bool {
    // The element size as a constant: the lane loops then use fixed strides and
    // fixed-size copies.
    if p.bytes == 8 {
        run_sized::<8>(w, p, lds)
    } else {
        run_sized::<4>(w, p, lds)
    }
}

/// The two forms LLVM's team-state updates use most, without the lane tables of
/// the general shape below: a load of one address by every lane (a broadcast into
/// the destination), and a store by one active lane. `None` for other forms; else
/// what `run_sized` returns (false, with no effect, when an access leaves the LDS).
/// Out of line: inlined, it changes how the general shape below is compiled, to the
/// cost of consecutive stores (x86 instructions per execution, `inst_cost`).
#[inline(never)]
fn team_state_fast<const BYTES: usize>(
    w: &mut WaveState,
    p: &LdsPlan,
    lds: &mut [u8],
    exec: u64,
) -> Option<bool> {
    let dwords = BYTES / 4;
    let in_lds = |a: u32| {
        p.offs[..p.slots]
            .iter()
            .all(|&off| u64::from(a) + u64::from(off) + BYTES as u64 <= lds.len() as u64)
    };
    match p.kind {
        Kind::Load if exec == u64::MAX => {
            let addr = w.vgpr.get(p.addr)?;
            let a0 = addr[0];
            // One pass without an early exit (it vectorises).
            if addr.iter().fold(0, |d, &a| d | (a ^ a0)) != 0 {
                return None;
            }
            if !in_lds(a0) {
                return Some(false);
            }
            // Every value is read before any destination is written (the address
            // register may be one).
            let mut vals = [0u32; 4];
            for (h, &off) in p.offs[..p.slots].iter().enumerate() {
                for k in 0..dwords {
                    vals[h * dwords + k] = word(lds, (a0 + off) as usize + 4 * k);
                }
            }
            for (i, &v) in vals[..p.slots * dwords].iter().enumerate() {
                if let Some(dst) = w.vgpr.get_mut(p.dst + i) {
                    *dst = [v; WAVE_SIZE];
                }
            }
            Some(true)
        }
        Kind::Store if exec.is_power_of_two() => {
            let l = exec.trailing_zeros() as usize;
            let a = w.vgpr.get(p.addr)?[l];
            if !in_lds(a) {
                return Some(false);
            }
            for (h, &off) in p.offs[..p.slots].iter().enumerate() {
                let o = (a + off) as usize;
                for k in 0..dwords {
                    let v = w.vgpr.get(p.data[h] + k)?[l];
                    lds.get_mut(o + 4 * k..o + 4 * k + 4)?
                        .copy_from_slice(&v.to_le_bytes());
                }
            }
            Some(true)
        }
        _ => None,
    }
}

/// `run_body` for elements of `BYTES` (= `p.bytes`) bytes.
#[inline(always)]
fn run_sized<const BYTES: usize>(w: &mut WaveState, p: &LdsPlan, lds: &mut [u8]) -> bool {
    let exec = w.exec();
    if p.kind == Kind::Bpermute {
        if exec == u64::MAX {
            if let Some((addr, data, out)) = sources_and_destination(&mut w.vgpr, p) {
                // Every lane written: straight into the destination.
                permute(addr, p.offs[0], data, out);
                return true;
            }
        }
        let mut out = [0u32; WAVE_SIZE];
        let (Some(addr), Some(data)) = (w.vgpr.get(p.addr), w.vgpr.get(p.data[0])) else {
            return false;
        };
        bpermute(addr, p.offs[0], exec, data, &mut out);
        write_masked(w, p.dst, &out, exec);
        return true;
    }
    if exec == 0 {
        return false;
    }
    if let Some(done) = team_state_fast::<BYTES>(w, p, lds, exec) {
        return done;
    }
    // The address shape (with every lane active: one address, or consecutive
    // elements) and the highest active address, each found in as few passes over
    // the lanes as the shape allows; lane 0's address; and, for other shapes, a copy
    // of every lane's (a load may write the address register).
    let Some(addr) = w.vgpr.get(p.addr) else {
        return false;
    };
    let full = exec == u64::MAX;
    let (uniform, seq, hi) = if full {
        let a0 = addr[0];
        let diff_uniform = addr.iter().fold(0, |d, &a| d | (a ^ a0));
        let mut diff_seq = 0u32;
        if diff_uniform == 0 {
            (true, false, addr[0])
        } else {
            for l in 0..WAVE_SIZE {
                diff_seq |= addr[l] ^ addr[0].wrapping_add((BYTES * l) as u32);
            }
            if diff_seq == 0
                && addr[0]
                    .checked_add((BYTES * (WAVE_SIZE - 1)) as u32)
                    .is_some()
            {
                (false, true, addr[0] + (BYTES * (WAVE_SIZE - 1)) as u32)
            } else {
                (false, false, addr.iter().copied().fold(0, u32::max))
            }
        }
    } else if exec.is_power_of_two() {
        (false, false, addr[exec.trailing_zeros() as usize])
    } else {
        (false, false, lds_highest_body(addr, exec))
    };
    let a0 = addr[0];
    // One active lane (LLVM's team-state updates): its lane number; its address is
    // `hi`.
    let single = (!full && exec.is_power_of_two()).then(|| exec.trailing_zeros() as usize);
    let scattered: Option<VReg> = (!uniform && !seq && single.is_none()).then_some(*addr);
    for &off in &p.offs[..p.slots] {
        if u64::from(hi) + u64::from(off) + BYTES as u64 > lds.len() as u64 {
            return false;
        }
    }
    let dwords = BYTES / 4;
    match p.kind {
        Kind::Load => {
            for (h, &off) in p.offs[..p.slots].iter().enumerate() {
                for k in 0..dwords {
                    let mut out = [0u32; WAVE_SIZE];
                    let delta = off as usize + 4 * k;
                    if uniform {
                        out = [word(lds, a0 as usize + delta); WAVE_SIZE];
                    } else if seq {
                        let base = a0 as usize + delta;
                        if let Some(run) = lds.get(base..base + BYTES * (WAVE_SIZE - 1) + 4) {
                            for l in 0..WAVE_SIZE {
                                let b = &run[BYTES * l..BYTES * l + 4];
                                out[l] = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                            }
                        }
                    } else if let Some(l) = single {
                        out[l] = word(lds, hi as usize + delta);
                    } else if let Some(addr) = &scattered {
                        let mut m = exec;
                        while m != 0 {
                            let l = m.trailing_zeros() as usize;
                            m &= m - 1;
                            out[l] = word(lds, addr[l] as usize + delta);
                        }
                    }
                    write_masked(w, p.dst + h * dwords + k, &out, exec);
                }
            }
        }
        Kind::Store => {
            for (h, &off) in p.offs[..p.slots].iter().enumerate() {
                let r = p.data[h];
                let (Some(d0), Some(d1)) = (w.vgpr.get(r), w.vgpr.get(r + dwords - 1)) else {
                    return false;
                };
                let put = |lds: &mut [u8], o: usize, l: usize| {
                    if let Some(dst) = lds.get_mut(o..o + BYTES) {
                        dst[..4].copy_from_slice(&d0[l].to_le_bytes());
                        if BYTES == 8 {
                            dst[4..].copy_from_slice(&d1[l].to_le_bytes());
                        }
                    }
                };
                if uniform {
                    // Every lane stores to one address: the last lane's data remains.
                    put(lds, a0 as usize + off as usize, WAVE_SIZE - 1);
                } else if seq {
                    let base = a0 as usize + off as usize;
                    if let Some(run) = lds.get_mut(base..base + BYTES * WAVE_SIZE) {
                        for (l, dst) in run.chunks_exact_mut(BYTES).enumerate() {
                            dst[..4].copy_from_slice(&d0[l].to_le_bytes());
                            if BYTES == 8 {
                                dst[4..].copy_from_slice(&d1[l].to_le_bytes());
                            }
                        }
                    }
                } else if let Some(l) = single {
                    put(lds, hi as usize + off as usize, l);
                } else if let Some(addr) = &scattered {
                    let mut m = exec;
                    while m != 0 {
                        let l = m.trailing_zeros() as usize;
                        m &= m - 1;
                        put(lds, addr[l] as usize + off as usize, l);
                    }
                }
            }
        }
        Kind::Bpermute => {}
    }
    true
}

/// The highest LDS address of the lanes in `exec` (0 for none).
#[inline(always)]
pub(crate) fn lds_highest_body(addr: &VReg, exec: u64) -> u32 {
    let mut hi = 0u32;
    for l in 0..WAVE_SIZE {
        // All ones in active lanes, zero in the others (branch-free, vectorises).
        let on = 0u32.wrapping_sub((exec >> l) as u32 & 1);
        hi = hi.max(addr[l] & on);
    }
    hi
}

/// `lds_highest_body` compiled with AVX2 (unsigned 32-bit maxima).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lds_highest_avx2(addr: &VReg, exec: u64) -> u32 {
    lds_highest_body(addr, exec)
}

/// The highest LDS address of the lanes in `exec` (0 for none).
#[inline]
pub(crate) fn lds_highest(addr: &VReg, exec: u64) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if crate::arch::host_avx2() {
        // SAFETY: host_avx2() checked that the CPU has AVX2.
        return unsafe { lds_highest_avx2(addr, exec) };
    }
    lds_highest_body(addr, exec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inst::Ds;
    use crate::wave::Wave;

    use crate::operand::Operand;

    use crate::state::{Apertures, WaveContext};
    use crate::wave::testutil::{v, wave, Mem};

    /// Deterministic pseudo-random numbers (xorshift64).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    const LDS: usize = 4096;

    /// Address patterns (byte addresses per lane) for elements of `bytes`.
    fn patterns(bytes: u32, rng: &mut Rng) -> Vec<(&'static str, VReg)> {
        let mut out = vec![
            ("uniform", [40; WAVE_SIZE]),
            (
                "consecutive",
                std::array::from_fn(|l| 64 + bytes * l as u32),
            ),
            ("reversed", std::array::from_fn(|l| 1024 - bytes * l as u32)),
            (
                "scattered",
                std::array::from_fn(|_| (rng.next() % 900) as u32 * 4),
            ),
            ("overlapping", std::array::from_fn(|l| 8 * (l as u32 % 5))),
            ("misaligned", std::array::from_fn(|l| 3 + bytes * l as u32)),
        ];
        // Lane 37 outside the LDS (a fault when active).
        let mut far: VReg = std::array::from_fn(|l| 16 * l as u32);
        far[37] = LDS as u32 - 2;
        out.push(("lane 37 outside", far));
        let mut huge: VReg = std::array::from_fn(|l| 4 * l as u32);
        huge[5] = u32::MAX - 1;
        out.push(("lane 5 near 2^32", huge));
        out
    }

    fn ds(
        op: DsOp,
        vdst: Option<Operand>,
        d0: Option<Operand>,
        d1: Option<Operand>,
        o: [u8; 2],
    ) -> Ds {
        Ds {
            op,
            vdst,
            addr: Some(v(0, 1)),
            data0: d0,
            data1: d1,
            offset0: o[0],
            offset1: o[1],
            gds: false,
        }
    }

    /// The planned forms with their operands: (instruction, dwords per slot).
    fn forms() -> Vec<Ds> {
        use DsOp as O;
        let mut f = Vec::new();
        for (op, n) in [(O::DsReadB32, 1), (O::DsReadB64, 2)] {
            f.push(ds(op, Some(v(10, n)), None, None, [24, 0]));
        }
        for (op, n) in [
            (O::DsRead2B32, 1),
            (O::DsRead2st64B32, 1),
            (O::DsRead2B64, 2),
            (O::DsRead2st64B64, 2),
        ] {
            f.push(ds(op, Some(v(10, 2 * n)), None, None, [1, 3]));
        }
        for (op, n) in [(O::DsWriteB32, 1), (O::DsWriteB64, 2)] {
            f.push(ds(op, None, Some(v(2, n)), None, [8, 1]));
        }
        for (op, n) in [
            (O::DsWrite2B32, 1),
            (O::DsWrite2st64B32, 1),
            (O::DsWrite2B64, 2),
            (O::DsWrite2st64B64, 2),
        ] {
            f.push(ds(op, None, Some(v(2, n)), Some(v(4, n)), [2, 0]));
        }
        // A load whose destination is its own address register.
        f.push(ds(O::DsReadB32, Some(v(0, 1)), None, None, [4, 0]));
        f
    }

    fn filled(rng: &mut Rng, addr: &VReg, exec: u64) -> Wave {
        let mut w = wave();
        for r in 0..16 {
            for l in 0..WAVE_SIZE {
                w.vgpr[r][l] = rng.next() as u32;
            }
        }
        w.vgpr[0] = *addr;
        w.set_exec(exec);
        w
    }

    fn copy_of(w0: &Wave) -> Wave {
        let mut w = wave();
        w.vgpr[..16].copy_from_slice(&w0.vgpr[..16]);
        w.set_exec(w0.exec());
        w
    }

    fn lds_bytes(rng: &mut Rng) -> Vec<u8> {
        (0..LDS).map(|_| rng.next() as u8).collect()
    }

    #[test]
    fn plans_match_the_general_path() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mem = Mem::default();
        let execs = [
            u64::MAX,
            0xFFFF_FFFF,
            1 << 37,
            1,
            0x8000_0000_0000_0001,
            0x0F0F_00FF_1234_8001,
            0,
        ];
        for inst in forms() {
            let plan = LdsPlan::of(&inst).expect("a planned form");
            let bytes = if matches!(
                inst.op,
                DsOp::DsReadB64
                    | DsOp::DsRead2B64
                    | DsOp::DsRead2st64B64
                    | DsOp::DsWriteB64
                    | DsOp::DsWrite2B64
                    | DsOp::DsWrite2st64B64
            ) {
                8
            } else {
                4
            };
            for (name, addr) in patterns(bytes, &mut rng) {
                for exec in execs {
                    let what = format!("{:?} {name} exec {exec:#x}", inst.op);
                    let w0 = filled(&mut rng, &addr, exec);
                    let lds0 = lds_bytes(&mut rng);
                    // The plan.
                    let (mut wp, mut lp) = (copy_of(&w0), lds0.clone());
                    let ran = run_lds_plan(&mut wp, &plan, &mut lp);
                    // The general path.
                    let (mut wg, mut lg) = (copy_of(&w0), lds0.clone());
                    let mut ctx = WaveContext {
                        memory: &mem,
                        lds: &mut lg,
                        apertures: Apertures::KFD,
                        stop: None,
                        max_instructions: u64::MAX,
                        yield_after: u64::MAX,
                    };
                    let general = wg.exec_ds_general(&inst, 0x1000, &mut ctx);
                    if ran {
                        assert!(
                            general.is_ok(),
                            "{what}: the plan ran where the general path faults"
                        );
                        assert_eq!(wp.vgpr[..16], wg.vgpr[..16], "{what}: registers");
                        assert!(lp == lg, "{what}: LDS bytes");
                    } else {
                        // Declined: nothing changed, and the general path has a reason
                        // (a fault) or nothing to do (empty EXEC).
                        assert_eq!(wp.vgpr[..16], w0.vgpr[..16], "{what}: declined but wrote");
                        assert!(lp == lds0, "{what}: declined but stored");
                        assert!(
                            exec == 0 || general.is_err(),
                            "{what}: declined an in-range access"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn bpermute_reads_the_named_active_lane() {
        let mut rng = Rng(12345);
        let mut addrs: Vec<VReg> = (0..4)
            .map(|_| std::array::from_fn(|_| rng.next() as u32))
            .collect();
        // LLVM's shuffle-down (lane l + d where it exists, else l), with junk in
        // the ignored bits, and near misses of it. The offset (8) is two lanes.
        for d in [0usize, 1, 2, 8, 32, 63] {
            let down: VReg = std::array::from_fn(|l| {
                let src = if l + d < WAVE_SIZE { l + d } else { l };
                (((src + WAVE_SIZE - 2) % WAVE_SIZE) as u32) << 2 | (l as u32 & 3) | 0x100
            });
            addrs.push(down);
            let mut near = down;
            near[40] = near[40].wrapping_add(4);
            addrs.push(near);
            // Two neighbours swapped: consecutive sources, out of order.
            let mut swapped = down;
            swapped.swap(46, 47);
            addrs.push(swapped);
        }
        // (destination, address, data) registers: the destination above both
        // sources, below both, between them, and the same as either.
        let layouts = [(9, 0, 3), (1, 5, 3), (4, 0, 7), (3, 0, 3), (0, 0, 3)];
        for ((dst, areg, dreg), (exec, addr)) in layouts.into_iter().flat_map(|r| {
            [u64::MAX, 0x0F0F_00FF_1234_8001, 1, 0]
                .into_iter()
                .flat_map(|e| addrs.iter().map(move |a| (e, *a)))
                .map(move |x| (r, x))
        }) {
            let inst = Ds {
                addr: Some(v(areg, 1)),
                ..ds(
                    DsOp::DsBpermuteB32,
                    Some(v(dst, 1)),
                    Some(v(dreg, 1)),
                    None,
                    [8, 0],
                )
            };
            let plan = LdsPlan::of(&inst).expect("planned");
            let mut w = filled(&mut rng, &addr, exec);
            w.vgpr[areg as usize] = addr;
            let before = w.vgpr[dst as usize];
            let data = w.vgpr[dreg as usize];
            let mut lds = vec![0u8; 16];
            assert!(run_lds_plan(&mut w, &plan, &mut lds));
            for l in 0..WAVE_SIZE {
                let src = (addr[l].wrapping_add(8) >> 2) as usize % WAVE_SIZE;
                let want = if exec >> l & 1 == 0 {
                    before[l]
                } else if exec >> src & 1 == 1 {
                    data[src]
                } else {
                    0
                };
                assert_eq!(
                    w.vgpr[dst as usize][l], want,
                    "lane {l} exec {exec:#x}, v{dst} from v{areg}, v{dreg}"
                );
            }
            assert!(
                lds.iter().all(|&b| b == 0),
                "bpermute does not touch the LDS"
            );
        }
    }
}
