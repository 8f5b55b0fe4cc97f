"""One long-lived `bert embed` subprocess, fed JSON Lines on stdin and read on stdout.

Shared by examples/spark/embed.py and examples/ray/embed.py (ship this file with either job).

How `bert embed` behaves on a pipe, and what follows from it (measured, see docs/scale-out.md):
- It reads a window of 8 x --batch-size valid records, embeds it, and only then writes and flushes
  that window's vectors. A partial window is not written while its input stalls: it waits for more
  lines or for end of input. So a client that waits for its outputs before writing more rows
  deadlocks unless it either closes stdin or completes the window.
- Records it cannot read (with --skip-invalid) are skipped: they keep their index, so the output
  has a gap there, and stderr says `bert: skipped line N: reason` (N = index + 1). A skipped record
  does not count towards the window.
- Outputs come in input order, each with its `index`; they are matched to rows by that index.

Two ways to drive it:
- `embed_stream(rows)`: a whole partition. A writer thread feeds every row and then closes stdin,
  while the caller reads results. Nothing waits for a flush; rows in flight are bounded by the
  pipe's buffer plus bert's one window (the writer blocks on a full pipe).
- `embed_batch(ids, texts)`: one batch at a time through a process kept alive between batches
  (Ray actors). After the batch, filler lines complete bert's window so its vectors are written;
  each skipped record is replaced by one more filler so the window count stays right.
"""
from __future__ import annotations

import collections
import json
import os
import queue
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

PRECISIONS = ("fp32", "bf16", "int8", "int8-weights")
# Short, so a window's filler rows cost little: bert sorts a window by length and batches them together.
FILLER_LINE = b'"."\n'
_SKIPPED = re.compile(r"^bert: skipped line (\d+): (.*)$")


class BertProcessError(RuntimeError):
    """The bert subprocess died, exited non-zero, stalled, or wrote something unexpected.

    Raised so that the engine (Spark task, Ray actor task) fails and retries the whole unit of work;
    the message carries bert's exit status and the end of its stderr.
    """


def resolve_bert(bert: str) -> str:
    """The binary to start, on the worker: `bert` itself when it is on PATH or a path; else the
    one inside the swiftbert wheel when this interpreter has it installed (`pip install
    swiftbert`; Spark's local workers and Ray's run the driver's interpreter, whose venv need not
    be on PATH); else `bert`, whose start then fails saying what to do."""
    if bert != "bert" or shutil.which(bert):
        return bert
    try:
        from swiftbert.__main__ import bert_path
    except ImportError:
        return bert
    path = bert_path()
    return str(path) if path.exists() else bert


@dataclass(frozen=True)
class BertConfig:
    bert: str = "bert"              # the binary: a path, or a name looked up on PATH
    model: str = "all-MiniLM-L6-v2"  # a name under $SWIFTBERT_HOME/weights, or a folder path
    precision: str = "fp32"
    batch_size: int = 32
    threads: int | None = None      # None: bert's default, one per core
    swiftbert_home: str | None = None
    stall_timeout: float = 600.0    # seconds without any output while rows are pending

    def command(self) -> list[str]:
        if self.precision not in PRECISIONS:
            raise ValueError(f"--precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        if self.batch_size < 1:
            raise ValueError(f"--batch-size must be at least 1, not {self.batch_size}")
        cmd = [resolve_bert(self.bert), "embed", "--input-format", "jsonl", "--format", "jsonl",
               "--model", self.model, "--precision", self.precision,
               "--batch-size", str(self.batch_size), "--skip-invalid", "--quiet"]
        if self.threads:
            cmd += ["--threads", str(self.threads)]
        return cmd

    @property
    def window(self) -> int:
        # bert's EmbeddingStream reads 8 x batch-size records before it writes any of them.
        return 8 * self.batch_size


@dataclass
class Result:
    id: Any
    embedding: list[float] | None
    error: str | None


def _encode(text: Any) -> tuple[bytes | None, str | None]:
    """The JSON line for a text, or why it cannot be sent (the row then gets that error)."""
    if text is None:
        return None, "text is null"
    if not isinstance(text, str):
        return None, f"text is a {type(text).__name__}, not a string"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return None, f"text is not valid Unicode: {error.reason} at {error.start}"
    return (json.dumps(text, ensure_ascii=False) + "\n").encode("utf-8"), None


class BertStream:
    """Owns one `bert embed` process. Not thread-safe: one caller at a time."""

    def __init__(self, config: BertConfig):
        self.config = config
        env = dict(os.environ)
        if config.swiftbert_home:
            env["SWIFTBERT_HOME"] = config.swiftbert_home
        try:
            self.process = subprocess.Popen(config.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, env=env, bufsize=0)
        except FileNotFoundError as error:
            raise BertProcessError(f"cannot start {config.bert!r}: {error}. Pass --bert PATH, or put bert on "
                                   "PATH on every executor (docs/scale-out.md, 'Shipping bert and the weights')") from error
        self._stdin_lock = threading.Lock()
        self._next_index = 0       # bert's index of the next line written
        self._valid_written = 0    # lines written that bert will embed (fillers included, skips excluded)
        self._skipped: dict[int, str] = {}
        self._skipped_changed = threading.Condition()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._keep_alive = False
        # (index, vector), an Exception, or None at EOF. Bounded: when the caller lags, the stdout
        # thread waits, bert blocks on a full stdout and stops reading stdin, and the writer waits.
        self._outputs: queue.Queue = queue.Queue(maxsize=2 * config.window)
        self._abandoned = threading.Event()  # set by kill(): the stdout thread stops waiting to hand over
        self._closed = False
        self._stdout_thread = threading.Thread(target=self._read_stdout, name="bert-stdout", daemon=True)
        self._stderr_thread = threading.Thread(target=self._read_stderr, name="bert-stderr", daemon=True)
        self._stdout_thread.start()
        self._stderr_thread.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    # --- threads ---------------------------------------------------------------------------------

    def _hand_over(self, item) -> bool:
        while not self._abandoned.is_set():
            try:
                self._outputs.put(item, timeout=1.0)
                return True
            except queue.Full:
                continue
        return False

    def _read_stdout(self) -> None:
        try:
            for line in self.process.stdout:
                record = json.loads(line)
                if not self._hand_over((record["index"], record["embedding"])):
                    return
        except Exception as error:  # a torn line when bert dies mid-write: reported as a failure
            self._hand_over(error)
        finally:
            self._hand_over(None)

    def _read_stderr(self) -> None:
        for raw in self.process.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._stderr_tail.append(line)
            match = _SKIPPED.match(line)
            if not match:
                continue
            index = int(match.group(1)) - 1
            with self._skipped_changed:
                self._skipped[index] = match.group(2)
                self._skipped_changed.notify_all()
            if self._keep_alive:
                # The skipped line was counted towards bert's window; one filler takes its place.
                try:
                    self._write_lines([FILLER_LINE], valid=1, counted_before=-1)
                except BertProcessError:
                    pass  # the reader reports the dead process

    # --- writing ---------------------------------------------------------------------------------

    def _write_lines(self, lines: list[bytes], valid: int, counted_before: int = 0) -> int:
        """Writes lines, returns the index of the first. Raises BertProcessError on a dead process."""
        with self._stdin_lock:
            first = self._next_index
            self._next_index += len(lines)
            self._valid_written += valid + counted_before
            try:
                self.process.stdin.write(b"".join(lines))
            except (BrokenPipeError, ValueError, OSError) as error:
                raise BertProcessError(self._failure(f"cannot write to bert: {error}")) from error
            return first

    def _close_stdin(self) -> None:
        with self._stdin_lock:
            if not self._closed:
                self._closed = True
                try:
                    self.process.stdin.close()
                except OSError:
                    pass  # already dead: the reader reports it

    # --- reading ---------------------------------------------------------------------------------

    def _next_output(self) -> tuple[int, list[float]] | None:
        try:
            item = self._outputs.get(timeout=self.config.stall_timeout)
        except queue.Empty:
            self.kill()
            raise BertProcessError(self._failure(f"no output for {self.config.stall_timeout:.0f} s with rows pending; "
                                                 "killed it (raise --stall-timeout for very slow machines)"))
        if isinstance(item, Exception):
            self.kill()
            raise BertProcessError(self._failure(f"unreadable output: {item}"))
        return item

    def _skip_reason(self, index: int) -> str:
        # bert writes the skip to stderr when it reads the line, before the window's output, but
        # our stderr thread may not have read it yet: wait a moment for it.
        with self._skipped_changed:
            self._skipped_changed.wait_for(lambda: index in self._skipped, timeout=2.0)
            reason = self._skipped.get(index)
        return f"bert skipped it: {reason}" if reason else "bert skipped it (no reason on its stderr)"

    def _failure(self, what: str) -> str:
        code = self.process.poll()
        status = "still running" if code is None else (f"killed by signal {-code}" if code < 0 else f"exit status {code}")
        self._stderr_thread.join(timeout=1.0)
        tail = "\n  ".join(self._stderr_tail) or "(empty)"
        return f"bert embed (pid {self.process.pid}, {status}): {what}\n  stderr:\n  {tail}"

    def _finish(self) -> None:
        """After end of input and end of output: the process must have exited 0."""
        try:
            code = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill()
            raise BertProcessError(self._failure("did not exit after its input ended"))
        if code != 0:
            raise BertProcessError(self._failure("exited with a failure"))

    def kill(self) -> None:
        self._abandoned.set()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        """Ends the process: closes stdin and waits for it (kills it after 60 s)."""
        self._close_stdin()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill()

    # --- a whole partition -----------------------------------------------------------------------

    def embed_stream(self, rows: Iterable[tuple[Any, Any]]) -> Iterator[Result]:
        """Embeds every (id, text) of rows and then ends the process. Yields one Result per row,
        in input order. Raises BertProcessError if bert fails; rows then must be retried."""
        pending: collections.deque[tuple[Any, int | None, str | None]] = collections.deque()
        writer_error: list[BaseException] = []

        def write_all() -> None:
            try:
                batch: list[bytes] = []
                for row_id, text in rows:
                    line, error = _encode(text)
                    if line is None:
                        pending.append((row_id, None, error))
                        continue
                    # Appended before the line is written, so the reader always finds its row.
                    with self._stdin_lock:
                        pending.append((row_id, self._next_index + len(batch), None))
                    batch.append(line)
                    if len(batch) >= 64:
                        self._write_lines(batch, valid=len(batch))
                        batch = []
                if batch:
                    self._write_lines(batch, valid=len(batch))
            except BaseException as error:  # the input iterator failed, or bert died
                writer_error.append(error)
            finally:
                self._close_stdin()

        writer = threading.Thread(target=write_all, name="bert-stdin", daemon=True)
        writer.start()
        try:
            while True:
                output = self._next_output()
                if output is None:
                    break
                index, vector = output
                while pending and (pending[0][1] is None or pending[0][1] <= index):
                    row_id, row_index, error = pending.popleft()
                    if row_index is None:
                        yield Result(row_id, None, error)
                    elif row_index == index:
                        yield Result(row_id, vector, None)
                    else:
                        yield Result(row_id, None, self._skip_reason(row_index))
            writer.join()
            if writer_error:
                if isinstance(writer_error[0], BertProcessError):
                    raise writer_error[0]
                self.kill()
                raise writer_error[0]
            self._finish()
            while pending:  # rows after the last output: null texts, or skipped at the very end
                row_id, row_index, error = pending.popleft()
                yield Result(row_id, None, error if row_index is None else self._skip_reason(row_index))
        finally:
            self.kill()
            writer.join(timeout=5)

    # --- one batch of a long-lived process -------------------------------------------------------

    def embed_batch(self, ids: Sequence[Any], texts: Sequence[Any]) -> list[Result]:
        """Embeds one batch and keeps the process for the next. Results in the batch's order."""
        self._keep_alive = True
        results: list[Result | None] = [None] * len(ids)
        lines: list[bytes] = []
        index_of_line: list[int] = []  # position in the batch of each line
        for position, text in enumerate(texts):
            line, error = _encode(text)
            if line is None:
                results[position] = Result(ids[position], None, error)
            else:
                lines.append(line)
                index_of_line.append(position)
        if not lines:
            return results  # type: ignore[return-value]
        first_index: list[int] = []
        writer_error: list[BaseException] = []

        def write_batch() -> None:
            try:
                chunk = 256
                for start in range(0, len(lines), chunk):
                    part = lines[start:start + chunk]
                    first = self._write_lines(part, valid=len(part))
                    if start == 0:
                        first_index.append(first)
                        started.set()
                with self._stdin_lock:
                    fillers = -self._valid_written % self.config.window
                if fillers:
                    self._write_lines([FILLER_LINE] * fillers, valid=fillers)
            except BaseException as error:
                writer_error.append(error)
            finally:
                started.set()

        started = threading.Event()
        writer = threading.Thread(target=write_batch, name="bert-stdin", daemon=True)
        writer.start()
        started.wait()
        if writer_error:
            raise writer_error[0]
        first = first_index[0]
        last = first + len(lines) - 1
        try:
            resolved = first - 1  # every index up to this one has its result
            while resolved < last:
                output = self._next_output()
                if output is None:
                    writer.join(timeout=5)
                    raise BertProcessError(self._failure("ended while a batch was in flight"))
                index, vector = output
                if index < first:
                    continue  # a filler of an earlier batch
                for gap in range(resolved + 1, min(index, last + 1)):
                    position = index_of_line[gap - first]
                    results[position] = Result(ids[position], None, self._skip_reason(gap))
                if index <= last:
                    position = index_of_line[index - first]
                    results[position] = Result(ids[position], vector, None)
                resolved = max(resolved, min(index, last))
            writer.join()
            if writer_error:
                raise writer_error[0]
        except BaseException:
            self.kill()  # a half-read process cannot serve the next batch; the caller makes a new one
            raise
        return results  # type: ignore[return-value]


# --- what both jobs share ------------------------------------------------------------------------

def job_arguments(description: str):
    """The arguments examples/spark/embed.py and examples/ray/embed.py both take."""
    import argparse
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--input", required=True, help="Parquet file or folder of the rows to embed")
    parser.add_argument("--text-column", required=True)
    parser.add_argument("--id-column", required=True, help="a unique id per row; it is written next to the vector")
    parser.add_argument("--output", required=True, help="Parquet folder to write (id, embedding, error)")
    parser.add_argument("--model", default="all-MiniLM-L6-v2",
                        help="a model name under $SWIFTBERT_HOME/weights, or a converted model's folder")
    parser.add_argument("--precision", default="fp32", choices=PRECISIONS)
    parser.add_argument("--bert", default="bert",
                        help="the bert binary on the workers (default: bert on PATH, else the swiftbert wheel's)")
    parser.add_argument("--swiftbert-home", default=None,
                        help="SWIFTBERT_HOME for bert on the workers (models are looked up in its weights/)")
    parser.add_argument("--mode", default="overwrite", choices=("overwrite", "skip-existing"),
                        help="skip-existing: embed only ids not yet in --output and add them to it")
    parser.add_argument("--batch-size", type=int, default=32, help="bert embed --batch-size")
    parser.add_argument("--threads", type=int, default=None, help="bert embed --threads, per bert process")
    parser.add_argument("--stall-timeout", type=float, default=600.0,
                        help="seconds without output from bert, rows pending, before it counts as hung")
    return parser


def config_from(args, bert: str | None = None, model: str | None = None) -> BertConfig:
    return BertConfig(bert=bert or args.bert, model=model or args.model, precision=args.precision,
                      batch_size=args.batch_size, threads=args.threads, swiftbert_home=args.swiftbert_home,
                      stall_timeout=args.stall_timeout)
