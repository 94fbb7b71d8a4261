package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is one measured run of a peer program.
type Process struct {
	// Wall is the elapsed time from start to exit.
	Wall time.Duration
	// User and System are the CPU times of the process and the children it
	// waited for.
	User, System time.Duration
	// MaxRSS is the peak resident set size in bytes of the process, or of
	// the largest child it waited for when that is larger.
	MaxRSS int64
	// Load is the one-minute load average just before the run.
	Load float64
	// Stdout is what the program printed on standard output.
	Stdout []byte
}

// RunProcess runs argv[0] with the rest of argv as arguments, waits for it
// and measures it. Standard output and standard error are captured; a
// non-zero exit status other than those listed in okStatus is an error
// that carries the tail of standard error.
func RunProcess(ctx context.Context, argv []string, okStatus ...int) (Process, error) {
	p := Process{Load: LoadAverage()}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	p.Wall = time.Since(start)
	p.Stdout = stdout.Bytes()
	if st := cmd.ProcessState; st != nil {
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			p.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
			p.User = time.Duration(ru.Utime.Nano())
			p.System = time.Duration(ru.Stime.Nano())
		}
		for _, s := range okStatus {
			if st.ExitCode() == s {
				err = nil
			}
		}
	}
	if err != nil {
		tail := stderr.String()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return p, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(tail))
	}
	return p, nil
}

// LoadAverage returns the machine's one-minute load average, or -1 where
// it cannot be read.
func LoadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	if _, err := fmt.Sscan(string(data), &l); err != nil {
		return -1
	}
	return l
}
