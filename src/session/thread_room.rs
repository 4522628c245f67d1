//! Whether the process has the address space for one more worker thread, asked before each
//! spawn.
//!
//! std aborts the whole process when a new thread cannot map its signal stack, and under an
//! address-space limit (`ulimit -v`) that happens whenever the thread's stack took the last of
//! the space: the spawn itself succeeded, so no error reaches the caller. A session promises
//! [`crate::Error::ThreadPool`] instead, so a worker is spawned only when the limit leaves room
//! for its stack, its signal stack and a margin. Asking the allocator for that much and freeing
//! it proves nothing: glibc serves the request from an arena it has already reserved. The
//! kernel's own figures do: the limit (`/proc/self/limits`) against the address space in use
//! (`VmSize` in `/proc/self/status`), which is what the kernel compares on every mapping.
//! Where they cannot be read (not Linux, no `/proc`), or there is no limit, nothing is refused.

use std::io;

/// Room beyond the stack: std's signal stack with its guard page, glibc's thread bookkeeping,
/// and what the thread maps as it starts.
const MARGIN: u64 = 1 << 20;

/// The stack std gives a thread that does not ask for a size: `RUST_MIN_STACK` or 2 MiB.
fn default_stack() -> u64 {
    std::env::var("RUST_MIN_STACK")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(2 << 20)
}

/// The soft address-space limit in bytes, `None` when unlimited or unknown.
fn address_space_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// The address space the process has mapped, in bytes.
fn address_space_in_use() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `Ok` unless an address-space limit is known to leave too little room for another thread;
/// then an error that says so (it becomes the pool's build error).
pub(super) fn room_for_a_thread() -> io::Result<()> {
    let needed = default_stack().saturating_add(MARGIN);
    match address_space_limit().zip(address_space_in_use()) {
        Some((limit, used)) => room(limit, used, needed),
        None => Ok(()),
    }
}

/// Whether `needed` more bytes fit under `limit` with `used` mapped.
fn room(limit: u64, used: u64, needed: u64) -> io::Result<()> {
    if used.checked_add(needed).is_some_and(|total| total <= limit) {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::OutOfMemory,
        format!(
            "no room for another thread: {used} of the {limit} bytes of address space the \
             process may map are in use, and a thread needs {needed}"
        ),
    ))
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;

    /// The kernel's figures are read on Linux (this process is within any limit it has), and
    /// a thread is refused exactly when its bytes would pass the limit.
    pub fn the_limit_refuses_a_thread_only_past_it() {
        if cfg!(target_os = "linux") {
            let used = address_space_in_use().expect("VmSize in /proc/self/status");
            assert!(used > 0);
            if let Some(limit) = address_space_limit() {
                assert!(used <= limit, "{used} > {limit}");
            }
        }
        assert!(default_stack() >= 4096);
        assert!(room(100, 60, 40).is_ok());
        let e = room(100, 61, 40).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
        assert!(e.to_string().contains("61 of the 100 bytes"), "{e}");
        assert!(room(u64::MAX, u64::MAX - 1, 40).is_err());
    }
}
