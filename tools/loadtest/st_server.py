#!/usr/bin/env python3
"""The plain baseline of the load test: sentence-transformers behind FastAPI/uvicorn, one
OpenAI-style route, no batching across requests (each request is one model.encode call).
   st_server.py MODEL_FOLDER PORT"""
import sys
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from sentence_transformers import SentenceTransformer

model = SentenceTransformer(sys.argv[1], device="cpu")
app = FastAPI()

class Request(BaseModel):
    input: str | list[str]
    model: str | None = None

@app.get("/health")
def health():
    return {"status": "ok"}

@app.post("/v1/embeddings")
def embeddings(request: Request):
    texts = [request.input] if isinstance(request.input, str) else request.input
    vectors = model.encode(texts, batch_size=32, normalize_embeddings=True)
    return {"object": "list", "model": request.model,
            "data": [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]}

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
