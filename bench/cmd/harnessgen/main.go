// Command harnessgen writes a large generated log in one of the formats
// gavel grade --from reads (inspect, tau-bench, tau2, messages), for
// measuring reading speed and memory. Its tasks are those of the worked
// examples in examples/harness, so that the example specs grade every
// rollout:
//
//	harnessgen -format tau-bench -mb 300 -out big.json
//	gavel grade --from tau-bench --spec examples/harness/tau-bench.yaml big.json
//
// An Inspect sample is about 1.8 KB, with no events; real ones, with their
// transcripts, run to tens of kilobytes: -sample-kb 16 pads each with
// model events to about 16 KB.
//
// It prints the file's uncompressed size in bytes (for an .eval archive,
// that of its members).
package main

import (
	"archive/zip"
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// policy makes each trajectory's system prompt about 900 bytes.
var policy = strings.Repeat("Always confirm the order id before acting. ", 20)

// chat is an OpenAI-style conversation of about 3 KB: two parallel tool
// calls, their results, a confirmation and a third call.
func chat(i int, refund bool) string {
	tool, args := "get_weather", `{\"city\": \"Oslo\"}`
	answer := "It is 4C and raining in Oslo."
	if refund {
		tool, args = "issue_refund", `{\"order_id\": \"42\"}`
		answer = "Your refund for order 42 is on its way."
	}
	return fmt.Sprintf(`[{"role":"system","content":%q},`+
		`{"role":"user","content":"Request %d: please help."},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c%d_a","type":"function","function":{"name":"find_user_id_by_email","arguments":"{\"email\": \"user%d@example.com\"}"}},{"id":"c%d_b","type":"function","function":{"name":"%s","arguments":"%s"}}]},`+
		`{"role":"tool","tool_call_id":"c%d_a","name":"find_user_id_by_email","content":"user_%d"},`+
		`{"role":"tool","tool_call_id":"c%d_b","name":"%s","content":"{\"status\": \"done\", \"items\": [{\"name\": \"T-Shirt\", \"price\": 53.27, \"options\": {\"color\": \"blue\", \"size\": \"M\"}}]}"},`+
		`{"role":"assistant","content":"I found it. Shall I proceed?"},{"role":"user","content":"Yes."},`+
		`{"role":"assistant","content":%q}]`,
		policy, i, i, i, i, tool, args, i, i, i, tool, answer)
}

func tauBench(i int) string {
	task, actions, outputs := "0", `[{"name":"find_user_id_by_email","kwargs":{}}]`, `[]`
	if i%2 == 1 {
		task, actions, outputs = "3", `[]`, `["42"]`
	}
	return fmt.Sprintf(`{"task_id":%s,"reward":%d.0,"info":{"task":{"user_id":"user_%d","actions":%s,"instruction":"Help with request %d.","outputs":%s},"source":"user","reward_info":{"reward":1.0,"info":{"r_actions":1.0}}},"traj":%s,"trial":%d}`,
		task, i%3%2, i, actions, i, outputs, chat(i, true), i/2)
}

func tau2(i int) string {
	return fmt.Sprintf(`{"id":"sim-%d","task_id":"0","start_time":"t","end_time":"t","duration":12.5,"termination_reason":"user_stop","reward_info":{"reward":1.0,"db_check":{"db_match":true,"db_reward":1.0},"reward_basis":["DB"]},"messages":[`+
		`{"role":"assistant","content":"Hi! How can I help you today?","tool_calls":null,"turn_idx":0},`+
		`{"role":"user","content":"Cancel reservation R%06d. %s","tool_calls":null,"turn_idx":1},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c%d_1","name":"get_reservation_details","arguments":{"reservation_id":"R%06d"},"requestor":"assistant"},{"id":"c%d_2","name":"cancel_reservation","arguments":{"reservation_id":"R%06d"},"requestor":"assistant"}],"turn_idx":2},`+
		`{"id":"c%d_1","role":"tool","content":"{\"reservation_id\": \"R%06d\", \"flights\": [{\"origin\": \"SFO\", \"destination\": \"JFK\", \"date\": \"2024-05-01\"}]}","requestor":"assistant","error":false,"turn_idx":3},`+
		`{"id":"c%d_2","role":"tool","content":"cancelled","requestor":"assistant","error":false,"turn_idx":4},`+
		`{"role":"assistant","content":"Done: R%06d is cancelled.","tool_calls":null,"turn_idx":5}],"trial":%d}`,
		i, i, policy, i, i, i, i, i, i, i, i, i/1000)
}

const tau2Prefix = `{"timestamp":"t","info":{"num_trials":1,"agent_info":{"implementation":"llm_agent","llm":"model-a"},"environment_info":{"domain_name":"airline"}},` +
	`"tasks":[{"id":"0","description":null,"user_scenario":{"instructions":"cancel"},"initial_state":null,"evaluation_criteria":{"actions":[{"action_id":"0_0","requestor":"assistant","name":"cancel_reservation","arguments":{}}]}}],"simulations":[`

const inspectHeader = `{"version":2,"status":"success","eval":{"eval_id":"Ev1","run_id":"Run1","task":"shop_totals","model":"model-a","created":"t","dataset":{},"config":{}}`

// sampleBytes is the size an Inspect sample is padded to with events
// (-sample-kb); 0 leaves it at about 1.8 KB, with no events.
var sampleBytes int

// inspectSample is an EvalSample of about 1.8 KB, or of sampleBytes when
// larger: then its events are model calls, each repeating the
// conversation, as Inspect's transcripts do.
func inspectSample(i int) string {
	id := `1`
	if i%2 == 1 {
		id = `"q-2"`
	}
	msgs := fmt.Sprintf(`{"role":"system","content":%q},{"role":"user","content":"What is the cart total for request %d?"},`+
		`{"role":"assistant","content":"","tool_calls":[{"id":"a%d","function":"get_cart","arguments":{"user":"u%d"},"type":"function"},{"id":"b%d","function":"list_coupons","arguments":{},"type":"function"}]},`+
		`{"role":"tool","content":"{\"items\": [{\"name\": \"T-Shirt\", \"price\": 40}]}","tool_call_id":"a%d","function":"get_cart"},`+
		`{"role":"tool","content":"[]","tool_call_id":"b%d","function":"list_coupons"},`+
		`{"role":"assistant","content":[{"type":"text","text":"The total is 42."}]}`,
		policy, i, i, i, i, i, i)
	head := fmt.Sprintf(`{"id":%s,"epoch":%d,"input":"What is the cart total?","target":"42","messages":[%s],`+
		`"output":{"model":"m","choices":[{"message":{"role":"assistant","content":"The total is 42."},"stop_reason":"stop"}],"completion":"The total is 42."},`+
		`"scores":{"match":{"value":"C","answer":"42"}},"metadata":{"split":"test"},"store":{"coupons_checked":true},"events":[`,
		id, i/2+1, msgs)
	var b strings.Builder
	b.WriteString(head)
	for j := 0; b.Len()+2 < sampleBytes; j++ {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"event":"model","timestamp":"2025-01-01T00:00:%02d.%06dZ","working_start":%d.%03d,"model":"model-a","input":[%s],"output":{"completion":"Step %d of request %d.","usage":{"input_tokens":%d,"output_tokens":%d}}}`,
			j%60, i%1000000, j, i%1000, msgs, j, i, 900+37*j, 10+j%7)
	}
	b.WriteString("]}")
	return b.String()
}

func messages(i int) string {
	task := "refund-1"
	if i%2 == 1 {
		task = "weather-2"
	}
	return fmt.Sprintf(`{"rollout_id":"r%d","task_id":%q,"model":"model-%c","recorded_reward":%d,"messages":%s}`,
		i, task, 'a'+i%3, i%2, chat(i, i%2 == 0))
}

func main() {
	format := flag.String("format", "", "log `FORMAT`: inspect, tau-bench, tau2 or messages")
	mb := flag.Int64("mb", 300, "uncompressed size in `MB` (10^6 bytes)")
	out := flag.String("out", "", "output `FILE`")
	flag.IntVar(&sampleBytes, "sample-kb", 0, "pad each Inspect sample to about `KB` kilobytes (10^3 bytes) with model events (0: samples of about 1.8 KB, no events)")
	sampleKB := &sampleBytes
	flag.BoolVar(&zstdMembers, "zstd", false, "compress the members of an .eval archive with Zstandard (method 93, as recent Inspect versions write) instead of deflate")
	flag.Parse()
	*sampleKB *= 1000
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: harnessgen -format F -mb N -out FILE")
		os.Exit(2)
	}
	size, err := write(*format, *mb*1e6, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessgen:", err)
		os.Exit(1)
	}
	fmt.Println(size)
}

// zstdMembers compresses .eval members with Zstandard.
var zstdMembers bool

// zipZstd is the zip compression method of Zstandard.
const zipZstd = 93

func write(format string, target int64, path string) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var size int64
	if format == "inspect" && strings.HasSuffix(path, ".eval") {
		zw := zip.NewWriter(f)
		method := zip.Deflate
		if zstdMembers {
			method = zipZstd
			zw.RegisterCompressor(zipZstd, zstd.ZipCompressor())
		}
		create := func(name string) (io.Writer, error) {
			return zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		}
		w, _ := create("header.json")
		io.WriteString(w, inspectHeader+"}")
		for i := 0; size < target; i++ {
			id := "1"
			if i%2 == 1 {
				id = "q-2"
			}
			w, err := create(fmt.Sprintf("samples/%s_epoch_%d.json", id, i/2+1))
			if err != nil {
				return 0, err
			}
			n, _ := io.WriteString(w, inspectSample(i))
			size += int64(n)
		}
		return size, zw.Close()
	}
	var prefix, sep, suffix string
	var record func(int) string
	switch format {
	case "inspect":
		prefix, sep, suffix, record = inspectHeader+`,"samples":[`, ",", "]}", inspectSample
	case "tau-bench":
		prefix, sep, suffix, record = "[", ",\n", "]\n", tauBench
	case "tau2":
		prefix, sep, suffix, record = tau2Prefix, ",", "]}", tau2
	case "messages":
		sep, suffix, record = "\n", "\n", messages
	default:
		return 0, fmt.Errorf("unknown format %q", format)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	n, _ := w.WriteString(prefix)
	size += int64(n)
	for i := 0; size < target; i++ {
		if i > 0 {
			n, _ = w.WriteString(sep)
			size += int64(n)
		}
		n, _ = w.WriteString(record(i))
		size += int64(n)
	}
	n, _ = w.WriteString(suffix)
	size += int64(n)
	return size, w.Flush()
}
