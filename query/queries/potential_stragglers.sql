WITH last_step AS (
  SELECT rank, MAX(ts_ns) AS start_ns FROM steps GROUP BY rank
),
profiled AS (
  SELECT s.rank, s.step, s.ts_ns, s.ts_ns + s.dur_ns AS end_ns
  FROM steps s JOIN last_step l ON l.rank = s.rank
  WHERE s.ts_ns < l.start_ns
),
launches AS (
  SELECT rank, CAST(flow_id AS BIGINT) AS correlation, MIN(ts_ns) AS launch_ns
  FROM flows
  WHERE category = 'ac2g' AND phase = 's'
  GROUP BY rank, CAST(flow_id AS BIGINT)
),
device AS (
  SELECT k.rank, p.step AS iteration, k.stream, k.name, k.collective,
         k.ts_ns, k.ts_ns + k.dur_ns AS end_ns, k.dur_ns
  FROM kernels k
  JOIN launches l ON l.rank = k.rank AND l.correlation = k.correlation
  JOIN profiled p ON p.rank = k.rank AND l.launch_ns >= p.ts_ns AND l.launch_ns < p.end_ns
),
span AS (
  SELECT MIN(t) AS t_min, MAX(e) AS t_max
  FROM (SELECT ts_ns AS t, end_ns AS e FROM profiled
        UNION ALL SELECT ts_ns AS t, end_ns AS e FROM device) x
),
iteration AS (
  SELECT CAST(s.t_max - s.t_min AS DOUBLE) / (SELECT COUNT(DISTINCT step) FROM profiled) AS mean_ns,
         s.t_min
  FROM span s
),
last_copy AS (
  SELECT rank, stream, iteration, name, ts_ns, dur_ns,
         ROW_NUMBER() OVER (PARTITION BY rank, stream, iteration, name ORDER BY ts_ns DESC) AS latest
  FROM device
  WHERE collective IS NOT NULL AND stream >= 0 AND iteration > 0
),
candidates AS (
  SELECT c.rank, c.stream, c.iteration, c.name, c.ts_ns, c.dur_ns,
         MAX(c.dur_ns) OVER (PARTITION BY c.stream, c.iteration, c.name) AS longest_ns
  FROM last_copy c
  WHERE c.latest = 1
),
long_enough AS (
  SELECT c.* FROM candidates c, iteration i WHERE c.longest_ns >= 0.01 * i.mean_ns
),
spread AS (
  SELECT stream, iteration, name, STDDEV_SAMP(CAST(dur_ns AS DOUBLE)) AS std_ns
  FROM long_enough
  GROUP BY stream, iteration, name
  HAVING COUNT(*) > 1
),
metric_kernel AS (
  SELECT stream, name, AVG(std_ns) AS mean_std_ns
  FROM spread
  GROUP BY stream, name
  ORDER BY mean_std_ns DESC, stream, name
  LIMIT 1
),
metric AS (
  SELECT c.rank, c.iteration, c.ts_ns
  FROM long_enough c JOIN metric_kernel m ON m.stream = c.stream AND m.name = c.name
),
placed AS (
  SELECT rank, iteration, ts_ns,
         ROW_NUMBER() OVER (PARTITION BY iteration ORDER BY ts_ns DESC) AS place
  FROM metric
),
thresholds AS (
  SELECT iteration, MIN(ts_ns) AS threshold_ns FROM placed WHERE place <= 2 GROUP BY iteration
),
marked AS (
  SELECT p.rank, SUM(CASE WHEN p.ts_ns >= t.threshold_ns THEN 1 ELSE 0 END) AS times_marked,
         AVG(CAST(p.ts_ns AS DOUBLE)) AS mean_start_ns
  FROM placed p JOIN thresholds t ON t.iteration = p.iteration
  GROUP BY p.rank
)
SELECT m.rank, m.times_marked, k.stream, k.name AS kernel
FROM marked m, metric_kernel k
ORDER BY m.times_marked DESC, m.mean_start_ns DESC, m.rank
