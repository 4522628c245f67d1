//! The real all-MiniLM-L6-v2 (fetched by `models/fetch_model.sh`; no test downloads it)
//! against the f64 reference of the same weights, in both modes, and its exact bits on every
//! ISA. Ignored by default: `cargo test --release -p ak-models -- --ignored`; `AK_MODEL_DIR`
//! names another directory.

use std::path::PathBuf;

use activation_kernels::{Exact, Fast, Isa, Mode, Session};
use ak_models::{Batching, BertConfig, BertWeights, Embedder, Reference, Weights};

fn model_dir() -> PathBuf {
    std::env::var_os("AK_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/all-MiniLM-L6-v2"))
}

const SENTENCES: [&str; 8] = [
    "This is an example sentence.",
    "Each sentence is converted to a vector.",
    "The quick brown fox jumps over the lazy dog.",
    "Sentence embeddings from a real model, end to end, with the same bits on every machine.",
    "A",
    "",
    "Les modèles de langue représentent les phrases par des vecteurs.",
    "Rust is a systems programming language that runs blazingly fast, prevents segfaults, \
     and guarantees thread safety; it is used for command line tools, web services, embedded \
     devices and, more and more, machine learning inference on CPUs and GPUs alike.",
];

fn max_error<M: Mode>(dir: &std::path::Path, reference: &Reference, session: Session<M>) -> f64 {
    let model = Embedder::load(dir, session).unwrap();
    let tokens = model.tokenize(&SENTENCES).unwrap();
    let mut max = 0f64;
    for batching in [Batching::Varlen, Batching::Padded] {
        let got = model.embed_tokens(&tokens, batching).unwrap();
        for (g, t) in got.rows().into_iter().zip(&tokens) {
            let w = reference.embed(t);
            for (&g, &w) in g.iter().zip(&w) {
                max = max.max((g as f64 - w).abs());
            }
        }
    }
    max
}

#[test]
#[ignore = "needs the fetched model (models/fetch_model.sh)"]
fn the_real_model_is_within_1e6_of_f64_in_both_modes_and_exact_on_every_isa() {
    let dir = model_dir();
    assert!(
        dir.is_dir(),
        "no model at {} (run models/fetch_model.sh)",
        dir.display()
    );
    let config = BertConfig::from_file(&dir.join("config.json")).unwrap();
    let weights = Weights::load(&dir.join("model.safetensors")).unwrap();
    let reference = Reference::new(&BertWeights::from_weights(&weights, &config).unwrap());
    let exact = max_error(&dir, &reference, Session::<Exact>::new());
    let fast = max_error(&dir, &reference, Session::<Fast>::new());
    println!("max abs error against f64: exact {exact:e}, fast {fast:e}");
    assert!(
        exact <= 1e-6 && fast <= 1e-6,
        "exact {exact:e}, fast {fast:e}"
    );
    let bits = |isa: Isa| {
        let model = Embedder::load(&dir, Session::<Exact>::new().with_isa(isa).unwrap()).unwrap();
        let e = model.embed(&SENTENCES, Batching::Varlen).unwrap();
        e.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    };
    let want = bits(Isa::Scalar);
    for isa in Isa::available() {
        assert_eq!(bits(isa), want, "{isa}");
    }
}
