package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/serve"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/spec"
)

const serveExamples = `  gavel serve
  gavel serve --addr 127.0.0.1:9000 --spec specs/ --tasks tasks.parquet
  GAVEL_TOKEN=s3cret gavel serve --addr 0.0.0.0:8080 --token-env GAVEL_TOKEN
  curl -s localhost:8080/v1/grade -d @rollout.json`

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "gavel serve [flags]\n\nServes the gym verifier API (POST /verifier, PUT and DELETE /sessions/{id}), online grading\n(POST /v1/grade), trainers' reward protocols (OpenRLHF's POST /get_reward, NeMo Gym's POST /verify\nand GET /reverify_mode), GET /v1/verifiers, /healthz, /readyz and /metrics until SIGINT or SIGTERM,\nwhich drain the requests in flight. SIGHUP reloads --spec.", serveExamples, stdout)
	addr := fs.String("addr", "127.0.0.1:8080", "listen on `HOST:PORT`")
	var specs listFlag
	fs.Var(&specs, "spec", "declarative verifier `FILE` (YAML or JSON) or directory of them; repeatable; reloaded on SIGHUP")
	tasks := fs.String("tasks", "", "tasks table `FILE` (task_id, initial_state, other fields)")
	maxBody := fs.Int64("max-body", serve.DefaultMaxBody, "largest request body in `BYTES` (for JSON Lines: largest line)")
	maxInflight := fs.Int("max-inflight", 0, "requests served at once before 429 (default 4 per CPU)")
	reqTimeout := fs.Duration("request-timeout", serve.DefaultRequestTimeout, "a request taking longer than `D`, from its first byte to its last (streams too), is a 503 or ends with an error line")
	timeout := fs.Duration("timeout", pipeline.DefaultTimeout, "a verifier running longer than `D` on one rollout gives that rollout status error")
	shutdown := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM, wait at most `D` for the requests in flight")
	tokenEnv := fs.String("token-env", "", "require Authorization: Bearer <token>, the token read from environment variable `NAME`")
	insecure := fs.Bool("insecure", false, "allow a non-loopback --addr without --token-env")
	maxSessions := fs.Int("max-sessions", 10000, "sessions kept by PUT /sessions/{id} (least recently used evicted)")
	maxMemory := sizeFlag(serve.DefaultMaxMemory)
	fs.Var(&maxMemory, "max-memory", "keep the server's resident memory under `SIZE` (bytes, or with KiB, MiB, GiB): requests, sessions and compiled checks share it")
	defaultTask := fs.String("default-task", "", "the task of a trainer's rollouts (POST /get_reward, /verify) whose request names none and whose URL has no ?task=")
	onError := fs.String("on-error-reward", "", "answer `X` as the reward of a /get_reward rollout that could not be graded, instead of failing the request (your choice: X is not a grade)")
	jf := judgeFlags(fs)
	rf := newRemoteFlags(fs, false)
	health := healthFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var onErrorReward *float64
	if *onError != "" {
		x, err := strconv.ParseFloat(*onError, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return usagef("gavel serve --on-error-reward 0", "--on-error-reward %q: want a finite number", *onError)
		}
		onErrorReward = &x
	}
	judgeCfg, panel, budget, err := jf.config()
	if err != nil {
		return err
	}
	if budget != 0 {
		return usagef("gavel serve --judge-model M", "--judge-max-requests: a server has no request budget (each request is judged as it comes)")
	}
	if fs.NArg() > 0 {
		return usagef("gavel serve --help", "serve takes no arguments, got %q", fs.Arg(0))
	}
	if maxMemory < 64<<20 {
		return usagef("gavel serve --max-memory 512MiB", "--max-memory %s: want at least 64MiB", maxMemory.String())
	}
	if *maxBody <= 0 || *reqTimeout <= 0 || *shutdown <= 0 || *maxInflight < 0 || *maxSessions <= 0 {
		return usagef("gavel serve --help", "--max-body, --request-timeout, --shutdown-timeout and --max-sessions must be positive")
	}
	if *timeout <= 0 {
		return usagef("gavel serve --timeout 30s", "--timeout %s: want a positive duration", *timeout)
	}
	token := ""
	if *tokenEnv != "" {
		token = os.Getenv(*tokenEnv)
		if token == "" {
			return usagef("export "+*tokenEnv+"=...", "--token-env %s: the environment variable is empty or unset", *tokenEnv)
		}
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usagef("gavel serve --addr 127.0.0.1:8080", "--addr %q: %v", *addr, err)
	}
	if token == "" && !*insecure && !isLoopback(host) {
		return usagef("gavel serve --addr "+*addr+" --token-env GAVEL_TOKEN", "--addr %s is reachable from other machines: require a token with --token-env, or pass --insecure", *addr)
	}
	vs, err := loadVerifiers(specs)
	if err != nil {
		return err
	}
	cfg := serve.Config{
		MaxBody: *maxBody, MaxInflight: *maxInflight, RequestTimeout: *reqTimeout, Timeout: *timeout, Token: token,
		MaxSessions: *maxSessions, MaxMemory: int64(maxMemory), Logger: slog.New(slog.NewJSONHandler(stderr, nil)), Judge: judgeCfg,
		JudgePanel: panel, DefaultTask: *defaultTask, OnErrorReward: onErrorReward,
	}
	if cfg.Remote, err = rf.config("gavel serve"); err != nil {
		return err
	}
	if cfg.Health, err = health("gavel serve --health off"); err != nil {
		return err
	}
	if *tasks != "" {
		t, err := inputs.LoadTasks(*tasks, pipeline.Config{}.Fields)
		if err != nil {
			return usagef("gavel serve --tasks tasks.parquet", "%v", err)
		}
		cfg.Tasks = t
	}
	srv := serve.New(cfg)
	if err := srv.Reload(vs); err != nil {
		var ce *inputs.ConfigError
		if errors.As(err, &ce) {
			if ce.Field == "Judge" {
				return &usageError{msg: "judge: " + ce.Msg, hint: "gavel serve --judge-model MODEL --judge-url URL ..."}
			}
			return &usageError{msg: ce.Msg, hint: "gavel spec check FILE..."}
		}
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The soft limit sits above what requests, sessions and compiled
		// checks may hold together (under half of --max-memory with the
		// default --max-body, serve/memory.go),
		// so that collection does not run hot when they are full, and
		// below --max-memory by what the program's code and runtime take.
		debug.SetMemoryLimit(int64(maxMemory) / 4 * 3)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	log := cfg.Logger
	log.Info("listening", "addr", ln.Addr().String(), "verifiers", len(vs), "auth", token != "")

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	hupDone := make(chan struct{})
	defer func() { <-hupDone }()
	reloadCtx, stopReload := context.WithCancel(ctx)
	defer stopReload()
	go func() {
		defer close(hupDone)
		for {
			select {
			case <-reloadCtx.Done():
				return
			case <-hup:
			}
			vs, problems := reloadVerifiers(srv, specs)
			if problems != nil {
				log.Error("reload failed; the loaded verifiers stay", "problems", problems, "hint", "gavel spec check "+strings.Join(specs, " "))
				continue
			}
			log.Info("reloaded", "verifiers", len(vs))
		}
	}()
	err = srv.Serve(ctx, ln, *shutdown)
	if cErr := srv.Close(); cErr != nil && err == nil {
		err = cErr
	}
	stopReload()
	if err != nil {
		log.Error("stopped", "error", err.Error())
	} else {
		log.Info("stopped")
	}
	return err
}

// reloadVerifiers loads the built-in and --spec verifiers again, as at
// start, and serves them. When they cannot be served it returns why, each
// spec problem (file:line:column: message) on its own, for the log.
func reloadVerifiers(srv *serve.Server, specs []string) ([]*verifiers.Verifier, []string) {
	var loaded []*verifiers.Verifier
	if len(specs) > 0 {
		vs, err := spec.Load(specs)
		var ps spec.Problems
		if errors.As(err, &ps) {
			problems := make([]string, len(ps))
			for i, p := range ps {
				problems[i] = p.Error()
			}
			return nil, problems
		}
		if err != nil {
			return nil, []string{err.Error()}
		}
		loaded = vs
	}
	vs, err := allVerifiers(loaded)
	if err == nil {
		err = srv.Reload(vs)
	}
	if err != nil {
		return nil, []string{err.Error()}
	}
	return vs, nil
}

// isLoopback reports whether a listen host is reachable only from this
// machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sizeFlag is a flag of a size in bytes, written as a number of bytes or
// with a binary unit: 512MiB, 1GiB, 64KiB.
type sizeFlag int64

func (f *sizeFlag) String() string {
	n := int64(*f)
	for _, u := range []struct {
		name  string
		scale int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.scale && n%u.scale == 0 {
			return strconv.FormatInt(n/u.scale, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

func (f *sizeFlag) Set(v string) error {
	num, scale := v, int64(1)
	for _, u := range []struct {
		name  string
		scale int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if n, ok := strings.CutSuffix(v, u.name); ok {
			num, scale = n, u.scale
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/scale {
		return fmt.Errorf("want a size such as 512MiB, 2GiB or 1048576, got %q", v)
	}
	*f = sizeFlag(n * scale)
	return nil
}
