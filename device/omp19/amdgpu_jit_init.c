/* A host preload (LD_PRELOAD) for Debian's libomptarget.so.19.1 that makes
 * its JIT (`-fopenmp-target-jit` programs) able to compile for AMDGPU.
 *
 * Why: LLVM 19 defines LIBOMPTARGET_JIT_AMDGPU, the switch under which
 * JITEngine's constructor registers the AMDGPU target
 * (offload/plugins-nextgen/common/src/JIT.cpp), only when LLVM is not
 * linked as one shared library (`if (NOT LLVM_LINK_LLVM_DYLIB)` in
 * offload/plugins-nextgen/common/CMakeLists.txt). Debian links
 * libomptarget.so.19.1 against libLLVM.so.19.1 (see `ldd`), so the target
 * is never registered and every JIT compile fails to find it, although
 * libLLVM.so.19.1 exports the initialisers. This library calls them once
 * at load; it is linked against libLLVM.so.19.1 so that library's own
 * static constructors have run first. */

void LLVMInitializeAMDGPUTargetInfo(void);
void LLVMInitializeAMDGPUTarget(void);
void LLVMInitializeAMDGPUTargetMC(void);
void LLVMInitializeAMDGPUAsmPrinter(void);

__attribute__((constructor)) static void register_amdgpu_target(void) {
  LLVMInitializeAMDGPUTargetInfo();
  LLVMInitializeAMDGPUTarget();
  LLVMInitializeAMDGPUTargetMC();
  LLVMInitializeAMDGPUAsmPrinter();
}
