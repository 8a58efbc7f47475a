SELECT rank, device_type, device_id,
       COUNT(*) AS events,
       MAX(total_allocated) AS peak_allocated_bytes,
       MAX(total_reserved) AS peak_reserved_bytes,
       SUM(CASE WHEN bytes > 0 THEN bytes ELSE 0 END) AS allocated_bytes
FROM memory
GROUP BY rank, device_type, device_id
ORDER BY rank, device_type, device_id
