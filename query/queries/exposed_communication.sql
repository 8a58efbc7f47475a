WITH compute AS (
  SELECT rank, ts_ns AS start_ns, ts_ns + dur_ns AS end_ns
  FROM kernels
  WHERE category = 'kernel' AND collective IS NULL
),
marked AS (
  SELECT rank, start_ns, end_ns,
         CASE WHEN start_ns > MAX(end_ns) OVER (
                PARTITION BY rank ORDER BY start_ns, end_ns
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
              THEN 1 ELSE 0 END AS opens
  FROM compute
),
numbered AS (
  SELECT rank, start_ns, end_ns,
         SUM(opens) OVER (PARTITION BY rank ORDER BY start_ns, end_ns
                          ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS island
  FROM marked
),
islands AS (
  SELECT rank, island, MIN(start_ns) AS start_ns, MAX(end_ns) AS end_ns
  FROM numbered
  GROUP BY rank, island
),
comm AS (
  SELECT rank, ts_ns AS start_ns, ts_ns + dur_ns AS end_ns, dur_ns
  FROM kernels
  WHERE collective IS NOT NULL
),
overlap AS (
  SELECT c.rank, c.start_ns, c.end_ns, c.dur_ns,
         SUM(CASE WHEN i.start_ns < c.end_ns AND i.end_ns > c.start_ns
                  THEN LEAST(i.end_ns, c.end_ns) - GREATEST(i.start_ns, c.start_ns)
                  ELSE 0 END) AS hidden_ns
  FROM comm c
  LEFT JOIN islands i ON i.rank = c.rank
  GROUP BY c.rank, c.start_ns, c.end_ns, c.dur_ns
)
SELECT rank,
       COUNT(*) AS kernels,
       SUM(dur_ns) AS communication_ns,
       SUM(dur_ns - COALESCE(hidden_ns, 0)) AS exposed_ns,
       CAST(SUM(dur_ns - COALESCE(hidden_ns, 0)) AS DOUBLE) / CAST(SUM(dur_ns) AS DOUBLE) AS exposed_fraction
FROM overlap
GROUP BY rank
ORDER BY rank
