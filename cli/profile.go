package cli

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// profiles are the --cpuprofile and --memprofile flags of a subcommand:
// runtime/pprof profiles a user can send with a report of a slow run
// (`go tool pprof bin/gavel FILE` reads them).
type profiles struct {
	cpu, mem *string
	cpuFile  *os.File
}

// addProfileFlags defines --cpuprofile and --memprofile on fs.
func addProfileFlags(fs *flag.FlagSet) *profiles {
	return &profiles{
		cpu: fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof)"),
		mem: fs.String("memprofile", "", "write a heap profile at the end of the run to `FILE` (go tool pprof)"),
	}
}

// start begins the CPU profile, when one is asked for.
func (p *profiles) start() error {
	if *p.cpu == "" {
		return nil
	}
	f, err := os.Create(*p.cpu)
	if err != nil {
		return usagef("gavel grade --cpuprofile cpu.pprof ...", "--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("start cpu profile: %w", err)
	}
	p.cpuFile = f
	return nil
}

// stop ends the CPU profile and writes the heap profile, when asked for.
// It is called once the run returns, whatever its outcome.
func (p *profiles) stop() error {
	var first error
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := p.cpuFile.Close(); err != nil {
			first = fmt.Errorf("write cpu profile: %w", err)
		}
		p.cpuFile = nil
	}
	if *p.mem != "" {
		runtime.GC() // the heap profile shows live memory as of the last collection
		f, err := os.Create(*p.mem)
		if err == nil {
			err = pprof.Lookup("heap").WriteTo(f, 0)
			if cErr := f.Close(); err == nil {
				err = cErr
			}
		}
		if err != nil && first == nil {
			first = fmt.Errorf("write heap profile: %w", err)
		}
	}
	return first
}
