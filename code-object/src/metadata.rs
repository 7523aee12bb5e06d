//! The `NT_AMDGPU_METADATA` note of code objects V3 to V5: a MessagePack
//! map (AMDGPUUsage "Code Object V3 Metadata", "Code Object V4 Metadata",
//! "Code Object V5 Metadata"), decoded with `rmpv` into typed values.
//!
//! Rules: keys are looked up by name, unknown keys are ignored, keys the
//! AMDGPUUsage tables mark optional take the defaults documented on each
//! field, a key present with the wrong MessagePack type is an error, and a
//! kernel's `.name` is required. [`Metadata::parse`] also requires what the
//! tables mark required and a loader needs: `amdhsa.version`, a kernel's
//! `.symbol`, an argument's `.offset`/`.size`/`.value_kind`.
//! [`parse_kernels`] reads only `amdhsa.kernels`, as the offload plugin
//! does, and lets `.symbol` and `.value_kind` be absent (empty).
//!
//! V4 adds `amdhsa.target`; V5 adds `.uses_dynamic_stack`,
//! `.uniform_work_group_size` and the hidden arguments of the implicit
//! argument block (`hidden_block_count_x`...), which appear in `.args` like
//! any other argument, their value kind starting with `hidden_`.

use rmpv::Value;

use crate::Error;

/// Deepest nesting accepted in the note (the real structure nests 5 deep:
/// map, kernels array, kernel map, args array, arg map).
const MAX_DEPTH: usize = 16;

/// Code-object-wide metadata: the top-level map of the note (AMDGPUUsage
/// "Code Object V3 Metadata Map" and its V4/V5 successors).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Metadata {
    /// `amdhsa.version` as (major, minor): V3 (1,0), V4 (1,1), V5 (1,2).
    pub version: (u32, u32),
    /// `amdhsa.target`, e.g. `amdgcn-amd-amdhsa--gfx90a` (V4+; absent in V3).
    pub target: Option<String>,
    /// `amdhsa.kernels`, in note order (empty when the key is absent).
    pub kernels: Vec<KernelMetadata>,
    /// `amdhsa.printf` format strings (empty when absent).
    pub printf: Vec<String>,
}

impl Metadata {
    /// The kernel whose `.symbol` (descriptor name, with `.kd`) is `symbol`.
    pub fn kernel_by_symbol(&self, symbol: &str) -> Option<&KernelMetadata> {
        self.kernels.iter().find(|k| k.symbol == symbol)
    }

    /// The kernel whose `.name` is `name`.
    pub fn kernel_by_name(&self, name: &str) -> Option<&KernelMetadata> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// Per-kernel metadata: one `amdhsa.kernels` entry (AMDGPUUsage "Code
/// Object V3 Kernel Metadata Map"). Sizes in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KernelMetadata {
    /// `.name` (required): source-level kernel name.
    pub name: String,
    /// `.symbol` (required): the kernel descriptor's symbol name (`.name` + `.kd`).
    pub symbol: String,
    /// `.kernarg_segment_size` (default 0): explicit plus listed hidden arguments.
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align` (default 4, LLVM's minimum).
    pub kernarg_segment_align: u32,
    /// `.group_segment_fixed_size` (default 0): static LDS bytes.
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size` (default 0): static scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// `.wavefront_size` (default 64).
    pub wavefront_size: u32,
    /// `.sgpr_count` (default 0).
    pub sgpr_count: u32,
    /// `.vgpr_count` (default 0; unified count incl. AGPRs on gfx90a).
    pub vgpr_count: u32,
    /// `.agpr_count` (default 0).
    pub agpr_count: u32,
    /// `.max_flat_workgroup_size` (default 1024).
    pub max_flat_workgroup_size: u32,
    /// `.uses_dynamic_stack` (V5; default false).
    pub uses_dynamic_stack: bool,
    /// `.sgpr_spill_count` (default 0).
    pub sgpr_spill_count: u32,
    /// `.vgpr_spill_count` (default 0).
    pub vgpr_spill_count: u32,
    /// `.kind` (`normal`, `init`, `fini`; `None` when absent = normal).
    pub kind: Option<String>,
    /// `.language` (e.g. `OpenCL C`, also for OpenMP kernels).
    pub language: Option<String>,
    /// `.reqd_workgroup_size` [x, y, z].
    pub reqd_workgroup_size: Option<[u32; 3]>,
    /// `.workgroup_size_hint` [x, y, z].
    pub workgroup_size_hint: Option<[u32; 3]>,
    /// `.uniform_work_group_size` (V5, only emitted when 1).
    pub uniform_work_group_size: Option<u32>,
    /// `.args` in note order (empty when absent).
    pub args: Vec<KernelArgMetadata>,
}

impl KernelMetadata {
    /// The arguments that are not hidden (value kind not `hidden_*`).
    pub fn explicit_args(&self) -> impl Iterator<Item = &KernelArgMetadata> {
        self.args.iter().filter(|a| !a.is_hidden())
    }

    /// Number of explicit (non-`hidden_*`) arguments.
    pub fn explicit_arg_count(&self) -> usize {
        self.explicit_args().count()
    }

    /// Sizes in bytes of the explicit arguments, in order.
    pub fn explicit_arg_sizes(&self) -> Vec<u32> {
        self.explicit_args().map(|a| a.size).collect()
    }
}

/// Per-argument metadata: one `.args` entry (AMDGPUUsage "Code Object V3
/// Kernel Argument Metadata Map"). Offsets and sizes in bytes
/// within the kernarg segment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KernelArgMetadata {
    /// `.name`.
    pub name: Option<String>,
    /// `.type_name`.
    pub type_name: Option<String>,
    /// `.offset` (required).
    pub offset: u32,
    /// `.size` (required).
    pub size: u32,
    /// `.value_kind` (required): `by_value`, `global_buffer`,
    /// `hidden_block_count_x`, ...
    pub value_kind: String,
    /// `.address_space` (`global`, `generic`, `local`, ...).
    pub address_space: Option<String>,
    /// `.pointee_align` (dynamic shared pointers only).
    pub pointee_align: Option<u32>,
    /// `.access`.
    pub access: Option<String>,
    /// `.actual_access`.
    pub actual_access: Option<String>,
    /// `.is_const` (default false).
    pub is_const: bool,
    /// `.is_restrict` (default false).
    pub is_restrict: bool,
    /// `.is_volatile` (default false).
    pub is_volatile: bool,
}

impl KernelArgMetadata {
    /// True for implicit arguments (`.value_kind` starting with `hidden_`).
    pub fn is_hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

/// Short description of a MessagePack value's type, for error messages.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Integer(_) => "integer",
        Value::F32(_) | Value::F64(_) => "float",
        Value::String(_) => "string",
        Value::Binary(_) => "binary",
        Value::Array(_) => "array",
        Value::Map(_) => "map",
        Value::Ext(..) => "extension",
    }
}

/// A MessagePack map with a context string for error messages.
struct Map<'a> {
    entries: &'a [(Value, Value)],
    ctx: String,
}

impl<'a> Map<'a> {
    fn new(v: &'a Value, ctx: String) -> Result<Map<'a>, Error> {
        match v {
            Value::Map(entries) => Ok(Map { entries, ctx }),
            other => Err(Error::Metadata(format!(
                "{ctx}: expected a map, found {}",
                type_name(other)
            ))),
        }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    fn wrong(&self, key: &str, expected: &str, found: &Value) -> Error {
        Error::Metadata(format!(
            "{}: key `{key}`: expected {expected}, found {}",
            self.ctx,
            type_name(found)
        ))
    }

    fn missing(&self, key: &str) -> Error {
        Error::Metadata(format!("{}: required key `{key}` is missing", self.ctx))
    }

    fn u32_value(&self, key: &str, v: &Value) -> Result<u32, Error> {
        match v {
            Value::Integer(i) => i
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    Error::Metadata(format!(
                        "{}: key `{key}`: value {i} is not a 32-bit unsigned integer",
                        self.ctx
                    ))
                }),
            other => Err(self.wrong(key, "an unsigned integer", other)),
        }
    }

    fn opt_u32(&self, key: &str) -> Result<Option<u32>, Error> {
        self.get(key).map(|v| self.u32_value(key, v)).transpose()
    }

    fn u32_or(&self, key: &str, default: u32) -> Result<u32, Error> {
        Ok(self.opt_u32(key)?.unwrap_or(default))
    }

    fn req_u32(&self, key: &str) -> Result<u32, Error> {
        self.opt_u32(key)?.ok_or_else(|| self.missing(key))
    }

    fn opt_str(&self, key: &str) -> Result<Option<String>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => match s.as_str() {
                Some(s) => Ok(Some(s.to_string())),
                None => Err(Error::Metadata(format!(
                    "{}: key `{key}`: string is not valid UTF-8",
                    self.ctx
                ))),
            },
            Some(other) => Err(self.wrong(key, "a string", other)),
        }
    }

    fn req_str(&self, key: &str) -> Result<String, Error> {
        self.opt_str(key)?.ok_or_else(|| self.missing(key))
    }

    /// A string key, required when `required`, else empty when absent.
    fn str_required_if(&self, key: &str, required: bool) -> Result<String, Error> {
        if required {
            self.req_str(key)
        } else {
            Ok(self.opt_str(key)?.unwrap_or_default())
        }
    }

    fn bool_or(&self, key: &str, default: bool) -> Result<bool, Error> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Boolean(b)) => Ok(*b),
            Some(other) => Err(self.wrong(key, "a boolean", other)),
        }
    }

    fn opt_array(&self, key: &str) -> Result<Option<&'a [Value]>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a.as_slice())),
            Some(other) => Err(self.wrong(key, "an array", other)),
        }
    }

    /// An array of exactly `N` unsigned 32-bit integers.
    fn opt_u32_array<const N: usize>(&self, key: &str) -> Result<Option<[u32; N]>, Error> {
        let Some(items) = self.opt_array(key)? else {
            return Ok(None);
        };
        if items.len() != N {
            return Err(Error::Metadata(format!(
                "{}: key `{key}`: expected {N} elements, found {}",
                self.ctx,
                items.len()
            )));
        }
        let mut out = [0u32; N];
        for (slot, item) in out.iter_mut().zip(items) {
            *slot = self.u32_value(key, item)?;
        }
        Ok(Some(out))
    }
}

/// Whether the keys AMDGPUUsage marks required but the offload plugin
/// does without (`.symbol`, `.value_kind`) must be present.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Required {
    /// Every key a loader needs (the virtual device's loader).
    All,
    /// Only `.name` of a kernel and `.offset`/`.size` of an argument.
    LaunchOnly,
}

/// Decodes the descriptor bytes of a note into its top-level map.
fn top_level(desc: &[u8]) -> Result<Value, Error> {
    let mut reader = desc;
    rmpv::decode::read_value_with_max_depth(&mut reader, MAX_DEPTH)
        .map_err(|e| Error::Metadata(format!("MessagePack decoding failed: {e}")))
}

/// The kernels of an `NT_AMDGPU_METADATA` note's descriptor bytes, in note
/// order, as the offload plugin reads them: only `amdhsa.kernels` is
/// looked at (it must be present), a kernel's `.symbol` and an argument's
/// `.value_kind` may be absent (read as empty).
///
/// Errors: [`Error::Metadata`] naming the key (and kernel / argument index)
/// that is missing, of the wrong type or out of range, or the MessagePack
/// decoding error.
pub fn parse_kernels(desc: &[u8]) -> Result<Vec<KernelMetadata>, Error> {
    let root = top_level(desc)?;
    let top = Map::new(&root, "top level".to_string())?;
    let kernels = top
        .opt_array("amdhsa.kernels")?
        .ok_or_else(|| top.missing("amdhsa.kernels"))?;
    kernels
        .iter()
        .enumerate()
        .map(|(i, k)| parse_kernel(i, k, Required::LaunchOnly))
        .collect()
}

impl Metadata {
    /// Decodes the descriptor bytes of an `NT_AMDGPU_METADATA` note,
    /// requiring `amdhsa.version`, each kernel's `.name` and `.symbol`, and
    /// each argument's `.offset`, `.size` and `.value_kind`; an absent
    /// `amdhsa.kernels` or `amdhsa.printf` is empty.
    ///
    /// Errors: [`Error::Metadata`] naming the key (and kernel / argument
    /// index) that is missing, of the wrong type or out of range, or the
    /// MessagePack decoding error.
    pub fn parse(desc: &[u8]) -> Result<Metadata, Error> {
        parse_metadata(desc)
    }
}

fn parse_metadata(desc: &[u8]) -> Result<Metadata, Error> {
    let root = top_level(desc)?;
    let top = Map::new(&root, "top level".to_string())?;

    let version = top
        .opt_u32_array::<2>("amdhsa.version")?
        .ok_or_else(|| top.missing("amdhsa.version"))?;
    let target = top.opt_str("amdhsa.target")?;

    let mut kernels = Vec::new();
    for (i, k) in top
        .opt_array("amdhsa.kernels")?
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        kernels.push(parse_kernel(i, k, Required::All)?);
    }

    let mut printf = Vec::new();
    for (i, p) in top
        .opt_array("amdhsa.printf")?
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        match p.as_str() {
            Some(s) => printf.push(s.to_string()),
            None => {
                return Err(Error::Metadata(format!(
                    "amdhsa.printf[{i}]: expected a string, found {}",
                    type_name(p)
                )))
            }
        }
    }

    Ok(Metadata {
        version: (version[0], version[1]),
        target,
        kernels,
        printf,
    })
}

fn parse_kernel(index: usize, v: &Value, required: Required) -> Result<KernelMetadata, Error> {
    let m = Map::new(v, format!("amdhsa.kernels[{index}]"))?;
    let name = m.req_str(".name")?;
    // Name the kernel in later messages.
    let m = Map {
        entries: m.entries,
        ctx: format!("amdhsa.kernels[{index}] (`{name}`)"),
    };
    let mut args = Vec::new();
    for (i, a) in m.opt_array(".args")?.unwrap_or_default().iter().enumerate() {
        args.push(parse_arg(&m.ctx, i, a, required)?);
    }
    Ok(KernelMetadata {
        symbol: m.str_required_if(".symbol", required == Required::All)?,
        kernarg_segment_size: m.u32_or(".kernarg_segment_size", 0)?,
        kernarg_segment_align: m.u32_or(".kernarg_segment_align", 4)?,
        group_segment_fixed_size: m.u32_or(".group_segment_fixed_size", 0)?,
        private_segment_fixed_size: m.u32_or(".private_segment_fixed_size", 0)?,
        wavefront_size: m.u32_or(".wavefront_size", 64)?,
        sgpr_count: m.u32_or(".sgpr_count", 0)?,
        vgpr_count: m.u32_or(".vgpr_count", 0)?,
        agpr_count: m.u32_or(".agpr_count", 0)?,
        max_flat_workgroup_size: m.u32_or(".max_flat_workgroup_size", 1024)?,
        uses_dynamic_stack: m.bool_or(".uses_dynamic_stack", false)?,
        sgpr_spill_count: m.u32_or(".sgpr_spill_count", 0)?,
        vgpr_spill_count: m.u32_or(".vgpr_spill_count", 0)?,
        kind: m.opt_str(".kind")?,
        language: m.opt_str(".language")?,
        reqd_workgroup_size: m.opt_u32_array::<3>(".reqd_workgroup_size")?,
        workgroup_size_hint: m.opt_u32_array::<3>(".workgroup_size_hint")?,
        uniform_work_group_size: m.opt_u32(".uniform_work_group_size")?,
        name,
        args,
    })
}

fn parse_arg(
    kernel_ctx: &str,
    index: usize,
    v: &Value,
    required: Required,
) -> Result<KernelArgMetadata, Error> {
    let m = Map::new(v, format!("{kernel_ctx} .args[{index}]"))?;
    Ok(KernelArgMetadata {
        name: m.opt_str(".name")?,
        type_name: m.opt_str(".type_name")?,
        offset: m.req_u32(".offset")?,
        size: m.req_u32(".size")?,
        value_kind: m.str_required_if(".value_kind", required == Required::All)?,
        address_space: m.opt_str(".address_space")?,
        pointee_align: m.opt_u32(".pointee_align")?,
        access: m.opt_str(".access")?,
        actual_access: m.opt_str(".actual_access")?,
        is_const: m.bool_or(".is_const", false)?,
        is_restrict: m.bool_or(".is_restrict", false)?,
        is_volatile: m.bool_or(".is_volatile", false)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_rejects_bad_documents() {
        let enc = |v: &Value| {
            let mut out = Vec::new();
            rmpv::encode::write_value(&mut out, v).unwrap();
            out
        };
        let s = |x: &str| Value::from(x);
        assert!(matches!(
            parse_kernels(&enc(&Value::from(3))),
            Err(Error::Metadata(_))
        ));
        let no_name = Value::Map(vec![(
            s("amdhsa.kernels"),
            Value::Array(vec![Value::Map(vec![(s(".symbol"), s("k.kd"))])]),
        )]);
        let err = parse_kernels(&enc(&no_name)).unwrap_err();
        assert!(err.to_string().contains(".name"), "{err}");
        let ok = Value::Map(vec![(
            s("amdhsa.kernels"),
            Value::Array(vec![Value::Map(vec![
                (s(".name"), s("k")),
                (s(".max_flat_workgroup_size"), Value::from(256)),
                (
                    s(".args"),
                    Value::Array(vec![
                        Value::Map(vec![
                            (s(".offset"), Value::from(0)),
                            (s(".size"), Value::from(8)),
                            (s(".value_kind"), s("global_buffer")),
                        ]),
                        Value::Map(vec![
                            (s(".offset"), Value::from(8)),
                            (s(".size"), Value::from(8)),
                            (s(".value_kind"), s("hidden_block_count_x")),
                        ]),
                    ]),
                ),
            ])]),
        )]);
        let k = parse_kernels(&enc(&ok)).unwrap();
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].max_flat_workgroup_size, 256);
        assert_eq!(k[0].explicit_arg_count(), 1);
        assert_eq!(k[0].explicit_arg_sizes(), vec![8]);
        // Deeply nested input stops at the depth limit instead of recursing.
        let mut deep = vec![0x91u8; 100_000];
        deep.push(0xc0);
        assert!(matches!(parse_kernels(&deep), Err(Error::Metadata(_))));
    }
}
