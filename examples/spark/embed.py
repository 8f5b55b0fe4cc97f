"""Batch embeddings with Spark: Parquet in, Parquet of (id, embedding, error) out.

Each partition streams its rows through one long-lived `bert embed` subprocess (examples/bert_stream.py,
shipped to the executors by this job). A row whose text is null or that bert skips is written with a
null embedding and an error; no row is dropped. If bert dies the task fails, and Spark retries it
(its output is then discarded by Spark's commit protocol, so nothing is written twice).

    python examples/spark/embed.py --master 'local[2]' --input in.parquet --text-column text \
        --id-column id --output out.parquet --bert /path/to/bert --swiftbert-home /path/to/home

Arguments `sparkfiles:NAME` for --bert, --model or --swiftbert-home name a file or unpacked archive
shipped with spark-submit --files/--archives (resolved with SparkFiles.get on each executor).
See docs/scale-out.md.
"""
from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(os.path.dirname(HERE), "bert_stream.py")
sys.path.insert(0, os.path.dirname(SHARED))

import bert_stream  # noqa: E402  (the shared client; also shipped to the executors below)

SPARKFILES = "sparkfiles:"


def on_executor(value: str | None) -> str | None:
    """A path as seen on the executor: `sparkfiles:NAME` is a file shipped with --files/--archives."""
    if value is None or not value.startswith(SPARKFILES):
        return value
    from pyspark import SparkFiles
    return SparkFiles.get(value[len(SPARKFILES):])


def embed_partitions(config: bert_stream.BertConfig, id_column: str, text_column: str, rows_per_frame: int = 1024):
    """The mapInPandas function: one bert process per partition, all its rows through it."""
    import dataclasses

    def run(frames):
        import numpy as np
        import pandas as pd
        bert = on_executor(config.bert)
        if bert and os.path.isfile(bert) and not os.access(bert, os.X_OK):
            os.chmod(bert, 0o755)  # --files may not keep the executable bit
        local = dataclasses.replace(config, bert=bert, model=on_executor(config.model),
                                    swiftbert_home=on_executor(config.swiftbert_home))

        def rows():
            for frame in frames:
                for row_id, text in zip(frame[id_column].tolist(), frame[text_column].tolist()):
                    yield row_id, (None if text is None or (not isinstance(text, str) and pd.isna(text)) else text)

        def as_frame(results):
            return pd.DataFrame({
                id_column: [r.id for r in results],
                "embedding": [None if r.embedding is None else np.asarray(r.embedding, dtype=np.float32) for r in results],
                "error": pd.Series([r.error for r in results], dtype=object),
            })

        stream = bert_stream.BertStream(local)
        done = []
        for result in stream.embed_stream(rows()):
            done.append(result)
            if len(done) >= rows_per_frame:
                yield as_frame(done)
                done = []
        if done:
            yield as_frame(done)

    return run


def main(argv: list[str] | None = None) -> int:
    parser = bert_stream.job_arguments(__doc__.splitlines()[0])
    parser.add_argument("--master", default=None, help="Spark master for a local run, e.g. local[2]; "
                        "leave out under spark-submit. local[N,F] lets a failed task be retried F-1 times")
    parser.add_argument("--partitions", type=int, default=None,
                        help="partitions to embed (default: at least the default parallelism)")
    args = parser.parse_args(argv)
    config = bert_stream.config_from(args)
    config.command()  # checks --precision and --batch-size before Spark starts

    from pyspark.sql import SparkSession, functions as F
    from pyspark.sql.types import ArrayType, FloatType, StringType, StructField, StructType

    builder = SparkSession.builder.appName("swiftbert-embed")
    if args.master:
        builder = builder.master(args.master)
    if (args.master or "").startswith("local") and "PYSPARK_PYTHON" not in os.environ:
        # Local workers start `python3` from PATH unless told otherwise, not this interpreter, so
        # a venv's pyarrow, pandas and swiftbert (whose bert this job starts) would be missing.
        # On a cluster the executors' interpreter is the cluster's: set PYSPARK_PYTHON there.
        os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = builder.getOrCreate()
    try:
        if os.path.exists(SHARED):  # else it came with spark-submit --py-files
            spark.sparkContext.addPyFile(SHARED)
        rows = spark.read.parquet(args.input)
        missing = [c for c in (args.id_column, args.text_column) if c not in rows.columns]
        if missing:
            raise SystemExit(f"{args.input} has no column {', '.join(missing)}; its columns: {', '.join(rows.columns)}")
        rows = rows.select(args.id_column, args.text_column)

        jvm = spark.sparkContext._jvm
        out_path = jvm.org.apache.hadoop.fs.Path(args.output)
        out_fs = out_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        write_mode = "overwrite"
        if args.mode == "skip-existing" and out_fs.exists(out_path):
            # Checkpointed, so the ids are read before this job appends to the same folder.
            done = spark.read.parquet(args.output).select(args.id_column).distinct().localCheckpoint()
            rows = rows.join(done, on=args.id_column, how="left_anti")
            write_mode = "append"
        elif args.mode == "skip-existing":
            write_mode = "append"

        partitions = args.partitions or max(rows.rdd.getNumPartitions(), spark.sparkContext.defaultParallelism)
        if partitions != rows.rdd.getNumPartitions():
            rows = rows.repartition(partitions)

        schema = StructType([rows.schema[args.id_column],
                             StructField("embedding", ArrayType(FloatType()), True),
                             StructField("error", StringType(), True)])
        embedded = rows.mapInPandas(embed_partitions(config, args.id_column, args.text_column), schema=schema)

        start = time.perf_counter()
        embedded.write.mode(write_mode).parquet(args.output)
        seconds = time.perf_counter() - start

        written = spark.read.parquet(args.output)
        summary = {"job": "spark", "master": spark.sparkContext.master, "partitions": partitions,
                   "mode": args.mode, "seconds": round(seconds, 3),
                   "output_rows": written.count(), "output_errors": written.where(F.col("error").isNotNull()).count()}
        print(json.dumps(summary), flush=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
