#!/usr/bin/env python3
"""ONNX Runtime computing all-MiniLM-L6-v2 sentence embeddings, the peer of the `embed` CLI.

The model is BERT as sentence-transformers runs it: word + position + token-type embeddings and
LayerNorm, 6 post-LN encoder layers (12 heads of 32, GELU erf feed-forward of 1,536), mean pooling
over the attention mask, L2 normalisation. The ONNX graph is built here with `onnx.helper` from the
model's own `config.json` and `model.safetensors` (as `ort_block.py` builds the block), so no
exported model is downloaded; `models/fetch_model.sh` fetches the weights.

It is called the way fastembed-rs and sentence-transformers call it: the tokenizer (`tokenizers`,
the model's `tokenizer.json`, truncation at 256 tokens as sentence-transformers sets it) encodes a
batch, the batch is padded to its longest sentence, and a corpus is sorted by length into batches
of 32. Sentences/s counts tokenisation, the session runs and pooling, after session creation; the
figure is the median over timed runs.

Before timing, the graph's embeddings are compared with a float64 numpy forward of the same weights
(each sentence alone, unpadded), which also checks that padding is masked out.

Run from the repository root:

    models/fetch_model.sh
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE benches/peers/.venv/bin/python benches/peers/ort_embed.py

See benches/peers/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import ort_block as ob  # noqa: E402  (imports run.py first, which captures the environment)
import run as peers  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

DOC_COMMAND = ("env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "
               "benches/peers/.venv/bin/python benches/peers/ort_embed.py")
DEFAULT_MODEL = os.path.join(ROOT, "models", "data", "all-MiniLM-L6-v2")
INPUTS = {"online": os.path.join(HERE, "embed", "online.txt"),
          "corpus": os.path.join(HERE, "embed", "corpus.txt")}
OPSET = 20  # LayerNormalization is opset 17, Gelu opset 20
BATCH = 32  # fastembed-rs's and sentence-transformers' default batch size
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model (tokenizer.json says 128)
MASKED = -10000.0  # BERT's additive mask: exp underflows to exactly 0 in float32
# float32 lands within about 1e-7 of the float64 forward; a missing mask, a wrong head layout or
# GELU's tanh form move embeddings by 1e-4 to 1e-1.
TOLERANCE = 1e-5


# --------------------------------------------------------------------------
# the model: config, weights, tokenizer
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    hidden: int
    heads: int
    layers: int
    intermediate: int
    eps: float
    max_positions: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def load_model(model_dir: str):
    """(Config, weights as float32 arrays keyed without any `bert.` prefix, Tokenizer)."""
    paths = {f: os.path.join(model_dir, f) for f in ("config.json", "model.safetensors", "tokenizer.json")}
    missing = [p for p in paths.values() if not os.path.isfile(p)]
    if missing:
        raise SystemExit(f"missing {', '.join(missing)}: run models/fetch_model.sh first (or pass --model DIR)")
    with open(paths["config.json"]) as f:
        c = json.load(f)
    if c.get("hidden_act", "gelu") != "gelu" or c.get("position_embedding_type", "absolute") != "absolute":
        raise SystemExit(f"{paths['config.json']}: only BERT with GELU erf and absolute positions is built here")
    cfg = Config(c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"], c["intermediate_size"],
                 float(c["layer_norm_eps"]), c["max_position_embeddings"])
    w = {k.removeprefix("bert."): v for k, v in load_file(paths["model.safetensors"]).items()}
    for k, v in w.items():
        if v.dtype != np.float32 and k != "embeddings.position_ids":
            raise SystemExit(f"{paths['model.safetensors']}: {k} is {v.dtype}, expected float32")
    tok = Tokenizer.from_file(paths["tokenizer.json"])
    # tokenizer.json fixes padding and truncation at 128; sentence-transformers truncates at 256 and
    # pads to the longest sentence of each batch (done in `batch_arrays`).
    tok.no_padding()
    tok.enable_truncation(min(MAX_TOKENS, cfg.max_positions))
    return cfg, w, tok


def read_sentences(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines:
        raise SystemExit(f"{path}: no sentences")
    return lines


# --------------------------------------------------------------------------
# the ONNX graph
# --------------------------------------------------------------------------

def build_graph(cfg: Config, w: dict) -> bytes:
    """input_ids, attention_mask, token_type_ids [batch, seq] int64 -> embedding [batch, hidden]."""
    H, hd, D = cfg.heads, cfg.head_dim, cfg.hidden
    nodes, inits = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name=name))
        return name

    def weight(key, transpose=False):
        a = w[key].T if transpose else w[key]  # torch Linear stores [out, in]; MatMul wants [in, out]
        return const(key, np.ascontiguousarray(a, dtype=np.float32))

    def node(op, inputs, output, **attrs):
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def linear(x, prefix, out):
        mm = node("MatMul", [x, weight(prefix + ".weight", transpose=True)], out + "_mm")
        return node("Add", [mm, weight(prefix + ".bias")], out)

    def layer_norm(x, prefix, out):
        return node("LayerNormalization", [x, weight(prefix + ".weight"), weight(prefix + ".bias")], out,
                    axis=-1, epsilon=cfg.eps)

    const("heads_shape", np.array([0, 0, H, hd], dtype=np.int64))  # 0: keep batch, seq
    const("hidden_shape", np.array([0, 0, D], dtype=np.int64))
    const("zero", np.array([0], dtype=np.int64))
    const("one_f", np.float32(1.0))
    const("masked_f", np.float32(MASKED))
    const("head_scale", np.float32(math.sqrt(hd)))
    const("count_floor", np.float32(1e-9))  # sentence-transformers' clamp of the token count
    const("norm_floor", np.float32(1e-12))  # torch.nn.functional.normalize's eps
    const("axis1", np.array([1], dtype=np.int64))
    const("axes12", np.array([1, 2], dtype=np.int64))
    const("axis2", np.array([2], dtype=np.int64))

    # Embeddings: word + position (rows 0..seq-1) + token type, then LayerNorm.
    seq = node("Shape", ["input_ids"], "seq_len", start=1, end=2)
    pos = node("Slice", [weight("embeddings.position_embeddings.weight"), "zero", seq, "zero"], "pos_emb")
    e = node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], "word_emb")
    e = node("Add", [e, pos], "word_pos_emb")
    e = node("Add", [e, node("Gather", [weight("embeddings.token_type_embeddings.weight"), "token_type_ids"],
                               "type_emb")], "emb_sum")
    h = layer_norm(e, "embeddings.LayerNorm", "emb")

    # Additive key mask [batch, 1, 1, seq]: 0 for real tokens, MASKED for padding.
    mask = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    bias = node("Mul", [node("Sub", ["one_f", mask], "mask_inv"), "masked_f"], "mask_bias2")
    bias = node("Unsqueeze", [bias, "axes12"], "mask_bias")

    for i in range(cfg.layers):
        p, t = f"encoder.layer.{i}", f"l{i}_"

        def heads(x, name, perm):
            return node("Transpose", [node("Reshape", [x, "heads_shape"], name + "_4d")], name + "_h", perm=perm)

        q = heads(linear(h, p + ".attention.self.query", t + "q"), t + "q", [0, 2, 1, 3])  # [B, H, S, hd]
        k = heads(linear(h, p + ".attention.self.key", t + "k"), t + "k", [0, 2, 3, 1])  # [B, H, hd, S]
        v = heads(linear(h, p + ".attention.self.value", t + "v"), t + "v", [0, 2, 1, 3])
        s = node("Div", [node("MatMul", [q, k], t + "qk"), "head_scale"], t + "scores")
        s = node("Add", [s, bias], t + "scores_masked")
        a = node("MatMul", [node("Softmax", [s], t + "probs", axis=-1), v], t + "ctx_h")
        a = node("Reshape", [node("Transpose", [a], t + "ctx_t", perm=[0, 2, 1, 3]), "hidden_shape"], t + "ctx")
        a = node("Add", [linear(a, p + ".attention.output.dense", t + "attn_out"), h], t + "attn_res")
        h1 = layer_norm(a, p + ".attention.output.LayerNorm", t + "h1")
        u = node("Gelu", [linear(h1, p + ".intermediate.dense", t + "up")], t + "gelu", approximate="none")
        o = node("Add", [linear(u, p + ".output.dense", t + "down"), h1], t + "ffn_res")
        h = layer_norm(o, p + ".output.LayerNorm", t + "out")

    # Mean over real tokens, then L2 normalisation (sentence-transformers' Pooling + Normalize).
    m3 = node("Unsqueeze", [mask, "axis2"], "mask_3d")
    total = node("ReduceSum", [node("Mul", [h, m3], "masked_h"), "axis1"], "sum_h", keepdims=0)
    count = node("Max", [node("ReduceSum", [mask, "axis1"], "count_raw", keepdims=1), "count_floor"], "count")
    mean = node("Div", [total, count], "mean")
    norm = node("Max", [node("ReduceL2", [mean, "axis1"], "norm_raw", keepdims=1), "norm_floor"], "norm")
    node("Div", [mean, norm], "embedding")

    i64, f32 = TensorProto.INT64, TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info(n, i64, ["batch", "seq"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    outputs = [helper.make_tensor_value_info("embedding", f32, ["batch", D])]
    graph = helper.make_graph(nodes, "sentence_embedding", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=10)
    onnx.checker.check_model(model)
    return model.SerializeToString()


# --------------------------------------------------------------------------
# calling it: tokenise, batch, pad to the longest, run
# --------------------------------------------------------------------------

def batch_arrays(encodings) -> dict:
    """The session's feeds for a list of encodings, padded to the longest one with [PAD] = 0."""
    longest = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), longest), dtype=np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for r, e in enumerate(encodings):
        n = len(e.ids)
        ids[r, :n] = e.ids
        types[r, :n] = e.type_ids
        mask[r, :n] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def embed(sess, tok, sentences: list[str], batch_size: int = BATCH, sort: bool = True) -> np.ndarray:
    """Embeddings [n, hidden] in input order. sort: sort by token count into batches (corpus);
    otherwise batches in input order (an online batch of batch_size or fewer is one call)."""
    encodings = tok.encode_batch(sentences)
    order = sorted(range(len(sentences)), key=lambda i: len(encodings[i].ids)) if sort else range(len(sentences))
    order = list(order)
    out = np.empty((len(sentences), sess.get_outputs()[0].shape[1]), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        out[rows] = sess.run(["embedding"], batch_arrays([encodings[i] for i in rows]))[0]
    return out


def token_counts(tok, sentences: list[str], batch_size: int = BATCH, sort: bool = True) -> dict:
    """Real tokens ([CLS] and [SEP] included) and tokens once each batch is padded to its longest."""
    lens = [len(e.ids) for e in tok.encode_batch(sentences)]
    order = sorted(lens) if sort else lens
    padded = sum(max(order[s:s + batch_size]) * len(order[s:s + batch_size]) for s in range(0, len(order), batch_size))
    return {"sentences": len(lens), "tokens": sum(lens), "padded": padded, "min": min(lens), "max": max(lens)}


def session(model: bytes, threads: int):
    """ORT's session as ort_block.py sets it up (ORT_ENABLE_ALL, sequential, default spinning)."""
    return ob.session(model, threads, True)


def set_tokenizer_threads(threads: int):
    """The tokenizer's rayon pool follows the thread count being timed (read at each call)."""
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if threads > 1 else "false"


# --------------------------------------------------------------------------
# float64 reference
# --------------------------------------------------------------------------

_erf = np.frompyfunc(math.erf, 1, 1)


def forward64(cfg: Config, w: dict, ids: list[int], type_ids: list[int]) -> np.ndarray:
    """One sentence, unpadded, in float64: the normalised mean-pooled embedding [hidden]."""
    def f(k):
        return w[k].astype(np.float64)

    def ln(x, p):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + cfg.eps) * f(p + ".weight") + f(p + ".bias")

    def lin(x, p):
        return x @ f(p + ".weight").T + f(p + ".bias")

    n, H, hd = len(ids), cfg.heads, cfg.head_dim
    x = (f("embeddings.word_embeddings.weight")[ids] + f("embeddings.position_embeddings.weight")[:n]
         + f("embeddings.token_type_embeddings.weight")[type_ids])
    x = ln(x, "embeddings.LayerNorm")
    for i in range(cfg.layers):
        p = f"encoder.layer.{i}"
        q, k, v = (lin(x, f"{p}.attention.self.{m}").reshape(n, H, hd).transpose(1, 0, 2)
                   for m in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        a = (s / s.sum(axis=-1, keepdims=True)) @ v
        a = a.transpose(1, 0, 2).reshape(n, cfg.hidden)
        x = ln(x + lin(a, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
        u = lin(x, f"{p}.intermediate.dense")
        u = 0.5 * u * (1.0 + _erf(u / math.sqrt(2.0)).astype(np.float64))
        x = ln(x + lin(u, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    m = x.mean(axis=0)
    return m / max(np.linalg.norm(m), 1e-12)


def check(cfg: Config, w: dict, tok, sess, sentences: list[str], sort: bool, stride: int = 1) -> float:
    """ORT's embeddings (called as timed: batched, padded) against float64, every stride-th sentence;
    returns the max abs error, raises above TOLERANCE."""
    got = embed(sess, tok, sentences, sort=sort)
    encodings = tok.encode_batch(sentences)
    err = 0.0
    for i in range(0, len(sentences), stride):
        ref = forward64(cfg, w, encodings[i].ids, encodings[i].type_ids)
        err = max(err, float(np.max(np.abs(got[i].astype(np.float64) - ref))))
    if not (math.isfinite(err) and err <= TOLERANCE):
        raise RuntimeError(f"ORT embeddings differ from the float64 forward by {err:.3g} (tolerance {TOLERANCE}): "
                           "the graph is wrong")
    return err


# --------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------

def time_embed(sess, tok, sentences: list[str], sort: bool, warmup: int, runs: int) -> dict:
    """Median wall time of `runs` calls of `embed` after `warmup` untimed ones."""
    for _ in range(warmup):
        embed(sess, tok, sentences, sort=sort)
    stat0, self0, t0 = peers.read_proc_stat(), os.times(), time.monotonic()
    wall = []
    for _ in range(runs):
        t = time.perf_counter_ns()
        embed(sess, tok, sentences, sort=sort)
        wall.append((time.perf_counter_ns() - t) / 1e9)
    med = statistics.median(wall)
    return {"s_median": med, "s_min": min(wall), "s_max": max(wall), "runs": runs, "warmup": warmup,
            "sentences_per_s": len(sentences) / med, "other_cores": peers.other_load(stat0, self0, t0)}


def resolve_inputs(names: str) -> list[tuple[str, str, bool]]:
    """(label, path, sort) for `online`, `corpus` or a file; online is one call in input order."""
    out = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        path = INPUTS.get(name, name)
        if not os.path.isfile(path):
            raise SystemExit(f"no input {name!r}: give online, corpus or a file of sentences")
        out.append((name if name in INPUTS else os.path.basename(path), path, name != "online"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=DEFAULT_MODEL, help="folder with config.json, model.safetensors, "
                    "tokenizer.json (default models/data/all-MiniLM-L6-v2)")
    ap.add_argument("--inputs", default="online,corpus",
                    help="comma-separated: online (32 sentences, one call), corpus (1,100, sorted into "
                         "batches of 32) or files of one sentence per line (treated as a corpus)")
    ap.add_argument("--threads", default="1,2", help="comma-separated intra_op thread counts (default 1,2)")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per input (default: online 30, corpus 5)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    ap.add_argument("--check-stride", type=int, default=11,
                    help="check every n-th sentence of a corpus against float64 (default 11; online: all)")
    ap.add_argument("--check-only", action="store_true", help="build and check the graph, no timing")
    ap.add_argument("--no-check", action="store_true", help="skip the float64 check")
    ap.add_argument("--output", default=None,
                    help="write the embeddings of the last input as JSON Lines (one array per sentence)")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    inputs = resolve_inputs(args.inputs)

    cpu = peers.cpu_info()
    print(f"ORT {ort.__version__}, numpy {np.__version__}, onnx {onnx.__version__}; CPU {cpu['model']} "
          f"(family {cpu['family']}, model {cpu['model_id']}), {cpu['ncpu']} logical CPUs, "
          f"avx512f {'yes' if 'avx512f' in cpu['flags'] else 'no'}")
    cfg, w, tok = load_model(args.model)
    model = build_graph(cfg, w)
    print(f"  model {os.path.relpath(args.model)}: hidden {cfg.hidden}, {cfg.layers} layers, {cfg.heads} heads of "
          f"{cfg.head_dim}, intermediate {cfg.intermediate}, eps {cfg.eps:g}")
    print(f"  graph after ORT_ENABLE_ALL: {ob.optimized_ops(model)}")
    monitor = peers.LoadMonitor()
    with threadpool_limits(limits=1):  # numpy's BLAS (the reference) stays on one thread
        data = {label: (read_sentences(path), sort) for label, path, sort in inputs}
        for label, (sentences, sort) in data.items():
            c = token_counts(tok, sentences, sort=sort)
            print(f"  input {label}: {c['sentences']} sentences, {c['tokens']:,} tokens ({c['min']}-{c['max']} per "
                  f"sentence), {c['padded']:,} once padded to the longest of each batch of {BATCH}"
                  + (" sorted by length" if sort else ""))
            if not args.no_check:
                set_tokenizer_threads(1)
                stride = args.check_stride if sort else 1
                err = check(cfg, w, tok, session(model, 1), sentences, sort, stride)
                print(f"    check vs float64 (every {stride}. sentence, batched and padded as timed): "
                      f"max abs error {err:.2e}: ok")
        if args.check_only:
            return 0
        for t in threads:
            set_tokenizer_threads(t)
            sess = session(model, t)
            for label, (sentences, sort) in data.items():
                runs = args.runs or (5 if sort else 30)
                r = time_embed(sess, tok, sentences, sort, args.warmup, runs)
                print(f"  ORT {label}, intra_op {t}: {r['sentences_per_s']:.1f} sentences/s "
                      f"({r['s_median'] * 1e3:.1f} ms median, min {r['s_min'] * 1e3:.1f}, max {r['s_max'] * 1e3:.1f}; "
                      f"{runs} runs after {args.warmup} warm-up; other load {peers.fmt_load(r)})")
            del sess
    if args.output:
        sentences, sort = data[inputs[-1][0]]
        set_tokenizer_threads(1)
        emb = embed(session(model, 1), tok, sentences, sort=sort)
        with open(args.output, "w") as f:
            for row in emb:
                f.write(json.dumps([float(v) for v in row]) + "\n")
        print(f"wrote {len(emb)} embeddings to {args.output}")
    load = monitor.summary()
    print(f"load average at start {load['load_start']}, at end {load['load_end']}; "
          f"other work kept {load.get('other_cores', float('nan')):.2f} cores busy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
