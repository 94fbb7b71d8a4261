package harness

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// genReader generates a file of n records: prefix, the records separated
// by sep, then suffix, without holding more than one record.
type genReader struct {
	prefix, sep, suffix string
	record              func(i int) string
	n, i                int
	buf                 []byte
	done                bool
	size                int64
}

func (g *genReader) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		switch {
		case g.done:
			return 0, io.EOF
		case g.i == 0 && g.prefix != "":
			g.buf = append(g.buf, g.prefix...)
			g.prefix = ""
		case g.i < g.n:
			if g.i > 0 {
				g.buf = append(g.buf, g.sep...)
			}
			g.buf = append(g.buf, g.record(g.i)...)
			g.i++
		default:
			g.buf = append(g.buf, g.suffix...)
			g.done = true
		}
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	g.size += int64(n)
	return n, nil
}

// A trajectory of a customer-service agent: two parallel tool calls, their
// results, and replies, about 3 KB.
var policy = strings.Repeat("Always confirm the order id before acting. ", 20)

// quotedPolicy is policy as %q writes it, quoted once: quoting it for
// every record took a third of the generators' time.
var quotedPolicy = strconv.Quote(policy)

func openAIMessages(i int) string {
	return fmt.Sprintf(`[{"role":"system","content":%s},`+
		`{"role":"user","content":"Please cancel order #W%07d, I no longer need it."},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d_a","type":"function","function":{"name":"get_order_details","arguments":"{\"order_id\": \"#W%07d\"}"}},{"id":"call_%d_b","type":"function","function":{"name":"find_user_id_by_email","arguments":"{\"email\": \"user%d@example.com\"}"}}]},`+
		`{"role":"tool","tool_call_id":"call_%d_a","name":"get_order_details","content":"{\"order_id\": \"#W%07d\", \"status\": \"pending\", \"items\": [{\"name\": \"T-Shirt\", \"price\": 53.27, \"options\": {\"color\": \"blue\", \"size\": \"M\"}}]}"},`+
		`{"role":"tool","tool_call_id":"call_%d_b","name":"find_user_id_by_email","content":"user_%d"},`+
		`{"role":"assistant","content":"I found the order. It is pending and can be cancelled. Shall I proceed?"},`+
		`{"role":"user","content":"Yes, please."},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d_c","type":"function","function":{"name":"cancel_pending_order","arguments":"{\"order_id\": \"#W%07d\", \"reason\": \"no longer needed\"}"}}]},`+
		`{"role":"tool","tool_call_id":"call_%d_c","name":"cancel_pending_order","content":"{\"order_id\": \"#W%07d\", \"status\": \"cancelled\"}"},`+
		`{"role":"assistant","content":"Your order #W%07d is cancelled; the refund goes to the original payment method."}]`,
		quotedPolicy, i, i, i, i, i, i, i, i, i, i, i, i, i, i)
}

func tauBenchGen(n int) *genReader {
	return &genReader{prefix: "[", sep: ",\n", suffix: "]\n", n: n, record: func(i int) string {
		return fmt.Sprintf(`{"task_id":%d,"reward":1.0,"info":{"task":{"user_id":"user_%d","actions":[{"name":"cancel_pending_order","kwargs":{"order_id":"#W%07d","reason":"no longer needed"}}],"instruction":"Cancel order #W%07d.","outputs":[]},"source":"user","reward_info":{"reward":1.0,"info":{"r_actions":1.0,"gt_data_hash":"0f3a"},"actions":[]}},"traj":%s,"trial":%d}`,
			i%500, i, i, i, openAIMessages(i), i/500)
	}}
}

func tau2Messages(i int) string {
	return fmt.Sprintf(`[{"role":"assistant","content":"Hi! How can I help you today?","tool_calls":null,"turn_idx":0},`+
		`{"role":"user","content":"Cancel reservation R%06d. %s","tool_calls":null,"turn_idx":1},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c%d_1","name":"get_reservation_details","arguments":{"reservation_id":"R%06d"},"requestor":"assistant"},{"id":"c%d_2","name":"get_user_details","arguments":{"user_id":"u%d"},"requestor":"assistant"}],"turn_idx":2},`+
		`{"id":"c%d_1","role":"tool","content":"{\"reservation_id\": \"R%06d\", \"flights\": [{\"origin\": \"SFO\", \"destination\": \"JFK\", \"date\": \"2024-05-01\"}]}","requestor":"assistant","error":false,"turn_idx":3},`+
		`{"id":"c%d_2","role":"tool","content":"{\"user_id\": \"u%d\", \"membership\": \"gold\"}","requestor":"assistant","error":false,"turn_idx":4},`+
		`{"role":"assistant","content":"Done: R%06d is cancelled.","tool_calls":null,"turn_idx":5}]`,
		i, policy, i, i, i, i, i, i, i, i, i)
}

func tau2Gen(n int) *genReader {
	return &genReader{
		prefix: `{"timestamp":"t","info":{"git_commit":"x","num_trials":1,"max_steps":100,"max_errors":10,"user_info":{"implementation":"user_simulator","llm":"gpt-4.1"},"agent_info":{"implementation":"llm_agent","llm":"m"},"environment_info":{"domain_name":"airline"}},` +
			`"tasks":[{"id":"0","description":null,"user_scenario":{"instructions":"cancel"},"evaluation_criteria":{"actions":[]}}],"simulations":[`,
		sep: ",", suffix: "]}", n: n, record: func(i int) string {
			return fmt.Sprintf(`{"id":"sim-%d","task_id":"%d","start_time":"t","end_time":"t","duration":12.5,"termination_reason":"user_stop","reward_info":{"reward":1.0,"db_check":{"db_match":true,"db_reward":1.0},"reward_basis":["DB"]},"messages":%s,"trial":0}`,
				i, i%50, tau2Messages(i))
		}}
}

func inspectSample(i int) string {
	return fmt.Sprintf(`{"id":%d,"epoch":%d,"input":"Cancel order #W%07d","target":"cancelled","messages":[`+
		`{"role":"system","content":%s},{"role":"user","content":"Cancel order #W%07d"},`+
		`{"role":"assistant","content":"","tool_calls":[{"id":"a%d","function":"get_order","arguments":{"order_id":"#W%07d"},"type":"function"},{"id":"b%d","function":"cancel_order","arguments":{"order_id":"#W%07d","reason":"no longer needed"},"type":"function"}]},`+
		`{"role":"tool","content":"{\"status\": \"pending\", \"items\": [{\"name\": \"T-Shirt\", \"price\": 53.27}]}","tool_call_id":"a%d","function":"get_order"},`+
		`{"role":"tool","content":"cancelled","tool_call_id":"b%d","function":"cancel_order"},`+
		`{"role":"assistant","content":[{"type":"text","text":"Your order is cancelled."}]}],`+
		`"output":{"model":"m","choices":[{"message":{"role":"assistant","content":"Your order is cancelled."},"stop_reason":"stop"}],"completion":"Your order is cancelled."},`+
		`"scores":{"match":{"value":"C","answer":"cancelled"}},"metadata":{"split":"test"},"store":{"orders":{"#W%07d":{"status":"cancelled"}}},"events":[]}`,
		i%500, i/500+1, i, quotedPolicy, i, i, i, i, i, i, i, i)
}

const inspectHeader = `{"version":2,"status":"success","eval":{"eval_id":"E1","run_id":"R1","task":"shop","model":"m","created":"t","dataset":{},"config":{}}`

func inspectJSONGen(n int) *genReader {
	return &genReader{prefix: inspectHeader + `,"samples":[`, sep: ",", suffix: "]}", n: n, record: inspectSample}
}

func messagesGen(n int) *genReader {
	return &genReader{sep: "\n", suffix: "\n", n: n, record: func(i int) string {
		return fmt.Sprintf(`{"task_id":"T%d","model":"m","messages":%s}`, i%100, openAIMessages(i))
	}}
}

// evalArchive builds an .eval archive of n samples, compressed with the
// method Inspect writes (zstd), and returns it with the uncompressed size
// of its samples.
func evalArchiveOf(tb testing.TB, n int) ([]byte, int64) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("header.json")
	io.WriteString(w, inspectHeader+"}")
	var size int64
	for i := 0; i < n; i++ {
		w, err := zw.Create(fmt.Sprintf("samples/%d_epoch_%d.json", i%500, i/500+1))
		if err != nil {
			tb.Fatal(err)
		}
		s := inspectSample(i)
		size += int64(len(s))
		io.WriteString(w, s)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes(), size
}

func BenchmarkRead(b *testing.B) {
	const n = 2000
	gens := []struct {
		name   string
		format Format
		gen    func(int) *genReader
	}{
		{"tau-bench", TauBench, tauBenchGen},
		{"tau2", Tau2, tau2Gen},
		{"inspect-json", Inspect, inspectJSONGen},
		{"messages", Messages, messagesGen},
	}
	for _, g := range gens {
		b.Run(g.name, func(b *testing.B) {
			data, err := io.ReadAll(g.gen(n))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				r, err := NewReader("bench", bytes.NewReader(data), g.format)
				if err != nil {
					b.Fatal(err)
				}
				count(b, r, n)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rollouts/s")
		})
	}
	b.Run("inspect-eval", func(b *testing.B) {
		data, size := evalArchiveOf(b, n)
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			r, err := NewEvalReader("bench.eval", bytes.NewReader(data), int64(len(data)))
			if err != nil {
				b.Fatal(err)
			}
			count(b, r, n)
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rollouts/s")
	})
}

func count(tb testing.TB, r *Reader, want int) {
	got := 0
	for {
		it, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		if it.Err != nil {
			tb.Fatalf("%s: %v", it.Where, it.Err)
		}
		got++
	}
	if got != want {
		tb.Fatalf("read %d rollouts, want %d", got, want)
	}
}

// TestHeapBounded reads about 100 MB of generated input of each streamed
// format and checks that the heap in use stays far below it.
func TestHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 100 MB per format")
	}
	for _, g := range []struct {
		format Format
		gen    func(int) *genReader
	}{{TauBench, tauBenchGen}, {Tau2, tau2Gen}, {Inspect, inspectJSONGen}, {Messages, messagesGen}} {
		t.Run(string(g.format), func(t *testing.T) {
			n := 100 << 20 / len(g.gen(1).record(0))
			in := g.gen(n)
			r, err := NewReader("big", in, g.format)
			if err != nil {
				t.Fatal(err)
			}
			var peak uint64
			var ms runtime.MemStats
			for i := 0; ; i++ {
				it, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil || it.Err != nil {
					t.Fatal(err, it.Err)
				}
				if i%5000 == 0 {
					runtime.GC()
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapInuse)
				}
			}
			if in.size < 80<<20 {
				t.Fatalf("generated %d bytes, want about 100 MB", in.size)
			}
			if limit := uint64(in.size / 10); peak > limit {
				t.Errorf("heap in use reached %d bytes reading %d, want under %d", peak, in.size, limit)
			}
			t.Logf("%s: read %d MB, heap in use at most %.1f MB", g.format, in.size>>20, float64(peak)/(1<<20))
		})
	}
}
