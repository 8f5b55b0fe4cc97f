"""Batch embeddings with Ray Data: Parquet in, Parquet of (id, embedding, error) out.

read_parquet -> map_batches over a pool of actors, each owning one long-lived `bert embed` process
(examples/bert_stream.py, shipped with the job through runtime_env). A row whose text is null or
that bert skips is written with a null embedding and an error; no row is dropped. If bert dies, the
actor starts a new one and embeds the batch again; if the actor itself dies, Ray restarts it and
retries the batch (max_restarts / max_task_retries), and the dead attempt's rows are never written.

    python examples/ray/embed.py --concurrency 2 --input in.parquet --text-column text \
        --id-column id --output out.parquet --bert /path/to/bert --swiftbert-home /path/to/home

Without --address a local Ray is started with --num-cpus logical CPUs. See docs/scale-out.md.
"""
from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.dirname(HERE)
sys.path.insert(0, EXAMPLES)

import bert_stream  # noqa: E402  (the shared client; also shipped to the workers below)

# How often an actor starts a new bert for a batch whose bert died, before failing the batch.
BERT_RESTARTS_PER_BATCH = 2


class BertEmbedder:
    """A Ray Data actor: one bert process, kept alive between batches."""

    def __init__(self, config: bert_stream.BertConfig, id_column: str, text_column: str):
        self.config, self.id_column, self.text_column = config, id_column, text_column
        self.stream: bert_stream.BertStream | None = None

    def __call__(self, batch):
        import pyarrow as pa
        ids = batch[self.id_column].to_pylist()
        texts = batch[self.text_column].to_pylist()
        for attempt in range(BERT_RESTARTS_PER_BATCH + 1):
            if self.stream is None:
                self.stream = bert_stream.BertStream(self.config)
            try:
                results = self.stream.embed_batch(ids, texts)
                break
            except bert_stream.BertProcessError as error:
                self.stream = None  # embed_batch killed it; the next attempt starts a new one
                if attempt == BERT_RESTARTS_PER_BATCH:
                    raise
                print(f"bert failed, embedding the batch again with a new process: {error}", file=sys.stderr)
        return pa.table({
            self.id_column: pa.array([r.id for r in results], type=batch.schema.field(self.id_column).type),
            "embedding": pa.array([r.embedding for r in results], type=pa.list_(pa.float32())),
            "error": pa.array([r.error for r in results], type=pa.string()),
        })

    def __del__(self):
        if self.stream is not None:
            self.stream.close()


def drop_done(batch, id_column: str, done_ref):
    """Keeps the rows whose id is not yet in the output (--mode skip-existing)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    done = done_ref if isinstance(done_ref, pa.Array) else pa.array(list(done_ref))
    return batch.filter(pc.invert(pc.is_in(batch[id_column], value_set=done)))


def existing_ids(output: str, id_column: str):
    """The ids already in --output, or None when it does not exist yet."""
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs
    filesystem, path = pafs.FileSystem.from_uri(output) if "://" in output else (pafs.LocalFileSystem(), os.path.abspath(output))
    if filesystem.get_file_info(path).type == pafs.FileType.NotFound:
        return None
    dataset = ds.dataset(path, filesystem=filesystem, format="parquet")
    if not dataset.files:
        return None
    table = dataset.to_table(columns=[id_column])
    return table[id_column].unique() if table.num_rows else None


def main(argv: list[str] | None = None) -> int:
    parser = bert_stream.job_arguments(__doc__.splitlines()[0])
    parser.add_argument("--address", default=None, help="a running Ray cluster (default: start a local one)")
    parser.add_argument("--num-cpus", type=int, default=None,
                        help="logical CPUs of the local Ray (default: --concurrency + 1, the 1 for reading and writing)")
    parser.add_argument("--concurrency", type=int, default=1, help="actors, each with its own bert process")
    parser.add_argument("--actor-cpus", type=float, default=1.0, help="logical CPUs each actor holds")
    parser.add_argument("--ray-batch-size", type=int, default=None,
                        help="rows per actor call (default: 4 bert windows, 32 x --batch-size)")
    parser.add_argument("--blocks", type=int, default=None,
                        help="blocks to split the input into (default: 4 per actor)")
    args = parser.parse_args(argv)
    config = bert_stream.config_from(args)
    config.command()  # checks --precision and --batch-size before Ray starts

    import ray
    from ray.data import ActorPoolStrategy

    runtime_env = {"py_modules": [os.path.join(EXAMPLES, "bert_stream.py")]}
    if args.address:
        ray.init(address=args.address, runtime_env=runtime_env)
    else:
        ray.init(num_cpus=args.num_cpus or args.concurrency + 1, include_dashboard=False,
                 runtime_env=runtime_env, log_to_driver=True)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        rows = ray.data.read_parquet(args.input, columns=[args.id_column, args.text_column])
        rows = rows.repartition(args.blocks or 4 * args.concurrency)

        write_mode = "overwrite"
        if args.mode == "skip-existing":
            write_mode = "append"
            done = existing_ids(args.output, args.id_column)
            if done is not None:
                rows = rows.map_batches(drop_done, batch_format="pyarrow",
                                        fn_kwargs={"id_column": args.id_column, "done_ref": done})

        embedded = rows.map_batches(
            BertEmbedder,
            fn_constructor_args=(config, args.id_column, args.text_column),
            batch_size=args.ray_batch_size or 4 * config.window,
            batch_format="pyarrow",
            compute=ActorPoolStrategy(size=args.concurrency),
            num_cpus=args.actor_cpus,
            # A dead actor is restarted and its batch retried; its partial output is never written.
            max_restarts=-1,
            max_task_retries=-1,
        )
        start = time.perf_counter()
        embedded.write_parquet(args.output, mode=ray.data.SaveMode(write_mode))
        seconds = time.perf_counter() - start

        import pyarrow.compute as pc
        import pyarrow.dataset as ds
        written = ds.dataset(args.output, format="parquet").to_table(columns=[args.id_column, "error"]) \
            if "://" not in args.output else None
        summary = {"job": "ray", "concurrency": args.concurrency, "mode": args.mode, "seconds": round(seconds, 3)}
        if written is not None:
            summary |= {"output_rows": written.num_rows,
                        "output_errors": pc.sum(pc.is_valid(written["error"]).cast("int64")).as_py()}
        print(json.dumps(summary), flush=True)
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
