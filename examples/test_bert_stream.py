"""Tests of examples/bert_stream.py against a real bert binary and model. Not CI (needs both):

    BERT=/path/to/bert SWIFTBERT_MODEL=weights/all-MiniLM-L6-v2 tools/.venv/bin/python -m unittest examples/test_bert_stream.py

Skipped when BERT is not set to an executable.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_stream  # noqa: E402

BERT = os.environ.get("BERT", "")
MODEL = os.environ.get("SWIFTBERT_MODEL", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                        "weights", "all-MiniLM-L6-v2"))


@unittest.skipUnless(os.access(BERT, os.X_OK), "set BERT to a bert binary")
class BertStreamTests(unittest.TestCase):
    def config(self, **changes) -> bert_stream.BertConfig:
        # batch 4: bert's window is 32 records, so batches below end mid-window.
        settings = dict(bert=BERT, model=MODEL, batch_size=4, threads=1, stall_timeout=60.0) | changes
        return bert_stream.BertConfig(**settings)

    def rows(self, count: int) -> list[tuple[int, str | None]]:
        return [(1000 + i, None if i % 17 == 5 else f"sentence {i} about {'cats ' * (i % 7)}and dogs") for i in range(count)]

    def test_stream_and_batches_give_the_same_vectors_and_keep_every_row(self):
        rows = self.rows(150)
        streamed = list(bert_stream.BertStream(self.config()).embed_stream(rows))
        self.assertEqual([r.id for r in streamed], [i for i, _ in rows])
        for result, (_, text) in zip(streamed, rows):
            self.assertEqual(result.embedding is None, text is None)
            self.assertEqual(result.error, "text is null" if text is None else None)
        self.assertEqual(len(streamed[0].embedding), 384)

        stream = bert_stream.BertStream(self.config())
        batched = []
        for start in range(0, len(rows), 23):  # 23: never a multiple of the 32-record window
            part = rows[start:start + 23]
            batched += stream.embed_batch([i for i, _ in part], [t for _, t in part])
        stream.close()
        self.assertEqual([(r.id, r.embedding, r.error) for r in batched], [(r.id, r.embedding, r.error) for r in streamed])

    def test_a_record_bert_skips_gets_an_error_and_the_rest_stay_matched(self):
        original = bert_stream._encode
        bert_stream._encode = lambda text: (b"{not json\n", None) if text == "BAD" else original(text)
        try:
            bad = {3, 31, 32, 59}  # one at the end of a 30-row batch, two across a window boundary
            rows = [(i, "BAD" if i in bad else f"sentence number {i}") for i in range(60)]
            reference = {r.id: r.embedding for r in bert_stream.BertStream(self.config()).embed_stream(
                [(i, t) for i, t in rows if i not in bad])}
            streamed = list(bert_stream.BertStream(self.config()).embed_stream(rows))
            stream = bert_stream.BertStream(self.config())
            batched = stream.embed_batch([i for i, _ in rows[:30]], [t for _, t in rows[:30]]) + \
                stream.embed_batch([i for i, _ in rows[30:]], [t for _, t in rows[30:]])
            stream.close()
        finally:
            bert_stream._encode = original
        for results in (streamed, batched):
            self.assertEqual([r.id for r in results], list(range(60)))
            for r in results:
                if r.id in bad:
                    self.assertIsNone(r.embedding)
                    self.assertIn("not valid JSON", r.error)
                else:
                    self.assertEqual(r.embedding, reference[r.id])

    def test_a_killed_bert_raises_instead_of_dropping_rows(self):
        stream = bert_stream.BertStream(self.config())
        rows = self.rows(3000)
        threading.Timer(0.5, lambda: os.kill(stream.pid, signal.SIGKILL)).start()
        with self.assertRaises(bert_stream.BertProcessError) as caught:
            for _ in stream.embed_stream(rows):
                pass
        self.assertIn("killed by signal 9", str(caught.exception))

    def test_a_missing_binary_says_what_to_do(self):
        with self.assertRaises(bert_stream.BertProcessError) as caught:
            bert_stream.BertStream(self.config(bert="/nonexistent/bert"))
        self.assertIn("--bert", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
