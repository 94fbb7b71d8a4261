// Command rewardsgen writes the rewards table of a made-up run with many
// tasks, for timing gavel leaderboard where gavel gen cannot go: its
// datasets have five tasks, a leaderboard at archive scale has thousands.
// Each row is one rollout of one of -tasks tasks by one of -models models,
// in the columns and the JSON Lines form of gavel's rewards
// (docs/reference/outputs.md); statuses and rewards come from a seeded
// generator (a task difficulty and a model strength), so the same flags
// write the same bytes.
//
// Usage:
//
//	rewardsgen -rows 10000000 -tasks 10000 -out DIR
//
// writes DIR/rewards/part-00000.jsonl.zst, a result directory that gavel
// leaderboard reads.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/klauspost/compress/zstd"
)

func main() {
	rows := flag.Int64("rows", 1000000, "number of rollouts `N`")
	tasks := flag.Int("tasks", 10000, "number of tasks `T`")
	models := flag.Int("models", 4, "number of models `M`")
	seed := flag.Uint64("seed", 1, "random `SEED`")
	out := flag.String("out", "", "result directory `DIR` to write")
	flag.Parse()
	if *out == "" || *rows < 1 || *tasks < 1 || *models < 1 {
		fmt.Fprintln(os.Stderr, "usage: rewardsgen -rows N -tasks T [-models M] [-seed S] -out DIR")
		os.Exit(2)
	}
	if err := run(*rows, *tasks, *models, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "rewardsgen:", err)
		os.Exit(1)
	}
}

func run(rows int64, tasks, models int, seed uint64, out string) error {
	dir := filepath.Join(out, "rewards")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, "part-00000.jsonl.zst")
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	defer f.Close()
	zw, err := zstd.NewWriter(f, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(zw, 1<<20)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	difficulty := make([]float64, tasks)
	for i := range difficulty {
		difficulty[i] = rng.Float64()
	}
	var line []byte
	for i := range rows {
		task := int(i) % tasks
		model := int(i/int64(tasks)) % models
		// A strong model (0) passes easy tasks; the last one fails most.
		p := (1 - difficulty[task]) * (1 - float64(model)/float64(models+1))
		checks := 4
		pass := 0
		for range checks {
			if rng.Float64() < p {
				pass++
			}
		}
		status := "failed"
		if pass == checks {
			status = "passed"
		}
		errored := rng.IntN(200) == 0
		if errored {
			status = "error"
		}
		line = append(line[:0], `{"rollout_id":"r-`...)
		line = strconv.AppendInt(line, i, 10)
		line = append(line, `","task_id":"TASK-`...)
		line = strconv.AppendInt(line, int64(task), 10)
		line = append(line, `","verifier_id":"VER-`...)
		line = strconv.AppendInt(line, int64(task), 10)
		line = append(line, `","status":"`...)
		line = append(line, status...)
		line = append(line, `","passed":`...)
		switch {
		case errored:
			line = append(line, `null,"reward":null`...)
		default:
			line = strconv.AppendBool(line, pass == checks)
			line = append(line, `,"reward":`...)
			line = strconv.AppendFloat(line, float64(pass)/float64(checks), 'g', -1, 64)
		}
		line = append(line, `,"model":"model-`...)
		line = strconv.AppendInt(line, int64(model), 10)
		line = append(line, "\"}\n"...)
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
