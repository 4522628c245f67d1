//! The safetensors loader: every floating-point tensor of a file, widened to `f32`.

use std::collections::HashMap;
use std::path::Path;

use ndarray::{Array1, Array2, ArrayD, IxDyn};
use safetensors::{Dtype, SafeTensors};

use crate::error::{ModelError, io_error};

/// The tensors of a safetensors file by name, as `f32` (F32 as stored; F16 and BF16 widened,
/// which is exact). Integer tensors (such as BERT's `position_ids`) are skipped.
#[derive(Clone, Debug, Default)]
pub struct Weights {
    tensors: HashMap<String, ArrayD<f32>>,
}

impl Weights {
    /// Reads a `.safetensors` file.
    pub fn load(path: &Path) -> Result<Weights, ModelError> {
        let bytes = std::fs::read(path).map_err(io_error(path))?;
        Self::from_bytes(&bytes)
    }

    /// Parses a safetensors buffer.
    pub fn from_bytes(bytes: &[u8]) -> Result<Weights, ModelError> {
        let file =
            SafeTensors::deserialize(bytes).map_err(|e| ModelError::Weights(e.to_string()))?;
        let mut tensors = HashMap::new();
        for (name, view) in file.tensors() {
            let data = view.data();
            let values: Vec<f32> = match view.dtype() {
                Dtype::F32 => data
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
                Dtype::F16 => data
                    .chunks_exact(2)
                    .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect(),
                Dtype::BF16 => data
                    .chunks_exact(2)
                    .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect(),
                _ => continue,
            };
            let array = ArrayD::from_shape_vec(IxDyn(view.shape()), values)
                .map_err(|e| ModelError::Weights(format!("{name}: {e}")))?;
            tensors.insert(name, array);
        }
        Ok(Weights { tensors })
    }

    /// Writes `tensors` (name, shape, values) as an F32 safetensors buffer (for tests and
    /// tools that make a model).
    pub fn to_bytes(tensors: &[(String, Vec<usize>, Vec<f32>)]) -> Result<Vec<u8>, ModelError> {
        let bytes: Vec<Vec<u8>> = tensors
            .iter()
            .map(|(_, _, v)| v.iter().flat_map(|x| x.to_le_bytes()).collect())
            .collect();
        let views = tensors
            .iter()
            .zip(&bytes)
            .map(|((name, shape, _), b)| {
                safetensors::tensor::TensorView::new(Dtype::F32, shape.clone(), b)
                    .map(|v| (name.clone(), v))
                    .map_err(|e| ModelError::Weights(format!("{name}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        safetensors::serialize(views, None).map_err(|e| ModelError::Weights(e.to_string()))
    }

    /// The names of the tensors.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    /// The tensor `name` (also found under a `bert.` prefix), of shape `shape`.
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<&ArrayD<f32>, ModelError> {
        let t = self
            .tensors
            .get(name)
            .or_else(|| self.tensors.get(&format!("bert.{name}")))
            .ok_or_else(|| ModelError::Weights(format!("no tensor {name}")))?;
        if t.shape() != shape {
            return Err(ModelError::Weights(format!(
                "{name} has shape {:?}, expected {shape:?}",
                t.shape()
            )));
        }
        Ok(t)
    }

    /// The matrix `name` of shape `[rows, cols]`.
    pub fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Array2<f32>, ModelError> {
        let t = self.get(name, &[rows, cols])?;
        Ok(t.view()
            .into_dimensionality()
            .expect("checked shape")
            .to_owned())
    }

    /// The vector `name` of length `n`.
    pub fn vector(&self, name: &str, n: usize) -> Result<Array1<f32>, ModelError> {
        let t = self.get(name, &[n])?;
        Ok(t.view()
            .into_dimensionality()
            .expect("checked shape")
            .to_owned())
    }

    /// A LayerNorm's `(gamma, beta)` under `prefix` (`weight`/`bias`, or the old
    /// `gamma`/`beta`).
    pub fn layer_norm(
        &self,
        prefix: &str,
        n: usize,
    ) -> Result<(Array1<f32>, Array1<f32>), ModelError> {
        match self.vector(&format!("{prefix}.weight"), n) {
            Ok(g) => Ok((g, self.vector(&format!("{prefix}.bias"), n)?)),
            Err(_) => Ok((
                self.vector(&format!("{prefix}.gamma"), n)?,
                self.vector(&format!("{prefix}.beta"), n)?,
            )),
        }
    }
}
