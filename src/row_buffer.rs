//! The one way a row of a tensor reaches an `f32` row kernel: where the row is a contiguous
//! `f32` lane, the kernel works on it where it lies; any other row (strided, reversed, or of a
//! 16-bit element type) is widened into a buffer of the calling thread, reused from row to row,
//! and written back (rounded once) afterwards.

use std::cell::{Cell, RefCell};
use std::thread::LocalKey;

use ndarray::{ArrayView1, ArrayViewMut1};

use crate::element::Element;

thread_local! {
    /// Free row buffers of this thread. A kernel that needs a second row while it holds one
    /// (a gated form reads two inputs) takes a second buffer, so nesting never shares one.
    static BUFFERS: RefCell<Vec<Vec<f32>>> = const { RefCell::new(Vec::new()) };
    /// The buffer of [`with_bool_row`].
    static BOOLS: Cell<Vec<bool>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` with a buffer of this thread holding `len` values (contents unspecified).
fn with_buffer<R>(len: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
    let mut buf = take_buffer(len);
    let r = f(&mut buf);
    give_back(buf);
    r
}

/// A buffer of this thread's free ones (a new one if there is none), holding `len` values
/// (contents unspecified: what an earlier user left, zeros where it grew). Hand it back with
/// [`give_back`] for the next user; one not handed back is simply dropped.
///
/// Once the thread's own storage is gone (a call from another thread-local's destructor at
/// thread exit), every buffer is new and dropped after use: slower, never a panic.
pub(crate) fn take_buffer(len: usize) -> Vec<f32> {
    let mut buf = BUFFERS
        .try_with(|b| b.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default();
    buf.resize(len, 0.0);
    buf
}

/// Returns a buffer from [`take_buffer`] to this thread's free ones (drops it once the
/// thread's storage is gone).
pub(crate) fn give_back(buf: Vec<f32>) {
    let _ = BUFFERS.try_with(|b| b.borrow_mut().push(buf));
}

/// The value of a thread-local `Cell` buffer, left empty (a new, empty one once the thread's
/// storage is gone, as at thread exit: see [`take_buffer`]).
pub(crate) fn take_cell<T: Default>(key: &'static LocalKey<Cell<T>>) -> T {
    key.try_with(Cell::take).unwrap_or_default()
}

/// Puts `value` back into a thread-local `Cell` buffer (drops it once the thread's storage is
/// gone).
pub(crate) fn put_cell<T>(key: &'static LocalKey<Cell<T>>, value: T) {
    let _ = key.try_with(|c| c.set(value));
}

/// Runs `f` on `row` as a contiguous `f32` slice, in place or through a buffer written back.
#[inline]
pub(crate) fn with_row_mut<T: Element, R>(
    row: ArrayViewMut1<'_, T>,
    f: impl FnOnce(&mut [f32]) -> R,
) -> R {
    with_row_written(row, true, f)
}

/// Runs `f` on `row` as a contiguous `f32` slice, read only: the row itself where it is a
/// contiguous `f32` lane, else a widened copy.
#[inline]
pub(crate) fn with_row<T: Element, R>(row: ArrayView1<'_, T>, f: impl FnOnce(&[f32]) -> R) -> R {
    if let Some(s) = row.as_slice()
        && let Some(s) = T::as_f32_slice(s)
    {
        return f(s);
    }
    with_buffer(row.len(), |buf| {
        for (b, v) in buf.iter_mut().zip(row.iter()) {
            *b = v.to_f32();
        }
        f(buf)
    })
}

/// Runs `f` on `row` as a contiguous `f32` slice that it fills: the row itself where it is a
/// contiguous `f32` lane, else a buffer (its contents unspecified, not the row's) written back
/// afterwards.
#[inline]
pub(crate) fn with_row_out<T: Element, R>(
    row: ArrayViewMut1<'_, T>,
    f: impl FnOnce(&mut [f32]) -> R,
) -> R {
    with_row_written(row, false, f)
}

/// [`with_row_mut`] (`read`: the buffer starts as the row, widened) and [`with_row_out`]
/// (`!read`: `f` fills it): the row itself where it is a contiguous `f32` lane, else a buffer
/// of this thread rounded back into the row afterwards.
#[inline]
fn with_row_written<T: Element, R>(
    mut row: ArrayViewMut1<'_, T>,
    read: bool,
    f: impl FnOnce(&mut [f32]) -> R,
) -> R {
    if let Some(s) = row.as_slice_mut()
        && let Some(s) = T::as_f32_slice_mut(s)
    {
        return f(s);
    }
    with_buffer(row.len(), |buf| {
        if read {
            for (b, v) in buf.iter_mut().zip(row.iter()) {
                *b = v.to_f32();
            }
        }
        let r = f(buf);
        for (v, b) in row.iter_mut().zip(buf.iter()) {
            *v = T::from_f32(*b);
        }
        r
    })
}

/// Runs `f` on a row of booleans (a keep-mask row) as a contiguous slice: the row itself where
/// it is contiguous, else a copy in a buffer of this thread.
#[inline]
pub(crate) fn with_bool_row<R>(row: ArrayView1<'_, bool>, f: impl FnOnce(&[bool]) -> R) -> R {
    if let Some(s) = row.as_slice() {
        return f(s);
    }
    // Taken, not borrowed: a nested call simply gets a fresh buffer.
    let mut buf = take_cell(&BOOLS);
    buf.clear();
    buf.extend(row.iter().copied());
    let r = f(&buf);
    put_cell(&BOOLS, buf);
    r
}

#[cfg(feature = "unit-tests")]
#[doc(hidden)]
pub mod tests {
    use super::*;
    use half::bf16;
    use ndarray::{Array2, s};

    pub fn contiguous_f32_rows_are_used_in_place_and_others_go_through_a_buffer() {
        let mut a = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f32);
        let p = a.as_ptr();
        with_row_mut(a.row_mut(0), |r| {
            assert_eq!(r.as_ptr(), p);
            r[1] = 100.0;
        });
        // A column: strided, through the buffer, written back.
        with_row_mut(a.column_mut(2), |c| {
            assert_eq!(c, [2.0, 6.0, 10.0]);
            c.iter_mut().for_each(|v| *v = -*v);
        });
        assert_eq!(a[[0, 1]], 100.0);
        assert_eq!(a.column(2).to_vec(), [-2.0, -6.0, -10.0]);
        // Nested: two buffers at once.
        let b = a.t().to_owned();
        with_row(a.slice(s![..;-1, 0]), |x| {
            with_row(b.slice(s![0, ..;-1]), |y| assert_eq!(x, y))
        });
        // 16-bit rows are widened and rounded back once.
        let mut h = Array2::from_elem((1, 3), bf16::from_f32(1.5));
        with_row_mut(h.row_mut(0), |r| r[2] = 1.0 + 1.0 / 512.0);
        assert_eq!(h[[0, 2]], bf16::from_f32(1.0));
    }
}
