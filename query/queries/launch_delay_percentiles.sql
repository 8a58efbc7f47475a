WITH launches AS (
  SELECT rank, CAST(flow_id AS BIGINT) AS correlation, MIN(ts_ns) AS launch_ns
  FROM flows
  WHERE category = 'ac2g' AND phase = 's'
  GROUP BY rank, CAST(flow_id AS BIGINT)
),
delays AS (
  SELECT k.rank, CAST(k.ts_ns - l.launch_ns AS DOUBLE) / 1000 AS delay_us
  FROM kernels k
  JOIN launches l ON l.rank = k.rank AND l.correlation = k.correlation
)
SELECT rank,
       COUNT(*) AS launches,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY delay_us) AS p50_us,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY delay_us) AS p90_us,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY delay_us) AS p99_us,
       MAX(delay_us) AS max_us
FROM delays
GROUP BY rank
ORDER BY rank
