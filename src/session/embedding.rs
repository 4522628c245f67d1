//! Embedding gather: rows of a table by id, and the sum of several such lookups (a BERT
//! embedding: word + token type + position rows), in three forms.

use ndarray::{Array2, ArrayRef2, ArrayViewMut1, Zip};

use super::Session;
use crate::lanes::ExactFpEnv;
use crate::{Error, Mode};

/// One lookup of an embedding sum: a table (`[rows, d]`) and one id per output row.
pub type Lookup<'a> = (&'a ArrayRef2<f32>, &'a [u32]);

/// Checks a lookup against `n` output rows of width `d`; `i` is its place in the sum.
fn check_lookup((table, ids): Lookup<'_>, n: usize, d: usize, i: usize) -> Result<(), Error> {
    if ids.len() != n {
        return Err(Error::ShapeMismatch {
            what: "embedding ids (one per output row)",
            expected: vec![n],
            found: vec![ids.len()],
        });
    }
    if table.ncols() != d {
        return Err(Error::ShapeMismatch {
            what: "embedding table columns (the output's width)",
            expected: vec![d],
            found: vec![table.ncols()],
        });
    }
    if let Some((at, &id)) = ids
        .iter()
        .enumerate()
        .find(|&(_, &id)| id as usize >= table.nrows())
    {
        return Err(Error::InvalidArgument(format!(
            "embedding lookup {i}: id {id} at position {at} is out of range for a table of {} \
             rows",
            table.nrows()
        )));
    }
    Ok(())
}

/// `row (op)= table[id]` element by element.
fn apply(mut row: ArrayViewMut1<'_, f32>, table: &ArrayRef2<f32>, id: u32, add: bool) {
    let src = table.row(id as usize);
    if add {
        Zip::from(&mut row).and(&src).for_each(|y, &x| *y += x);
    } else {
        row.assign(&src);
    }
}

impl<M: Mode> Session<M> {
    /// `out[i] = lookups[0].table[lookups[0].ids[i]] + lookups[1].table[...] + ...`, added
    /// left to right (IEEE additions: the same bits on every machine, in both modes). For a
    /// BERT embedding: `[(&word, &token_ids), (&token_type, &type_ids), (&position,
    /// &positions)]`, Hugging Face's order. An id past its table's rows is an error.
    ///
    /// ```
    /// use activation_kernels::Session;
    /// use ndarray::array;
    /// let word = array![[1.0f32, 1.0], [2.0, 2.0], [3.0, 3.0]];
    /// let position = array![[0.5f32, 0.0], [0.0, 0.5]];
    /// let x = Session::exact().embedding_sum(&[(&word, &[2, 0]), (&position, &[0, 1])])?;
    /// assert_eq!(x, array![[3.5, 3.0], [1.0, 1.5]]);
    /// assert!(Session::exact().embedding_sum(&[(&word, &[3])]).is_err());
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn embedding_sum(&self, lookups: &[Lookup<'_>]) -> Result<Array2<f32>, Error> {
        let Some(&(table, ids)) = lookups.first() else {
            return Err(Error::InvalidArgument(
                "embedding_sum needs at least one lookup".into(),
            ));
        };
        let mut out = super::owned::try_zeros(
            ndarray::Ix2(ids.len(), table.ncols()),
            "embedding_sum output",
        )?;
        self.embedding_sum_into(lookups, &mut out)?;
        Ok(out)
    }

    /// [`Session::embedding_sum`] into `out` (`[ids, d]`).
    pub fn embedding_sum_into(
        &self,
        lookups: &[Lookup<'_>],
        out: &mut ArrayRef2<f32>,
    ) -> Result<(), Error> {
        if lookups.is_empty() {
            return Err(Error::InvalidArgument(
                "embedding_sum needs at least one lookup".into(),
            ));
        }
        let (n, d) = out.dim();
        for (i, &l) in lookups.iter().enumerate() {
            check_lookup(l, n, d, i)?;
        }
        // Subnormal sums are kept whatever the caller's floating-point environment.
        let _env = ExactFpEnv::enter_if(true);
        for (i, mut row) in out.rows_mut().into_iter().enumerate() {
            for (j, &(table, ids)) in lookups.iter().enumerate() {
                apply(row.view_mut(), table, ids[i], j > 0);
            }
        }
        Ok(())
    }

    /// The rows `table[ids[i]]` as a new `[ids, d]` array (an embedding lookup); an id past
    /// the table's rows is an error.
    ///
    /// ```
    /// use activation_kernels::Session;
    /// use ndarray::array;
    /// let table = array![[1.0f32, 1.0], [2.0, 2.0]];
    /// assert_eq!(Session::exact().gather_rows(&table, &[1, 1, 0])?, array![[2.0, 2.0], [2.0, 2.0], [1.0, 1.0]]);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn gather_rows(&self, table: &ArrayRef2<f32>, ids: &[u32]) -> Result<Array2<f32>, Error> {
        self.embedding_sum(&[(table, ids)])
    }

    /// `out[i] = table[ids[i]]` (see [`Session::gather_rows`]).
    pub fn gather_rows_into(
        &self,
        table: &ArrayRef2<f32>,
        ids: &[u32],
        out: &mut ArrayRef2<f32>,
    ) -> Result<(), Error> {
        self.embedding_sum_into(&[(table, ids)], out)
    }

    /// In place: `x[i] += table[ids[i]]` (a position or token-type embedding added to token
    /// rows); an id past the table's rows is an error, and `x` is then unchanged.
    ///
    /// ```
    /// use activation_kernels::Session;
    /// use ndarray::array;
    /// let mut x = array![[1.0f32, 1.0], [2.0, 2.0]];
    /// Session::exact().add_gathered_rows(&mut x, &array![[0.5f32, 0.25]], &[0, 0])?;
    /// assert_eq!(x, array![[1.5, 1.25], [2.5, 2.25]]);
    /// # Ok::<(), activation_kernels::Error>(())
    /// ```
    pub fn add_gathered_rows(
        &self,
        x: &mut ArrayRef2<f32>,
        table: &ArrayRef2<f32>,
        ids: &[u32],
    ) -> Result<(), Error> {
        let (n, d) = x.dim();
        check_lookup((table, ids), n, d, 0)?;
        // Subnormal sums are kept whatever the caller's floating-point environment.
        let _env = ExactFpEnv::enter_if(true);
        for (row, &id) in x.rows_mut().into_iter().zip(ids) {
            apply(row, table, id, true);
        }
        Ok(())
    }
}
