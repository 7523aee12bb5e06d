//! The command line of LLVM 19's loader (`libc/utils/gpu/loader/Main.cpp`):
//! options up to the first other argument, which is the image; everything
//! after it belongs to the device program.

use crate::Error;

/// Threads per block and blocks per grid of `_start` (LLVM's
/// `LaunchParameters`); every field defaults to 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchParameters {
    /// Work-items per workgroup in x, y, z.
    pub threads: [u32; 3],
    /// Workgroups in x, y, z.
    pub blocks: [u32; 3],
}

impl Default for LaunchParameters {
    fn default() -> Self {
        LaunchParameters {
            threads: [1; 3],
            blocks: [1; 3],
        }
    }
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Launch parameters of `_start`.
    pub params: LaunchParameters,
    /// `--print-resource-usage`.
    pub print_resource_usage: bool,
    /// Path of the image.
    pub image: String,
    /// Arguments after the image.
    pub rest: Vec<String>,
}

impl Options {
    /// The device program's `argv`: the image path, then its arguments.
    pub fn device_args(&self) -> Vec<String> {
        let mut v = vec![self.image.clone()];
        v.extend(self.rest.iter().cloned());
        v
    }
}

/// Parses `args` (with the loader's own name first).
///
/// Errors: [`Error::Usage`] for a missing image (LLVM's "No image file
/// provided") or an option value that is not a number.
pub fn parse(args: &[String]) -> Result<Options, Error> {
    let mut params = LaunchParameters::default();
    let mut print_resource_usage = false;
    let mut i = 1;
    while i < args.len() {
        let arg = args[i].as_str();
        let slot = match arg {
            "--threads" | "--threads-x" => Some(&mut params.threads[0]),
            "--threads-y" => Some(&mut params.threads[1]),
            "--threads-z" => Some(&mut params.threads[2]),
            "--blocks" | "--blocks-x" => Some(&mut params.blocks[0]),
            "--blocks-y" => Some(&mut params.blocks[1]),
            "--blocks-z" => Some(&mut params.blocks[2]),
            "--print-resource-usage" => {
                print_resource_usage = true;
                i += 1;
                continue;
            }
            _ => None,
        };
        match slot {
            Some(slot) => {
                // As LLVM: a trailing option without a value means 1.
                *slot = match args.get(i + 1) {
                    Some(v) => v.parse().map_err(|_| {
                        Error::Usage(format!("{arg}: '{v}' is not a non-negative 32-bit number"))
                    })?,
                    None => 1,
                };
                i += 2;
            }
            None => {
                return Ok(Options {
                    params,
                    print_resource_usage,
                    image: arg.to_string(),
                    rest: args[i + 1..].to_vec(),
                })
            }
        }
    }
    Err(Error::Usage("No image file provided".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_then_image_then_program_arguments() {
        let o = parse(&strings(&[
            "amdhsa-loader",
            "--threads",
            "64",
            "--blocks-y",
            "3",
            "--print-resource-usage",
            "prog.gfx90a",
            "--threads",
            "x",
        ]))
        .unwrap();
        assert_eq!(o.params.threads, [64, 1, 1]);
        assert_eq!(o.params.blocks, [1, 3, 1]);
        assert!(o.print_resource_usage);
        assert_eq!(o.image, "prog.gfx90a");
        assert_eq!(o.device_args(), strings(&["prog.gfx90a", "--threads", "x"]));
        assert!(parse(&strings(&["amdhsa-loader", "--threads", "8"])).is_err());
        assert!(parse(&strings(&["amdhsa-loader", "--blocks", "lots", "p"])).is_err());
    }
}
