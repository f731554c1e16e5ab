//! The files a sandboxed child must be allowed to execute: its program and
//! the interpreters the kernel opens to run it (an ELF binary's dynamic
//! loader, a script's `#!` interpreter and its loader), and no others.

use std::fs::File;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

/// How many interpreters deep a program may go (script → shell → loader).
const MAX_DEPTH: usize = 4;
/// How much of a file is read to find its interpreter: the ELF program
/// headers and the `PT_INTERP` string come first.
const HEAD_BYTES: u64 = 64 * 1024;

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
    let mut head = Vec::new();
    File::open(path)?.take(HEAD_BYTES).read_to_end(&mut head)?;
    Ok(shebang(&head).or_else(|| elf_interpreter(&head)))
}

/// The interpreter of a `#!` line.
pub(super) fn shebang(head: &[u8]) -> Option<PathBuf> {
    let line = head.strip_prefix(b"#!")?.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    line.split_whitespace().next().map(PathBuf::from)
}

/// The `PT_INTERP` path of a 64-bit little-endian ELF file.
pub(super) fn elf_interpreter(head: &[u8]) -> Option<PathBuf> {
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
        let offset = usize::try_from(u64_at(head, header + 0x08)?).ok()?;
        let size = usize::try_from(u64_at(head, header + 0x20)?).ok()?;
        let bytes = head.get(offset..offset.checked_add(size)?)?;
        let text = std::str::from_utf8(bytes).ok()?.trim_end_matches('\0');
        Some(PathBuf::from(text))
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
