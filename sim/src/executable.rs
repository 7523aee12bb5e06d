//! Code objects, executables and their symbols (`hsa_executable_*` in
//! `hsa/hsa.h`; behaviour as ROCr 5.2's `src/loader/executable.cpp`).
//!
//! Loading places every PT_LOAD segment of the code object into one
//! zero-filled allocation of the target agent, applies the dynamic
//! relocations ([`crate::loader`]), and creates one executable symbol per
//! global object symbol: names ending in `.kd` are kernels, whose properties
//! come from the kernel descriptor, the others are variables.

use crate::error::{SimError, SimResult};
use crate::loader::{CodeObject, KernelDescriptor, LoadError, SymbolKind};
use crate::memory::{AllocKind, Allocation};
use parking_lot::Mutex;
use std::sync::Arc;

/// Bytes handed to the runtime (a deserialized code object or a reader's
/// copy), in runtime-owned memory that clients may patch through the
/// `hsa_code_object_t` handle before loading (LLVM's old plugin does).
pub struct CodeObjectBytes {
    alloc: Arc<Allocation>,
    len: usize,
}

impl CodeObjectBytes {
    /// A copy of the `len` bytes a client passed at `ptr`, read through the kernel's
    /// checked copy: a size that runs past the caller's memory into unmapped or
    /// unreadable pages is refused instead of faulting.
    ///
    /// Errors: `InvalidArgument` naming the first unreadable byte;
    /// `OutOfResources`.
    pub fn copy_from_client(ptr: u64, len: usize) -> SimResult<CodeObjectBytes> {
        let alloc = Allocation::new(len.max(1) as u64, AllocKind::Internal, 0, 0)?;
        host_copy::copy(alloc.base, ptr, len).map_err(|e| {
            SimError::arg(format!(
                "the code object's {len} bytes at {ptr:#x} are not all readable: {e}"
            ))
        })?;
        Ok(CodeObjectBytes { alloc, len })
    }

    /// Address of the first byte (the `hsa_code_object_t` handle).
    pub fn address(&self) -> u64 {
        self.alloc.base
    }

    /// A private snapshot of the current bytes.
    pub fn snapshot(&self) -> Vec<u8> {
        // SAFETY: the allocation holds `len` initialised bytes; copying them out
        // creates no lasting reference into memory a client may write.
        unsafe { std::slice::from_raw_parts(self.alloc.ptr(), self.len) }.to_vec()
    }
}

/// A code object reader (`hsa_code_object_reader_t`).
pub struct CodeObjectReader {
    /// The code object's bytes.
    pub bytes: CodeObjectBytes,
}

/// What a symbol is, with the properties `hsa_executable_symbol_get_info` reports.
#[derive(Clone, Debug)]
pub enum SymbolInfo {
    /// A kernel: `address` is the kernel descriptor's device address.
    Kernel(KernelDescriptor),
    /// A variable of `size` bytes.
    Variable,
}

/// One symbol of a loaded code object.
#[derive(Clone, Debug)]
pub struct ExecutableSymbol {
    /// The ELF name, verbatim (kernels keep `.kd`).
    pub name: String,
    /// Agent the code object was loaded for.
    pub agent: usize,
    /// Device address (descriptor for kernels).
    pub address: u64,
    /// `st_size`.
    pub size: u64,
    /// Kernel or variable.
    pub info: SymbolInfo,
    /// Kernarg segment alignment (16 for v3+ code objects).
    pub kernarg_alignment: u32,
}

struct Loaded {
    agent: usize,
    allocation: Arc<Allocation>,
}

struct State {
    frozen: bool,
    loaded: Vec<Loaded>,
    symbols: Vec<(u64, Arc<ExecutableSymbol>)>,
}

/// What loading and destroying an executable touch of the platform: whether the
/// agents run with XNACK on (which code objects they accept), the memory map the
/// loaded segments join, and the table that gives symbols their handles.
pub struct Platform<'a> {
    /// XNACK on (`HSA_XNACK=1`).
    pub xnack: bool,
    /// Every allocation of the platform.
    pub memory: &'a crate::memory::MemoryMap,
    /// Symbols of live executables, by handle.
    pub symbols: &'a crate::handles::HandleTable<ExecutableSymbol>,
}

/// An executable (`hsa_executable_t`).
pub struct Executable {
    /// `hsa_profile_t` it was created with.
    pub profile: u32,
    /// `hsa_default_float_rounding_mode_t` it was created with.
    pub rounding_mode: u32,
    state: Mutex<State>,
}

fn map_load_error(e: LoadError) -> SimError {
    if e.is_incompatible_isa() {
        SimError::Incompatible(e.to_string())
    } else {
        SimError::InvalidCodeObject(e.to_string())
    }
}

impl Executable {
    /// A new, empty executable; `frozen` for `HSA_EXECUTABLE_STATE_FROZEN`.
    pub fn new(profile: u32, rounding_mode: u32, frozen: bool) -> Executable {
        Executable {
            profile,
            rounding_mode,
            state: Mutex::new(State {
                frozen,
                loaded: Vec::new(),
                symbols: Vec::new(),
            }),
        }
    }

    /// Whether the executable is frozen.
    pub fn is_frozen(&self) -> bool {
        self.state.lock().frozen
    }

    /// Freezes the executable. Errors: `FrozenExecutable` if it already is.
    pub fn freeze(&self) -> SimResult<()> {
        let mut s = self.state.lock();
        if s.frozen {
            return Err(SimError::FrozenExecutable);
        }
        s.frozen = true;
        Ok(())
    }

    /// Loads `bytes` for GPU agent `agent` (hsa_executable_load_code_object), in
    /// the platform `cx` describes.
    ///
    /// Errors: `FrozenExecutable`; `InvalidCodeObject` for a malformed image
    /// (with what was wrong); `Incompatible` for an image built for another ISA;
    /// `VariableUndefined` for a symbol no loaded image defines;
    /// `OutOfResources`.
    pub fn load(&self, cx: &Platform<'_>, agent: usize, bytes: &[u8]) -> SimResult<()> {
        let mut state = self.state.lock();
        if state.frozen {
            return Err(SimError::FrozenExecutable);
        }
        let code = CodeObject::parse(bytes).map_err(map_load_error)?;
        let agent_target = crate::agent::gfx90a_target(cx.xnack);
        if !code.target.is_compatible_with_agent(&agent_target) {
            return Err(SimError::Incompatible(format!(
                "the code object is for {}, the agent is {}",
                code.target.to_target_id_string(),
                agent_target.to_target_id_string()
            )));
        }
        let (first_vaddr, span) = code.load_span();
        let allocation = Allocation::new(span.max(1), AllocKind::Code, agent, 0)?;
        {
            // SAFETY: the allocation is fresh, `span` bytes long, zero-filled and not
            // yet visible to anyone else, so this is the only reference to it.
            let dest = unsafe { std::slice::from_raw_parts_mut(allocation.ptr(), span as usize) };
            let existing: Vec<(String, u64)> = state
                .symbols
                .iter()
                .filter(|(_, s)| s.agent == agent)
                .map(|(_, s)| (s.name.clone(), s.address))
                .collect();
            let resolve = |name: &str| existing.iter().find(|(n, _)| n == name).map(|(_, a)| *a);
            code.place(bytes, dest, allocation.base, &resolve)
                .map_err(|e| {
                    if e.is_undefined_symbol() {
                        SimError::VariableUndefined(e.to_string())
                    } else {
                        map_load_error(e)
                    }
                })?;
        }
        let mut new_symbols = Vec::new();
        for sym in code.symbols.iter().filter(|s| s.is_definition) {
            let address = allocation.base + (sym.vaddr - first_vaddr);
            let info = match sym.kind {
                SymbolKind::Kernel => {
                    SymbolInfo::Kernel(code.kernel_descriptor(bytes, sym).map_err(map_load_error)?)
                }
                SymbolKind::Variable => SymbolInfo::Variable,
            };
            if state
                .symbols
                .iter()
                .any(|(_, s)| s.agent == agent && s.name == sym.name)
            {
                return Err(SimError::VariableAlreadyDefined(sym.name.clone()));
            }
            new_symbols.push(Arc::new(ExecutableSymbol {
                name: sym.name.clone(),
                agent,
                address,
                size: sym.size,
                info,
                kernarg_alignment: 16,
            }));
        }
        cx.memory.insert(allocation.clone());
        for s in new_symbols {
            let h = cx.symbols.insert(s.clone());
            state.symbols.push((h, s));
        }
        state.loaded.push(Loaded { agent, allocation });
        Ok(())
    }

    /// The symbol named `name` (for `agent` when given).
    pub fn symbol_by_name(&self, name: &str, agent: Option<usize>) -> Option<u64> {
        let state = self.state.lock();
        state
            .symbols
            .iter()
            .find(|(_, s)| s.name == name && agent.is_none_or(|a| a == s.agent))
            .map(|(h, _)| *h)
    }

    /// Every symbol handle, in load order.
    pub fn symbol_handles(&self, agent: Option<usize>) -> Vec<u64> {
        let state = self.state.lock();
        state
            .symbols
            .iter()
            .filter(|(_, s)| agent.is_none_or(|a| a == s.agent))
            .map(|(h, _)| *h)
            .collect()
    }

    /// Releases the loaded images and symbols.
    pub fn destroy(&self, cx: &Platform<'_>) {
        let mut state = self.state.lock();
        for (h, _) in state.symbols.drain(..) {
            cx.symbols.remove(h);
        }
        for l in state.loaded.drain(..) {
            let _ = l.agent;
            cx.memory.remove(l.allocation.base);
        }
    }
}
