// Command duckdb is the SQL peer of the benchmarks: it grades the required
// checks of VER-002 and VER-004 (verifiers/crm) over a Parquet rollout
// dataset with DuckDB, in one query over read_parquet, and prints a report
// in the shape of bench.Report as JSON: {"rows": N, "passed": {"TASK-002":
// ...}}.
//
// These are the only required checks of the two verifiers (VER-002's
// "moved" and VER-004's "correct"; their other checks are optional and do
// not decide whether a rollout passes). make bench runs it on datasets of
// TASK-002 and TASK-004 rows only, beside gavel on the same files, so that
// it parses every row gavel parses: both states of a TASK-002 row, the
// initial state of a TASK-004 row (gavel also reads the final state there,
// for an optional check).
//
// It lives in its own module because DuckDB needs cgo and the main module is
// pure Go.
//
// Usage:
//
//	duckdb [-threads N] rollouts.parquet
package main

import (
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2"
)

// gradeSQL grades one file. Each state is parsed once, by json_transform,
// into typed maps keyed by record key; the checks are list lambdas over
// those maps. Each branch reads the file itself: a common table expression
// over read_parquet that several branches use is materialized, states and
// all, which at a million rollouts takes gigabytes.
//
// VER-002: S = initial opportunities owned by USR-004 with status open;
// pass iff S is not empty and every deal of S has ownerId USR-003 under the
// same key in the final state.
//
// VER-004: expected = sum over initial open opportunities of amount ×
// probability of its stage / 100; pass iff some number of the output, once
// "$" and "," are removed, lies within 0.01 of it.
const gradeSQL = `
WITH v002 AS (
  SELECT
    json_transform(initial_state, '{"opportunities": "MAP(VARCHAR, STRUCT(ownerId VARCHAR, status VARCHAR))"}').opportunities AS i,
    json_transform(final_state, '{"opportunities": "MAP(VARCHAR, STRUCT(ownerId VARCHAR))"}').opportunities AS f
  FROM read_parquet($1) WHERE task_id = 'TASK-002'
),
s002 AS (
  SELECT f, list_filter(map_keys(i), k -> i[k].ownerId = 'USR-004' AND i[k].status = 'open') AS s
  FROM v002
),
v004 AS (
  SELECT
    json_transform(initial_state, '{"opportunities": "MAP(VARCHAR, STRUCT(status VARCHAR, stageId VARCHAR, amount DOUBLE))", "stages": "MAP(VARCHAR, STRUCT(probability DOUBLE))"}') AS i,
    output
  FROM read_parquet($1) WHERE task_id = 'TASK-004'
),
e004 AS (
  SELECT
    coalesce(list_sum(list_transform(
      list_filter(map_values(i.opportunities), o -> o.status = 'open'),
      o -> o.amount * i.stages[o.stageId].probability / 100)), 0) AS expected,
    regexp_extract_all(replace(replace(coalesce(output, ''), '$', ''), ',', ''), '-?[0-9]+(\.[0-9]+)?') AS numbers
  FROM v004
)
SELECT 'TASK-002' AS task, count(*) FILTER (WHERE len(s) > 0 AND len(list_filter(s, k -> coalesce(f[k].ownerId = 'USR-003', false))) = len(s)) FROM s002
UNION ALL
SELECT 'TASK-004', count(*) FILTER (WHERE len(list_filter(numbers, x -> abs(x::DOUBLE - expected) <= 0.01)) > 0) FROM e004
UNION ALL
SELECT 'rows', count(*) FROM read_parquet($1)
`

type report struct {
	Rows   int64            `json:"rows"`
	Passed map[string]int64 `json:"passed"`
}

func main() {
	threads := flag.Int("threads", 2, "DuckDB worker threads `N`")
	explain := flag.Bool("explain", false, "print the query plan with timings instead of the report")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: duckdb [-threads N] DATASET.parquet")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *threads, *explain); err != nil {
		fmt.Fprintln(os.Stderr, "duckdb:", err)
		os.Exit(1)
	}
}

func run(path string, threads int, explain bool) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf("SET threads = %d", threads)); err != nil {
		return fmt.Errorf("set threads: %w", err)
	}
	if explain {
		var key, plan string
		if err := db.QueryRow("EXPLAIN ANALYZE "+gradeSQL, path).Scan(&key, &plan); err != nil {
			return err
		}
		fmt.Println(plan)
		return nil
	}
	rows, err := db.Query(gradeSQL, path)
	if err != nil {
		return fmt.Errorf("grade %s: %w", path, err)
	}
	defer rows.Close()
	rep := report{Passed: map[string]int64{}}
	for rows.Next() {
		var task string
		var n int64
		if err := rows.Scan(&task, &n); err != nil {
			return err
		}
		if task == "rows" {
			rep.Rows = n
		} else {
			rep.Passed[strings.Clone(task)] = n
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}
