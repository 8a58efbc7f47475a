"""Runs SQL files on a neuronprof Parquet dataset with Spark (local[2]) or DuckDB.

usage: engines.py spark|duckdb DATASET OUT_DIR QUERY.sql...

Registers every table directory of DATASET as a view of the same name (the rank=R
directories become the `rank` column, last), runs each query unchanged and writes its
rows to OUT_DIR/NAME.csv (a header, then one line per row; nulls empty, floats with
repr()). Prints the seconds each query took.
"""

import csv
import os
import sys
import time

TABLES = ["events", "kernels", "collectives", "memory", "steps", "ranks", "operators", "flows"]


def cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if hasattr(value, "is_finite"):  # decimal.Decimal
        return repr(float(value))
    return str(value)


def write(out_dir, name, columns, rows):
    with open(os.path.join(out_dir, name + ".csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for row in rows:
            w.writerow([cell(v) for v in row])


def main():
    engine, dataset, out_dir, *queries = sys.argv[1:]
    os.makedirs(out_dir, exist_ok=True)
    present = [t for t in TABLES if os.path.isdir(os.path.join(dataset, t))]
    if engine == "spark":
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[2]")
            .appName("neuronprof-sql")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.driver.memory", "1g")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        for t in present:
            spark.read.parquet(os.path.join(dataset, t)).createOrReplaceTempView(t)

        def run(sql):
            df = spark.sql(sql)
            return df.columns, [tuple(r) for r in df.collect()]

    elif engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads = 2")
        for t in present:
            glob = os.path.join(dataset, t, "*", "*.parquet")
            con.execute(
                f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{glob}', hive_partitioning = true)"
            )

        def run(sql):
            cur = con.execute(sql)
            return [d[0] for d in cur.description], cur.fetchall()

    else:
        sys.exit(f"unknown engine {engine}")
    for path in queries:
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            sql = f.read()
        started = time.monotonic()
        columns, rows = run(sql)
        print(f"{engine} {name}: {len(rows)} rows in {time.monotonic() - started:.2f} s", flush=True)
        write(out_dir, name, columns, rows)
    if engine == "spark":
        spark.stop()


if __name__ == "__main__":
    main()
