//! How a FLAT access is routed by its address (LLVM's `AMDGPUUsage.rst`,
//! "Address Spaces"; the ISA manual's FLAT addressing): a high dword equal to the shared
//! aperture's is LDS at the low dword, the private aperture's is the lane's
//! scratch, anything else is a global address. A fault is reported as what
//! the address is: an LDS offset only for an address inside the shared
//! aperture, the whole flat address otherwise (issue 35: the -O0 build of
//! secp256k1-omp stores through 0x0001_0000_0e54_8ae5 + 20, inside the shared
//! aperture, and must be told as LDS offset 0xe548af9).

mod common;

use common::{code, run_wave, Rng, TestMemory};
use isa::{Apertures, Fault, MemoryRegion, Wave, WaveExit};

/// `flat_store_dword v[2:3], v4 offset:20` by lane 0 alone, to `addr - 20`,
/// with `lds` bytes of LDS.
fn store_at(addr: u64, lds: usize) -> (Result<WaveExit, Fault>, u64) {
    let mem = TestMemory::default();
    let c = code(&mem, "flat_store_dword v[2:3], v4 offset:20");
    let mut w = Wave::new();
    w.pc = c.region.device_base();
    w.set_exec(1);
    let base = addr - 20;
    w.vgpr[2][0] = base as u32;
    w.vgpr[3][0] = (base >> 32) as u32;
    w.vgpr[4][0] = 0xC0FF_EE00;
    let mut lds = vec![0u8; lds];
    let r = run_wave(&mem, &c, &mut w, &mut lds);
    (r, c.region.device_base() + c.offsets[0])
}

#[test]
fn a_flat_address_in_the_shared_aperture_faults_as_its_lds_offset() {
    let addr = Apertures::KFD.shared_base | 0x0e54_8af9;
    let (r, pc) = store_at(addr, 1584);
    assert_eq!(
        r.unwrap_err(),
        Fault::LdsOutOfRange {
            offset: 0x0e54_8af9,
            size: 4,
            lds_size: 1584,
            pc
        }
    );
    // The aperture's last dword: still LDS, still its low dword.
    let addr = Apertures::KFD.shared_base | 0xFFFF_FFFC;
    let (r, _) = store_at(addr, 1584);
    assert!(
        matches!(
            r.unwrap_err(),
            Fault::LdsOutOfRange {
                offset: 0xFFFF_FFFC,
                ..
            }
        ),
        "{addr:#x}"
    );
}

#[test]
fn a_flat_address_outside_every_aperture_faults_as_a_global_address() {
    let shared = Apertures::KFD.shared_base;
    let private = Apertures::KFD.private_base;
    for addr in [
        // The -O0 case's low dword with no aperture above it.
        0x0e54_8af9u64,
        // Just below and just above the shared aperture.
        shared - 4,
        shared + (1 << 32),
        // Between the two apertures, and just below the private one.
        shared + (0x7FFF << 32) + 0x0e54_8af9,
        private - 4,
        // Just above the private aperture.
        private + (1 << 32) + 0x0e54_8af9,
    ] {
        let (r, pc) = store_at(addr, 1584);
        assert_eq!(
            r.unwrap_err(),
            Fault::Memory {
                address: addr,
                size: 4,
                write: true,
                pc,
                lane: Some(0),
            },
            "{addr:#x}"
        );
    }
}

/// A wave whose lanes mix the two: 63 lanes store through the shared
/// aperture inside the LDS, lane 40 to the same offset without the aperture.
/// The fault names lane 40's whole address, not an LDS offset.
#[test]
fn one_lane_outside_the_apertures_among_lds_lanes_faults_as_global() {
    let mem = TestMemory::default();
    let c = code(&mem, "flat_store_dword v[2:3], v4");
    let mut w = Wave::new();
    w.pc = c.region.device_base();
    w.set_exec(u64::MAX);
    let shared_hi = (Apertures::KFD.shared_base >> 32) as u32;
    for l in 0..64 {
        w.vgpr[2][l] = 4 * l as u32;
        w.vgpr[3][l] = if l == 40 { 0 } else { shared_hi };
        w.vgpr[4][l] = l as u32;
    }
    let mut lds = vec![0u8; 256];
    let err = run_wave(&mem, &c, &mut w, &mut lds).unwrap_err();
    assert_eq!(
        err,
        Fault::Memory {
            address: 160,
            size: 4,
            write: true,
            pc: c.region.device_base(),
            lane: Some(40),
        }
    );
}

/// Runs `text` on a wave with EXEC `exec`, v0..v15 as `regs` gives them, over a
/// copy of `lds`; returns v0..v15 and the LDS after.
fn run_over_lds(
    text: &str,
    exec: u64,
    regs: &dyn Fn(&mut Wave),
    lds: &[u8],
) -> (Vec<[u32; 64]>, Vec<u8>) {
    let mem = TestMemory::default();
    let c = code(&mem, &format!("{text}\ns_endpgm"));
    let mut w = Wave::new();
    w.pc = c.region.device_base();
    regs(&mut w);
    w.set_exec(exec);
    let mut lds = lds.to_vec();
    assert_eq!(
        run_wave(&mem, &c, &mut w, &mut lds),
        Ok(WaveExit::Ended),
        "{text}"
    );
    ((0..16).map(|r| w.vgpr[r]).collect(), lds)
}

/// A setter of v0..v15: random values, then v[2:3] = `aperture` + each lane's
/// offset (a FLAT address) and v8 = the offset (the DS or SCRATCH form's).
fn lanes(rng: &mut Rng, aperture: u64, offsets: &[u32]) -> impl Fn(&mut Wave) {
    let values: Vec<u32> = (0..64 * 16).map(|_| rng.next() as u32).collect();
    let offsets = offsets.to_vec();
    move |w: &mut Wave| {
        for r in 0..16 {
            for l in 0..64 {
                w.vgpr[r][l] = values[r * 64 + l];
            }
        }
        for (l, &o) in offsets.iter().enumerate() {
            let a = aperture + u64::from(o);
            (w.vgpr[2][l], w.vgpr[3][l]) = (a as u32, (a >> 32) as u32);
            w.vgpr[8][l] = o;
        }
    }
}

#[test]
fn flat_accesses_to_the_shared_aperture_equal_their_ds_forms() {
    // (FLAT form through v[2:3], the DS form through v8 = the lanes' LDS offsets.)
    let pairs = [
        ("flat_load_dword v1, v[2:3]", "ds_read_b32 v1, v8"),
        ("flat_load_dwordx2 v[0:1], v[2:3]", "ds_read_b64 v[0:1], v8"),
        (
            "flat_load_dwordx4 v[4:7], v[2:3]",
            "ds_read_b128 v[4:7], v8",
        ),
        ("flat_load_ubyte v1, v[2:3]", "ds_read_u8 v1, v8"),
        ("flat_load_sbyte v1, v[2:3]", "ds_read_i8 v1, v8"),
        ("flat_load_sshort v1, v[2:3]", "ds_read_i16 v1, v8"),
        ("flat_store_dword v[2:3], v9", "ds_write_b32 v8, v9"),
        (
            "flat_store_dwordx2 v[2:3], v[10:11]",
            "ds_write_b64 v8, v[10:11]",
        ),
        ("flat_store_byte v[2:3], v9", "ds_write_b8 v8, v9"),
        ("flat_store_short v[2:3], v9", "ds_write_b16 v8, v9"),
    ];
    let mut rng = Rng(0x5EED_F1A7);
    let lds: Vec<u8> = (0..1024).map(|_| rng.next() as u8).collect();
    for case in 0..200 {
        let (flat, ds) = pairs[case % pairs.len()];
        let exec = match case % 4 {
            0 => u64::MAX,
            1 => 1,
            _ => rng.next(),
        };
        // Every lane one address, or its own (aligned to the access).
        let one = rng.next() % 2 == 0;
        let offsets: Vec<u32> = (0..64)
            .map(|_| (rng.next() % 1000) as u32 & !15)
            .map(|o| if one { 512 } else { o })
            .collect();
        let regs = lanes(&mut rng, Apertures::KFD.shared_base, &offsets);
        let (fv, fl) = run_over_lds(flat, exec, &regs, &lds);
        let (dv, dl) = run_over_lds(ds, exec, &regs, &lds);
        for r in [0, 1, 4, 5, 6, 7] {
            assert_eq!(fv[r], dv[r], "v{r}: {flat} vs {ds}, exec {exec:#x}");
        }
        assert!(fl == dl, "the LDS: {flat} vs {ds}, exec {exec:#x}");
    }
}

/// Bytes of the scratch region of [`run_over_scratch`]: 256 rows of 64 lanes'
/// dwords (private offsets below 1 KiB).
const SCRATCH_BYTES: usize = 256 * 256;

/// Runs `text` on a wave with EXEC `exec`, v0..v15 as `regs` gives them and
/// FLAT_SCRATCH at a region holding `scratch`; returns v0..v15 and the region's
/// bytes after.
fn run_over_scratch(
    text: &str,
    exec: u64,
    regs: &dyn Fn(&mut Wave),
    scratch: &[u8],
) -> (Vec<[u32; 64]>, Vec<u8>) {
    let mem = TestMemory::default();
    let c = code(&mem, &format!("{text}\ns_endpgm"));
    let region = mem.alloc(SCRATCH_BYTES as u64);
    assert!(region.write_bytes(0, scratch));
    let mut w = Wave::new();
    w.pc = c.region.device_base();
    regs(&mut w);
    let base = region.device_base();
    (w.sgpr[102], w.sgpr[103]) = (base as u32, (base >> 32) as u32);
    w.set_exec(exec);
    let mut lds = vec![0u8; 256];
    assert_eq!(
        run_wave(&mem, &c, &mut w, &mut lds),
        Ok(WaveExit::Ended),
        "{text}"
    );
    let mut bytes = vec![0u8; SCRATCH_BYTES];
    assert!(region.read_bytes(0, &mut bytes));
    ((0..16).map(|r| w.vgpr[r]).collect(), bytes)
}

#[test]
fn flat_accesses_to_the_private_aperture_equal_their_scratch_forms() {
    // (FLAT form through v[2:3], the SCRATCH form through v8 = the lanes' private
    // offsets.) Unoptimised code reaches its stack slots through generic pointers,
    // in every lane or in thread 0's alone.
    let pairs = [
        (
            "flat_load_dword v1, v[2:3]",
            "scratch_load_dword v1, v8, off",
        ),
        (
            "flat_load_dwordx2 v[0:1], v[2:3] offset:8",
            "scratch_load_dwordx2 v[0:1], v8, off offset:8",
        ),
        (
            "flat_store_dword v[2:3], v9",
            "scratch_store_dword v8, v9, off",
        ),
        (
            "flat_store_dwordx2 v[2:3], v[10:11] offset:4",
            "scratch_store_dwordx2 v8, v[10:11], off offset:4",
        ),
    ];
    let mut rng = Rng(0x5EED_5C7A);
    let scratch: Vec<u8> = (0..SCRATCH_BYTES).map(|_| rng.next() as u8).collect();
    for case in 0..160 {
        let (flat, private) = pairs[case % pairs.len()];
        let exec = match case / pairs.len() % 5 {
            0 => u64::MAX,
            1 => 1,
            2 => 0x8000_0000_0000_0001,
            3 => u64::MAX >> 3,
            _ => rng.next(),
        };
        // Every lane one slot, or its own (dword-aligned).
        let one = rng.next() % 2 == 0;
        let slot = (rng.next() % 900) as u32 & !3;
        let offsets: Vec<u32> = (0..64)
            .map(|_| (rng.next() % 900) as u32 & !3)
            .map(|o| if one { slot } else { o })
            .collect();
        let regs = lanes(&mut rng, Apertures::KFD.private_base, &offsets);
        let (fv, fs) = run_over_scratch(flat, exec, &regs, &scratch);
        let (sv, ss) = run_over_scratch(private, exec, &regs, &scratch);
        for r in [0, 1] {
            assert_eq!(fv[r], sv[r], "v{r}: {flat} vs {private}, exec {exec:#x}");
        }
        assert!(fs == ss, "scratch: {flat} vs {private}, exec {exec:#x}");
    }
}
