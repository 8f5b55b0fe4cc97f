"""Concurrent calls: ctypes releases the GIL, so Python threads run the engine at once."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import swiftbert


def test_eight_threads_times_200_calls_equal_serial(sentences):
    with swiftbert.SentenceEncoder("all-MiniLM-L6-v2", threads=1) as encoder:
        texts = sentences[:200]
        serial = [encoder.encode(t) for t in texts]
        with ThreadPoolExecutor(max_workers=8) as pool:
            futures = [[pool.submit(encoder.encode, t) for t in texts] for _ in range(8)]
            for thread_results in futures:
                for expected, future in zip(serial, thread_results):
                    assert np.array_equal(future.result(), expected)
