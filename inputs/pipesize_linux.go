package inputs

import (
	"os"
	"syscall"
)

// fSetPipeSize is Linux's F_SETPIPE_SZ.
const fSetPipeSize = 1031

// GrowPipe asks the kernel for a 1 MiB buffer when standard input is a
// pipe, rather than its 64 KiB default: an Arrow stream of a pyarrow table
// crosses the pipe in 16 times fewer reads, each waking the writer once
// (about a tenth of the wall time of gavel.grade(table), measured). A
// refusal (a pipe-max-size below 1 MiB) leaves the pipe as it was, which
// changes nothing but the speed.
func GrowPipe(f *os.File) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return
	}
	rc, err := f.SyscallConn() // unlike Fd, leaves the descriptor's mode alone
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSize, 1<<20)
	})
}
