//! A tiny BERT made by the tests: a `config.json`, random weights written as safetensors, and
//! a WordPiece `tokenizer.json` with truncation and padding fixed at 128 tokens as the real
//! model's (which the crate overrides).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use ak_models::Weights;

/// A seeded generator (SplitMix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32)
    }
}

/// The words of the tiny vocabulary after the special tokens; every lowercase letter and
/// `##` letter is in it, so any lowercase text tokenises without `[UNK]`.
pub fn vocab() -> Vec<String> {
    let mut v: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for w in [
        "the", "cat", "sat", "on", "mat", "dog", "a", "run", "##s", "##ing", "quick", "brown",
        "fox", ".", ",", "!", "?", "'",
    ] {
        v.push(w.into());
    }
    for c in 'a'..='z' {
        v.push(c.to_string());
        v.push(format!("##{c}"));
    }
    for d in '0'..='9' {
        v.push(d.to_string());
        v.push(format!("##{d}"));
    }
    v
}

/// The shapes of the tiny model.
pub const HIDDEN: usize = 32;
pub const HEADS: usize = 4;
pub const LAYERS: usize = 2;
pub const INTERMEDIATE: usize = 64;
pub const POSITIONS: usize = 300;

pub fn config_json() -> String {
    format!(
        r#"{{"architectures": ["BertModel"], "hidden_act": "gelu", "hidden_size": {HIDDEN},
  "intermediate_size": {INTERMEDIATE}, "layer_norm_eps": 1e-12,
  "max_position_embeddings": {POSITIONS}, "model_type": "bert", "num_attention_heads": {HEADS},
  "num_hidden_layers": {LAYERS}, "pad_token_id": 0, "type_vocab_size": 2,
  "vocab_size": {}}}"#,
        vocab().len()
    )
}

pub fn tokenizer_json() -> String {
    let vocab: Vec<String> = vocab()
        .iter()
        .enumerate()
        .map(|(i, w)| format!("{}: {i}", serde_json::to_string(w).unwrap()))
        .collect();
    let special = |id: usize, content: &str| {
        format!(
            r#"{{"id": {id}, "content": "{content}", "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": true}}"#
        )
    };
    format!(
        r###"{{
  "version": "1.0",
  "truncation": {{"max_length": 128, "strategy": "LongestFirst", "stride": 0}},
  "padding": {{"strategy": {{"Fixed": 128}}, "direction": "Right", "pad_to_multiple_of": null,
    "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"}},
  "added_tokens": [{}, {}, {}, {}, {}],
  "normalizer": {{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
    "strip_accents": null, "lowercase": true}},
  "pre_tokenizer": {{"type": "BertPreTokenizer"}},
  "post_processor": {{"type": "TemplateProcessing",
    "single": [{{"SpecialToken": {{"id": "[CLS]", "type_id": 0}}}},
               {{"Sequence": {{"id": "A", "type_id": 0}}}},
               {{"SpecialToken": {{"id": "[SEP]", "type_id": 0}}}}],
    "pair": [{{"SpecialToken": {{"id": "[CLS]", "type_id": 0}}}},
             {{"Sequence": {{"id": "A", "type_id": 0}}}},
             {{"SpecialToken": {{"id": "[SEP]", "type_id": 0}}}},
             {{"Sequence": {{"id": "B", "type_id": 1}}}},
             {{"SpecialToken": {{"id": "[SEP]", "type_id": 1}}}}],
    "special_tokens": {{"[CLS]": {{"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]}},
                        "[SEP]": {{"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}}}}},
  "decoder": {{"type": "WordPiece", "prefix": "##", "cleanup": true}},
  "model": {{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
    "max_input_chars_per_word": 100, "vocab": {{{}}}}}
}}"###,
        special(0, "[PAD]"),
        special(1, "[UNK]"),
        special(2, "[CLS]"),
        special(3, "[SEP]"),
        special(4, "[MASK]"),
        vocab.join(", ")
    )
}

/// The tensors of the tiny model (Hugging Face names, `[out, in]` linear weights).
pub fn tensors(seed: u64) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let mut rng = Rng(seed);
    let mut t = Vec::new();
    let mut add = |name: String, shape: Vec<usize>, lo: f32, hi: f32| {
        let n = shape.iter().product();
        let v = (0..n).map(|_| rng.uniform(lo, hi)).collect();
        t.push((name, shape, v));
    };
    let v = vocab().len();
    add(
        "embeddings.word_embeddings.weight".into(),
        vec![v, HIDDEN],
        -1.0,
        1.0,
    );
    add(
        "embeddings.position_embeddings.weight".into(),
        vec![POSITIONS, HIDDEN],
        -0.5,
        0.5,
    );
    add(
        "embeddings.token_type_embeddings.weight".into(),
        vec![2, HIDDEN],
        -0.5,
        0.5,
    );
    add("embeddings.LayerNorm.weight".into(), vec![HIDDEN], 0.8, 1.2);
    add("embeddings.LayerNorm.bias".into(), vec![HIDDEN], -0.1, 0.1);
    let lin = 1.0 / (HIDDEN as f32).sqrt();
    for l in 0..LAYERS {
        let p = format!("encoder.layer.{l}");
        for (name, out, inp) in [
            ("attention.self.query", HIDDEN, HIDDEN),
            ("attention.self.key", HIDDEN, HIDDEN),
            ("attention.self.value", HIDDEN, HIDDEN),
            ("attention.output.dense", HIDDEN, HIDDEN),
            ("intermediate.dense", INTERMEDIATE, HIDDEN),
            ("output.dense", HIDDEN, INTERMEDIATE),
        ] {
            let s = 1.7 * lin * (HIDDEN as f32 / inp as f32).sqrt();
            add(format!("{p}.{name}.weight"), vec![out, inp], -s, s);
            add(format!("{p}.{name}.bias"), vec![out], -0.1, 0.1);
        }
        for name in ["attention.output.LayerNorm", "output.LayerNorm"] {
            add(format!("{p}.{name}.weight"), vec![HIDDEN], 0.8, 1.2);
            add(format!("{p}.{name}.bias"), vec![HIDDEN], -0.1, 0.1);
        }
    }
    t
}

/// Writes the tiny model into a new directory under the system's temporary folder.
pub fn tiny_model_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ak-models-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    write_model(&dir, &tensors(42));
    dir
}

pub fn write_model(dir: &Path, tensors: &[(String, Vec<usize>, Vec<f32>)]) {
    std::fs::write(dir.join("config.json"), config_json()).unwrap();
    std::fs::write(dir.join("tokenizer.json"), tokenizer_json()).unwrap();
    std::fs::write(
        dir.join("model.safetensors"),
        Weights::to_bytes(tensors).unwrap(),
    )
    .unwrap();
}

/// Sentences of mixed lengths: short, around a register, and one past 128 tokens (the
/// tokenizer.json's fixed truncation, which must not apply).
pub fn sentences() -> Vec<String> {
    let mut rng = Rng(7);
    let words = [
        "the", "cat", "sat", "on", "mat", "dog", "quick", "brown", "fox", "runs", "zebra",
    ];
    let mut out: Vec<String> = (0..38)
        .map(|i| {
            let n = [1usize, 3, 5, 9, 14, 20, 31][i % 7] + (rng.next_u64() % 4) as usize;
            let mut s: Vec<&str> = (0..n)
                .map(|_| words[(rng.next_u64() % words.len() as u64) as usize])
                .collect();
            s.push(["."; 1][0]);
            s.join(" ")
        })
        .collect();
    out.push(String::new());
    out.push(vec!["fox"; 150].join(" "));
    out
}
