package bench

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/gavelhq/gavel/columnar"
)

// Report is what a peer program prints on standard output, as one JSON
// object, so that the driver can compare peers: how many rows it read, how
// many bytes of text it touched and, for graders, how many rollouts of each
// task passed the task's required check.
type Report struct {
	// Rows is the number of rows (rollouts) read.
	Rows int64 `json:"rows"`
	// Bytes is the number of bytes of text touched: the two state columns
	// for Parquet, the decompressed lines for JSON Lines.
	Bytes int64 `json:"bytes"`
	// Checksum folds every byte touched, so that no reading is optimised
	// away; it is printed, never compared.
	Checksum uint64 `json:"checksum,omitempty"`
	// Passed counts, by task id, the rollouts whose required check passed.
	Passed map[string]int64 `json:"passed,omitempty"`
}

// foldBytes returns sum folded with every byte of b, eight at a time.
func foldBytes(sum uint64, b []byte) uint64 {
	for len(b) >= 8 {
		sum = sum*31 ^ binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	for _, c := range b {
		sum = sum*31 ^ uint64(c)
	}
	return sum
}

// ParquetFloor reads the Parquet dataset at path with the project's reader
// (page-level, each column prefetched and decompressed by its own
// goroutine) and touches every byte of final_state and initial_state: the
// least work any grader of the file must do.
func ParquetFloor(path string, batchRows int) (Report, error) {
	if batchRows <= 0 {
		batchRows = 1024
	}
	r, err := columnar.OpenParquet(path, columnar.Options{})
	if err != nil {
		return Report{}, err
	}
	defer r.Close()
	var rep Report
	for {
		b, err := r.Next(batchRows)
		if err == io.EOF {
			return rep, nil
		}
		if err != nil {
			return rep, err
		}
		for i := range b.Rows {
			row := &b.Rows[i]
			rep.Checksum = foldBytes(rep.Checksum, row.Final.Data)
			rep.Checksum = foldBytes(rep.Checksum, row.Initial.Data)
			rep.Bytes += int64(len(row.Final.Data) + len(row.Initial.Data))
		}
		rep.Rows += int64(len(b.Rows))
		b.Release()
	}
}

// JSONLFloor decompresses the zstd-compressed JSON Lines file at path on
// one goroutine and splits it into lines: the least work any grader of the
// file must do before parsing.
func JSONLFloor(path string) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, err
	}
	defer f.Close()
	zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return Report{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer zr.Close()
	var rep Report
	buf := make([]byte, 1<<20)
	partial := false // the last chunk ended inside a line
	for {
		n, err := zr.Read(buf)
		chunk := buf[:n]
		rep.Bytes += int64(n)
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				rep.Checksum = foldBytes(rep.Checksum, chunk)
				partial = true
				break
			}
			rep.Checksum = foldBytes(rep.Checksum, chunk[:i])
			rep.Rows++
			partial = false
			chunk = chunk[i+1:]
		}
		if err == io.EOF {
			if partial {
				rep.Rows++
			}
			return rep, nil
		}
		if err != nil {
			return rep, fmt.Errorf("read %s: %w", path, err)
		}
	}
}

// The two tasks the peers grade, and what they state (as verifiers/crm
// has them).
const (
	taskMoveDeals   = "TASK-002" // VER-002
	taskWeighted    = "TASK-004" // VER-004
	departedRep     = "USR-004"
	newOwner        = "USR-003"
	numberTolerance = 0.01
)

// numberPattern is what a stated number looks like once "$" and "," are
// removed from the answer (as verifiers.NumbersIn reads it).
var numberPattern = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?`)

// GradeMaps is the idiomatic Go peer: it reads the Parquet dataset at path
// with the project's reader, decodes the states of TASK-002 and TASK-004
// rollouts with encoding/json into map[string]any on workers goroutines,
// and grades the required checks of VER-002 and VER-004.
func GradeMaps(path string, workers int) (Report, error) {
	if workers <= 0 {
		workers = 2
	}
	r, err := columnar.OpenParquet(path, columnar.Options{})
	if err != nil {
		return Report{}, err
	}
	defer r.Close()

	batches := make(chan *columnar.Batch, workers)
	var (
		mu     sync.Mutex
		passed = map[string]int64{taskMoveDeals: 0, taskWeighted: 0}
		bad    error
		wg     sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var moved, weighted int64
			var werr error
			for b := range batches {
				for i := range b.Rows {
					row := &b.Rows[i]
					var ok bool
					var err error
					switch string(row.Task.Data) {
					case taskMoveDeals:
						ok, err = mapsVER002(row.Final.Data, row.Initial.Data)
						if ok {
							moved++
						}
					case taskWeighted:
						ok, err = mapsVER004(row.Initial.Data, string(row.Output.Data))
						if ok {
							weighted++
						}
					}
					if err != nil && werr == nil {
						werr = fmt.Errorf("row %d: %w", row.Index, err)
					}
				}
				b.Release()
			}
			mu.Lock()
			passed[taskMoveDeals] += moved
			passed[taskWeighted] += weighted
			bad = errors.Join(bad, werr)
			mu.Unlock()
		}()
	}
	var rows int64
	for {
		b, err := r.Next(256)
		if err != nil {
			close(batches)
			wg.Wait()
			if err == io.EOF {
				err = bad
			}
			return Report{Rows: rows, Passed: passed}, err
		}
		rows += int64(len(b.Rows))
		batches <- b
	}
}

// opportunities returns the opportunities table of a decoded CRM state.
func opportunities(state map[string]any) map[string]any {
	t, _ := state["opportunities"].(map[string]any)
	return t
}

// mapsVER002 is VER-002's required check over decoded maps: the initial
// open deals of the departed rep exist and all have the new owner under
// the same key in the final state.
func mapsVER002(final, initial []byte) (bool, error) {
	var f, i map[string]any
	if err := json.Unmarshal(final, &f); err != nil {
		return false, err
	}
	if err := json.Unmarshal(initial, &i); err != nil {
		return false, err
	}
	after := opportunities(f)
	open, moved := 0, 0
	for key, v := range opportunities(i) {
		o, _ := v.(map[string]any)
		if o["ownerId"] != departedRep || o["status"] != "open" {
			continue
		}
		open++
		if fo, _ := after[key].(map[string]any); fo["ownerId"] == newOwner {
			moved++
		}
	}
	return open > 0 && moved == open, nil
}

// mapsVER004 is VER-004's required check over decoded maps: the output
// states the weighted total of the initial open deals within 0.01.
func mapsVER004(initial []byte, output string) (bool, error) {
	var i map[string]any
	if err := json.Unmarshal(initial, &i); err != nil {
		return false, err
	}
	stages, _ := i["stages"].(map[string]any)
	var total float64
	for _, v := range opportunities(i) {
		o, _ := v.(map[string]any)
		if o["status"] != "open" {
			continue
		}
		amount, ok1 := o["amount"].(float64)
		id, _ := o["stageId"].(string)
		stage, _ := stages[id].(map[string]any)
		p, ok2 := stage["probability"].(float64)
		if !ok1 || !ok2 {
			return false, fmt.Errorf("opportunity %v: no amount or stage probability", o["id"])
		}
		total += amount * p / 100
	}
	text := strings.NewReplacer("$", "", ",", "").Replace(output)
	for _, s := range numberPattern.FindAllString(text, -1) {
		if x, err := strconv.ParseFloat(s, 64); err == nil && math.Abs(x-total) <= numberTolerance {
			return true, nil
		}
	}
	return false, nil
}
