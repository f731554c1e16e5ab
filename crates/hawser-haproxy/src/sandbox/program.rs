//! The files a sandboxed child must be allowed to execute: its program and
//! the interpreters the kernel opens to run it (an ELF binary's dynamic
//! loader, a script's `#!` interpreter and its loader), and no others.

use std::fs::File;
use std::io::{self, Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

/// How many interpreters deep a program may go (script → shell → loader).
const MAX_DEPTH: usize = 4;
/// How much of a file is read to find its interpreter: a `#!` line and the
/// ELF program headers come first. The `PT_INTERP` string usually does too,
/// but not always (patchelf moves a longer one to the end of the file).
pub(super) const HEAD_BYTES: u64 = 64 * 1024;
/// The longest `PT_INTERP` string read (Linux refuses one past a page).
const MAX_INTERP_BYTES: u64 = 4096;

/// `program` (resolved on `PATH` when it has no `/`, as `Command` does) and
/// the interpreters it needs, canonical.
pub(super) fn executables(program: &Path) -> io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut next = Some(resolve(program)?);
    while let Some(path) = next.take() {
        if found.len() == MAX_DEPTH || found.contains(&path) {
            break;
        }
        next = interpreter(&path)?.map(std::fs::canonicalize).transpose()?;
        found.push(path);
    }
    Ok(found)
}

fn resolve(program: &Path) -> io::Result<PathBuf> {
    if program.components().count() > 1 || program.is_absolute() {
        return std::fs::canonicalize(program);
    }
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .map_or_else(
            || Err(io::Error::from(io::ErrorKind::NotFound)),
            std::fs::canonicalize,
        )
}

fn interpreter(path: &Path) -> io::Result<Option<PathBuf>> {
    let mut file = File::open(path)?;
    let mut head = Vec::new();
    (&mut file).take(HEAD_BYTES).read_to_end(&mut head)?;
    if let Some(script_interpreter) = shebang(&head) {
        return Ok(Some(script_interpreter));
    }
    let Some((offset, size)) = elf_interpreter_at(&head) else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(offset))?;
    file.take(size.min(MAX_INTERP_BYTES))
        .read_to_end(&mut bytes)?;
    Ok(std::str::from_utf8(&bytes)
        .ok()
        .map(|text| PathBuf::from(text.trim_end_matches('\0'))))
}

/// The interpreter of a `#!` line.
pub(super) fn shebang(head: &[u8]) -> Option<PathBuf> {
    let line = head.strip_prefix(b"#!")?.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    line.split_whitespace().next().map(PathBuf::from)
}

/// Where the `PT_INTERP` path of a 64-bit little-endian ELF file lies (file
/// offset and size), read from the program headers in `head`.
pub(super) fn elf_interpreter_at(head: &[u8]) -> Option<(u64, u64)> {
    const PT_INTERP: u32 = 3;
    // Magic, 64-bit class, little-endian data.
    if head.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let phoff = usize::try_from(u64_at(head, 0x20)?).ok()?;
    let phentsize = usize::from(u16_at(head, 0x36)?);
    let phnum = usize::from(u16_at(head, 0x38)?);
    (0..phnum).find_map(|index| {
        let header = phoff.checked_add(index.checked_mul(phentsize)?)?;
        if u32_at(head, header)? != PT_INTERP {
            return None;
        }
        Some((u64_at(head, header + 0x08)?, u64_at(head, header + 0x20)?))
    })
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}
