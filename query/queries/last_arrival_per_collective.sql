WITH parts AS (
  SELECT rank, process_group_name, collective, seq, ts_ns,
         ROW_NUMBER() OVER (PARTITION BY rank, process_group_name, collective
                            ORDER BY ts_ns, name) - 1 AS nth
  FROM collectives
  WHERE side = 'device'
),
keyed AS (
  SELECT rank, process_group_name, collective, ts_ns,
         CASE WHEN seq IS NULL THEN collective ELSE '' END AS key_name,
         COALESCE(seq, nth) AS key_number
  FROM parts
),
instances AS (
  SELECT process_group_name, key_name, key_number,
         MIN(collective) AS collective,
         COUNT(*) AS ranks,
         MIN(ts_ns) AS first_ns,
         MAX(ts_ns) AS last_ns
  FROM keyed
  GROUP BY process_group_name, key_name, key_number
)
SELECT i.process_group_name, i.key_number AS seq, i.collective, i.ranks,
       CAST(i.last_ns - i.first_ns AS DOUBLE) / 1000 AS arrival_skew_us,
       MIN(k.rank) AS waited_for_rank
FROM instances i
JOIN keyed k ON k.process_group_name = i.process_group_name AND k.key_name = i.key_name
            AND k.key_number = i.key_number AND k.ts_ns = i.last_ns
GROUP BY i.process_group_name, i.key_number, i.collective, i.ranks, i.first_ns, i.last_ns
ORDER BY i.first_ns, i.process_group_name, seq
