//! Prefetch hints: asking the CPU to bring data into the cache ahead of its use. A hint
//! changes no value; off x86-64 these do nothing.

/// Asks the CPU to bring `data` into the cache ahead of its use (a hint: no effect on any
/// value, and none at all off x86-64). Inlined: the sorted passes call it once per loop step,
/// where a call would spill their registers.
#[inline(always)]
pub(crate) fn prefetch(data: &[f32]) {
    prefetch_lines::<3>(data, 0, data.len());
}

/// [`prefetch`] of the part of `data` from `start` on, `len` elements long or to its end
/// (nothing where `data` ends before `start`): a loop over one slice that prefetches the same
/// offset of another of any length.
#[inline(always)]
pub(crate) fn prefetch_part(data: &[f32], start: usize, len: usize) {
    if start < data.len() {
        prefetch_lines::<3>(data, start, len.min(data.len() - start));
    }
}

/// [`prefetch`] of the `len` elements of `data` from `start` on, which the caller keeps inside
/// `data` (checked in debug builds): no test and no slice per call, for a loop that prefetches
/// far ahead at every step of a compute-bound kernel, where a bounds-checked slice per step
/// measured slower.
#[inline(always)]
pub(crate) fn prefetch_ahead(data: &[f32], start: usize, len: usize) {
    prefetch_lines::<3>(data, start, len);
}

/// [`prefetch_ahead`] into the L2 cache, not L1 (`prefetcht1`): for a stream read once, asked
/// for far enough ahead that L1 would not hold it until then.
#[inline(always)]
pub(crate) fn prefetch_ahead_l2(data: &[f32], start: usize, len: usize) {
    prefetch_lines::<2>(data, start, len);
}

/// [`prefetch`] into the L2 cache, not L1 (`prefetcht1`): for data wanted a few microseconds
/// later, which in L1 would push out what is read now.
#[inline(always)]
pub(crate) fn prefetch_l2(data: &[f32]) {
    prefetch_lines::<2>(data, 0, data.len());
}

#[cfg(target_arch = "x86_64")]
const _: () = assert!(
    core::arch::x86_64::_MM_HINT_T0 == 3 && core::arch::x86_64::_MM_HINT_T1 == 2,
    "the hints prefetch and prefetch_l2 pass"
);

/// One prefetch per cache line of the `len` elements of `data` from `start` on (inside `data`:
/// every caller's part is), with the hint `HINT` (`_MM_HINT_T0` = 3, `_MM_HINT_T1` = 2).
#[inline(always)]
fn prefetch_lines<const HINT: i32>(data: &[f32], start: usize, len: usize) {
    debug_assert!(start + len <= data.len());
    #[cfg(target_arch = "x86_64")]
    for k in (0..len).step_by(16) {
        let p = data.as_ptr().wrapping_add(start + k);
        // SAFETY: SSE is part of the x86-64 baseline; a prefetch reads nothing the program
        // sees and never faults, and `p` is inside `data` (the caller's part).
        unsafe { core::arch::x86_64::_mm_prefetch::<HINT>(p.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, start, len);
}
