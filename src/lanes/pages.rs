//! Transparent huge pages for large buffers that the GEMM streams (packed weights): a hint to
//! the kernel, which changes no value.

use core::mem::MaybeUninit;

/// Bytes of one transparent huge page on x86-64 and aarch64 Linux (with 4 KiB base pages).
pub(crate) const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Asks the kernel to back the whole huge pages inside `buf` with transparent huge pages
/// (`madvise(MADV_HUGEPAGE)`), before anything is written there: a 2 MiB page needs one TLB
/// entry where 4 KiB pages need 512, and the hardware prefetchers do not cross a 4 KiB page
/// boundary as a GEMM streams its packed B. Does nothing where THP is off, outside Linux, or
/// when `buf` holds no whole aligned huge page; an error of the call is ignored (a hint).
pub(crate) fn advise_huge_pages(buf: &mut [MaybeUninit<f32>]) {
    #[cfg(target_os = "linux")]
    {
        let start = buf.as_ptr().addr();
        let end = start + size_of_val(buf);
        let first = start.next_multiple_of(HUGE_PAGE_BYTES);
        let last = end / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
        if first < last {
            // SAFETY: `[first, last)` lies inside `buf`, memory this process owns and maps;
            // `MADV_HUGEPAGE` changes how the kernel backs those pages, never their contents
            // (`buf` is not yet initialised anyway) nor whether they are mapped.
            unsafe {
                let at = buf
                    .as_mut_ptr()
                    .byte_add(first - start)
                    .cast::<libc::c_void>();
                libc::madvise(at, last - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}
