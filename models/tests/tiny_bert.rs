//! The tiny generated BERT end to end: exact embeddings depend only on their sentence (not the
//! batch, padding, batch size, threads or ISA), both modes against the f64 reference, the
//! tokenizer's truncation at 256 and no padding, and load errors.

mod common;

use activation_kernels::{Exact, Fast, Isa, Mode, Session};
use ak_models::{
    Batching, BertConfig, BertWeights, Embedder, ModelError, Reference, SentenceTokenizer, Weights,
};
use common::*;
use ndarray::Array2;

fn load<M: Mode>(dir: &std::path::Path, session: Session<M>) -> Embedder<M> {
    Embedder::load(dir, session).unwrap()
}

fn bits(a: &Array2<f32>) -> Vec<Vec<u32>> {
    a.rows()
        .into_iter()
        .map(|r| r.iter().map(|v| v.to_bits()).collect())
        .collect()
}

/// Embeddings of `sentences` in batches of `batch`.
fn embed_in_batches<M: Mode>(
    model: &Embedder<M>,
    sentences: &[&str],
    batch: usize,
    batching: Batching,
) -> Vec<Vec<u32>> {
    sentences
        .chunks(batch)
        .flat_map(|c| bits(&model.embed(c, batching).unwrap()))
        .collect()
}

#[test]
fn an_exact_embedding_depends_only_on_its_sentence() {
    let dir = tiny_model_dir("exact-bits");
    let owned = sentences();
    let sentences: Vec<&str> = owned.iter().map(String::as_str).collect();
    let one = load(
        &dir,
        Session::<Exact>::new()
            .with_isa(Isa::Scalar)
            .unwrap()
            .with_threads(1)
            .unwrap(),
    );
    // Each sentence alone, one thread, scalar code.
    let want: Vec<Vec<u32>> = sentences
        .iter()
        .flat_map(|s| bits(&one.embed(&[s], Batching::Varlen).unwrap()))
        .collect();
    for isa in Isa::available() {
        for threads in [1, 2] {
            let session = Session::<Exact>::new()
                .with_isa(isa)
                .unwrap()
                .with_threads(threads)
                .unwrap()
                .with_parallel_threshold(0);
            let model = load(&dir, session);
            for batch in [1, 7, 32] {
                for batching in [Batching::Varlen, Batching::Padded] {
                    let got = embed_in_batches(&model, &sentences, batch, batching);
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            g, w,
                            "{isa} threads {threads} batch {batch} {batching:?} sentence {i}"
                        );
                    }
                }
            }
        }
    }
}

/// One model called from several threads at once (the callers that do not get the kept
/// scratch buffers use their own) gives each caller the bits of a call alone; so does a call
/// after larger and smaller batches have left other values in the kept buffers.
#[test]
fn concurrent_and_repeated_calls_on_one_model_give_the_bits_of_a_call_alone() {
    let dir = tiny_model_dir("concurrent");
    let owned = sentences();
    let sentences: Vec<&str> = owned.iter().map(String::as_str).collect();
    let session = || Session::<Exact>::new().with_threads(1).unwrap();
    let want = bits(
        &load(&dir, session())
            .embed(&sentences[..5], Batching::Varlen)
            .unwrap(),
    );
    let model = load(&dir, session());
    model.embed(&sentences, Batching::Padded).unwrap();
    model.embed(&sentences[..1], Batching::Varlen).unwrap();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for batching in [Batching::Varlen, Batching::Padded, Batching::Varlen] {
                    let got = model.embed(&sentences[..5], batching).unwrap();
                    assert_eq!(bits(&got), want, "{batching:?}");
                }
            });
        }
    });
}

/// Fast mode keeps its bits on one machine whatever the thread count (its promise), and is
/// close to exact mode.
#[test]
fn fast_embeddings_do_not_depend_on_the_thread_count() {
    let dir = tiny_model_dir("fast-threads");
    let owned = sentences();
    let sentences: Vec<&str> = owned.iter().map(String::as_str).collect();
    let one = load(&dir, Session::<Fast>::new().with_threads(1).unwrap());
    let two = load(
        &dir,
        Session::<Fast>::new()
            .with_threads(2)
            .unwrap()
            .with_parallel_threshold(0),
    );
    let a = one.embed(&sentences, Batching::Varlen).unwrap();
    let b = two.embed(&sentences, Batching::Varlen).unwrap();
    assert_eq!(bits(&a), bits(&b));
}

#[test]
fn both_modes_are_close_to_the_f64_reference() {
    let dir = tiny_model_dir("accuracy");
    let owned = sentences();
    let sentences: Vec<&str> = owned.iter().map(String::as_str).collect();
    let config = BertConfig::from_file(&dir.join("config.json")).unwrap();
    let weights = BertWeights::from_weights(
        &Weights::load(&dir.join("model.safetensors")).unwrap(),
        &config,
    )
    .unwrap();
    let reference = Reference::new(&weights);
    let exact = load(&dir, Session::<Exact>::new());
    let fast = load(&dir, Session::<Fast>::new());
    let tokens = exact.tokenize(&sentences).unwrap();
    let want: Vec<_> = tokens.iter().map(|t| reference.embed(t)).collect();
    for (name, got) in [
        ("exact", exact.embed(&sentences, Batching::Varlen).unwrap()),
        ("fast", fast.embed(&sentences, Batching::Varlen).unwrap()),
        (
            "fast padded",
            fast.embed(&sentences, Batching::Padded).unwrap(),
        ),
    ] {
        let mut max = 0f64;
        for (g, w) in got.rows().into_iter().zip(&want) {
            for (&g, &w) in g.iter().zip(w) {
                max = max.max((g as f64 - w).abs());
            }
        }
        println!("{name}: max abs error {max:e}");
        assert!(max < 1e-6, "{name}: max abs error {max:e}");
    }
}

#[test]
fn the_tokenizer_truncates_at_256_and_never_pads() {
    let dir = tiny_model_dir("tokenizer");
    let t = SentenceTokenizer::from_file(&dir.join("tokenizer.json")).unwrap();
    let short = t.encode("The cat sat.").unwrap();
    assert_eq!(short.ids, vec![2, 5, 6, 7, 18, 3]);
    assert_eq!(short.type_ids, vec![0; 6]);
    assert_eq!(t.encode("").unwrap().ids, vec![2, 3]);
    // 150 words: past the file's 128, within 256.
    assert_eq!(
        t.encode(&vec!["fox"; 150].join(" ")).unwrap().ids.len(),
        152
    );
    let long = t.encode(&vec!["fox"; 300].join(" ")).unwrap();
    assert_eq!(long.ids.len(), 256);
    assert_eq!(long.ids.last(), Some(&3));
}

#[test]
fn loading_reports_what_is_missing_or_wrong() {
    let missing = Embedder::load("no/such/model".as_ref(), Session::exact());
    assert!(matches!(missing, Err(ModelError::Config(m)) if m.contains("does not exist")));
    let dir = tiny_model_dir("bad");
    // A missing tensor is named.
    let mut t = tensors(1);
    t.retain(|(n, _, _)| n != "encoder.layer.1.output.dense.weight");
    write_model(&dir, &t);
    let err = Embedder::load(&dir, Session::exact())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("encoder.layer.1.output.dense.weight"), "{err}");
    // A tensor of the wrong shape.
    let mut t = tensors(1);
    t[0].1 = vec![3, 3];
    t[0].2.truncate(9);
    write_model(&dir, &t);
    let err = Embedder::load(&dir, Session::exact())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("shape"), "{err}");
    // An activation other than GELU erf, and a head count that does not divide the width.
    assert!(BertConfig::from_json(&config_json().replace("\"gelu\"", "\"relu\"")).is_err());
    let bad_heads =
        config_json().replace("\"num_attention_heads\": 4", "\"num_attention_heads\": 5");
    assert!(BertConfig::from_json(&bad_heads).is_err());
    assert!(Weights::from_bytes(b"not safetensors").is_err());
    // A sequence longer than the position table.
    write_model(&dir, &tensors(1));
    let model = load(&dir, Session::<Exact>::new());
    let too_long = ak_models::Tokens {
        ids: vec![5; POSITIONS + 1],
        type_ids: vec![0; POSITIONS + 1],
    };
    assert!(model.embed_tokens(&[too_long], Batching::Varlen).is_err());
    let bad_id = ak_models::Tokens {
        ids: vec![2, 1000, 3],
        type_ids: vec![0; 3],
    };
    assert!(model.embed_tokens(&[bad_id], Batching::Padded).is_err());
}
