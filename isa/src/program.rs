//! A decoded code object: every instruction is decoded once, the first time a wave
//! reaches it, and then shared by all waves of all dispatches that use the program.

use std::sync::{Arc, OnceLock, Weak};

use crate::decode::decode;
use crate::error::{DecodeError, Fault};
use crate::inst::Instruction;
use crate::memory::{read_region_dwords, MemoryRegion};
use crate::valu::Plan;

/// Dwords per lazily allocated page of decode slots.
const PAGE_DWORDS: usize = 1024;

/// One decode slot: the instruction starting at that dword, its length in dwords and
/// its pre-resolved execution plan (for the forms that have one).
type Slot = Result<(Instruction, u8, Option<Plan>), DecodeError>;
/// A lazily allocated page of `PAGE_DWORDS` decode slots. A slot holds its decoded
/// instruction behind a pointer, so that a page stays small (16 bytes a dword) and a
/// loop's slots, and the instructions decoded in order, stay dense in the cache.
type Page = Box<[OnceLock<Box<Slot>>]>;

/// A page of decode slots (see [`Program::fetch_hinted`]).
#[derive(Clone, Copy)]
pub(crate) struct PageHint<'p> {
    number: usize,
    slots: &'p [OnceLock<Box<Slot>>],
}

/// The instructions of one code region (normally the loaded code object), decoded
/// lazily but once per PC. Thread-safe: workers decode and read slots concurrently.
///
/// The program holds only a `Weak` reference to its region: a cache of programs must
/// not keep freed code objects alive. Callers executing it hold an `Arc` of the region
/// (see [`Program::region`]).
pub struct Program {
    region: Weak<dyn MemoryRegion>,
    /// Identity of the region (data pointer of its Arc) for cache validation.
    region_id: usize,
    base: u64,
    len: u64,
    pages: Box<[OnceLock<Page>]>,
}

impl Program {
    /// A program over all of `region` (code addresses are device addresses in it).
    pub fn new(region: &Arc<dyn MemoryRegion>) -> Self {
        let len = region.len();
        let dwords = (len / 4) as usize;
        let npages = dwords.div_ceil(PAGE_DWORDS);
        Self {
            region: Arc::downgrade(region),
            region_id: Arc::as_ptr(region).cast::<u8>() as usize,
            base: region.device_base(),
            len,
            pages: (0..npages).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Device address of the first code byte.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Whether `pc` lies inside the program's region.
    pub fn contains(&self, pc: u64) -> bool {
        pc >= self.base && pc - self.base < self.len
    }

    /// Whether this program was built over exactly `region` (the same live object).
    pub fn is_over(&self, region: &Arc<dyn MemoryRegion>) -> bool {
        Arc::as_ptr(region).cast::<u8>() as usize == self.region_id
            && self.region.strong_count() > 0
    }

    /// The region, if it is still alive.
    pub fn region(&self) -> Option<Arc<dyn MemoryRegion>> {
        self.region.upgrade()
    }

    /// The instruction at `pc` and its length in bytes, decoding it on first use.
    ///
    /// # Errors
    /// [`Fault::BadPc`] if `pc` is misaligned or outside the region (or the region is
    /// gone); [`Fault::Illegal`] if the words there do not decode.
    #[inline]
    pub fn fetch(&self, pc: u64) -> Result<(&Instruction, u64), Fault> {
        self.fetch_planned(pc).map(|(i, len, _)| (i, len))
    }

    /// As [`fetch`](Self::fetch), with the instruction's execution plan, if any.
    #[inline]
    pub(crate) fn fetch_planned(
        &self,
        pc: u64,
    ) -> Result<(&Instruction, u64, Option<&Plan>), Fault> {
        self.fetch_hinted(pc, &mut None)
    }

    /// As [`fetch_planned`](Self::fetch_planned); `hint` remembers the page of decode
    /// slots last used (a wave's loop stays in one page), sparing its lookup.
    #[inline]
    pub(crate) fn fetch_hinted<'p>(
        &'p self,
        pc: u64,
        hint: &mut Option<PageHint<'p>>,
    ) -> Result<(&'p Instruction, u64, Option<&'p Plan>), Fault> {
        let off = pc.wrapping_sub(self.base);
        if off >= self.len || off & 3 != 0 {
            return Err(Fault::BadPc { pc });
        }
        let idx = (off / 4) as usize;
        let number = idx / PAGE_DWORDS;
        let page = match hint {
            Some(h) if h.number == number => h.slots,
            _ => {
                let slots = self.pages[number]
                    .get_or_init(|| (0..PAGE_DWORDS).map(|_| OnceLock::new()).collect());
                *hint = Some(PageHint { number, slots });
                slots
            }
        };
        let slot = page[idx % PAGE_DWORDS].get_or_init(|| Box::new(self.decode_at(pc, off)));
        match &**slot {
            Ok((inst, len, plan)) => Ok((inst, u64::from(*len) * 4, plan.as_ref())),
            Err(e) => Err(Fault::Illegal(e.clone())),
        }
    }

    fn decode_at(&self, pc: u64, off: u64) -> Slot {
        let Some(region) = self.region.upgrade() else {
            return Err(DecodeError::Truncated {
                pc,
                needed: 1,
                available: 0,
            });
        };
        let mut words = [0u32; 2];
        let avail = if read_region_dwords(region.as_ref(), off, &mut words).is_some() {
            2
        } else if read_region_dwords(region.as_ref(), off, &mut words[..1]).is_some() {
            1
        } else {
            0
        };
        decode(&words[..avail], pc).map(|(i, n)| {
            let plan = Plan::of(&i);
            (i, n as u8, plan)
        })
    }
}
