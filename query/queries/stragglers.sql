WITH parts AS (
  SELECT rank, process_group_name, collective, seq, ts_ns,
         ROW_NUMBER() OVER (PARTITION BY rank, process_group_name, collective
                            ORDER BY ts_ns, name) - 1 AS nth
  FROM collectives
  WHERE side = 'device'
),
keyed AS (
  SELECT rank, process_group_name, ts_ns,
         CASE WHEN seq IS NULL THEN collective ELSE '' END AS key_name,
         COALESCE(seq, nth) AS key_number
  FROM parts
),
arrivals AS (
  SELECT k.*, ts_ns - MIN(ts_ns) OVER (PARTITION BY process_group_name, key_name, key_number) AS arrival_ns
  FROM keyed k
),
instances AS (
  SELECT process_group_name, key_name, key_number,
         COUNT(*) AS ranks,
         MAX(ts_ns) AS last_ns,
         COUNT(*) * MAX(arrival_ns) - SUM(arrival_ns) AS waited_ns
  FROM arrivals
  GROUP BY process_group_name, key_name, key_number
),
last_rank AS (
  SELECT i.process_group_name, i.key_name, i.key_number, i.waited_ns, MIN(k.rank) AS rank
  FROM instances i
  JOIN keyed k ON k.process_group_name = i.process_group_name AND k.key_name = i.key_name
              AND k.key_number = i.key_number AND k.ts_ns = i.last_ns
  WHERE i.ranks > 1
  GROUP BY i.process_group_name, i.key_name, i.key_number, i.waited_ns
  HAVING COUNT(*) = 1
),
per_rank AS (
  SELECT rank, COUNT(*) AS times_waited_for, SUM(waited_ns) AS others_waited_ns
  FROM last_rank
  GROUP BY rank
),
all_ranks AS (
  SELECT DISTINCT rank FROM keyed
)
SELECT a.rank,
       COALESCE(p.times_waited_for, 0) AS times_waited_for,
       CAST(COALESCE(p.others_waited_ns, 0) AS DOUBLE) / 1000 AS others_waited_us
FROM all_ranks a
LEFT JOIN per_rank p ON p.rank = a.rank
ORDER BY others_waited_us DESC, a.rank
