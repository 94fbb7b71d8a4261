// Command s3fake runs an S3-protocol server on 127.0.0.1 for tests and
// benchmarks outside go test (a Slurm array, make bench-s3): it creates
// the buckets, uploads the files given with -put, prints its endpoint
// (http://127.0.0.1:PORT) on a line of standard output and serves until
// -timeout passes or it is sent SIGINT or SIGTERM. With -dir the buckets
// are kept in a directory and outlive the server. On exit it prints the
// requests it served: "gets N puts N lists N".
//
//	s3fake -bucket data -dir /tmp/s3 -timeout 10m -put data/in/a.parquet=a.parquet
//	AWS_ENDPOINT_URL=http://127.0.0.1:PORT AWS_REGION=us-east-1 \
//	  AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x gavel grade --out s3://data/out s3://data/in/
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gavelhq/gavel/internal/s3test"
)

type puts []string

func (p *puts) String() string     { return strings.Join(*p, ",") }
func (p *puts) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "`ADDR`ess to listen on")
	buckets := flag.String("bucket", "gavel", "comma-separated `BUCKETS` to create")
	dir := flag.String("dir", "", "keep the buckets in `DIR` (default: in memory)")
	timeout := flag.Duration("timeout", 30*time.Minute, "stop after `D`")
	addrFile := flag.String("addr-file", "", "also write the endpoint into `FILE`")
	var put puts
	flag.Var(&put, "put", "upload `BUCKET/KEY=FILE` before serving (repeatable)")
	flag.Parse()
	if err := run(*addr, *buckets, *dir, *timeout, *addrFile, put, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "s3fake:", err)
		os.Exit(1)
	}
}

func run(addr, buckets, dir string, timeout time.Duration, addrFile string, put []string, stdout io.Writer) error {
	srv, err := s3test.Start(s3test.Options{Addr: addr, Dir: dir, Buckets: strings.Split(buckets, ",")})
	if err != nil {
		return err
	}
	defer srv.Close()
	for _, p := range put {
		dst, file, ok := strings.Cut(p, "=")
		bucket, key, ok2 := strings.Cut(dst, "/")
		if !ok || !ok2 {
			return fmt.Errorf("-put %q: want BUCKET/KEY=FILE", p)
		}
		if err := srv.Put(bucket, key, file); err != nil {
			return err
		}
	}
	if addrFile != "" {
		if err := os.WriteFile(addrFile, []byte(srv.URL+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, srv.URL)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
	case <-time.After(timeout):
	}
	g, p, l := srv.Counts()
	fmt.Fprintf(os.Stderr, "gets %d puts %d lists %d\n", g, p, l)
	return nil
}
