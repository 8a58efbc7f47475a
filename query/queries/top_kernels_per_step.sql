WITH launches AS (
  SELECT rank, CAST(flow_id AS BIGINT) AS correlation, MIN(ts_ns) AS launch_ns
  FROM flows
  WHERE category = 'ac2g' AND phase = 's'
  GROUP BY rank, CAST(flow_id AS BIGINT)
),
stepped AS (
  SELECT k.rank, s.step, k.name, k.dur_ns
  FROM kernels k
  JOIN launches l ON l.rank = k.rank AND l.correlation = k.correlation
  JOIN steps s ON s.rank = k.rank AND l.launch_ns >= s.ts_ns AND l.launch_ns < s.ts_ns + s.dur_ns
),
totals AS (
  SELECT rank, step, name, COUNT(*) AS calls, SUM(dur_ns) AS total_ns
  FROM stepped
  GROUP BY rank, step, name
),
ranked AS (
  SELECT rank, step, name, calls, total_ns,
         ROW_NUMBER() OVER (PARTITION BY rank, step ORDER BY total_ns DESC, name) AS place
  FROM totals
)
SELECT rank, step, place, name, calls, total_ns
FROM ranked
WHERE place <= 3
ORDER BY rank, step, place
