//! A wave's stride predictor for its whole-wave memory accesses.
//!
//! A GPU hides memory latency by running other waves while one waits; the engine runs
//! a wave's load to completion before its next instruction, so every cache miss of a
//! streaming kernel (STREAM's `teams distribute parallel for`: each wave moves 64
//! consecutive elements, then jumps by the whole grid's stride) is waited for in full,
//! and the host's own prefetchers do not follow jumps across pages. CPUs answer the
//! same problem with a per-instruction stride prefetcher; this is one.
//!
//! For each memory instruction (keyed by its operands: address registers, data
//! registers, offset, direction) the table keeps the last base address the wave accessed and the stride from
//! the access before. When an access lands one stride past the previous one, the
//! same stride twice in a row, the next access is predicted one stride further on and
//! the caller hints the host to fetch its lines. A prediction is only a hint: it moves
//! no data and changes nothing a program can observe, so a wrong one costs a few
//! wasted cache fills and nothing else.

/// Slots of a [`StrideTable`]: a kernel's loop body has a handful of consecutive
/// accesses.
pub(crate) const SLOTS: usize = 8;

/// The largest stride predicted (bytes either way): beyond it a "stride" is a jump
/// between unrelated arrays, not a walk.
pub(crate) const MAX_STRIDE: u64 = 1 << 30;

/// Byte offset of [`StrideTable`]'s `next` (after its slots of three qwords each:
/// key, last base, last stride), for the compiled form of
/// [`observe`](StrideTable::observe) in fused runs (`valu::jit`, which keeps to the
/// rule written here).
pub(crate) const NEXT_OFFSET: i32 = 24 * SLOTS as i32;

/// One instruction's history: its key, the last base address and the last stride.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
struct Slot {
    key: u64,
    last: u64,
    stride: u64,
}

/// A table of per-instruction strides (see the module documentation), fully
/// associative: a new instruction replaces the slot filled longest ago.
#[derive(Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct StrideTable {
    slots: [Slot; SLOTS],
    /// The slot the next new instruction takes.
    next: usize,
}

impl StrideTable {
    /// Records an access by the instruction `key` at base address `addr` and returns
    /// the base its next access is predicted at: `addr + stride` when the last two
    /// accesses by `key` were `stride` bytes apart and this one is too (stride not
    /// zero, at most [`MAX_STRIDE`]); `None` otherwise.
    #[inline]
    pub(crate) fn observe(&mut self, key: u64, addr: u64) -> Option<u64> {
        let Some(s) = self.slots.iter_mut().find(|s| s.key == key) else {
            self.slots[self.next] = Slot {
                key,
                last: addr,
                stride: 0,
            };
            self.next = (self.next + 1) % SLOTS;
            return None;
        };
        let stride = addr.wrapping_sub(s.last);
        let confirmed = stride == s.stride && stride != 0;
        s.last = addr;
        s.stride = stride;
        let small = stride.wrapping_add(MAX_STRIDE) <= 2 * MAX_STRIDE;
        (confirmed && small).then(|| addr.wrapping_add(stride))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_what_compiled_code_reads() {
        assert_eq!(
            std::mem::offset_of!(StrideTable, next),
            NEXT_OFFSET as usize
        );
        assert_eq!(std::mem::size_of::<Slot>(), 24);
        assert_eq!(std::mem::offset_of!(Slot, last), 8);
        assert_eq!(std::mem::offset_of!(Slot, stride), 16);
    }

    #[test]
    fn a_stride_is_predicted_once_seen_twice_in_a_row() {
        let mut t = StrideTable::default();
        assert_eq!(t.observe(0x40, 1000), None, "first access: no history");
        assert_eq!(t.observe(0x40, 1512), None, "one stride: not yet confirmed");
        assert_eq!(t.observe(0x40, 2024), Some(2536));
        assert_eq!(t.observe(0x40, 2536), Some(3048));
        // A stride change needs confirming again.
        assert_eq!(t.observe(0x40, 2600), None);
        assert_eq!(t.observe(0x40, 2664), Some(2728));
    }

    #[test]
    fn a_backward_stride_is_predicted_and_a_repeat_is_not() {
        let mut t = StrideTable::default();
        for a in [9000, 8000, 7000] {
            t.observe(0x80, a);
        }
        assert_eq!(t.observe(0x80, 6000), Some(5000));
        let mut u = StrideTable::default();
        for _ in 0..4 {
            assert_eq!(u.observe(0x80, 6000), None, "stride 0 is no walk");
        }
    }

    #[test]
    fn instructions_keep_their_own_history_and_huge_jumps_are_not_strides() {
        let mut t = StrideTable::default();
        // Two keys interleave without disturbing each other.
        for i in 0..3u64 {
            t.observe(0x10, 100 + 64 * i);
            t.observe(0x20, 5000 - 8 * i);
        }
        assert_eq!(t.observe(0x10, 292), Some(356));
        assert_eq!(t.observe(0x20, 4976), Some(4968));
        // SLOTS newer keys replace the oldest history, and only it.
        for k in 0..SLOTS as u64 - 2 {
            t.observe(0x100 + k, 7);
        }
        assert_eq!(t.observe(0x20, 4968), Some(4960), "the newest two are kept");
        t.observe(0x200, 7);
        assert_eq!(t.observe(0x10, 356), None, "the oldest was replaced");
        let mut u = StrideTable::default();
        for i in 0..4u64 {
            assert_eq!(u.observe(0x30, i * (MAX_STRIDE + 8)), None);
        }
    }
}
